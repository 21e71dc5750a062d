//! Distributed layouts: which thread of a block holds which element of a tile.
//!
//! A tile at the `tilegpu` level carries one layout. Each kind is written in the terms its
//! users know (`#blocked<sizePerThread, threadsPerWarp, warpsPerCTA, order>`, the `#slice` of a
//! reduction) and converts, for a tile shape, to one generic map ([`LinearLayout`]): bases of
//! the register, lane and warp bits. The lowering asks only that map — how many registers a
//! thread holds, the offset of each, the thread part of each dimension, which threads hold
//! copies — so a new kind (the tensor-core layouts) is a constructor and a conversion, not a
//! new arm in every lowering helper.
//!
//! Tiles smaller than the threads that hold them are replicated (Triton's rule): the bases
//! that would point past the tile are zero, so several lanes or warps hold the same element.
//! A `#slice` is replicated along its reduced dimension, which is what lets a row statistic
//! meet its row again without moving data.
//!
//! The element coordinate of register `r` in thread (warp, lane) is a run-time part that
//! depends only on the thread plus a compile-time part that depends only on the register
//! (the bits they use are disjoint, [`LinearLayout::check`]). The lowering relies on this
//! split: addresses are one base pointer per thread plus constant offsets.

pub mod blockscale;
mod descriptor;
mod linear;
mod mma;
mod shared;
mod swizzle;
mod text;
pub mod tmem;

pub use descriptor::MatrixDescriptor;
pub use linear::{DimTerms, LinearLayout, Run};
pub use mma::{Mma, MmaFamily, MMA_K, MMA_M, MMA_N, TCGEN05_M, TCGEN05_M_SMALL, TMEM_COLUMNS, TMEM_LANES};
pub use shared::Shared;
pub use swizzle::SwizzledShared;
pub use text::{parse_layout, split_top};

use serde::Serialize;

/// `#tilegpu.blocked<sizePerThread, threadsPerWarp, warpsPerCTA, order>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Blocked {
    pub size_per_thread: Vec<i64>,
    pub threads_per_warp: Vec<i64>,
    pub warps_per_cta: Vec<i64>,
    /// Dimensions from fastest to slowest varying (row-major 2-D: `[1, 0]`).
    pub order: Vec<usize>,
}

/// A tile layout.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Layout {
    Blocked(Blocked),
    /// The parent layout with `dim` reduced to extent 1 (keepdims reduction result),
    /// replicated along `dim`.
    Slice {
        dim: usize,
        parent: Box<Layout>,
    },
    /// The accumulator of a tensor-core `mma` (`#tilegpu.mma<[wm, wn]>`).
    Mma(Mma),
    /// Operand `op_idx` (0: A, 1: B) of an `mma` whose accumulator is laid out as `parent`
    /// (`#tilegpu.dot_operand<op_idx : i32, #tilegpu.mma<…>>`).
    DotOperand {
        op_idx: u32,
        parent: Mma,
    },
}

/// Why no layout could be built for a shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    NotPowerOfTwo(Vec<i64>),
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::NotPowerOfTwo(s) => write!(f, "tile shape {s:?} has a dimension that is not a power of two"),
        }
    }
}

fn is_pow2(x: i64) -> bool {
    x > 0 && x & (x - 1) == 0
}

fn log2(x: i64) -> u32 {
    x.max(1).trailing_zeros()
}

impl Blocked {
    /// The default coalesced layout of a row-major tile over `warps` warps: vectors of up to
    /// 16 bytes along the last dimension (narrower when the tile has fewer elements than 16
    /// bytes per thread), lanes along the last dimension first, warps along the slowest
    /// dimensions first (so that rows reduce inside a warp whenever there are enough rows).
    /// Lanes and warps left over when the tile is smaller than the block hold copies.
    pub fn row_major(shape: &[i64], elem_bytes: u32, warps: i64) -> Result<Blocked, LayoutError> {
        let order: Vec<usize> = (0..shape.len()).rev().collect();
        Blocked::coalesced(shape, elem_bytes, warps, &order)
    }

