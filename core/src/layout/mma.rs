//! The tensor-core layouts of `mma.sync` m16n8k16 (PTX ISA, "Matrix fragments for mma.m16n8k16"):
//! the accumulator `#mma` and the operand `#dot_operand`, each as a linear map.
//!
//! Within one warp, lane `4g + t` (group `g = lane / 4`, thread-in-group `t = lane % 4`) holds
//! - of the 16×8 accumulator: rows `g`, `g + 8`, columns `2t`, `2t + 1` (4 registers);
//! - of the 16×16 A operand: rows `g`, `g + 8`, columns `2t`, `2t + 1`, `2t + 8`, `2t + 9` (8);
//! - of the 16×8 B operand (K×N): rows `2t`, `2t + 1`, `2t + 8`, `2t + 9`, column `g` (4).
//!
//! Warps tile the accumulator `wm × wn` (warp bits along M first); a tile larger than the
//! warps' 16·wm × 8·wn repeats in registers, N repetitions before M ones. The A operand is
//! held by the warps of its rows (replicated along the N warps), B by the warps of its columns.
//! With that register order the accumulator of an `[M, K]` product over one N warp (`wn = 1`)
//! places every element exactly where the A operand of an `[M, K]` product wants it — which
//! is FlashAttention-2's P: the scores go from one `mma` into the next with no data movement
//! ([`super::Layout::same_placement`] sees it; no special case).
//!
//! Operands are 16-bit (f16/bf16): two consecutive K elements form one 32-bit register.

use super::linear::LinearLayout;
use serde::Serialize;

/// The tensor-core instruction family an accumulator is computed with; the target table
/// (`Feature::Wgmma`) says which a chip has, `tile-layout` chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum MmaFamily {
    /// Warp-level `mma.sync` m16n8k16 (every target).
    MmaSync,
    /// Warpgroup-level `wgmma.mma_async` m64nNk16 (sm_90a): four consecutive warps compute a
    /// 64-row block together, B (and A unless it is in registers) read from shared memory
    /// through descriptors.
    Wgmma,
    /// `tcgen05.mma` kind::f16 (sm_100a/sm_103a): one thread issues the block's product, A and
    /// B read from shared memory through descriptors, the accumulator in Tensor Memory (TMEM).
    /// Registers hold it only where `tcgen05.ld` brings it out (see [`Mma::tcgen05`]).
    Tcgen05,
}

/// Rows of one `tcgen05.mma` with `cta_group::1` (M = 128: the accumulator's row `i` is TMEM
/// lane `i`, its column `j` TMEM column `j`, 32-bit each — the PTX ISA's "Matrix fragments for
/// tcgen05.mma", data path layout for M = 128).
pub const TCGEN05_M: i64 = 128;
/// Rows of the `cta_group::1` instruction that computes a tile of fewer than 128 rows (16, 32
/// or 64): M = 64, data path layout F — rows `16g … 16g + 15` in TMEM lanes `32g … 32g + 15`,
/// each warp's quarter half used. A tile of M < 64 rows is multiplied with its A operand's
/// rows held `64 / M` times in the shared buffer (rows `r`, `r + M`, … alike: the buffer's
/// `replicas`), so every quarter holds the whole product and each warp reads its own columns
/// from its own quarter ([`Mma::tcgen05`]).
pub const TCGEN05_M_SMALL: i64 = 64;
/// TMEM lanes and 32-bit columns a block may allocate (PTX ISA, "Tensor Memory").
pub const TMEM_LANES: i64 = 128;
pub const TMEM_COLUMNS: i64 = 512;

/// `#tilegpu.mma<[wm, wn]>`: the accumulator of `mma.sync` m16n8k16 over `wm × wn` warps;
/// `#tilegpu.wgmma<[wm, 1]>`: the accumulator of `wgmma` m64nNk16 over `wm / 4` warpgroups.
///
/// The two families place an accumulator alike when `wn = 1`: the wgmma m64nN fragment of
/// warp `w` of a warpgroup is the mma.sync m16n8 fragment of rows `16w..16w+16` repeated
/// N/8 times along N, registers in the same order (PTX ISA, "Matrix fragments for
/// wgmma.m64nNk16"), so the map, the operand maps and every lowering that reads them are
/// shared; only the instruction differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Mma {
    pub warps_per_cta: [i64; 2],
    pub family: MmaFamily,
    /// A tcgen05 accumulator of fewer than 128 rows, computed by the M = 64 instruction
    /// ([`TCGEN05_M_SMALL`]; `#tilegpu.tcgen05_m64`). Part of the layout, not read from a
    /// shape: a broadcast's slice of it is laid out over a degenerate shape.
    pub m64: bool,
}

