//! The block-scaled products (`mma_scaled`): which `mma.sync … block_scale` form a pair of
//! operand types and a scale type take, and which lane and byte of the scale registers the
//! instruction reads each scale factor from.
//!
//! Forms (PTX ISA, "Block scaling for mma.sync", the table of valid `.kind`, `.stype` and
//! `.scale_vec_size`; sm_120a/sm_121a only — sm_90a has no block scaling, sm_100a/sm_103a
//! have it in `tcgen05.mma` only):
//! - fp8 operands (e4m3/e5m2, mixed), ue8m0 per 32 of K: `kind::mxf8f6f4`, m16n8k32,
//!   `scale_vec::1X` (MXFP8);
//! - packed fp4 (e2m1) operands, ue8m0 per 32: `kind::mxf4`, m16n8k64, `scale_vec::2X` (MXFP4);
//! - packed fp4, ue4m3 per 16: `kind::mxf4nvf4`, m16n8k64, `scale_vec::4X` (NVFP4).
//!
//! The ISA's table also lists ue8m0 with `kind::mxf4nvf4` `scale_vec::4X` (ue8m0 every 16);
//! ptxas 13.0 refuses it ("Illegal modifier '.scale_vec::4X' … with type '.ue8m0'"), so it is
//! not a form here.
//!
//! Scale registers: each lane passes one 32-bit register per operand with an immediate
//! selector (byte-id, thread-id). Row m of the 16-row A block is read from lane
//! `4·(m mod 8) + 2·thread-id + ⌊m / 8⌋`, column n of the 8-column B block from lane
//! `4·n + thread-id`; the `scale_vec` factors of one row (column) are consecutive bytes from
//! byte-id on (K block j of the instruction in byte byte-id + j), so 2X takes byte-id 0 or 2
//! and 4X byte-id 0. The lane map was probed on sm_120 hardware by a public MXFP8 kernel
//! (it agrees with CUTLASS's sm_120 scale-factor layouts); the byte order within a register
//! is the ISA's. Nothing here has run on an sm_121 GPU: the `tests` check the lowering's
//! placement against this model of the instruction and the interpreter's definition of the
//! product, which is all that can be checked without one.

use crate::DType;

/// The `.kind` of a block-scaled `mma.sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleKind {
    Mxf8f6f4,
    Mxf4,
    Mxf4Nvf4,
}

/// One block-scaled instruction form, as `mma_scaled`'s types pick it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaledForm {
    pub kind: ScaleKind,
    /// K elements one scale factor covers.
    pub block: i64,
    /// K elements of one instruction (32: m16n8k32; 64: m16n8k64).
    pub k_step: i64,
    /// Scale factors of one row (column) per instruction: `scale_vec::{vec}X`.
    pub vec: i64,
    /// K elements per operand tile element (2 for packed fp4).
    pub pack: i64,
    pub scale: DType,
}

impl ScaledForm {
    /// The form for operands `a`, `b` scaled by `scale` every `block` elements of K, or why
    /// none takes them.
    pub fn of(a: DType, b: DType, scale: DType, block: i64) -> Result<ScaledForm, String> {
        let form = |kind, k_step, pack| ScaledForm { kind, block, k_step, vec: k_step / block, pack, scale };
        match (a, b, scale, block) {
            (x, y, DType::UE8M0, 32) if x.is_fp8() && y.is_fp8() => Ok(form(ScaleKind::Mxf8f6f4, 32, 1)),
            (DType::F4E2M1X2, DType::F4E2M1X2, DType::UE8M0, 32) => Ok(form(ScaleKind::Mxf4, 64, 2)),
            (DType::F4E2M1X2, DType::F4E2M1X2, DType::UE4M3, 16) => Ok(form(ScaleKind::Mxf4Nvf4, 64, 2)),
            _ => Err(format!(
                "no block-scaled product of {a} x {b} with {scale} scales every {block} elements of K: the forms are fp8 (f8e4m3, f8e5m2) with ue8m0 every 32 (MXFP8), f4e2m1x2 with ue8m0 every 32 (MXFP4), and f4e2m1x2 with ue4m3 every 16 (NVFP4)"
            )),
        }
    }

