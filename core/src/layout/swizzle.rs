//! `#tilegpu.swizzled_shared<vec, perPhase, maxPhase, order>`: a 2-D tile in shared memory
//! with an XOR swizzle (Triton's `SwizzledSharedEncoding`).
//!
//! The tile is stored with dim `order[0]` contiguous ("columns") and `order[1]` as rows. The
//! columns of a row are grouped in vectors of `vec` elements; vector `c` of row `r` is stored
//! at vector position `c ^ ((r / perPhase) % maxPhase)` of the same row. Every row is a
//! permutation of itself, so a 16-byte vector written by one thread stays contiguous, and the
//! eight 16-byte rows one `ldmatrix` phase reads (one column vector of eight rows) land in
//! eight different groups of four banks.
//!
//! `#tilegpu.nvmma_shared<swizzleBytes, vec, order>` is the layout the asynchronous tensor
//! cores read through a matrix descriptor (`wgmma`; Triton's NVMMA shared layout, CUTLASS's
//! `Swizzle<B,4,3>` atoms): the contiguous dim is cut into atoms of `swizzleBytes` (32, 64
//! or 128) bytes, each atom a column block of every row stored one after the other, and the
//! 16-byte vectors of a row XOR-permuted within the atom by the row's phase — exactly the
//! byte-address swizzle the hardware applies, bits 4.. XOR bits 7.. of the offset. It is a
//! `SwizzledShared` with `atom` set: `vec` 16 bytes, `maxPhase` = swizzleBytes / 16, `perPhase`
//! = 128 / swizzleBytes. An atom of 8 rows spans 8 · swizzleBytes bytes (1024 for 128B), the
//! alignment the buffer needs so that the hardware's phase is the row's.

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct SwizzledShared {
    pub vec: i64,
    pub per_phase: i64,
    pub max_phase: i64,
    /// Dims from fastest to slowest.
    pub order: [usize; 2],
    /// 0: every row is stored whole; else the elements of the contiguous dim one atom holds
    /// (the NVMMA layout, see the module docs).
    pub atom: i64,
}

impl SwizzledShared {
    /// The swizzle of a buffer of `shape` stored along `order` with the fewest extra
    /// wavefronts ([`SwizzledShared::conflicts`]) among 16-byte vectors and `perPhase`,
    /// `maxPhase` in 1, 2, 4, 8; on a tie the fewest phases, then the fewest rows a phase
    /// (the least index math). For 16-bit rows of 16 to 512 bytes (the property test's range)
    /// that is conflict-free: as many rows a phase as fit in 128 bytes, as many phases as an
    /// 8×8 matrix has rows.
    pub fn least_conflicts(shape: &[i64], elem_bytes: i64, order: [usize; 2]) -> SwizzledShared {
        let mut best = SwizzledShared::plain(elem_bytes, order);
        let mut cost = best.conflicts(shape, elem_bytes);
        for max_phase in [1, 2, 4, 8] {
            for per_phase in [1, 2, 4, 8] {
                let s = SwizzledShared { per_phase, max_phase, ..best.clone() };
                let c = s.conflicts(shape, elem_bytes);
                if c.0 + c.1 < cost.0 + cost.1 {
                    (best, cost) = (s, c);
                }
            }
        }
        best
    }

    /// Extra wavefronts of (`ldmatrix` reads, 16-byte writes) of a buffer of `shape`.
    pub fn conflicts(&self, shape: &[i64], elem_bytes: i64) -> (i64, i64) {
        (self.ldmatrix_conflicts(shape, elem_bytes), self.write_conflicts(shape, elem_bytes))
    }

    /// No swizzle: 16-byte vectors, every row in place (what `tile-layout` makes and
    /// `tile-swizzle` replaces).
    pub fn plain(elem_bytes: i64, order: [usize; 2]) -> SwizzledShared {
        SwizzledShared { vec: (16 / elem_bytes.max(1)).max(1), per_phase: 1, max_phase: 1, order, atom: 0 }
    }

    /// The NVMMA layout of `swizzle_bytes` (32, 64 or 128) for elements of `elem_bytes`.
    pub fn nvmma(swizzle_bytes: i64, elem_bytes: i64, order: [usize; 2]) -> SwizzledShared {
        let vec = (16 / elem_bytes.max(1)).max(1);
        SwizzledShared {
            vec,
            per_phase: 128 / swizzle_bytes,
            max_phase: swizzle_bytes / 16,
            order,
            atom: swizzle_bytes / 16 * vec,
        }
    }

    /// The widest NVMMA swizzle a buffer whose contiguous dim holds `cols` elements of
    /// `elem_bytes` can take: 128 bytes, else 64, else 32 (`None` under 32 bytes).
    pub fn nvmma_for(cols: i64, elem_bytes: i64, order: [usize; 2]) -> Option<SwizzledShared> {
        [128, 64, 32]
            .into_iter()
            .find(|&b| cols * elem_bytes >= b && (cols * elem_bytes) % b == 0)
            .map(|b| SwizzledShared::nvmma(b, elem_bytes, order))
    }

    /// The swizzle width in bytes of an NVMMA layout (`None` for the whole-row layouts).
    pub fn nvmma_bytes(&self) -> Option<i64> {
        (self.atom != 0).then_some(self.max_phase * 16)
    }