    /// [`Blocked::row_major`] for a tile whose dims are contiguous in memory in `order`
    /// (fastest first): vectors along `order[0]`, lanes along the fastest dims first, warps
    /// along the slowest first; leftover lanes and warps (copies) on the slowest dim.
    pub fn coalesced(shape: &[i64], elem_bytes: u32, warps: i64, order: &[usize]) -> Result<Blocked, LayoutError> {
        let rank = shape.len();
        let mut sorted = order.to_vec();
        sorted.sort_unstable();
        if shape.is_empty()
            || shape.iter().any(|&d| !is_pow2(d))
            || !is_pow2(warps)
            || sorted != (0..rank).collect::<Vec<_>>()
        {
            return Err(LayoutError::NotPowerOfTwo(shape.to_vec()));
        }
        let (fast, slow) = (order[0], order[rank - 1]);
        let total: i64 = shape.iter().product();
        let threads = 32 * warps;
        let vec = (16 / i64::from(elem_bytes.max(1))).clamp(1, shape[fast]).min((total / threads).max(1));
        let mut spt = vec![1; rank];
        spt[fast] = vec;
        let mut tpw = vec![1; rank];
        let mut left = 32i64;
        for &d in order {
            let t = left.min(shape[d] / spt[d]);
            tpw[d] = t;
            left /= t;
        }
        // Lanes past the tile hold copies.
        tpw[slow] *= left;
        let mut wpc = vec![1; rank];
        let mut wleft = warps;
        for &d in order.iter().rev() {
            let cap = (shape[d] / (spt[d] * tpw[d])).max(1);
            let w = wleft.min(cap);
            wpc[d] = w;
            wleft /= w;
        }
        wpc[slow] *= wleft;
        Ok(Blocked { size_per_thread: spt, threads_per_warp: tpw, warps_per_cta: wpc, order: order.to_vec() })
    }

    /// The coalesced layout of a load's tile whose view is `order` (view dim i is tensor dim
    /// `order[i]`): vectors along the tile dim that views the tensor's contiguous last dim.
    pub fn for_load(shape: &[i64], elem_bytes: u32, warps: i64, order: &[u32]) -> Result<Blocked, LayoutError> {
        let mut dims: Vec<usize> = (0..order.len()).collect();
        dims.sort_by_key(|&d| std::cmp::Reverse(order.get(d).copied().unwrap_or(0)));
        Blocked::coalesced(shape, elem_bytes, warps, &dims)
    }

    /// The row-major blocked layout of `shape` that places the tile's elements, in row-major
    /// order, where the flattened layout `flat` ([`LinearLayout::flattened`]) places them:
    /// what a reshape's result takes so that the reshape renames its operand's registers.
    /// `None` where no blocked layout does (copies on some lanes or warps, a thread's
    /// elements not in the runs a blocked layout makes).
    pub fn matching_flat(shape: &[i64], flat: &LinearLayout) -> Option<Blocked> {
        let rank = shape.len();
        if rank == 0 || shape.iter().any(|&d| !is_pow2(d)) || flat.shape != [shape.iter().product::<i64>()] {
            return None;
        }
        let strides = crate::host::contiguous_strides(shape);
        // A flat basis (a power of two) as (dim, coordinate) of `shape`.
        let at = |b: &[i64]| -> Option<(usize, i64)> {
            let f = *b.first()?;
            (0..rank).find(|&d| f >= strides[d] && f < strides[d] * shape[d]).map(|d| (d, f / strides[d]))
        };
        // A dim's vector is where its first lane (else its first warp) starts; a dim with
        // neither keeps all of its extent in a thread (the same registers in the same order
        // whatever its vector: within one, then repetitions).
        let mut spt: Vec<Option<i64>> = vec![None; rank];
        let (mut tpw, mut wpc) = (vec![1i64; rank], vec![1i64; rank]);
        for (bases, per) in [(&flat.lanes, &mut tpw), (&flat.warps, &mut wpc)] {
            for b in bases {
                let (d, v) = at(b)?;
                spt[d].get_or_insert(v);
                per[d] *= 2;
            }
        }
        let spt = (0..rank).map(|d| spt[d].unwrap_or(shape[d])).collect();
        let b = Blocked {
            size_per_thread: spt,
            threads_per_warp: tpw,
            warps_per_cta: wpc,
            order: (0..rank).rev().collect(),
        };
        (b.to_linear(shape).flattened() == *flat).then_some(b)
    }

