//! Models of the tcgen05 machinery (sm_100a/sm_103a) written from the PTX ISA's tables,
//! independently of the lowering that uses them: the instruction descriptor of
//! `tcgen05.mma` kind::f16 and kind::f8f6f4 ("Instruction descriptor"), the Tensor Memory placement of an
//! M = 128 accumulator ("Matrix fragments for tcgen05.mma": lane = row, column = column,
//! 32 bits each) and what `tcgen05.ld.32x32b.xN` returns to each thread ("Matrix fragments
//! for tcgen05.ld": the thread of lane `l` of a warp reading at TMEM lane `L`, column `C`
//! gets lane `L + l`, columns `C …  C + N - 1`; warp `w` may touch only lanes
//! `32 (w % 4) … 32 (w % 4) + 31`). The lowering's tests hold its descriptors and TMEM
//! addresses against these: this is how the tcgen05 path is checked without a B300.

/// Operand formats (bits 7-9 for A, 10-12 for B): the code depends on the instruction's
/// kind — kind::f16 has f16 = 0 and bf16 = 1, kind::f8f6f4 e4m3 = 0 and e5m2 = 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    F16,
    BF16,
    E4M3,
    E5M2,
}

impl Format {
    fn code(self) -> u32 {
        match self {
            Format::F16 | Format::E4M3 => 0,
            Format::BF16 | Format::E5M2 => 1,
        }
    }

    /// The `.kind` of `tcgen05.mma` that multiplies this format.
    pub fn kind(self) -> &'static str {
        match self {
            Format::F16 | Format::BF16 => "f16",
            Format::E4M3 | Format::E5M2 => "f8f6f4",
        }
    }
}

/// The 32-bit instruction descriptor of a dense `tcgen05.mma` kind::f16 or kind::f8f6f4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstrDescriptor {
    /// The accumulator is f32 (bits 4-5: 1), else f16 (0).
    pub d_f32: bool,
    pub a: Format,
    pub b: Format,
    /// A (bit 15), B (bit 16) read MN-major (transposed) rather than K-major.
    pub a_mn_major: bool,
    pub b_mn_major: bool,
    /// N (bits 17-22, N >> 3) and M (bits 24-28, M >> 4).
    pub n: i64,
    pub m: i64,
}

impl InstrDescriptor {
    pub fn encode(&self) -> u32 {
        (u32::from(self.d_f32) << 4)
            | (self.a.code() << 7)
            | (self.b.code() << 10)
            | (u32::from(self.a_mn_major) << 15)
            | (u32::from(self.b_mn_major) << 16)
            | (((self.n >> 3) as u32 & 0x3f) << 17)
            | (((self.m >> 4) as u32 & 0x1f) << 24)
    }

    /// The fields of `bits` for an instruction of `kind` (`f16` or `f8f6f4`), or why the
    /// hardware would not run it: sparsity, saturation, negation and the reserved bits must be
    /// clear, the formats ones the kind takes (f16/bf16; e4m3/e5m2 — the 6- and 4-bit ones are
    /// not decoded), the shape one the ISA lists for `cta_group::1` (M 64 with N a multiple of
    /// 8, M 128 with N a multiple of 16, N from 8 or 16 to 256).
    pub fn decode(bits: u32, kind: &str) -> Result<InstrDescriptor, String> {
        let field = |lo: u32, w: u32| (bits >> lo) & ((1 << w) - 1);
        if field(0, 4) != 0 || field(6, 1) != 0 || field(13, 2) != 0 || field(23, 1) != 0 || field(29, 3) != 0 {
            return Err(format!("{bits:#010x}: sparsity, saturation, negation, shift or reserved bits set"));
        }
        let format = |v: u32| match (kind, v) {
            ("f16", 0) => Ok(Format::F16),
            ("f16", 1) => Ok(Format::BF16),
            ("f8f6f4", 0) => Ok(Format::E4M3),
            ("f8f6f4", 1) => Ok(Format::E5M2),
            (k, x) => Err(format!("{bits:#010x}: operand format {x} of kind::{k}")),
        };
        let d = InstrDescriptor {
            d_f32: match field(4, 2) {
                0 => false,
                1 => true,
                x => return Err(format!("{bits:#010x}: accumulator format {x}")),
            },
            a: format(field(7, 3))?,
            b: format(field(10, 3))?,
            a_mn_major: field(15, 1) == 1,
            b_mn_major: field(16, 1) == 1,
            n: i64::from(field(17, 6)) << 3,
            m: i64::from(field(24, 5)) << 4,
        };
        let n_ok = match d.m {
            64 => d.n % 8 == 0 && (8..=256).contains(&d.n),
            // 256: `cta_group::2` (a CTA pair's 128 rows each, [`pair_cell`]).
            128 | 256 => d.n % 16 == 0 && (16..=256).contains(&d.n),
            m => return Err(format!("{bits:#010x}: M = {m} is not a cta_group::1 or ::2 shape")),
        };
        if !n_ok {
            return Err(format!("{bits:#010x}: N = {} with M = {}", d.n, d.m));
        }
        Ok(d)
    }
}