    /// The `.kind` name (`mxf8f6f4`, `mxf4`, `mxf4nvf4`), shared by `mma.sync` and
    /// `tcgen05.mma`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            ScaleKind::Mxf8f6f4 => "mxf8f6f4",
            ScaleKind::Mxf4 => "mxf4",
            ScaleKind::Mxf4Nvf4 => "mxf4nvf4",
        }
    }

    /// The PTX instruction (`mma.sync.aligned… block_scale…`) for operand types `a`, `b`.
    pub fn ptx(&self, a: DType, b: DType) -> String {
        let ty = |d: DType| match d {
            DType::F8E5M2 => "e5m2",
            DType::F4E2M1X2 => "e2m1",
            _ => "e4m3",
        };
        let kind = self.kind_name();
        format!(
            "mma.sync.aligned.m16n8k{}.row.col.kind::{kind}.block_scale.scale_vec::{}X.f32.{}.{}.f32.{}",
            self.k_step,
            self.vec,
            ty(a),
            ty(b),
            self.scale.name()
        )
    }
}

/// The form of `mma_scaled(a, a_scale, b, b_scale, acc)` over tiles of these shapes and
/// types (`a` M×Ka, `a_scale` M×Ks, `b` Ka×N, `b_scale` Ks×N, `acc` M×N f32, Ka the K extent
/// in tile elements), or why it has none.
/// Shapes and types come in the operands' order: a, a_scale, b, b_scale, acc.
pub fn scaled_mma_form(shapes: [&[i64]; 5], types: [DType; 5]) -> Result<ScaledForm, String> {
    let [a, sa, b, sb, acc] = shapes;
    let [ta, tsa, tb, tsb, tacc] = types;
    let dims = |s: &[i64]| if let [x, y] = s { Some((*x, *y)) } else { None };
    let (Some((m, ka)), Some((m2, ks)), Some((ka2, n)), Some((ks2, n2)), Some((m3, n3))) =
        (dims(a), dims(sa), dims(b), dims(sb), dims(acc))
    else {
        return Err(format!("mma_scaled takes 2-D tiles, got {a:?}, {sa:?}, {b:?}, {sb:?}, {acc:?}"));
    };
    if ka != ka2 || m != m2 || m != m3 || n != n2 || n != n3 || ks != ks2 {
        return Err(format!(
            "mma_scaled of a {m}x{ka} and a {ka2}x{n} tile with scales {m2}x{ks} and {ks2}x{n2} into {m3}x{n3}: a is MxK, a_scale MxKs, b KxN, b_scale KsxN, acc MxN"
        ));
    }
    if tsa != tsb {
        return Err(format!("mma_scaled's scales are {tsa} and {tsb}: both take one type"));
    }
    if tacc != DType::F32 {
        return Err(format!("mma_scaled accumulates in f32, not {tacc}"));
    }
    let pack = if ta == DType::F4E2M1X2 { 2 } else { 1 };
    let k = ka * pack;
    if ks < 1 || k % ks != 0 {
        return Err(format!("mma_scaled over K = {k} with {ks} scales a row: K must be a multiple of Ks"));
    }
    let f = ScaledForm::of(ta, tb, tsa, k / ks)?;
    if k % f.k_step != 0 {
        return Err(format!(
            "mma_scaled over K = {k}: the {} instruction takes K in steps of {}",
            f.ptx(ta, tb),
            f.k_step
        ));
    }
    Ok(f)
}

/// The lane the instruction reads row `m` (0..16) of the A scales from, at thread-id `tid`.
pub fn scale_a_lane(m: i64, tid: i64) -> i64 {
    4 * (m % 8) + 2 * tid + m / 8
}