    pub fn rank(&self) -> usize {
        self.size_per_thread.len()
    }

    pub fn num_warps(&self) -> i64 {
        self.warps_per_cta.iter().product()
    }

    /// Elements covered by one pass of all threads, per dimension.
    pub fn cta_tile(&self) -> Vec<i64> {
        (0..self.rank()).map(|d| self.size_per_thread[d] * self.threads_per_warp[d] * self.warps_per_cta[d]).collect()
    }

    /// The linear map of this layout over a tile of `shape`. Registers: within a vector
    /// first, then repetitions of the block's tile, dims in `order`; lanes and warps in
    /// `order`. Bases past the tile are dropped (registers) or zero (lanes, warps: copies).
    pub fn to_linear(&self, shape: &[i64]) -> LinearLayout {
        let rank = self.rank();
        let cta = self.cta_tile();
        let unit = |d: usize, v: i64| {
            let mut b = vec![0; rank];
            if v < shape[d] {
                b[d] = v;
            }
            b
        };
        let mut regs = vec![];
        for &d in &self.order {
            let reps = (shape[d] / cta[d]).max(1);
            for k in 0..log2(self.size_per_thread[d]) {
                regs.push(unit(d, 1 << k));
            }
            for k in 0..log2(reps) {
                regs.push(unit(d, cta[d] << k));
            }
        }
        regs.retain(|b| b.iter().any(|&x| x != 0));
        let mut lanes = vec![];
        let mut warps = vec![];
        for &d in &self.order {
            for k in 0..log2(self.threads_per_warp[d]) {
                lanes.push(unit(d, self.size_per_thread[d] << k));
            }
            for k in 0..log2(self.warps_per_cta[d]) {
                warps.push(unit(d, (self.size_per_thread[d] * self.threads_per_warp[d]) << k));
            }
        }
        LinearLayout { shape: shape.to_vec(), regs, lanes, warps }
    }
}

impl Layout {
    /// The rank of the tiles this layout lays out.
    pub fn rank(&self) -> usize {
        match self {
            Layout::Blocked(b) => b.rank(),
            Layout::Slice { parent, .. } => parent.rank(),
            Layout::Mma(_) | Layout::DotOperand { .. } => 2,
        }
    }

    /// Warps the layout spreads a tile over.
    pub fn num_warps(&self) -> i64 {
        match self {
            Layout::Blocked(b) => b.num_warps(),
            Layout::Slice { parent, .. } => parent.num_warps(),
            Layout::Mma(m) | Layout::DotOperand { parent: m, .. } => m.num_warps(),
        }
    }

    /// What is wrong with the layout's own contents, for a block of `warps` warps: every size a
    /// positive power of two, `#blocked` lanes making one warp of 32 and its order a
    /// permutation, a `#slice` dim inside its parent, the warps the layout spreads over the
    /// block's. The verifier asks before any pass reads a layout (the maps assume all of it).
    pub fn check(&self, warps: i64) -> Result<(), String> {
        let p2 = |x: i64| x > 0 && x & (x - 1) == 0;
        match self {
            Layout::Blocked(b) => {
                let rank = b.rank();
                let mut order = b.order.clone();
                order.sort_unstable();
                if order != (0..rank).collect::<Vec<_>>() {
                    return Err(format!("order {:?} is not a permutation of the {rank} dims", b.order));
                }
                let sizes = b.size_per_thread.iter().chain(&b.threads_per_warp).chain(&b.warps_per_cta);
                if let Some(x) = sizes.copied().find(|&x| !p2(x)) {
                    return Err(format!("size {x} is not a positive power of two"));
                }
                let lanes: i64 = b.threads_per_warp.iter().product();
                if lanes != 32 {
                    return Err(format!("threadsPerWarp {:?} makes {lanes} lanes, not 32", b.threads_per_warp));
                }
            }
            Layout::Slice { dim, parent } => {
                if *dim >= parent.rank() {
                    return Err(format!("slice dim {dim} of a parent of rank {}", parent.rank()));
                }
                return parent.check(warps);
            }
            Layout::Mma(m) | Layout::DotOperand { parent: m, .. } => {
                if !m.warps_per_cta.iter().all(|&w| p2(w)) {
                    return Err(format!("warps {:?} are not powers of two", m.warps_per_cta));
                }
            }
        }
        if self.num_warps() != warps {
            return Err(format!("it spreads over {} warps, the block has {warps}", self.num_warps()));
        }
        Ok(())
    }