/// Where element (`row`, `col`) of a `cta_group::2` product's M = 256 accumulator lives: (the
/// CTA of the pair, lane, column) — rows 0-127 in the first CTA's Tensor Memory (the one whose
/// rank's low bit is 0), 128-255 in the second's, at the same columns ("Matrix fragments for
/// tcgen05.mma", `cta_group::2`: D split by rows between the pair).
pub fn pair_cell(base: i64, row: i64, col: i64) -> (i64, i64, i64) {
    (row / 128, row % 128, base + col)
}

/// Which CTA of a pair holds column `col` of a `cta_group::2` product's B operand of `n`
/// columns, and at which of its own columns: the first CTA the first half, the second the
/// second (each CTA's shared memory at the descriptor's address holds N/2 columns).
pub fn pair_b_column(n: i64, col: i64) -> (i64, i64) {
    (col / (n / 2), col % (n / 2))
}

/// Where element (`row`, `col`) of an M = 128·b accumulator of `n` columns placed at TMEM
/// column `base` lives: (lane, column). Each 128-row block is one instruction's D, the next
/// block `n` columns on.
pub fn accumulator_cell(base: i64, n: i64, row: i64, col: i64) -> (i64, i64) {
    (row % 128, base + (row / 128) * n + col)
}

/// The 32-bit instruction descriptor of a block-scaled `tcgen05.mma` (`.kind::mxf8f6f4`,
/// `.kind::mxf4`, `.kind::mxf4nvf4` with `.block_scale`), which differs from the dense one:
/// bits 4-5 the B scale factor id (the byte of the scales' 32-bit column the instruction's
/// first factor is in), 7-9 and 10-12 the operand formats (e4m3 0, e5m2 1 for mxf8f6f4;
/// e2m1 1 for the fp4 kinds), 15/16 the transposes, 17-22 N >> 3, 23 the scale type (1
/// ue8m0, 0 ue4m3), 27-28 M >> 7, 29-30 the A scale factor id; no accumulator format (f32).
/// (Written from the PTX ISA's table as JAX's Mosaic GPU encodes it,
/// `_create_scaled_instr_descriptor`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaledInstrDescriptor {
    pub a_format: u32,
    pub b_format: u32,
    pub a_mn_major: bool,
    pub b_mn_major: bool,
    pub n: i64,
    pub m: i64,
    pub ue8m0: bool,
    pub a_sf_id: u32,
    pub b_sf_id: u32,
}

impl ScaledInstrDescriptor {
    pub fn encode(&self) -> u32 {
        ((self.b_sf_id & 3) << 4)
            | ((self.a_format & 7) << 7)
            | ((self.b_format & 7) << 10)
            | (u32::from(self.a_mn_major) << 15)
            | (u32::from(self.b_mn_major) << 16)
            | (((self.n >> 3) as u32 & 0x3f) << 17)
            | (u32::from(self.ue8m0) << 23)
            | (((self.m >> 7) as u32 & 3) << 27)
            | ((self.a_sf_id & 3) << 29)
    }

    /// The fields of `bits`, or why the instruction would not run it here: reserved bits set,
    /// M not 128 (the only block-scaled `cta_group::1` shape tilec issues), N not a multiple
    /// of 16 from 16 to 256.
    pub fn decode(bits: u32) -> Result<ScaledInstrDescriptor, String> {
        let field = |lo: u32, w: u32| (bits >> lo) & ((1 << w) - 1);
        if field(0, 4) != 0 || field(6, 1) != 0 || field(13, 2) != 0 || field(24, 3) != 0 || field(31, 1) != 0 {
            return Err(format!("{bits:#010x}: sparsity, negation or reserved bits set"));
        }
        let d = ScaledInstrDescriptor {
            a_format: field(7, 3),
            b_format: field(10, 3),
            a_mn_major: field(15, 1) == 1,
            b_mn_major: field(16, 1) == 1,
            n: i64::from(field(17, 6)) << 3,
            m: i64::from(field(27, 2)) << 7,
            ue8m0: field(23, 1) == 1,
            a_sf_id: field(29, 2),
            b_sf_id: field(4, 2),
        };
        if d.m != 128 || d.n % 16 != 0 || !(16..=256).contains(&d.n) {
            return Err(format!("{bits:#010x}: M = {} N = {} is not a block-scaled cta_group::1 shape here", d.m, d.n));
        }
        Ok(d)
    }
}

