//! Distributed layouts: which thread of a block holds which element of a tile.
//!
//! A tile at the `tilegpu` level carries one layout. Every element of a tile with a layout
//! lives in exactly one (warp, lane, register) triple — or, for a `#slice`, in every thread
//! whose parent coordinates agree (the slice is replicated along the reduced dimension, which
//! is what lets a reduced row statistic meet its row again without moving data).
//!
//! The element coordinate of register `r` in thread (warp, lane) is
//! `thread_base(warp, lane)[d] + reg_offset(r)[d]`: a run-time part that depends only on the
//! thread and a compile-time part that depends only on the register. The lowering relies on
//! this split: addresses are one base pointer per thread plus constant offsets.

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
    /// The parent layout with `dim` reduced to extent 1 (keepdims reduction result).
    Slice {
        dim: usize,
        parent: Box<Layout>,
    },
}

/// Why no layout could be built for a shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    NotPowerOfTwo(Vec<i64>),
    TooSmall { elements: i64 },
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::NotPowerOfTwo(s) => write!(f, "tile shape {s:?} has a dimension that is not a power of two"),
            LayoutError::TooSmall { elements } => {
                write!(f, "a tile of {elements} elements cannot give every lane of a warp its own element")
            }
        }
    }
}

fn is_pow2(x: i64) -> bool {
    x > 0 && x & (x - 1) == 0
}

impl Blocked {
    /// The default coalesced layout of a row-major tile: 16-byte vectors along the last
    /// dimension, lanes along the last dimension first, warps along the slowest dimensions
    /// first (so that rows reduce inside a warp whenever there are enough rows). Returns the
    /// layout and the number of warps it actually uses (at most `max_warps`).
    pub fn row_major(shape: &[i64], elem_bytes: u32, max_warps: i64) -> Result<(Blocked, i64), LayoutError> {
        if shape.is_empty() || shape.iter().any(|&d| !is_pow2(d)) {
            return Err(LayoutError::NotPowerOfTwo(shape.to_vec()));
        }
        let rank = shape.len();
        let total: i64 = shape.iter().product();
        let vec = (16 / i64::from(elem_bytes.max(1))).clamp(1, shape[rank - 1]);
        if total / vec < 32 {
            // Fewer vectors than lanes: shrink the vector so every lane still owns data.
            if total < 32 {
                return Err(LayoutError::TooSmall { elements: total });
            }
        }
        let vec = vec.min(total / 32).max(1);
        let mut spt = vec![1; rank];
        spt[rank - 1] = vec;
        let mut tpw = vec![1; rank];
        let mut left = 32i64;
        for d in (0..rank).rev() {
            let cap = shape[d] / spt[d];
            let t = left.min(cap);
            tpw[d] = t;
            left /= t;
        }
        debug_assert_eq!(left, 1, "power-of-two shapes with >= 32 vectors fill a warp");
        let mut wpc = vec![1; rank];
        let mut warps = 1i64;
        let want = max_warps.max(1);
        for d in 0..rank {
            let cap = shape[d] / (spt[d] * tpw[d]);
            let w = (want / warps).min(cap).max(1);
            wpc[d] = w;
            warps *= w;
        }
        let order = (0..rank).rev().collect();
        Ok((Blocked { size_per_thread: spt, threads_per_warp: tpw, warps_per_cta: wpc, order }, warps))
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

    /// Split of a lane id and a warp id into per-dimension coordinates (fastest dim first).
    fn split(id: i64, dims: &[i64], order: &[usize]) -> Vec<i64> {
        let mut out = vec![0; dims.len()];
        let mut rest = id;
        for &d in order {
            out[d] = rest % dims[d];
            rest /= dims[d];
        }
        out
    }

    /// The run-time part of the coordinates of a thread's elements.
    pub fn thread_base(&self, warp: i64, lane: i64) -> Vec<i64> {
        let l = Self::split(lane, &self.threads_per_warp, &self.order);
        let w = Self::split(warp, &self.warps_per_cta, &self.order);
        (0..self.rank()).map(|d| (w[d] * self.threads_per_warp[d] + l[d]) * self.size_per_thread[d]).collect()
    }
}

impl Layout {
    pub fn blocked(&self) -> &Blocked {
        match self {
            Layout::Blocked(b) => b,
            Layout::Slice { parent, .. } => parent.blocked(),
        }
    }

    /// The rank of the tiles this layout lays out.
    pub fn rank(&self) -> usize {
        self.blocked().rank()
    }

