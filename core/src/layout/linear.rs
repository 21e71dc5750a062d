//! Layouts as one generic map: a linear layout over F2 (Triton's `LinearLayout`).
//!
//! Every bit of the register index, of the lane id and of the warp id maps to a *basis*: an
//! element coordinate (one entry per tile dim). The coordinate of register `r` of thread
//! (warp, lane) is the XOR of the bases of the set bits of `r`, `lane` and `warp`. Every
//! layout kind (`#blocked`, `#slice`, and the tensor-core layouts) converts to this form,
//! and the lowering asks only its queries: how many registers, the offset of a register, the
//! per-dimension thread terms, which lanes and warps hold copies.
//!
//! Invariants (property-tested for every kind): non-zero bases are distinct powers of two
//! per dimension, and the coordinate bits the register bases use are disjoint from those the
//! lane and warp bases use — so XOR is addition, and a coordinate is a run-time thread part
//! plus a compile-time register part (one base address per thread plus constant offsets).
//! A zero lane or warp basis means replication: the threads differing in that bit hold the
//! same elements (a tile smaller than the block, a row statistic shared by its row).
//! Register bases are never zero (a thread does not hold an element twice).

use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LinearLayout {
    /// The tile's shape (powers of two).
    pub shape: Vec<i64>,
    /// One basis per bit of the register index, lowest bit first.
    pub regs: Vec<Vec<i64>>,
    /// One basis per bit of the lane id (5 for a 32-lane warp).
    pub lanes: Vec<Vec<i64>>,
    /// One basis per bit of the warp id.
    pub warps: Vec<Vec<i64>>,
}

/// A run of consecutive bits of a lane or warp id that map to one dimension with bases
/// `base, 2·base, 4·base, …`: its contribution is `((id >> shift) & (2^bits - 1)) · base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Run {
    pub shift: u32,
    pub bits: u32,
    pub base: i64,
}

/// How the thread part of one dimension's coordinate is computed from the lane and warp ids.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DimTerms {
    pub lane: Vec<Run>,
    pub warp: Vec<Run>,
    /// The factor the lane and warp contributions are multiples of: in a `#blocked` layout
    /// its `sizePerThread` along the dimension ([`crate::layout::Layout::dim_terms`]); here
    /// the base of the first run (1 when there is none).
    pub unit: i64,
}

fn xor(a: &mut [i64], b: &[i64]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x ^= *y;
    }
}

fn is_zero(b: &[i64]) -> bool {
    b.iter().all(|&x| x == 0)
}

impl LinearLayout {
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    pub fn num_regs(&self) -> i64 {
        1 << self.regs.len()
    }

    pub fn num_warps(&self) -> i64 {
        1 << self.warps.len()
    }

    fn combine(&self, bases: &[Vec<i64>], id: i64) -> Vec<i64> {
        let mut c = vec![0; self.rank()];
        for (k, b) in bases.iter().enumerate() {
            if id >> k & 1 == 1 {
                xor(&mut c, b);
            }
        }
        c
    }

    /// The compile-time part of the coordinates of register `r`.
    pub fn reg_offset(&self, r: i64) -> Vec<i64> {
        self.combine(&self.regs, r)
    }

    /// The run-time part of the coordinates of the elements of thread (warp, lane).
    pub fn thread_offset(&self, warp: i64, lane: i64) -> Vec<i64> {
        let mut c = self.combine(&self.lanes, lane);
        xor(&mut c, &self.combine(&self.warps, warp));
        c
    }

    /// The coordinates of register `r` of thread (warp, lane).
    pub fn coord(&self, warp: i64, lane: i64, r: i64) -> Vec<i64> {
        let mut c = self.thread_offset(warp, lane);
        xor(&mut c, &self.reg_offset(r));
        c
    }

    /// Lane bits that hold copies (zero bases), as a mask.
    pub fn replicated_lanes(&self) -> i64 {
        self.lanes.iter().enumerate().filter(|(_, b)| is_zero(b)).map(|(k, _)| 1 << k).sum()
    }

    /// Warp bits that hold copies (zero bases), as a mask.
    pub fn replicated_warps(&self) -> i64 {
        self.warps.iter().enumerate().filter(|(_, b)| is_zero(b)).map(|(k, _)| 1 << k).sum()
    }

    /// How the thread part of dimension `d` is computed: the runs of lane bits and of warp
    /// bits whose bases lie along `d`.
    pub fn dim_terms(&self, d: usize) -> DimTerms {
        let runs = |bases: &[Vec<i64>]| {
            let mut out: Vec<Run> = vec![];
            for (k, b) in bases.iter().enumerate() {
                let v = b[d];
                if v == 0 {
                    continue;
                }
                match out.last_mut() {
                    Some(r) if r.shift + r.bits == k as u32 && r.base << r.bits == v => r.bits += 1,
                    _ => out.push(Run { shift: k as u32, bits: 1, base: v }),
                }
            }
            out
        };
        let (lane, warp) = (runs(&self.lanes), runs(&self.warps));
        let unit = lane.first().or(warp.first()).map(|r| r.base).unwrap_or(1);
        DimTerms { lane, warp, unit }
    }