/// Instruction shape.
pub const MMA_M: i64 = 16;
pub const MMA_N: i64 = 8;
pub const MMA_K: i64 = 16;

fn log2(x: i64) -> u32 {
    x.max(1).trailing_zeros()
}

/// A basis along one of two dims, zero when it points past the tile (a copy).
fn basis(shape: &[i64], d: usize, v: i64) -> Vec<i64> {
    let mut b = vec![0, 0];
    if v < shape[d] {
        b[d] = v;
    }
    b
}

impl Mma {
    /// The warp grid for an `[M, N]` accumulator over `warps` warps, for a chain of
    /// products (attention): as many warps along M as there are 16-row blocks (each warp owns
    /// whole rows, so the row statistics and P stay in the warp — FlashAttention-2), the rest
    /// along N; warps past the tile hold copies.
    pub fn for_shape(shape: &[i64], warps: i64) -> Mma {
        let wm = warps.min((shape[0] / MMA_M).max(1));
        let wm = 1 << log2(wm);
        Mma { warps_per_cta: [wm, (warps / wm).max(1)], family: MmaFamily::MmaSync, m64: false }
    }

    /// The wgmma accumulator of an `[M, N]` product over `warps` warps, when the instruction
    /// can compute it: whole warpgroups, each warp 16 rows of a 64-row block (M a multiple
    /// of 16 · warps: blocks past the warpgroups repeat in registers), N a multiple of 8 from
    /// 16 to 256 (one instruction covers the tile's N; an N-major B needs rows of at least 32
    /// bytes for the narrowest descriptor swizzle), K a multiple of 16.
    pub fn wgmma(shape: &[i64], k: i64, warps: i64) -> Option<Mma> {
        let (m, n) = (shape[0], shape[1]);
        let ok = warps >= 4
            && warps % 4 == 0
            && m % (MMA_M * warps) == 0
            && (16..=256).contains(&n)
            && n % 8 == 0
            && k % MMA_K == 0
            && k >= MMA_K;
        ok.then_some(Mma { warps_per_cta: [warps, 1], family: MmaFamily::Wgmma, m64: false })
    }

    /// The tcgen05 accumulator of an `[M, N]` product over `warps` warps, when the instruction
    /// can compute it: N a multiple of 16 from 16 to 256, K a multiple of 16, the warps whole
    /// warpgroups, and M either a multiple of 128 or 16, 32 or 64 (a decode's query rows).
    ///
    /// M a multiple of 128: one `cta_group::1` instruction per 128-row block, at TMEM columns
    /// `N · block`; its registers are what `tcgen05.ld.32x32b` returns: warp `w` may read only
    /// TMEM lanes `32 (w % 4) …` (its quarter of the data path), so warp bits 0-1 walk the rows
    /// 32 at a time, lane `l` holds row `32 (w % 4) + l`. The higher warp bits walk the
    /// 128-row blocks first ([`Mma::tcgen05_block_warps`]: a warpgroup a block, as many as
    /// both have), then split N into column ranges (`warps_per_cta` = `[4 · bw, warps / 4 /
    /// bw]`): where a warpgroup is left to each block, a thread holds a whole row, so row
    /// reductions cross no warp — FlashAttention-4's softmax warpgroups, a thread a row of a
    /// 256-row tile over 8 warps; a 128-row tile over 8 warps splits its rows' columns between
    /// warps `w` and `w + 4`, and its row maxima and sums meet in shared memory.
    ///
    /// M of 16, 32 or 64: one M = 64 instruction ([`TCGEN05_M_SMALL`]), quarter `q` holding
    /// rows `16q …` of the replicated A, i.e. the tile's rows `16 (q mod M/16) …`. Its
    /// registers are what `tcgen05.ld.16x32bx2` returns: lane `l` row `l % 16` of its warp's
    /// 16, and of the warp's column range, the half `l / 16` — so all 32 lanes hold data. The
    /// first `log2(M / 16)` warp bits pick the 16-row block, the others split N into column
    /// ranges (`warps_per_cta` = `[M / 16, warps · 16 / M]`), each at least two columns. N
    /// may pass 256 in whole blocks of 256 ([`Mma::tcgen05_n_blocks`]): one product after the
    /// other through the same 256 TMEM columns, each warp holding its column range of every
    /// block (the block the highest register bits) — a latent-attention decode's 512 columns,
    /// which would otherwise take all of TMEM.
    pub fn tcgen05(shape: &[i64], k: i64, warps: i64) -> Option<Mma> {
        let (m, n) = (shape[0], shape[1]);
        let m_ok = m > 0 && (m % TCGEN05_M == 0 || matches!(m, 16 | 32 | 64));
        if !m_ok {
            // Fewer than 16 rows (or any other count) has no instruction: no warp split to
            // compute either (8 rows would make it 0).
            return None;
        }
        let rows = if m % TCGEN05_M == 0 {
            // The most warpgroups (a power of two) that share both the blocks and the warps
            // evenly.
            let mut bw = 1;
            while (m / TCGEN05_M) % (2 * bw) == 0 && (warps / 4) % (2 * bw) == 0 {
                bw *= 2;
            }
            4 * bw
        } else {
            m / MMA_M
        };
        let wn = warps / rows;
        if wn == 0 {
            return None;
        }
        let bn = n / Self::tcgen05_n_blocks(shape);
        let ok = warps >= 4
            && warps % 4 == 0
            && m_ok
            && ((16..=256).contains(&n) || (m < TCGEN05_M && n % 256 == 0))
            && n % 16 == 0
            && wn & (wn - 1) == 0
            && wn <= n
            && (m >= TCGEN05_M || bn / wn >= 2)
            && k % MMA_K == 0
            && k >= MMA_K;
        ok.then_some(Mma { warps_per_cta: [rows, wn], family: MmaFamily::Tcgen05, m64: m < TCGEN05_M })
    }