    /// Registers per thread along each dimension for a tile of `shape`.
    pub fn reg_counts(&self, shape: &[i64]) -> Vec<i64> {
        match self {
            Layout::Blocked(b) => {
                let cta = b.cta_tile();
                (0..b.rank()).map(|d| (shape[d] / cta[d]).max(1) * b.size_per_thread[d]).collect()
            }
            Layout::Slice { dim, parent } => {
                let mut pshape = shape.to_vec();
                // The parent's extent along `dim` does not matter: it is dropped.
                pshape[*dim] = parent.blocked().cta_tile()[*dim];
                let mut c = parent.reg_counts(&pshape);
                c[*dim] = 1;
                c
            }
        }
    }

    pub fn regs_per_thread(&self, shape: &[i64]) -> i64 {
        self.reg_counts(shape).iter().product()
    }

    /// Per-dimension register coordinates of register `reg` (order[0] fastest).
    pub fn reg_coords(&self, shape: &[i64], reg: i64) -> Vec<i64> {
        let counts = self.reg_counts(shape);
        Blocked::split(reg, &counts, &self.blocked().order)
    }

    /// Register index of per-dimension register coordinates.
    pub fn reg_index(&self, shape: &[i64], coords: &[i64]) -> i64 {
        let counts = self.reg_counts(shape);
        let mut idx = 0;
        let mut stride = 1;
        for &d in &self.blocked().order {
            idx += coords[d] * stride;
            stride *= counts[d];
        }
        idx
    }

    /// The compile-time part of the coordinates of register `reg`.
    pub fn reg_offset(&self, shape: &[i64], reg: i64) -> Vec<i64> {
        let b = self.blocked();
        let cta = b.cta_tile();
        let rc = self.reg_coords(shape, reg);
        let mut off: Vec<i64> =
            (0..b.rank()).map(|d| (rc[d] / b.size_per_thread[d]) * cta[d] + rc[d] % b.size_per_thread[d]).collect();
        if let Layout::Slice { dim, .. } = self {
            off[*dim] = 0;
        }
        off
    }

    /// Full coordinates of register `reg` of thread (warp, lane).
    pub fn coord(&self, shape: &[i64], warp: i64, lane: i64, reg: i64) -> Vec<i64> {
        let mut base = self.blocked().thread_base(warp, lane);
        if let Layout::Slice { dim, .. } = self {
            base[*dim] = 0;
        }
        let off = self.reg_offset(shape, reg);
        base.iter().zip(&off).map(|(a, b)| a + b).collect()
    }

    /// The text of the layout as an MLIR attribute.
    pub fn to_mlir(&self) -> String {
        fn list<T: std::fmt::Display>(v: &[T]) -> String {
            let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            format!("[{}]", items.join(", "))
        }
        match self {
            Layout::Blocked(b) => format!(
                "#tilegpu.blocked<{}, {}, {}, {}>",
                list(&b.size_per_thread),
                list(&b.threads_per_warp),
                list(&b.warps_per_cta),
                list(&b.order)
            ),
            Layout::Slice { dim, parent } => format!("#tilegpu.slice<{dim} : i32, {}>", parent.to_mlir()),
        }
    }
}

impl Layout {
    /// The layout with the extent-1 dims of `shape` removed, when those dims hold no
    /// threads or registers (a `#blocked` layout only). Two tiles whose shapes differ only in
    /// unit dims and whose squeezed layouts are equal keep the same elements in the same
    /// registers of the same threads: a reshape between them moves no data.
    pub fn squeezed(&self, shape: &[i64]) -> Option<Blocked> {
        let Layout::Blocked(b) = self else { return None };
        let keep: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
        for d in (0..shape.len()).filter(|d| !keep.contains(d)) {
            if b.size_per_thread[d] != 1 || b.threads_per_warp[d] != 1 || b.warps_per_cta[d] != 1 {
                return None;
            }
        }
        let new_index = |d: usize| keep.iter().position(|&k| k == d);
        Some(Blocked {
            size_per_thread: keep.iter().map(|&d| b.size_per_thread[d]).collect(),
            threads_per_warp: keep.iter().map(|&d| b.threads_per_warp[d]).collect(),
            warps_per_cta: keep.iter().map(|&d| b.warps_per_cta[d]).collect(),
            order: b.order.iter().filter_map(|&d| new_index(d)).collect(),
        })
    }