    /// How many leading register bits step along dim `d` by 1, 2, 4, …: `2^n` consecutive
    /// registers hold consecutive elements of `d` (one vector access).
    pub fn contiguous_reg_bits(&self, d: usize) -> usize {
        self.regs
            .iter()
            .enumerate()
            .take_while(|(k, b)| b.iter().enumerate().all(|(e, &x)| x == if e == d { 1 << k } else { 0 }))
            .count()
    }

    /// Register index of each register offset (a lookup table; never iterated into IR).
    pub fn reg_of_offset(&self) -> BTreeMap<Vec<i64>, i64> {
        (0..self.num_regs()).map(|r| (self.reg_offset(r), r)).collect()
    }

    /// The layout with dimension `d` dropped to extent 1 and replicated: register bases
    /// along `d` removed, lane and warp bases along `d` zeroed (the `#slice` along `d`).
    pub fn sliced(&self, d: usize) -> LinearLayout {
        let mut l = self.clone();
        l.shape[d] = 1;
        l.regs.retain(|b| b[d] == 0);
        for b in l.lanes.iter_mut().chain(l.warps.iter_mut()) {
            b[d] = 0;
        }
        l
    }

    /// The layout with its extent-1 dims removed: two tiles whose shapes differ only in unit
    /// dims hold the same elements in the same places when these are equal.
    pub fn squeezed(&self) -> LinearLayout {
        let keep: Vec<usize> = (0..self.rank()).filter(|&d| self.shape[d] != 1).collect();
        let pick = |b: &Vec<i64>| keep.iter().map(|&d| b[d]).collect::<Vec<_>>();
        LinearLayout {
            shape: keep.iter().map(|&d| self.shape[d]).collect(),
            regs: self.regs.iter().map(pick).collect(),
            lanes: self.lanes.iter().map(pick).collect(),
            warps: self.warps.iter().map(pick).collect(),
        }
    }

    /// The layout over the tile's row-major flat index (one dimension of the tile's size):
    /// two tiles of different shapes whose flattened layouts are equal hold the same elements
    /// (the same row-major positions) in the same registers of the same threads, so a reshape
    /// from one to the other moves no data. Tiles differing only in unit dims flatten alike
    /// when their [`LinearLayout::squeezed`] forms are equal.
    pub fn flattened(&self) -> LinearLayout {
        let strides = crate::host::contiguous_strides(&self.shape);
        let flat = |b: &Vec<i64>| vec![b.iter().zip(&strides).map(|(x, s)| x * s).sum::<i64>()];
        LinearLayout {
            shape: vec![self.shape.iter().product()],
            regs: self.regs.iter().map(flat).collect(),
            lanes: self.lanes.iter().map(flat).collect(),
            warps: self.warps.iter().map(flat).collect(),
        }
    }

    /// Checks the invariants of the module documentation; `Err` says which fails.
    pub fn check(&self) -> Result<(), String> {
        let rank = self.rank();
        let mut reg_bits = vec![0i64; rank];
        let mut thread_bits = vec![0i64; rank];
        for (kind, bases, acc) in [("register", &self.regs, &mut reg_bits), ("lane", &self.lanes, &mut thread_bits)] {
            for b in bases.iter() {
                check_basis(kind, b, &self.shape)?;
                for d in 0..rank {
                    if acc[d] & b[d] != 0 {
                        return Err(format!("{kind} bases repeat a coordinate bit of dim {d}"));
                    }
                    acc[d] |= b[d];
                }
            }
        }
        for b in &self.warps {
            check_basis("warp", b, &self.shape)?;
            for d in 0..rank {
                if thread_bits[d] & b[d] != 0 {
                    return Err(format!("warp bases repeat a coordinate bit of dim {d}"));
                }
                thread_bits[d] |= b[d];
            }
        }
        if self.regs.iter().any(|b| is_zero(b)) {
            return Err("a zero register basis (a register repeats an element)".into());
        }
        for d in 0..rank {
            if reg_bits[d] & thread_bits[d] != 0 {
                return Err(format!("register and thread bases share coordinate bits of dim {d}"));
            }
            if reg_bits[d] | thread_bits[d] != self.shape[d] - 1 {
                return Err(format!("dim {d} of extent {} is not covered", self.shape[d]));
            }
        }
        Ok(())
    }
}

fn check_basis(kind: &str, b: &[i64], shape: &[i64]) -> Result<(), String> {
    if b.len() != shape.len() {
        return Err(format!("a {kind} basis of rank {}", b.len()));
    }
    let nonzero: Vec<usize> = (0..b.len()).filter(|&d| b[d] != 0).collect();
    match nonzero.as_slice() {
        [] => Ok(()),
        [d] if b[*d] > 0 && b[*d] & (b[*d] - 1) == 0 && b[*d] < shape[*d] => Ok(()),
        _ => Err(format!("{kind} basis {b:?} is not one power of two inside {shape:?}")),
    }
}
