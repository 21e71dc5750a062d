//! Element types shared by every stage, with their MLIR and PTX spellings.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    I1,
    I8,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    /// Unsigned storage types: loaded, stored and cast; arithmetic takes a cast first.
    U8,
    U32,
    /// 8-bit floats (OCP FP8): storage and casts; E4M3 has no infinity (NaN is S.1111.111),
    /// E5M2 is the upper byte of an f16.
    F8E4M3,
    F8E5M2,
    /// Two OCP FP4 (E2M1) values packed in one byte, element 2i in the low nibble and 2i + 1
    /// in the high one (PyTorch's `float4_e2m1fn_x2`): a tensor of K fp4 values along a
    /// dim is K/2 of these. Storage only, moved as bytes (its value here is the byte); the
    /// block-scaled `mma_scaled` reads it as fp4 pairs along K.
    F4E2M1X2,
    /// Block-scale factors: an unsigned 8-bit exponent, 2^(e - 127), 0xFF NaN, no zero
    /// (MLIR's `f8E8M0FNU`); MXFP8's and MXFP4's scales.
    UE8M0,
    /// Block-scale factors: E4M3 without its sign bit (NVFP4's scales).
    UE4M3,
}

impl DType {
    pub const ALL: [DType; 15] = [
        DType::I1,
        DType::I8,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::U8,
        DType::U32,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::F4E2M1X2,
        DType::UE8M0,
        DType::UE4M3,
    ];