/// Where the scale factor of row `row` (of the A or B operand: M or N rows), K block `kb` of
/// a tile whose scales Tensor Memory holds from column `base` lives: (lane within a 32-lane
/// quarter — every quarter holds the same, column, byte). The scales of `scale_vec::1X`
/// (and of the 2X/4X forms, four bytes a column all the same) as JAX's Mosaic GPU lays them
/// out (`scales_layout`, the PTX ISA's "Scale factor A/B layout" figures, what
/// `tcgen05.cp.32x128b.warpx4` fills): row `32 g + l` in lane `l` of every quarter, column
/// `g`; the four K blocks of a column's bytes one after the other; a tile of more K blocks
/// takes one such set of `rows / 32` columns per four blocks.
pub fn scale_cell(base: i64, rows: i64, row: i64, kb: i64) -> (i64, i64, i64) {
    (row % 32, base + (kb / 4) * (rows / 32) + row / 32, kb % 4)
}

/// The column set (`rows / 32` columns each) and the first byte — the instruction
/// descriptor's scale factor id — of K step `step` of a block-scaled product with `vec`
/// factors an instruction: four K blocks a set, `4 / vec` steps a set.
pub fn scale_step(step: i64, vec: i64) -> (i64, i64) {
    let per_set = 4 / vec;
    (step / per_set, (step % per_set) * vec)
}

/// Which scale bytes K step `step` of a block-scaled product reads for row `row`, with `vec`
/// factors an instruction (`scale_vec::{vec}X`): the column its scale address plus the row's
/// group gives (the address of the step's set), and bytes `sf_id … sf_id + vec - 1` — the
/// id the lowering puts in the instruction descriptor.
pub fn scale_step_cells(base: i64, rows: i64, row: i64, step: i64, vec: i64) -> Vec<(i64, i64, i64)> {
    let (set, sf_id) = scale_step(step, vec);
    let addr = base + set * (rows / 32);
    (0..vec).map(|t| (row % 32, addr + row / 32, sf_id + t)).collect()
}

/// The TMEM cells that hold element (`row`, `col`) of an accumulator of M = 16, 32 or 64 rows
/// placed at column `base`: the M = 64 instruction's data path layout F puts its row `R` in
/// lane `32 (R / 16) + R % 16` (the first half of each quarter), column `base + col`, and its
/// A operand holds the tile's rows `64 / M` times (row `R` is the tile's row `R mod M`), so the
/// element is in every quarter `q` with `16 q mod M = 16 (row / 16)`.
pub fn small_accumulator_cells(base: i64, m: i64, row: i64, col: i64) -> Vec<(i64, i64)> {
    (0..4).filter(|q| (16 * q) % m == 16 * (row / 16)).map(|q| (32 * q + row % 16, base + col)).collect()
}

/// What register `reg` of the thread in lane `lane` of warp `warp` holds after
/// `tcgen05.ld.sync.aligned.16x32bx2.xN.b32 … [at_lane, at_col], half` (PTX ISA, "Matrix
/// fragments for tcgen05.ld", shape 16x32bx2: two 16-lane accesses, lanes 0-15 of the warp
/// reading TMEM lanes `at_lane …` from column `at_col`, lanes 16-31 the same TMEM lanes from
/// column `at_col + half`; `.xN` repeats along the columns): (lane, column), or why the access
/// is not allowed (outside the warp's quarter, or not at its first lane).
pub fn ld_16x32bx2(warp: i64, lane: i64, at_lane: i64, at_col: i64, half: i64, reg: i64) -> Result<(i64, i64), String> {
    let quarter = 32 * (warp % 4);
    if at_lane != quarter {
        return Err(format!("warp {warp} reads from lane {at_lane}: its quarter starts at lane {quarter}"));
    }
    Ok((at_lane + lane % 16, at_col + (lane / 16) * half + reg))
}

/// Where element (`row`, `k`) of an A operand of `k_extent` columns and `per` elements a
/// 32-bit word (two 16-bit, four 8-bit) that `tcgen05.mma` reads from Tensor Memory at column
/// `base` lives: (lane, 32-bit column, place in the word — 0 the lowest bits). A in TMEM is
/// row-major (Table "Major-ness for different matrices"), its rows the lanes as D's (data path
/// layout D for M = 128), and sub-word elements of A are packed contiguously in a 32-bit word
/// ("Packing formats"), so `per` consecutive K elements share a column, the first in the low
/// bits. Each 128-row block starts `k_extent / per` columns after the previous one, and a K
/// step of 32 bytes (16 16-bit elements, 32 8-bit ones) reads 8 consecutive columns.
pub fn a_operand_cell(base: i64, k_extent: i64, per: i64, row: i64, k: i64) -> (i64, i64, i64) {
    (row % 128, base + (row / 128) * (k_extent / per) + k / per, k % per)
}