    /// How many warpgroups of a tcgen05 accumulator of 128-row blocks take a block each (its
    /// warp bits past the lane quarter that walk the blocks, [`Mma::tcgen05`]); 1 below 128
    /// rows. A thread's registers hold `M / 128 / bw` blocks.
    pub fn tcgen05_block_warps(&self) -> i64 {
        if self.m64 {
            1
        } else {
            self.warps_per_cta[0] / 4
        }
    }

    /// How many products of 256 columns compute an `[M, N]` tcgen05 accumulator of fewer than
    /// 128 rows and N past 256 (else 1, and 1 for any other shape: callers ask it of every
    /// loop-carried value, scalars included).
    pub fn tcgen05_n_blocks(shape: &[i64]) -> i64 {
        match shape {
            [m, n] if *m < TCGEN05_M && *n > 256 => n / 256,
            _ => 1,
        }
    }

    /// Rows of the instruction that computes an `[M, N]` tcgen05 accumulator.
    pub fn tcgen05_m(m: i64) -> i64 {
        if m >= TCGEN05_M {
            TCGEN05_M
        } else {
            TCGEN05_M_SMALL
        }
    }

    /// How many times the shared buffer of the A operand of a tcgen05 product with `m` rows
    /// holds its rows (`64 / M` below 64 rows, else 1): see [`TCGEN05_M_SMALL`].
    pub fn tcgen05_a_replicas(m: i64) -> i64 {
        if m < TCGEN05_M_SMALL {
            TCGEN05_M_SMALL / m.max(1)
        } else {
            1
        }
    }

    /// The register layouts a block-scaled tcgen05 product's scale tiles are stored into
    /// Tensor Memory from (`tmem::scale_cell`): A's `[M, Ks]` and B's `[Ks, N]` with each
    /// thread the factors of rows (columns) `lane + 32 c`, all `ks` K blocks, the blocks then
    /// the row groups in register order, every one of `warps` warps a copy.
    pub fn tcgen05_scale_layouts(ks: i64, warps: i64) -> [super::Blocked; 2] {
        let a = super::Blocked {
            size_per_thread: vec![1, ks],
            threads_per_warp: vec![32, 1],
            warps_per_cta: vec![1, warps],
            order: vec![1, 0],
        };
        let b = super::Blocked {
            size_per_thread: vec![ks, 1],
            threads_per_warp: vec![1, 32],
            warps_per_cta: vec![warps, 1],
            order: vec![0, 1],
        };
        [a, b]
    }

    /// TMEM columns the accumulator of an `[M, N]` product takes (32-bit each): N-blocks
    /// ([`Mma::tcgen05_n_blocks`]) take turns in the same 256.
    pub fn tmem_columns(shape: &[i64]) -> i64 {
        shape[1] / Self::tcgen05_n_blocks(shape) * (shape[0] / TCGEN05_M).max(1)
    }