/// The lane the instruction reads column `n` (0..8) of the B scales from, at thread-id `tid`.
pub fn scale_b_lane(n: i64, tid: i64) -> i64 {
    4 * n + tid
}

/// The row of the 16-row block whose A scales lane `lane` supplies (the lowering's side, at
/// thread-id 0). Every lane gets a row — lanes the instruction does not read load a valid
/// one too, which keeps the loads unpredicated.
pub fn a_row_of_lane(lane: i64) -> i64 {
    lane / 4 + 8 * (lane % 2)
}

/// The column of the 8-column block whose B scales lane `lane` supplies (thread-id 0).
pub fn b_col_of_lane(lane: i64) -> i64 {
    lane / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{from_fp4, from_fp8, from_ue8m0};

    /// A tiny deterministic generator (no dependency for one test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u8 {
            self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) as u8
        }
    }

    /// The value of byte `byte` of an operand register as element(s) of `d`: one fp8 value,
    /// or two fp4 values (low nibble first).
    fn values(byte: u8, d: DType) -> Vec<f64> {
        match d {
            DType::F4E2M1X2 => vec![from_fp4(byte), from_fp4(byte >> 4)],
            _ => vec![from_fp8(byte, d)],
        }
    }

    fn scale_value(byte: u8, d: DType) -> f64 {
        if d == DType::UE8M0 {
            from_ue8m0(byte)
        } else {
            from_fp8(byte & 0x7f, DType::F8E4M3)
        }
    }

    /// The instruction as the ISA defines it, one warp: A, B fragments of the 8-bit m16n8k32
    /// layout (for fp4 each byte holds two K elements), the scale registers read through the
    /// selectors (byte-id 0, thread-id 0), D = (A·SA)(B·SB) with products exact in f64.
    fn hardware(
        f: &ScaledForm,
        (ta, tb): (DType, DType),
        a_bytes: &[[u8; 32]; 16],
        b_bytes: &[[u8; 32]; 8],
        sa_reg: &[u32; 32],
        sb_reg: &[u32; 32],
    ) -> [[f64; 8]; 16] {
        let mut d = [[0.0; 8]; 16];
        for (m, row) in d.iter_mut().enumerate() {
            for (n, out) in row.iter_mut().enumerate() {
                let mut s = 0.0;
                for kb in 0..32 {
                    let av = values(a_bytes[m][kb], ta);
                    let bv = values(b_bytes[n][kb], tb);
                    for (e, (x, y)) in av.iter().zip(&bv).enumerate() {
                        let k = kb as i64 * f.pack + e as i64;
                        let j = k / f.block;
                        let sa = (sa_reg[scale_a_lane(m as i64, 0) as usize] >> (8 * j)) as u8;
                        let sb = (sb_reg[scale_b_lane(n as i64, 0) as usize] >> (8 * j)) as u8;
                        s += x * scale_value(sa, f.scale) * y * scale_value(sb, f.scale);
                    }
                }
                *out = s;
            }
        }
        d
    }

    /// Every form: the scale registers filled as the lowering fills them (lane `l` packs the
    /// factors of row `a_row_of_lane(l)` and column `b_col_of_lane(l)`, K block j in byte j),
    /// read back through the instruction's selectors, give the product the interpreter
    /// defines (`Σ_k a·sa[k/V]·b·sb[k/V]`).
    #[test]
    fn scale_registers_as_lowered_give_the_defined_product() {
        let forms = [
            (DType::F8E4M3, DType::F8E5M2, DType::UE8M0, 32),
            (DType::F4E2M1X2, DType::F4E2M1X2, DType::UE8M0, 32),
            (DType::F4E2M1X2, DType::F4E2M1X2, DType::UE4M3, 16),
        ];
        let mut rng = Lcg(7);
        for (ta, tb, ts, block) in forms {
            let f = ScaledForm::of(ta, tb, ts, block).unwrap();
            assert_eq!(f.k_step, 32 * f.pack);
            assert_eq!(f.vec * f.block, f.k_step);
            // Finite operands (fp8 bytes without NaN), scales near 1.
            let finite = |rng: &mut Lcg, d: DType| loop {
                let b = rng.next();
                if values(b, d).iter().all(|v| v.is_finite()) {
                    return b;
                }
            };
            let mut a = [[0u8; 32]; 16];
            let mut b = [[0u8; 32]; 8];
            a.iter_mut().flatten().for_each(|x| *x = finite(&mut rng, ta));
            b.iter_mut().flatten().for_each(|x| *x = finite(&mut rng, tb));
            let scale = |rng: &mut Lcg| if ts == DType::UE8M0 { 120 + rng.next() % 16 } else { 0x30 + rng.next() % 32 };
            let sa: Vec<Vec<u8>> = (0..16).map(|_| (0..f.vec).map(|_| scale(&mut rng)).collect()).collect();
            let sb: Vec<Vec<u8>> = (0..8).map(|_| (0..f.vec).map(|_| scale(&mut rng)).collect()).collect();
            let pack = |s: &[u8]| s.iter().enumerate().fold(0u32, |r, (j, &x)| r | u32::from(x) << (8 * j));
            let sa_reg: [u32; 32] = std::array::from_fn(|l| pack(&sa[a_row_of_lane(l as i64) as usize]));
            let sb_reg: [u32; 32] = std::array::from_fn(|l| pack(&sb[b_col_of_lane(l as i64) as usize]));
            let got = hardware(&f, (ta, tb), &a, &b, &sa_reg, &sb_reg);
            for m in 0..16 {
                for n in 0..8 {
                    let mut want = 0.0;
                    for k in 0..f.k_step {
                        let (kb, e) = ((k / f.pack) as usize, (k % f.pack) as usize);
                        let j = (k / f.block) as usize;
                        want += values(a[m][kb], ta)[e]
                            * scale_value(sa[m][j], ts)
                            * values(b[n][kb], tb)[e]
                            * scale_value(sb[n][j], ts);
                    }
                    assert_eq!(got[m][n], want, "{f:?} ({m}, {n})");
                }
            }
        }
    }

    #[test]
    fn every_lane_map_is_a_bijection_onto_the_lanes_read() {
        for tid in 0..2 {
            let lanes: std::collections::BTreeSet<i64> = (0..16).map(|m| scale_a_lane(m, tid)).collect();
            assert_eq!(lanes.len(), 16);
            let lanes: std::collections::BTreeSet<i64> = (0..8).map(|n| scale_b_lane(n, tid)).collect();
            assert_eq!(lanes.len(), 8);
        }
        for m in 0..16 {
            assert_eq!(a_row_of_lane(scale_a_lane(m, 0)), m);
        }
        for n in 0..8 {
            assert_eq!(b_col_of_lane(scale_b_lane(n, 0)), n);
        }
    }

    #[test]
    fn forms_and_their_ptx() {
        let f = ScaledForm::of(DType::F4E2M1X2, DType::F4E2M1X2, DType::UE4M3, 16).unwrap();
        assert_eq!(
            f.ptx(DType::F4E2M1X2, DType::F4E2M1X2),
            "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"
        );
        let f = ScaledForm::of(DType::F8E4M3, DType::F8E4M3, DType::UE8M0, 32).unwrap();
        assert_eq!(
            f.ptx(DType::F8E4M3, DType::F8E4M3),
            "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0"
        );
        assert!(ScaledForm::of(DType::F8E4M3, DType::F8E4M3, DType::UE4M3, 16).is_err());
        assert!(ScaledForm::of(DType::F4E2M1X2, DType::F4E2M1X2, DType::UE8M0, 16).is_err());
        assert!(ScaledForm::of(DType::F16, DType::F16, DType::UE8M0, 32).is_err());
    }
}