    /// The spelling in the tile language and the metadata JSON.
    pub fn name(self) -> &'static str {
        match self {
            DType::I1 => "i1",
            DType::I8 => "i8",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::U8 => "u8",
            DType::U32 => "u32",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
            DType::F4E2M1X2 => "f4e2m1x2",
            DType::UE8M0 => "ue8m0",
            DType::UE4M3 => "ue4m3",
        }
    }

    /// The MLIR element type.
    pub fn mlir_name(self) -> &'static str {
        match self {
            DType::U8 => "ui8",
            DType::U32 => "ui32",
            DType::F8E4M3 => "f8E4M3FN",
            DType::F8E5M2 => "f8E5M2",
            DType::F4E2M1X2 => F4_PAIR_MLIR,
            DType::UE8M0 => "f8E8M0FNU",
            // MLIR has no unsigned E4M3: its (signed, IEEE-style) `f8E4M3` names it here —
            // a spelling only, the tile IR never lets MLIR compute with it.
            DType::UE4M3 => "f8E4M3",
            d => d.name(),
        }
    }

    /// Parses the tile-language names (also `bool`, `int`, `float`, NumPy's names and the
    /// MLIR element types).
    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "i1" | "bool" => DType::I1,
            "i8" | "int8" => DType::I8,
            "i32" | "int" | "int32" => DType::I32,
            "i64" | "int64" => DType::I64,
            "f16" | "float16" => DType::F16,
            "bf16" | "bfloat16" => DType::BF16,
            "f32" | "float" | "float32" => DType::F32,
            "f64" | "float64" => DType::F64,
            "u8" | "uint8" | "ui8" => DType::U8,
            "u32" | "uint32" | "ui32" => DType::U32,
            "f8e4m3" | "float8_e4m3fn" | "f8E4M3FN" => DType::F8E4M3,
            "f8e5m2" | "float8_e5m2" | "f8E5M2" => DType::F8E5M2,
            "f4e2m1x2" | "float4_e2m1fn_x2" | F4_PAIR_MLIR => DType::F4E2M1X2,
            "ue8m0" | "float8_e8m0fnu" | "f8E8M0FNU" => DType::UE8M0,
            "ue4m3" | "f8E4M3" => DType::UE4M3,
            _ => return None,
        })
    }

    /// The 8-bit floats (OCP FP8), which the tensor cores multiply with `kind::f8f6f4`
    /// (`mma.sync` m16n8k32 from sm_89 on).
    pub fn is_fp8(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E5M2)
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F16
                | DType::BF16
                | DType::F32
                | DType::F64
                | DType::F8E4M3
                | DType::F8E5M2
                | DType::UE8M0
                | DType::UE4M3
        )
    }

    /// The block-scale factor types of `mma_scaled`.
    pub fn is_scale(self) -> bool {
        matches!(self, DType::UE8M0 | DType::UE4M3)
    }

    pub fn is_int(self) -> bool {
        !self.is_float()
    }

    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::U8 | DType::U32 | DType::F4E2M1X2)
    }

    /// Types the language only loads, stores and casts (arithmetic takes a cast first).
    pub fn is_storage_only(self) -> bool {
        matches!(
            self,
            DType::U8 | DType::U32 | DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1X2 | DType::UE8M0 | DType::UE4M3
        )
    }

    /// Storage size in bytes (i1 is stored as one byte).
    pub fn bytes(self) -> u32 {
        match self {
            DType::I1
            | DType::I8
            | DType::U8
            | DType::F8E4M3
            | DType::F8E5M2
            | DType::F4E2M1X2
            | DType::UE8M0
            | DType::UE4M3 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            DType::I1 => 1,
            d => d.bytes() * 8,
        }
    }

    /// Bit pattern of `v` rounded to this float type (for constants and padding values).
    pub fn float_bits(self, v: f64) -> u64 {
        match self {
            DType::F32 => u64::from((v as f32).to_bits()),
            DType::F64 => v.to_bits(),
            DType::F16 => u64::from(f32_to_f16_bits(to_f32_odd(v))),
            DType::BF16 => u64::from(f32_to_bf16_bits(to_f32_odd(v))),
            DType::F8E4M3 | DType::F8E5M2 => u64::from(to_fp8(v, self)),
            DType::UE8M0 => u64::from(to_ue8m0(v)),
            DType::UE4M3 => u64::from(to_ue4m3(v)),
            _ => v as i64 as u64,
        }
    }

    /// The little-endian bytes of `v` in this dtype (rounded, or wrapped for integers; a
    /// value outside an unsigned range wraps too).
    pub fn encode(self, v: f64, out: &mut [u8]) {
        match self {
            DType::F16 | DType::BF16 => out.copy_from_slice(&(self.float_bits(v) as u16).to_le_bytes()),
            DType::F32 => out.copy_from_slice(&(v as f32).to_le_bytes()),
            DType::F64 => out.copy_from_slice(&v.to_le_bytes()),
            DType::I32 | DType::U32 => out.copy_from_slice(&(wrap_int(v) as u32).to_le_bytes()),
            DType::I64 => out.copy_from_slice(&wrap_int(v).to_le_bytes()),
            DType::I8 | DType::U8 | DType::F4E2M1X2 => out[0] = wrap_int(v) as u8,
            DType::I1 => out[0] = u8::from(v != 0.0),
            DType::F8E4M3 | DType::F8E5M2 => out[0] = to_fp8(v, self),
            DType::UE8M0 => out[0] = to_ue8m0(v),
            DType::UE4M3 => out[0] = to_ue4m3(v),
        }
    }

    /// The integer in the little-endian bytes of one element of an integer or bool dtype,
    /// exactly: signed types sign-extended, unsigned zero-extended, bools 0 or 1 (`None` for
    /// a float dtype).
    pub fn decode_int(self, b: &[u8]) -> Option<i64> {
        let w4 = |b: &[u8]| [b[0], b[1], b[2], b[3]];
        Some(match self {
            DType::I1 => i64::from(b[0] != 0),
            DType::I8 => i64::from(b[0] as i8),
            DType::U8 | DType::F4E2M1X2 => i64::from(b[0]),
            DType::I32 => i64::from(i32::from_le_bytes(w4(b))),
            DType::U32 => i64::from(u32::from_le_bytes(w4(b))),
            DType::I64 => i64::from_le_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// `v` wrapped to this integer dtype (bools: `v != 0`), as little-endian bytes; a float
    /// dtype takes the nearest value.
    pub fn encode_int(self, v: i64, out: &mut [u8]) {
        match self {
            DType::I1 => out[0] = u8::from(v != 0),
            DType::I8 | DType::U8 | DType::F4E2M1X2 => out[0] = v as u8,
            DType::I32 | DType::U32 => out.copy_from_slice(&(v as u32).to_le_bytes()),
            DType::I64 => out.copy_from_slice(&v.to_le_bytes()),
            d => d.encode(v as f64, out),
        }
    }

    /// The value an integer dtype holds for the integer `v`: wrapped to its width (signed
    /// types sign-extended, unsigned zero-extended), bools `v != 0`; `v` itself for floats.
    pub fn wrap(self, v: i64) -> i64 {
        match self {
            DType::I1 => i64::from(v != 0),
            DType::I8 => i64::from(v as i8),
            DType::U8 | DType::F4E2M1X2 => i64::from(v as u8),
            DType::I32 => i64::from(v as i32),
            DType::U32 => i64::from(v as u32),
            _ => v,
        }
    }

    /// The value of the little-endian bytes of one element (exact for every dtype but i64
    /// above 2^53).
    pub fn decode(self, b: &[u8]) -> f64 {
        let w4 = |b: &[u8]| [b[0], b[1], b[2], b[3]];
        match self {
            DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
            DType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f64(),
            DType::F32 => f64::from(f32::from_le_bytes(w4(b))),
            DType::F64 => f64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
            DType::I32 => f64::from(i32::from_le_bytes(w4(b))),
            DType::U32 => f64::from(u32::from_le_bytes(w4(b))),
            DType::I64 => i64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as f64,
            DType::I8 => f64::from(b[0] as i8),
            DType::U8 | DType::F4E2M1X2 => f64::from(b[0]),
            DType::I1 => f64::from(u8::from(b[0] != 0)),
            DType::F8E4M3 | DType::F8E5M2 => from_fp8(b[0], self),
            DType::UE8M0 => from_ue8m0(b[0]),
            DType::UE4M3 => from_fp8(b[0] & 0x7f, DType::F8E4M3),
        }
    }

    /// `v` as this dtype holds it: floats rounded to nearest even (fp8 saturating to the
    /// largest finite value, as PTX's `.satfinite`), integers wrapped, bools 0 or 1.
    pub fn round(self, v: f64) -> f64 {
        match self {
            DType::F64 => v,
            // The interpreter rounds every element of every op: the common types directly.
            DType::F32 => f64::from(v as f32),
            DType::F16 => half::f16::from_bits(self.float_bits(v) as u16).to_f64(),
            DType::BF16 => half::bf16::from_bits(self.float_bits(v) as u16).to_f64(),
            DType::I32 => f64::from(wrap_int(v) as i32),
            DType::I1 => f64::from(u8::from(v != 0.0)),
            d => {
                let mut b = [0u8; 8];
                let n = d.bytes() as usize;
                d.encode(v, &mut b[..n]);
                d.decode(&b[..n])
            }
        }
    }
}

/// The MLIR spelling of [`DType::F4E2M1X2`]: a pair of fp4 values.
const F4_PAIR_MLIR: &str = "vector<2xf4E2M1FN>";

/// The value of ue8m0 bits: 2^(b - 127), NaN for 0xFF.
pub fn from_ue8m0(b: u8) -> f64 {
    if b == 0xff {
        f64::NAN
    } else {
        2f64.powi(i32::from(b) - 127)
    }
}

/// `v` as a ue8m0 scale, as `cvt.rz.satfinite.ue8m0x2.f32` converts an f32: the exponent of
/// `v` rounded to f32, rounded down (2^⌊log2 v⌋), within [2^-127, 2^127]; zero, subnormal
/// and tiny values give 2^-127, +inf 2^127, NaN and negative values NaN (0xFF).
pub fn to_ue8m0(v: f64) -> u8 {
    let f = v as f32;
    if f.is_nan() || f.is_sign_negative() && f != 0.0 {
        return 0xff;
    }
    let e = (f.to_bits() >> 23) & 0xff;
    e.min(0xfe) as u8
}

/// `v` as a ue4m3 scale: E4M3 rounded to nearest even and saturating, negative values 0,
/// NaN 0x7F.
pub fn to_ue4m3(v: f64) -> u8 {
    if v.is_nan() {
        return 0x7f;
    }
    to_fp8(v.max(0.0), DType::F8E4M3) & 0x7f
}

/// The value of an FP4 E2M1 nibble (the low 4 bits of `n`): ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
pub fn from_fp4(n: u8) -> f64 {
    const MAG: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let m = MAG[usize::from(n & 7)];
    if n & 8 != 0 {
        -m
    } else {
        m
    }
}

/// `v` as an FP4 E2M1 nibble: nearest, ties to the even encoding, saturating to ±6 (PTX's
/// `cvt.rn.satfinite.e2m1x2.f32`); E2M1 has no NaN: NaN gives +6; −0 gives +0.
pub fn to_fp4(v: f64) -> u8 {
    let sign = if v < 0.0 { 8u8 } else { 0 };
    if v.is_nan() {
        return 7;
    }
    let a = v.abs();
    // The midpoints between neighbouring magnitudes; at a tie the even encoding wins.
    let mut best = 0u8;
    for n in 1..8u8 {
        let (lo, hi) = (from_fp4(n - 1), from_fp4(n));
        let mid = (lo + hi) / 2.0;
        if a > mid || a == mid && n % 2 == 0 {
            best = n;
        } else {
            break;
        }
    }
    sign | best
}

/// Two values as one [`DType::F4E2M1X2`] byte: `lo` in the low nibble.
pub fn pack_fp4(lo: f64, hi: f64) -> u8 {
    to_fp4(lo) | to_fp4(hi) << 4
}

/// 2^63, exactly.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// An integral value (NaN → 0) as an i64 whose low bits are the wrapped value of any
/// narrower integer type.
fn wrap_int(v: f64) -> i64 {
    if v.is_nan() {
        0
    } else if !(-TWO_63..TWO_63).contains(&v) {
        // Beyond i64: the value modulo 2^64 of a float that large is 0 in its low 64 bits
        // (it is a multiple of 2^11 at least); the bits of the narrower types are 0 too.
        (v.rem_euclid(2.0 * TWO_63)) as u64 as i64
    } else {
        v as i64
    }
}

/// (exponent bits, mantissa bits, bias, largest finite value, NaN encoding) of an fp8 type.
fn fp8_format(d: DType) -> (i32, i32, i32, f64) {
    match d {
        DType::F8E4M3 => (4, 3, 7, 448.0),
        _ => (5, 2, 15, 57344.0),
    }
}

/// `v` rounded to fp8 (nearest even), saturating to ± the largest finite value (±inf too),
/// NaN → 0x7F (with the sign).
pub fn to_fp8(v: f64, d: DType) -> u8 {
    let (_, man, bias, max) = fp8_format(d);
    let sign = if v.is_sign_negative() { 0x80u8 } else { 0 };
    if v.is_nan() {
        return sign | 0x7f;
    }
    let a = v.abs();
    if a == 0.0 {
        return sign;
    }
    if a >= 2.0 * max {
        // Far beyond the range (±inf included): saturated, before any exponent arithmetic.
        return sign | to_fp8(max, d);
    }
    let emin = 1 - bias;
    let (e, m) = if a < 2f64.powi(emin) {
        // Subnormal: multiples of 2^(emin - man); a result of 2^man is the smallest normal.
        (0, (a / 2f64.powi(emin - man)).round_ties_even() as i64)
    } else {
        let mut e = a.log2().floor() as i32;
        // log2 may be off by one at exact powers of two.
        if 2f64.powi(e) > a {
            e -= 1;
        } else if 2f64.powi(e + 1) <= a {
            e += 1;
        }
        let mut m = (a / 2f64.powi(e - man)).round_ties_even() as i64;
        if m == 1 << (man + 1) {
            m >>= 1;
            e += 1;
        }
        (e + bias, m - (1 << man))
    };
    let value = if e == 0 {
        m as f64 * 2f64.powi(emin - man)
    } else {
        (1.0 + m as f64 / f64::from(1 << man)) * 2f64.powi(e - bias)
    };
    if value > max {
        return sign | to_fp8(max, d);
    }
    sign | (((e as u8) << man) + m as u8)
}

/// The value of fp8 bits.
pub fn from_fp8(b: u8, d: DType) -> f64 {
    let (ebits, man, bias, _) = fp8_format(d);
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((b >> man) & ((1 << ebits) - 1) as u8);
    let m = f64::from(b & ((1 << man) - 1) as u8);
    let all_ones = (1 << ebits) - 1;
    match d {
        DType::F8E4M3 if e == all_ones && m == f64::from((1 << man) - 1) => return f64::NAN,
        DType::F8E5M2 if e == all_ones && m != 0.0 => return f64::NAN,
        DType::F8E5M2 if e == all_ones => return sign * f64::INFINITY,
        _ => {}
    }
    if e == 0 {
        sign * m * 2f64.powi(1 - bias - man)
    } else {
        sign * (1.0 + m / f64::from(1 << man)) * 2f64.powi(e - bias)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Converts a value of dtype `from` to `to` (values held as f64, as the interpreter and the
/// constant folder hold them): float → int truncates toward zero and saturates to the
/// integer's range, NaN → 0 (PTX's `cvt.rzi` and LLVM's `fptosi.sat`); int → int wraps and
/// anything → float rounds to nearest even, both when the result is stored in its dtype.
pub fn convert(v: f64, from: DType, to: DType) -> f64 {
    if to.is_float() {
        // Through f32 to an fp8 type, as the GPU converts (`cvt.rn.satfinite.e4m3x2.f32`).
        return if matches!(to, DType::F8E4M3 | DType::F8E5M2 | DType::UE8M0 | DType::UE4M3) {
            f64::from(v as f32)
        } else {
            v
        };
    }
    if !from.is_float() {
        return v;
    }
    match to {
        DType::I8 => f64::from(v as i8),
        DType::I32 => f64::from(v as i32),
        DType::I64 => (v as i64) as f64,
        DType::U8 => f64::from(v as u8),
        DType::U32 => f64::from(v as u32),
        _ => f64::from(u8::from(v != 0.0)),
    }
}

/// IEEE binary16 conversion, round to nearest even (the rule of `cvt.rn.f16.f32`).
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let mut r = m >> shift;
        let rem = m & ((1 << shift) - 1);
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

/// `v` in f32 rounded to odd (toward zero, the last bit set when inexact): rounding that to
/// a type of at most 22 significant bits to nearest even is the single correct rounding of
/// `v` (half's `from_f64` drops the low 32 bits of the f64 first, and misrounds the ties
/// those bits break: 4 in 57344 bf16 sums of an f32 and a bf16 on the GPU check).
fn to_f32_odd(v: f64) -> f32 {
    let t = v as f32;
    if !t.is_finite() || f64::from(t) == v {
        return t;
    }
    let toward_zero = if f64::from(t).abs() > v.abs() { f32::from_bits(t.to_bits() - 1) } else { t };
    f32::from_bits(toward_zero.to_bits() | 1)
}

/// bfloat16 conversion, round to nearest even (the rule of `cvt.rn.bf16.f32`).
pub fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x40;
    }
    let lsb = (b >> 16) & 1;
    ((b + 0x7fff + lsb) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_matches_known_values() {
        assert_eq!(f32_to_f16_bits(1.0), 0x3c00);
        assert_eq!(f32_to_f16_bits(-2.0), 0xc000);
        assert_eq!(f32_to_f16_bits(65504.0), 0x7bff);
        assert_eq!(f32_to_f16_bits(1e6), 0x7c00);
        assert_eq!(f32_to_f16_bits(f32::NEG_INFINITY), 0xfc00);
        assert_eq!(f32_to_f16_bits(5.960_464_5e-8), 0x0001);
        assert_eq!(f32_to_f16_bits(0.1), 0x2e66);
    }

    #[test]
    fn bf16_conversion_rounds_to_nearest_even() {
        assert_eq!(f32_to_bf16_bits(1.0), 0x3f80);
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82);
    }

    #[test]
    fn f64_values_round_once_to_f16_and_bf16() {
        // 1 + 2^-8 + 2^-30 is past bf16's tie at 1 + 2^-8 by a bit half drops: it rounds up.
        let v = 1.0 + 2f64.powi(-8) + 2f64.powi(-30);
        assert_eq!(DType::BF16.round(v), 1.0 + 2f64.powi(-7));
        assert_eq!(DType::BF16.round(1.0 + 2f64.powi(-8)), 1.0);
        let v = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(DType::F16.round(v), 1.0 + 2f64.powi(-10));
        let mut b = [0u8; 2];
        DType::BF16.encode(-v, &mut b);
        assert_eq!(DType::BF16.decode(&b), -1.0);
        assert_eq!(DType::F16.float_bits(v), 0x3c01);
        // Exact values, infinities, NaN and tiny values keep their meaning.
        assert_eq!(DType::F16.round(0.1), f64::from(half::f16::from_f32(0.1)));
        assert_eq!(DType::BF16.round(f64::INFINITY), f64::INFINITY);
        assert!(DType::F16.round(f64::NAN).is_nan());
        assert_eq!(DType::F16.round(-1e-30), 0.0);
        assert!(DType::F16.round(-1e-30).is_sign_negative());
    }

    #[test]
    fn fp4_round_trips_every_nibble_and_rounds_to_nearest_even() {
        for n in (0..16u8).filter(|&n| n != 8) {
            let v = from_fp4(n);
            assert_eq!(to_fp4(v), n, "{n:#x} = {v}");
        }
        // −0 (0x8) is read, never written.
        assert_eq!(to_fp4(from_fp4(8)), 0);
        // Ties go to the even encoding: 1.25 (between 1 = 0b010 and 1.5 = 0b011) → 1,
        // 2.5 (between 2 = 0b100 and 3 = 0b101) → 2, 5 (between 4 = 0b110 and 6 = 0b111) → 4.
        assert_eq!(from_fp4(to_fp4(1.25)), 1.0);
        assert_eq!(from_fp4(to_fp4(2.5)), 2.0);
        assert_eq!(from_fp4(to_fp4(5.0)), 4.0);
        assert_eq!(from_fp4(to_fp4(0.25)), 0.0);
        assert_eq!(from_fp4(to_fp4(0.26)), 0.5);
        assert_eq!(from_fp4(to_fp4(-100.0)), -6.0);
        assert_eq!(pack_fp4(1.0, -6.0), 0xf2);
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::parse(d.name()), Some(d));
            assert_eq!(DType::parse(d.mlir_name()), Some(d));
        }
    }

    #[test]
    fn fp8_round_trips_every_encoding_and_rounds_to_nearest_even() {
        for d in [DType::F8E4M3, DType::F8E5M2] {
            for b in 0..=255u8 {
                let v = from_fp8(b, d);
                if v.is_nan() {
                    assert!(from_fp8(to_fp8(v, d), d).is_nan());
                } else if v.is_finite() {
                    assert_eq!(to_fp8(v, d), b, "{d} {b:#x} = {v}");
                }
            }
        }
        // E4M3: 1 + 1/16 is halfway between 1 and 1.125: even (1.0) wins; 1.1875 → 1.25.
        assert_eq!(from_fp8(to_fp8(1.0625, DType::F8E4M3), DType::F8E4M3), 1.0);
        assert_eq!(from_fp8(to_fp8(1.1875, DType::F8E4M3), DType::F8E4M3), 1.25);
        // Saturation (and no infinity in E4M3), the smallest subnormal, NaN.
        assert_eq!(from_fp8(to_fp8(1e6, DType::F8E4M3), DType::F8E4M3), 448.0);
        assert_eq!(from_fp8(to_fp8(f64::NEG_INFINITY, DType::F8E5M2), DType::F8E5M2), -57344.0);
        assert_eq!(from_fp8(to_fp8(2f64.powi(-9), DType::F8E4M3), DType::F8E4M3), 2f64.powi(-9));
        assert_eq!(from_fp8(to_fp8(2f64.powi(-11), DType::F8E4M3), DType::F8E4M3), 0.0);
        assert_eq!(from_fp8(0x7c, DType::F8E5M2), f64::INFINITY);
        assert!(from_fp8(0x7f, DType::F8E4M3).is_nan());
        assert_eq!(DType::F8E4M3.round(0.3), 0.3125);
        assert_eq!(DType::F8E5M2.round(f64::MAX), 57344.0);
        assert_eq!(DType::F8E4M3.round(-1e300), -448.0);
        // The scale types: powers of two rounded down, sign-less E4M3.
        assert_eq!(DType::UE8M0.round(3.9), 2.0);
        assert_eq!(DType::UE8M0.round(0.0), 2f64.powi(-127));
        assert_eq!(DType::UE8M0.round(f64::INFINITY), 2f64.powi(127));
        assert!(DType::UE8M0.round(-1.0).is_nan());
        assert_eq!(DType::UE4M3.round(-3.0), 0.0);
        assert_eq!(DType::UE4M3.round(1e9), 448.0);
        for b in 0..=0xfeu8 {
            assert_eq!(to_ue8m0(from_ue8m0(b)), b);
        }
        for b in 0..0x7fu8 {
            assert_eq!(to_ue4m3(DType::UE4M3.decode(&[b])), b);
        }
        // Integers wrap, unsigned ones too.
        assert_eq!(DType::U8.round(-1.0), 255.0);
        assert_eq!(DType::I8.round(200.0), -56.0);
        assert_eq!(DType::U32.round(-1.0), 4_294_967_295.0);
        assert_eq!(DType::I32.round(4_294_967_297.0), 1.0);
    }
}
