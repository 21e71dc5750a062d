//! Element types shared by every stage, with their MLIR and PTX spellings.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    I1,
    I32,
    I64,
    F16,
    BF16,
    F32,
}

impl DType {
    pub const ALL: [DType; 6] = [DType::I1, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32];

    /// The spelling in the tile language, MLIR and the metadata JSON.
    pub fn name(self) -> &'static str {
        match self {
            DType::I1 => "i1",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
        }
    }

    /// Parses the tile-language names (also accepts `bool`, `int`, `float`).
    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "i1" | "bool" => DType::I1,
            "i32" | "int" | "int32" => DType::I32,
            "i64" | "int64" => DType::I64,
            "f16" | "float16" => DType::F16,
            "bf16" | "bfloat16" => DType::BF16,
            "f32" | "float" | "float32" => DType::F32,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32)
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::I1 | DType::I32 | DType::I64)
    }

    /// Storage size in bytes (i1 is stored as one byte).
    pub fn bytes(self) -> u32 {
        match self {
            DType::I1 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 => 8,
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
            DType::F16 => u64::from(f32_to_f16_bits(v as f32)),
            DType::BF16 => u64::from(f32_to_bf16_bits(v as f32)),
            _ => v as i64 as u64,
        }
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
    if !from.is_float() || to.is_float() {
        return v;
    }
    match to {
        DType::I32 => f64::from(v as i32),
        DType::I64 => (v as i64) as f64,
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
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::parse(d.name()), Some(d));
        }
    }
}