    /// Whether a tcgen05 product with this accumulator reads its A operand — an `[M, K]`
    /// tile of `a_bytes`-byte elements laid out as `a` — from Tensor Memory rather than
    /// through a shared buffer: A is already in registers in this very layout
    /// (FlashAttention-4's P, which comes out of the first product's `tcgen05.ld` one row a
    /// thread), so each thread stores its row's elements packed into 32-bit columns
    /// ([`Mma::a_per_column`]) with `tcgen05.st.32x32b` where the instruction reads them
    /// (`super::tmem::a_operand_cell`), with no shared memory and no layout change. 16-bit A
    /// (`kind::f16`) and 8-bit A (`kind::f8f6f4`, K-major as TMEM's A always is), K a
    /// multiple of the instruction's K step and a power of two (the warp columns then hold
    /// whole contiguous K ranges, whole columns each, as the stores assume).
    pub fn reads_a_from_tmem(&self, a: Option<&super::Layout>, a_shape: &[i64], a_bytes: u32) -> bool {
        let per = Self::a_per_column(a_bytes);
        self.family == MmaFamily::Tcgen05
            && a == Some(&super::Layout::Mma(*self))
            && matches!(a_bytes, 1 | 2)
            && a_shape.len() == 2
            && a_shape[0] % TCGEN05_M == 0
            && a_shape[1] % (MMA_K * 2 / i64::from(a_bytes)) == 0
            && a_shape[1] & (a_shape[1] - 1) == 0
            && (a_shape[1] / self.warps_per_cta[1]) % per == 0
    }

    /// How many elements of an A operand of `a_bytes`-byte elements one 32-bit Tensor Memory
    /// column holds (sub-word elements packed contiguously: two 16-bit, four 8-bit).
    pub fn a_per_column(a_bytes: u32) -> i64 {
        4 / i64::from(a_bytes.clamp(1, 4))
    }

    /// The warp grid for a lone product (a GEMM): warps split M and N so that each warp's
    /// share is as square as the instruction allows (Triton's rule for mma v2), which
    /// minimises the operand fragments each warp reads from shared memory.
    pub fn balanced(shape: &[i64], warps: i64) -> Mma {
        let (mut wm, mut wn) = (1i64, 1i64);
        while wm * wn < warps {
            if shape[0] / MMA_M / wm >= shape[1] / (MMA_N * 2) / wn {
                if wm < shape[0] / MMA_M {
                    wm *= 2;
                } else {
                    wn *= 2;
                }
            } else {
                wn *= 2;
            }
        }
        Mma { warps_per_cta: [wm, wn], family: MmaFamily::MmaSync, m64: false }
    }

    pub fn num_warps(&self) -> i64 {
        self.warps_per_cta[0] * self.warps_per_cta[1]
    }

    fn warp_bases(&self, shape: &[i64], along_m: bool, along_n: bool) -> Vec<Vec<i64>> {
        let [wm, wn] = self.warps_per_cta;
        let mut w = vec![];
        for k in 0..log2(wm) {
            w.push(if along_m { basis(shape, 0, MMA_M << k) } else { vec![0, 0] });
        }
        for k in 0..log2(wn) {
            w.push(if along_n { basis(shape, 1, MMA_N << k) } else { vec![0, 0] });
        }
        w
    }

    /// The accumulator map over an `[M, N]` tile (M a multiple of 16, N of 8).
    pub fn to_linear(&self, shape: &[i64]) -> LinearLayout {
        let [wm, wn] = self.warps_per_cta;
        if self.family == MmaFamily::Tcgen05 {
            return self.tmem_linear(shape);
        }
        let mut regs = vec![basis(shape, 1, 1), basis(shape, 0, 8)];
        for k in 0..log2(shape[1] / (MMA_N * wn)) {
            regs.push(vec![0, (MMA_N * wn) << k]);
        }
        for k in 0..log2(shape[0] / (MMA_M * wm)) {
            regs.push(vec![(MMA_M * wm) << k, 0]);
        }
        regs.retain(|b| b.iter().any(|&x| x != 0));
        let lanes =
            vec![basis(shape, 1, 2), basis(shape, 1, 4), basis(shape, 0, 1), basis(shape, 0, 2), basis(shape, 0, 4)];
        LinearLayout { shape: shape.to_vec(), regs, lanes, warps: self.warp_bases(shape, true, true) }
    }