    /// Whether two `#slice` layouts along the same dim place every element of the sliced
    /// tile in the same (thread, register), although their parents differ along the sliced
    /// dim (a row of cos values broadcast to tiles of 32 and of 8 rows, say). The parents
    /// must agree on the dim order and on every dim but the sliced one; lane and warp bits
    /// of the sliced dim must come after those of every other dim, so they do not shift them.
    pub fn slice_equivalent(&self, other: &Layout) -> bool {
        if self == other {
            return true;
        }
        let (Layout::Slice { dim: d1, parent: p1 }, Layout::Slice { dim: d2, parent: p2 }) = (self, other) else {
            return false;
        };
        let (Layout::Blocked(a), Layout::Blocked(b)) = (p1.as_ref(), p2.as_ref()) else { return false };
        d1 == d2
            && a.order == b.order
            && a.order.last() == Some(d1)
            && (0..a.rank()).filter(|d| d != d1).all(|d| {
                a.size_per_thread[d] == b.size_per_thread[d]
                    && a.threads_per_warp[d] == b.threads_per_warp[d]
                    && a.warps_per_cta[d] == b.warps_per_cta[d]
            })
    }
}

/// `#tilegpu.shared<pad>`: a tile in shared memory, row-major, with `pad` elements after each
/// run of the last dim, so that threads walking a column (a transposed access) meet a new
/// bank every row instead of all the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Shared {
    pub pad: i64,
}

impl Shared {
    /// The scratch layout of a layout exchange of a tile of `shape`: one 4-byte word of
    /// padding per row (none for a single row).
    pub fn for_exchange(shape: &[i64], elem_bytes: u32) -> Shared {
        let rows: i64 = shape.iter().rev().skip(1).product();
        Shared { pad: if rows > 1 { (4 / i64::from(elem_bytes.max(1))).max(1) } else { 0 } }
    }

    /// Element strides per dim.
    pub fn strides(&self, shape: &[i64]) -> Vec<i64> {
        let mut st = vec![1; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            let next = if d + 1 == shape.len() - 1 { shape[d + 1] + self.pad } else { shape[d + 1] };
            st[d] = st[d + 1] * next;
        }
        st
    }

    /// Elements the buffer spans.
    pub fn size(&self, shape: &[i64]) -> i64 {
        match shape.split_last() {
            None => 1,
            Some((last, rest)) => rest.iter().product::<i64>() * (last + if rest.is_empty() { 0 } else { self.pad }),
        }
    }

    pub fn to_mlir(&self) -> String {
        format!("#tilegpu.shared<{} : i64>", self.pad)
    }

    /// Reads [`Shared::to_mlir`]'s text.
    pub fn parse(text: &str) -> Option<Shared> {
        let inner = text.trim().strip_prefix("#tilegpu.shared<")?.strip_suffix('>')?;
        Some(Shared { pad: inner.split(':').next()?.trim().parse().ok().filter(|p: &i64| *p >= 0)? })
    }
}

/// Reads the text of a layout attribute as MLIR prints it (the inverse of
/// [`Layout::to_mlir`]); `None` when the text is not a `#tilegpu` layout.
pub fn parse_layout(text: &str) -> Option<Layout> {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix("#tilegpu.blocked<").and_then(|t| t.strip_suffix('>')) {
        let lists = split_top(inner)?;
        let [spt, tpw, wpc, ord] = lists.as_slice() else { return None };
        let order = int_list(ord)?.into_iter().map(usize::try_from).collect::<Result<Vec<_>, _>>().ok()?;
        let b = Blocked {
            size_per_thread: int_list(spt)?,
            threads_per_warp: int_list(tpw)?,
            warps_per_cta: int_list(wpc)?,
            order,
        };
        let rank = b.size_per_thread.len();
        let same = b.threads_per_warp.len() == rank && b.warps_per_cta.len() == rank && b.order.len() == rank;
        return same.then_some(Layout::Blocked(b));
    }
    let inner = text.strip_prefix("#tilegpu.slice<")?.strip_suffix('>')?;
    let (dim, parent) = inner.split_once(',')?;
    let dim = dim.trim().strip_suffix(": i32")?.trim().parse().ok()?;
    Some(Layout::Slice { dim, parent: Box::new(parse_layout(parent)?) })
}