/// What register `reg` of the thread in lane `lane` of warp `warp` holds after
/// `tcgen05.ld.sync.aligned.32x32b.xN.b32` at TMEM address (`at_lane`, `at_col`): (lane,
/// column), or why the access is not allowed (a warp outside its lane quarter, an address not
/// at a quarter's first lane). `tcgen05.st.32x32b.xN` writes register `reg` to the same cell.
pub fn ld_32x32b(warp: i64, lane: i64, at_lane: i64, at_col: i64, reg: i64) -> Result<(i64, i64), String> {
    let quarter = 32 * (warp % 4);
    if at_lane != quarter {
        return Err(format!(
            "warp {warp} reads from lane {at_lane}: it may read only lanes {quarter}..{}",
            quarter + 31
        ));
    }
    Ok((at_lane + lane, at_col + reg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_descriptor_fields_round_trip_and_bad_shapes_are_refused() {
        use Format::*;
        for (a, b) in [(F16, F16), (BF16, BF16), (E4M3, E4M3), (E4M3, E5M2), (E5M2, E5M2)] {
            for n in (16..=256).step_by(16) {
                for (am, bm) in [(false, false), (false, true), (true, true)] {
                    let d = InstrDescriptor { d_f32: true, a, b, a_mn_major: am, b_mn_major: bm, n, m: 128 };
                    assert_eq!(InstrDescriptor::decode(d.encode(), a.kind()), Ok(d));
                }
            }
        }
        // The same bits mean e4m3 under kind::f8f6f4 and f16 under kind::f16.
        let f8 =
            InstrDescriptor { d_f32: true, a: E4M3, b: E4M3, a_mn_major: false, b_mn_major: false, n: 128, m: 128 };
        assert_eq!(InstrDescriptor::decode(f8.encode(), "f16").map(|d| d.a), Ok(F16));
        assert!(InstrDescriptor::decode(f8.encode() | (5 << 7), "f8f6f4").is_err());
        // The PTX ISA's example: f16 x f16 -> f32, both K-major, M 128, N 256.
        let d = InstrDescriptor { d_f32: true, a: F16, b: F16, a_mn_major: false, b_mn_major: false, n: 256, m: 128 };
        assert_eq!(d.encode(), (1 << 4) | (32 << 17) | (8 << 24));
        assert!(InstrDescriptor::decode(InstrDescriptor { n: 24, ..d }.encode(), "f16").is_err());
        assert!(InstrDescriptor::decode(InstrDescriptor { m: 96, ..d }.encode(), "f16").is_err());
        assert!(InstrDescriptor::decode(d.encode() | 1 << 13, "f16").is_err());
    }

    /// The block-scaled descriptor: fields round-trip, the bits sit where JAX's Mosaic GPU
    /// puts them, and shapes other than M 128 are refused.
    #[test]
    fn scaled_instruction_descriptor_fields_round_trip() {
        for (af, ue8m0) in [(0u32, true), (1, true), (1, false)] {
            for n in (16..=256).step_by(16) {
                for sf in 0..4 {
                    let d = ScaledInstrDescriptor {
                        a_format: af,
                        b_format: af,
                        a_mn_major: false,
                        b_mn_major: false,
                        n,
                        m: 128,
                        ue8m0,
                        a_sf_id: sf,
                        b_sf_id: sf,
                    };
                    assert_eq!(ScaledInstrDescriptor::decode(d.encode()), Ok(d));
                }
            }
        }
        let d = ScaledInstrDescriptor {
            a_format: 0,
            b_format: 0,
            a_mn_major: false,
            b_mn_major: false,
            n: 128,
            m: 128,
            ue8m0: true,
            a_sf_id: 2,
            b_sf_id: 3,
        };
        assert_eq!(d.encode(), (3 << 4) | (16 << 17) | (1 << 23) | (1 << 27) | (2 << 29));
        assert!(ScaledInstrDescriptor::decode(ScaledInstrDescriptor { m: 256, ..d }.encode()).is_err());
        assert!(ScaledInstrDescriptor::decode(d.encode() | 1 << 24).is_err());
    }

    #[test]
    fn a_warp_reads_only_its_lane_quarter() {
        assert_eq!(ld_32x32b(5, 3, 32, 64, 2), Ok((35, 66)));
        assert!(ld_32x32b(5, 3, 0, 64, 2).is_err());
        assert_eq!(accumulator_cell(32, 128, 130, 5), (2, 32 + 128 + 5));
    }
}