    /// Extra wavefronts of 16-byte writes to a buffer of `shape` whose writers take the
    /// 16-byte chunks in row-major order, eight lanes (128 bytes, one wavefront) at a time:
    /// the async copies of `tile-layout` and register stores of 16-byte vectors. 0 when each
    /// group of eight chunks falls in eight distinct groups of four banks.
    pub fn write_conflicts(&self, shape: &[i64], elem_bytes: i64) -> i64 {
        let (cd, rd) = (self.order[0], self.order[1]);
        let (rows, cols) = (shape[rd], shape[cd]);
        let vec = (16 / elem_bytes.max(1)).max(1);
        let per_row = (cols / vec).max(1);
        let chunks = rows * per_row;
        let mut extra = 0;
        let mut q = 0;
        while q < chunks {
            let mut groups = [0i64; 8];
            for k in q..(q + 8).min(chunks) {
                let mut c = vec![0; 2];
                c[rd] = k / per_row;
                c[cd] = (k % per_row) * vec;
                let g = (self.offset(shape, &c) * elem_bytes / 16).rem_euclid(8);
                groups[g as usize] += 1;
            }
            extra += groups.iter().max().copied().unwrap_or(1) - 1;
            q += 8;
        }
        extra
    }

    /// The element offset of coordinate `c` (`[dim0, dim1]`) of a tile of `shape`.
    pub fn offset(&self, shape: &[i64], c: &[i64]) -> i64 {
        let (col_d, row_d) = (self.order[0], self.order[1]);
        let (rows, cols) = (shape[row_d], shape[col_d]);
        let (r, col) = (c[row_d], c[col_d]);
        let phase = (r / self.per_phase) % self.max_phase;
        // The whole-row layout is the NVMMA one with a single atom as wide as the row.
        let atom = if self.atom == 0 { cols } else { self.atom };
        let (block, within) = (col / atom, col % atom);
        let v = (within / self.vec) ^ phase;
        block * rows * atom + r * atom + v * self.vec + col % self.vec
    }

    /// Elements the buffer spans.
    pub fn size(&self, shape: &[i64]) -> i64 {
        shape.iter().product()
    }

    /// Bank conflicts of `ldmatrix` reads from a buffer of `shape` (CPU model): each read
    /// phase is one 16-byte vector column of 8 consecutive rows; the 8 addresses should fall
    /// in 8 distinct groups of four 4-byte banks. Returns the extra wavefronts over all phases
    /// (0: conflict-free).
    pub fn ldmatrix_conflicts(&self, shape: &[i64], elem_bytes: i64) -> i64 {
        let (cd, rd) = (self.order[0], self.order[1]);
        let (rows, cols) = (shape[rd], shape[cd]);
        let vec = (16 / elem_bytes.max(1)).max(1);
        let mut extra = 0;
        let mut r0 = 0;
        while r0 + 8 <= rows {
            for v in 0..cols / vec {
                let mut groups = [0i64; 8];
                for i in 0..8 {
                    let mut c = vec![0; 2];
                    c[rd] = r0 + i;
                    c[cd] = v * vec;
                    let g = (self.offset(shape, &c) * elem_bytes / 16).rem_euclid(8);
                    groups[g as usize] += 1;
                }
                extra += groups.iter().max().copied().unwrap_or(1) - 1;
            }
            r0 += 8;
        }
        extra
    }

    pub fn to_mlir(&self) -> String {
        if let Some(b) = self.nvmma_bytes() {
            return format!(
                "#tilegpu.nvmma_shared<{b} : i64, {} : i64, [{}, {}]>",
                self.vec, self.order[0], self.order[1]
            );
        }
        format!(
            "#tilegpu.swizzled_shared<{} : i64, {} : i64, {} : i64, [{}, {}]>",
            self.vec, self.per_phase, self.max_phase, self.order[0], self.order[1]
        )
    }

    /// Reads [`SwizzledShared::to_mlir`]'s text.
    pub fn parse(text: &str) -> Option<SwizzledShared> {
        let num = |s: &str| s.split(':').next()?.trim().parse::<i64>().ok().filter(|x| *x >= 1);
        if let Some(inner) = text.trim().strip_prefix("#tilegpu.nvmma_shared<").and_then(|t| t.strip_suffix('>')) {
            let parts = super::split_top(inner)?;
            let [b, v, ord] = parts.as_slice() else { return None };
            let (b, v) = (num(b).filter(|b| [32, 64, 128].contains(b))?, num(v).filter(|v| [2, 4, 8, 16].contains(v))?);
            return Some(SwizzledShared::nvmma(b, 16 / v, Self::parse_order(ord)?));
        }
        let inner = text.trim().strip_prefix("#tilegpu.swizzled_shared<")?.strip_suffix('>')?;
        let parts = super::split_top(inner)?;
        let [v, pp, mp, ord] = parts.as_slice() else { return None };
        Some(SwizzledShared {
            vec: num(v)?,
            per_phase: num(pp)?,
            max_phase: num(mp)?,
            order: Self::parse_order(ord)?,
            atom: 0,
        })
    }

    fn parse_order(ord: &str) -> Option<[usize; 2]> {
        let ord: Vec<usize> = ord
            .trim()
            .strip_prefix('[')?
            .strip_suffix(']')?
            .split(',')
            .map(|x| x.split(':').next().unwrap_or("").trim().parse().ok())
            .collect::<Option<_>>()?;
        match ord.as_slice() {
            [0, 1] => Some([0, 1]),
            [1, 0] => Some([1, 0]),
            _ => None,
        }
    }
}
