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
    }
}