    /// The tcgen05 accumulator's registers (see [`Mma::tcgen05`]): the warp's columns, then
    /// the 128-row blocks its warpgroup holds; lanes down the rows; warp bits 0-1 the lane
    /// quarters, then the blocks the warpgroups take, the rest the column ranges.
    fn tmem_linear(&self, shape: &[i64]) -> LinearLayout {
        let wn = self.warps_per_cta[1];
        if self.m64 {
            // Half the warp's columns of each 256-column block a lane; lanes 0-15 the rows,
            // lane bit 4 the half; warp bits the 16-row blocks, then the column ranges; the
            // highest register bits the blocks.
            let blocks = Self::tcgen05_n_blocks(shape);
            let bn = shape[1] / blocks;
            let cols = (bn / wn).max(2);
            let half = cols / 2;
            let mut regs: Vec<Vec<i64>> = (0..log2(half)).map(|k| basis(shape, 1, 1 << k)).collect();
            regs.extend((0..log2(blocks)).map(|k| basis(shape, 1, bn << k)));
            let mut lanes: Vec<Vec<i64>> = (0..4).map(|k| basis(shape, 0, 1 << k)).collect();
            lanes.push(basis(shape, 1, half));
            let mut warps: Vec<Vec<i64>> =
                (0..log2(self.warps_per_cta[0])).map(|k| basis(shape, 0, MMA_M << k)).collect();
            warps.extend((0..log2(wn)).map(|k| basis(shape, 1, cols << k)));
            return LinearLayout { shape: shape.to_vec(), regs, lanes, warps };
        }
        let cols = (shape[1] / wn).max(1);
        let bw = self.tcgen05_block_warps();
        let mut regs: Vec<Vec<i64>> = (0..log2(cols)).map(|k| basis(shape, 1, 1 << k)).collect();
        regs.extend((0..log2(shape[0] / TCGEN05_M / bw)).map(|k| basis(shape, 0, (TCGEN05_M * bw) << k)));
        let lanes = (0..5).map(|k| basis(shape, 0, 1 << k)).collect();
        let mut warps = vec![basis(shape, 0, 32), basis(shape, 0, 64)];
        warps.extend((0..log2(bw)).map(|k| basis(shape, 0, TCGEN05_M << k)));
        warps.extend((0..log2(wn)).map(|k| basis(shape, 1, cols << k)));
        LinearLayout { shape: shape.to_vec(), regs, lanes, warps }
    }

    /// The map of operand `op_idx` (0: A, `[M, K]`; 1: B, `[K, N]`) of an `mma` with this
    /// accumulator layout. (A tcgen05 product reads both from shared memory: its operand
    /// layouts are never held in registers, and their map is mma.sync's.)
    pub fn operand_linear(&self, op_idx: u32, shape: &[i64]) -> LinearLayout {
        let [wm, wn] = self.warps_per_cta;
        if op_idx == 0 {
            // A: k + 1, row + 8, k + 8 within the fragment; repetitions along M every 16·wm.
            let frag = vec![basis(shape, 1, 1), basis(shape, 0, 8), basis(shape, 1, 8)];
            self.operand_map(shape, 1, frag, MMA_M * wm, (true, false))
        } else {
            // B: k + 1, k + 8 within the fragment; repetitions along N every 8·wn.
            let frag = vec![basis(shape, 0, 1), basis(shape, 0, 8)];
            self.operand_map(shape, 0, frag, MMA_N * wn, (false, true))
        }
    }

    /// An operand map: the fragment's register bases `frag`, then K repetitions (every 16
    /// along `kd`), then repetitions along the other dim every `rep`; lanes `2t` along K and
    /// `g` along the other dim; warps along M and/or N as `warps_along` says.
    fn operand_map(
        &self,
        shape: &[i64],
        kd: usize,
        frag: Vec<Vec<i64>>,
        rep: i64,
        warps_along: (bool, bool),
    ) -> LinearLayout {
        let od = 1 - kd;
        let along = |d: usize, v: i64| {
            let mut b = vec![0, 0];
            b[d] = v;
            b
        };
        let mut regs = frag;
        regs.extend((0..log2(shape[kd] / MMA_K)).map(|k| along(kd, MMA_K << k)));
        regs.extend((0..log2(shape[od] / rep)).map(|k| along(od, rep << k)));
        regs.retain(|b| b.iter().any(|&x| x != 0));
        let lanes = vec![
            basis(shape, kd, 2),
            basis(shape, kd, 4),
            basis(shape, od, 1),
            basis(shape, od, 2),
            basis(shape, od, 4),
        ];
        LinearLayout { shape: shape.to_vec(), regs, lanes, warps: self.warp_bases(shape, warps_along.0, warps_along.1) }
    }

    /// Whether an `[M, N]` accumulator (or operand of that extent) fits the instruction.
    pub fn fits(m: i64, n: i64, k: i64) -> bool {
        let p2 = |x: i64| x > 0 && x & (x - 1) == 0;
        p2(m) && p2(n) && p2(k) && m >= MMA_M && n >= MMA_N && k >= MMA_K
    }
}