/// Splits `a, [b, c], d` at the commas outside brackets.
fn split_top(s: &str) -> Option<Vec<&str>> {
    let (mut depth, mut start, mut out) = (0i32, 0, vec![]);
    for (i, c) in s.char_indices() {
        match c {
            '[' | '<' | '(' | '{' => depth += 1,
            ']' | '>' | ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    out.push(s[start..].trim());
    Some(out)
}

fn int_list(s: &str) -> Option<Vec<i64>> {
    let inner = s.trim().strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return Some(vec![]);
    }
    // MLIR prints i64 array elements bare; other widths carry `: iN`.
    inner.split(',').map(|x| x.split(':').next().unwrap_or("").trim().parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn shape_strategy() -> impl Strategy<Value = (Vec<i64>, u32, i64)> {
        (0u32..6, 0u32..14, prop::sample::select(vec![2u32, 4]), prop::sample::select(vec![1i64, 2, 4, 8, 16]))
            .prop_map(|(r, c, b, w)| (vec![1i64 << r, 1i64 << c], b, w))
    }

    proptest! {
        // Every element of the tile is held by exactly one (warp, lane, register).
        #[test]
        fn blocked_is_a_bijection((shape, bytes, warps) in shape_strategy()) {
            let total: i64 = shape.iter().product();
            match Blocked::row_major(&shape, bytes, warps) {
                Err(LayoutError::TooSmall { .. }) => prop_assert!(total < 32),
                Err(e) => prop_assert!(false, "{e}"),
                Ok((b, used)) => {
                    prop_assert!(used <= warps && used == b.num_warps());
                    let l = Layout::Blocked(b);
                    let regs = l.regs_per_thread(&shape);
                    prop_assert_eq!(regs * 32 * used, total);
                    let mut seen = BTreeMap::new();
                    for w in 0..used { for lane in 0..32 { for r in 0..regs {
                        let c = l.coord(&shape, w, lane, r);
                        prop_assert!(c[0] < shape[0] && c[1] < shape[1], "{c:?} outside {shape:?}");
                        prop_assert!(seen.insert(c.clone(), (w, lane, r)).is_none(), "{c:?} twice");
                    }}}
                    prop_assert_eq!(seen.len() as i64, total);
                    // Vectors are contiguous along the last dim: 16 bytes where the tile allows.
                    let vec = l.blocked().size_per_thread[1];
                    for r in 0..regs {
                        let c0 = l.coord(&shape, 0, 0, r);
                        let c1 = l.coord(&shape, 0, 0, r - r % vec);
                        prop_assert_eq!(c0[1] - c1[1], r % vec);
                    }
                    // reg_index inverts reg_coords.
                    for r in 0..regs {
                        let rc = l.reg_coords(&shape, r);
                        prop_assert_eq!(l.reg_index(&shape, &rc), r);
                    }
                }
            }
        }

        // A slice holds, in each thread, exactly the parent rows that thread touches.
        #[test]
        fn slice_matches_parent_rows((shape, bytes, warps) in shape_strategy()) {
            if let Ok((b, used)) = Blocked::row_major(&shape, bytes, warps) {
                let parent = Layout::Blocked(b);
                let s = Layout::Slice { dim: 1, parent: Box::new(parent.clone()) };
                let sshape = vec![shape[0], 1];
                for w in 0..used { for lane in 0..32 {
                    let mut rows_parent: Vec<i64> = (0..parent.regs_per_thread(&shape)).map(|r| parent.coord(&shape, w, lane, r)[0]).collect();
                    rows_parent.sort(); rows_parent.dedup();
                    let mut rows_slice: Vec<i64> = (0..s.regs_per_thread(&sshape)).map(|r| s.coord(&sshape, w, lane, r)[0]).collect();
                    let n = rows_slice.len();
                    rows_slice.sort(); rows_slice.dedup();
                    prop_assert_eq!(n, rows_slice.len(), "a slice register repeats a row");
                    prop_assert_eq!(&rows_parent, &rows_slice);
                }}
            }
        }
    }

    #[test]
    fn softmax_row_layout() {
        let (b, w) = Blocked::row_major(&[1, 4096], 2, 4).unwrap();
        assert_eq!(w, 4);
        assert_eq!(b.size_per_thread, vec![1, 8]);
        assert_eq!(b.threads_per_warp, vec![1, 32]);
        assert_eq!(b.warps_per_cta, vec![1, 4]);
        assert_eq!(Layout::Blocked(b).to_mlir(), "#tilegpu.blocked<[1, 8], [1, 32], [1, 4], [1, 0]>");
    }

    proptest! {
        // Unit dims do not change the default layout: a reshape that adds or drops them is free.
        #[test]
        fn row_major_ignores_unit_dims((shape, bytes, warps) in shape_strategy(), at in 0usize..3) {
            let mut wide = shape.clone();
            wide.insert(at.min(1), 1);
            if let (Ok((a, wa)), Ok((b, wb))) = (Blocked::row_major(&shape, bytes, warps), Blocked::row_major(&wide, bytes, warps)) {
                prop_assert_eq!(wa, wb);
                prop_assert_eq!(Layout::Blocked(a).squeezed(&shape), Layout::Blocked(b).squeezed(&wide));
            }
        }

        // Equivalent slices hold the same element in the same (warp, lane, register).
        #[test]
        fn equivalent_slices_map_alike(rows_a in 0u32..6, rows_b in 0u32..6, cols in 5u32..10, warps in prop::sample::select(vec![1i64, 2, 4, 8])) {
            let (sa, sb) = (vec![1i64 << rows_a, 1i64 << cols], vec![1i64 << rows_b, 1i64 << cols]);
            let (Ok((a, wa)), Ok((b, wb))) = (Blocked::row_major(&sa, 2, warps), Blocked::row_major(&sb, 2, warps)) else { return Ok(()) };
            let la = Layout::Slice { dim: 0, parent: Box::new(Layout::Blocked(a)) };
            let lb = Layout::Slice { dim: 0, parent: Box::new(Layout::Blocked(b)) };
            if wa == wb && la.slice_equivalent(&lb) {
                let s = vec![1, 1i64 << cols];
                prop_assert_eq!(la.regs_per_thread(&s), lb.regs_per_thread(&s));
                for w in 0..wa { for lane in 0..32 { for r in 0..la.regs_per_thread(&s) {
                    prop_assert_eq!(la.coord(&s, w, lane, r), lb.coord(&s, w, lane, r));
                }}}
            }
        }
    }

    #[test]
    fn rope_tables_are_equivalent_slices() {
        // cos/sin rows broadcast to q (32 heads) and k (8 heads) with the same warp count.
        let (q, _) = Blocked::row_major(&[32, 64], 2, 2).unwrap();
        let (k, _) = Blocked::row_major(&[8, 64], 2, 2).unwrap();
        let sq = Layout::Slice { dim: 0, parent: Box::new(Layout::Blocked(q)) };
        let sk = Layout::Slice { dim: 0, parent: Box::new(Layout::Blocked(k)) };
        assert!(sq.slice_equivalent(&sk));
        let (q4, _) = Blocked::row_major(&[1, 1, 32, 64], 2, 2).unwrap();
        let (q2, _) = Blocked::row_major(&[32, 64], 2, 2).unwrap();
        assert_eq!(Layout::Blocked(q4).squeezed(&[1, 1, 32, 64]), Some(q2));
    }

    proptest! {
        // Every element of a tile has its own slot inside the padded buffer.
        #[test]
        fn shared_is_injective_and_in_bounds(dims in prop::collection::vec(1i64..9, 1..4), bytes in prop::sample::select(vec![2u32, 4])) {
            let s = Shared::for_exchange(&dims, bytes);
            let st = s.strides(&dims);
            let mut seen = std::collections::BTreeSet::new();
            let n: i64 = dims.iter().product();
            for lin in 0..n {
                let mut rest = lin;
                let mut off = 0;
                for d in (0..dims.len()).rev() {
                    off += (rest % dims[d]) * st[d];
                    rest /= dims[d];
                }
                prop_assert!(off < s.size(&dims), "{off} outside {}", s.size(&dims));
                prop_assert!(seen.insert(off));
            }
            prop_assert_eq!(Shared::parse(&s.to_mlir()), Some(s));
        }
    }

    #[test]
    fn layout_text_round_trips() {
        let (b, _) = Blocked::row_major(&[16, 256], 2, 8).unwrap();
        let l = Layout::Blocked(b);
        let s = Layout::Slice { dim: 1, parent: Box::new(l.clone()) };
        for x in [l, s] {
            assert_eq!(parse_layout(&x.to_mlir()), Some(x.clone()));
        }
        assert_eq!(parse_layout("#tilegpu.blocked<[1], [32], [1]>"), None);
        assert_eq!(parse_layout("#tilegpu.blocked<[1, 2], [32], [1], [0]>"), None);
    }

    #[test]
    fn rejects_non_power_of_two() {
        assert!(matches!(Blocked::row_major(&[1, 96], 2, 4), Err(LayoutError::NotPowerOfTwo(_))));
    }
}