    /// The generic map of this layout over a tile of `shape`.
    pub fn to_linear(&self, shape: &[i64]) -> LinearLayout {
        match self {
            Layout::Blocked(b) => b.to_linear(shape),
            Layout::Slice { dim, parent } => {
                let mut pshape = shape.to_vec();
                pshape[*dim] = 1;
                parent.to_linear(&pshape).sliced(*dim)
            }
            Layout::Mma(m) => m.to_linear(shape),
            Layout::DotOperand { op_idx, parent } => parent.operand_linear(*op_idx, shape),
        }
    }

    /// Whether `d` is a dimension this layout reduced away (every thread holds coordinate 0).
    pub fn is_sliced(&self, d: usize) -> bool {
        match self {
            Layout::Blocked(_) | Layout::Mma(_) | Layout::DotOperand { .. } => false,
            Layout::Slice { dim, parent } => *dim == d || parent.is_sliced(d),
        }
    }

    /// How the thread part of dimension `d` of a tile of `shape` is computed from the lane
    /// and warp ids (`None` for a dimension the layout reduced away: coordinate 0 in every
    /// thread). For `#blocked` layouts the unit is `sizePerThread`.
    pub fn dim_terms(&self, shape: &[i64], d: usize) -> Option<DimTerms> {
        if self.is_sliced(d) {
            return None;
        }
        let mut t = self.to_linear(shape).dim_terms(d);
        let mut l = self;
        while let Layout::Slice { parent, .. } = l {
            l = parent;
        }
        if let Layout::Blocked(b) = l {
            t.unit = b.size_per_thread[d];
        }
        Some(t)
    }

    /// Registers one thread holds for a tile of `shape`.
    pub fn regs_per_thread(&self, shape: &[i64]) -> i64 {
        self.to_linear(shape).num_regs()
    }

    /// The compile-time part of the coordinates of register `reg`.
    pub fn reg_offset(&self, shape: &[i64], reg: i64) -> Vec<i64> {
        self.to_linear(shape).reg_offset(reg)
    }

    /// Full coordinates of register `reg` of thread (warp, lane).
    pub fn coord(&self, shape: &[i64], warp: i64, lane: i64, reg: i64) -> Vec<i64> {
        self.to_linear(shape).coord(warp, lane, reg)
    }

    /// Whether this is a `wgmma` accumulator or an operand of one.
    pub fn is_wgmma(&self) -> bool {
        matches!(self, Layout::Mma(m) | Layout::DotOperand { parent: m, .. } if m.family == MmaFamily::Wgmma)
    }

    /// Whether this is a `tcgen05` accumulator (in Tensor Memory) or an operand of one.
    pub fn is_tcgen05(&self) -> bool {
        matches!(self, Layout::Mma(m) | Layout::DotOperand { parent: m, .. } if m.family == MmaFamily::Tcgen05)
    }

    /// Whether the tensor cores read this product's shared operands through matrix
    /// descriptors and the async proxy (wgmma, tcgen05): the buffers take NVMMA layouts and
    /// the writes they read are fenced into the async proxy.
    pub fn reads_by_descriptor(&self) -> bool {
        matches!(self, Layout::Mma(m) | Layout::DotOperand { parent: m, .. } if m.family != MmaFamily::MmaSync)
    }

    /// Whether this is a tensor-core layout or a slice of one.
    pub fn is_mma_family(&self) -> bool {
        match self {
            Layout::Blocked(_) => false,
            Layout::Slice { parent, .. } => parent.is_mma_family(),
            Layout::Mma(_) | Layout::DotOperand { .. } => true,
        }
    }

    /// Whether two layouts place every element of a tile of `shape` in the same (thread,
    /// register): then a value moves between them without moving data.
    pub fn same_placement(&self, other: &Layout, shape: &[i64]) -> bool {
        self == other || self.to_linear(shape) == other.to_linear(shape)
    }
}

#[cfg(test)]
mod tests;
