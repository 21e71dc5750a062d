//! The shared-memory matrix descriptor of `wgmma` (and, with its extra fields, `tcgen05`),
//! decoded from the PTX ISA's tables ("Matrix Descriptor Format" and the canonical layouts
//! of "Shared Memory Matrix Layout"), independently of the code that builds descriptors: the
//! tests of the lowering check that every descriptor it emits makes the hardware read each
//! operand element from the byte the buffer's layout put it at. This is how descriptor code
//! is checked on the CPU, for targets we cannot run as for the one we can.

/// The fields of a 64-bit matrix descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixDescriptor {
    /// Start address in bytes (bits 0-13, in units of 16 bytes).
    pub start: i64,
    /// Leading dimension byte offset (bits 16-29, units of 16 bytes).
    pub lbo: i64,
    /// Stride dimension byte offset (bits 32-45, units of 16 bytes).
    pub sbo: i64,
    /// Swizzle width in bytes: 128, 64, 32, or 0 for none (bits 62-63: 1, 2, 3, 0).
    pub swizzle: i64,
}

impl MatrixDescriptor {
    pub fn decode(bits: u64) -> MatrixDescriptor {
        let field = |lo: u32, width: u32| ((bits >> lo) & ((1u64 << width) - 1)) as i64;
        MatrixDescriptor {
            start: field(0, 14) << 4,
            lbo: field(16, 14) << 4,
            sbo: field(32, 14) << 4,
            swizzle: match field(62, 2) {
                1 => 128,
                2 => 64,
                3 => 32,
                _ => 0,
            },
        }
    }

    /// A `tcgen05` shared-memory descriptor (PTX ISA, "Shared memory descriptor" of the
    /// tcgen05 chapter): the same start, leading and stride fields as wgmma's, the fixed
    /// version 0b001 in bits 46-48, the base offset (bits 49-51) and leading-offset mode (bit
    /// 52) zero for buffers aligned to their swizzle's repeat, and the layout in bits 61-63 —
    /// 0 none, 2 128-byte, 4 64-byte, 6 32-byte swizzle (1, 128 bytes with 32-byte atoms, is
    /// refused: tilec never builds it). The canonical layouts are wgmma's, so [`Self::address`]
    /// serves both.
    pub fn decode_tcgen05(bits: u64) -> Result<MatrixDescriptor, String> {
        let field = |lo: u32, width: u32| ((bits >> lo) & ((1u64 << width) - 1)) as i64;
        if field(46, 3) != 1 {
            return Err(format!("{bits:#018x}: version bits 46-48 are {:#b}, not 0b001", field(46, 3)));
        }
        if field(49, 4) != 0 || field(14, 2) != 0 || field(30, 2) != 0 || field(53, 8) != 0 {
            return Err(format!("{bits:#018x}: base offset, leading-offset mode or reserved bits set"));
        }
        let swizzle = match field(61, 3) {
            0 => 0,
            2 => 128,
            4 => 64,
            6 => 32,
            x => return Err(format!("{bits:#018x}: layout type {x}")),
        };
        Ok(MatrixDescriptor { start: field(0, 14) << 4, lbo: field(16, 14) << 4, sbo: field(32, 14) << 4, swizzle })
    }

    /// The shared-memory byte address the hardware reads element (`mn`, `k`) of the
    /// operand at — `mn` along M (A) or N (B), `k` along K — for elements of `elem` bytes,
    /// the operand K-major (contiguous along K) or MN-major. The canonical layouts, in bytes,
    /// before the swizzle: K-major, 8-row groups of `swizzle`-byte rows `sbo` apart along
    /// MN, K contiguous within a row; MN-major, `swizzle`-byte runs of MN, 8 of them (8 K)
    /// making a group, groups `sbo` apart along K and runs `lbo` apart along MN. The swizzle
    /// then XORs address bits 4.. with bits 7.. (Swizzle<log2(swizzle/16), 4, 3>), on the
    /// address as a whole: buffers are aligned to the swizzle's repeat (1024 bytes for 128).
    pub fn address(&self, k_major: bool, mn: i64, k: i64, elem: i64) -> i64 {
        let row = if self.swizzle == 0 { 16 } else { self.swizzle };
        let off = if k_major {
            (mn / 8) * self.sbo + (mn % 8) * row + (k * elem / row) * self.lbo + (k * elem) % row
        } else {
            (mn * elem / row) * self.lbo + (k / 8) * self.sbo + (k % 8) * row + (mn * elem) % row
        };
        let addr = self.start + off;
        let bits = (self.swizzle / 16).max(1).trailing_zeros();
        if self.swizzle == 0 {
            addr
        } else {
            addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_decode_from_their_bits() {
        let bits = (5u64) | (1 << 16) | (64 << 32) | (1 << 62);
        let d = MatrixDescriptor::decode(bits);
        assert_eq!(d, MatrixDescriptor { start: 80, lbo: 16, sbo: 1024, swizzle: 128 });
        // 128-byte swizzle, K-major: row 1's first 16-byte chunk lands in chunk 1 of the row.
        let z = MatrixDescriptor { start: 0, ..d };
        assert_eq!(z.address(true, 1, 0, 2), 128 + 16);
        assert_eq!(z.address(true, 0, 8, 2), 16);
        assert_eq!(z.address(true, 8, 0, 2), 1024);
        // The tcgen05 form of the same descriptor: version 1 at bit 46, 128B swizzle = 2 at 61.
        let t = (5u64) | (1 << 16) | (64 << 32) | (1 << 46) | (2 << 61);
        assert_eq!(MatrixDescriptor::decode_tcgen05(t), Ok(d));
        assert!(MatrixDescriptor::decode_tcgen05(t & !(1 << 46)).is_err());
        assert!(MatrixDescriptor::decode_tcgen05((t & !(7 << 61)) | (1 << 61)).is_err());
    }
}
