//! `tile-layout`: gives every tile a distributed layout (tile → tilegpu).
//!
//! Needs: a kernel in the `tile` dialect whose tile dims are powers of two.
//!
//! Does: picks one `#blocked` layout per full tile shape over all the warps the kernel asks
//! for — 16-byte vectors of the narrowest dtype that shape (or a shape differing only in unit
//! dims) is loaded or stored with (narrower when the tile has fewer than 16 bytes per thread),
//! lanes along the contiguous dim, warps along the slowest dims first (so that row reductions
//! stay inside a warp when there are enough rows); a tile smaller than the block is replicated
//! over the lanes and warps it does not fill — and gives a keepdims reduction result the
//! `#slice` of its operand's layout. A reshape's result shape that no load reads then takes,
//! where a `#blocked` layout can express it, the layout that places each element in the
//! register of the thread that holds it in the operand (over the row-major flat index), so
//! that the reshape renames registers; a stored shape only where its stores stay at least 4
//! bytes a thread. A tile with extent-1 dims that is not a reduction result
//! (a `full((R, 1), …)`, a row of cos values) takes the layout the reductions of its shape
//! have (so that it meets a row maximum without a conversion), else the slice of a full shape
//! it matches.
//! Every tile of one shape gets the same layout, loop-carried values and `if` results
//! included, so elementwise ops never need a conversion, and reshapes that only add or drop
//! unit dims move no data. When a row is broadcast to tiles of different heights whose
//! layouts split the row differently, the vectors of both are narrowed until they agree;
//! where that is not enough (or a loop-carried value or an `if` result changes layout), a
//! `tilegpu.convert_layout` is inserted before the use (lowered through shared memory).
//!
//! Guarantees: every tile type carries a layout; every broadcast's operand places its
//! elements like the slice of its result's layout; loop-carried and `if` values keep one
//! layout; every layout spreads over the kernel's `num_warps` warps. Errors point at the op
//! that produced the offending tile.
//!
//! Reports: the layout of each shape, the vector width in bytes, registers per thread, the
//! number of conversions.
//!
//! Then per value ([`tensor_core`]): ordered loads get vectors along their contiguous dim;
//! `mma` results are `#mma` and the layout propagates (forward through elementwise ops,
//! reductions, broadcasts, loops; backward into free producers); `mma` operands become
//! swizzled shared buffers read as `#dot_operand` (or move nothing when already placed so;
//! a tcgen05 product's 16-bit A operand already in its accumulator's layout stays in
//! registers, for the lowering to store into Tensor Memory: FlashAttention-4's P);
//! every other mismatch gets one conversion after the value's definition (shared per value
//! and layout, so a value converted for several uses is converted once). Two operands that
//! are one tile of memory read both ways share one buffer, the second read transposed
//! ([`shared_operands`]: `mla_decode`'s latent tile crosses from global memory once).
//!
//! Options: `num-warps` (default: the kernel's `tile.num_warps`); `tcgen05` (default true:
//! products take the tcgen05 family where the target has it).

mod shared_operands;
mod tensor_core;

/// Whether the tcgen05 product of `a` into an accumulator laid out as `m` reads A from
/// Tensor Memory (`Mma::reads_a_from_tmem` of A's type): this pass then leaves A in
/// registers, and `tile-to-llvm` stores it there.
pub(crate) fn reads_a_from_tmem(
    func: &tilec_core::tir::Func,
    a: tilec_core::tir::ValueId,
    m: &tilec_core::layout::Mma,
) -> bool {
    let t = func.ty(a);
    m.reads_a_from_tmem(t.layout(), t.shape(), t.dtype().bytes())
}

use std::collections::BTreeMap;
use tilec_core::layout::{Blocked, Layout};
use tilec_core::tir::{Func, Op, OpKind, Type, ValueId};
use tilec_core::{Diagnostic, Span};

/// Registers a thread may hold for one tile before the lowering refuses (spills otherwise).
pub const MAX_REGS_PER_TILE: i64 = 256;

/// What the pass decided, for `--report`.
#[derive(Clone, Debug, Default)]
pub struct LayoutReport {
    pub num_warps: u32,
    pub lines: Vec<String>,
}

/// `shape` without its extent-1 dims (the key under which reshapes share a vector width).
fn squeeze(shape: &[i64]) -> Vec<i64> {
    shape.iter().copied().filter(|&d| d != 1).collect()
}

/// What the pass needs to know about the kernel's ops, gathered in one walk.
#[derive(Default)]
struct Facts {
    /// Narrowest memory dtype per squeezed shape (loads and stores decide the vector width).
    mem_bytes: BTreeMap<Vec<i64>, u32>,
    /// Squeezed shapes that some load reads.
    loaded: std::collections::BTreeSet<Vec<i64>>,
    /// Reduction results: value → (operand, axis).
    reduced: BTreeMap<ValueId, (ValueId, u32)>,
    /// Broadcasts: (operand, result).
    broadcasts: Vec<(ValueId, ValueId)>,
    /// Tile values in definition order, with the operand and axis when a reduction defines them.
    defined: Vec<(ValueId, Option<(u32, ValueId)>)>,
    /// The span of the first op producing a tile of each shape (for errors about a shape).
    shape_spans: BTreeMap<Vec<i64>, Span>,
    /// Reshapes in definition order: (operand, result).
    reshapes: Vec<(ValueId, ValueId)>,
}

fn facts(func: &Func) -> Facts {
    let mut f = Facts::default();
    func.walk(&mut |op| {
        let t = match &op.kind {
            OpKind::Load { .. } => op.result,
            OpKind::Store { tile, .. } => Some(*tile),
            _ => None,
        };
        if let Some(t) = t {
            let ty = func.ty(t);
            let e = f.mem_bytes.entry(squeeze(ty.shape())).or_insert(16);
            *e = (*e).min(ty.dtype().bytes());
            if matches!(op.kind, OpKind::Load { .. }) {
                f.loaded.insert(squeeze(ty.shape()));
            }
        }
        if let (Some(r), Some(span)) = (op.result, op.span) {
            if let Type::Tile { shape, .. } = func.ty(r) {
                f.shape_spans.entry(shape.clone()).or_insert(span);
            }
        }
        match &op.kind {
            OpKind::Reduce { axis, value, .. } => {
                if let Some(r) = op.result {
                    f.reduced.insert(r, (*value, *axis));
                    f.defined.push((r, Some((*axis, *value))));
                }
            }
            OpKind::Broadcast(x) => {
                if let Some(r) = op.result {
                    f.broadcasts.push((*x, r));
                    f.defined.push((r, None));
                }
            }
            OpKind::Reshape(x) => {
                if let Some(r) = op.result {
                    f.reshapes.push((*x, r));
                    f.defined.push((r, None));
                }
            }
            OpKind::For { iters, results, .. } => f.defined.extend(iters.iter().chain(results).map(|v| (*v, None))),
            OpKind::If { results, .. } => f.defined.extend(results.iter().map(|v| (*v, None))),
            _ => f.defined.extend(op.result.map(|r| (r, None))),
        }
    });
    f
}

/// The options of `tile-layout`.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Products may take the tcgen05 family where the target has it (off: `tcgen05=false`,
    /// `--no-tcgen05`, and emulation on a chip without it).
    pub tcgen05: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options { tcgen05: true }
    }
}

pub fn run(func: &mut Func, opts: &Options) -> Result<LayoutReport, Diagnostic> {
    // The lowering is the one place that knows what it lowers: ask it before laying out.
    if let Some(d) = crate::tile_to_llvm::unsupported(func) {
        return Err(d);
    }
    let facts = facts(func);
    let at = |d: Diagnostic, shape: &[i64]| match facts.shape_spans.get(shape) {
        Some(s) => d.with_primary(*s, "this tile"),
        None => d,
    };
    let bytes_of = |s: &[i64]| facts.mem_bytes.get(&squeeze(s)).copied().unwrap_or(4).min(4);
    // Shapes that need a layout of their own: every tile shape that is not the keepdims
    // result of a reduction or an extent-1 operand of a broadcast.
    let mut full_shapes: Vec<Vec<i64>> = vec![];
    for (i, ty) in func.values.iter().enumerate() {
        if let Type::Tile { shape, .. } = ty {
            if !facts.reduced.contains_key(&ValueId(i as u32)) && !full_shapes.contains(shape) {
                full_shapes.push(shape.clone());
            }
        }
    }
    // A shape with a 1 that is the slice of another full shape is not full itself.
    let slice_parent = |s: &[i64], shapes: &[Vec<i64>]| -> Option<(usize, Vec<i64>)> {
        shapes.iter().find_map(|f| {
            let diff: Vec<usize> = (0..s.len()).filter(|&d| f.len() == s.len() && f[d] != s[d]).collect();
            match diff.as_slice() {
                [d] if s[*d] == 1 && f.len() == s.len() => Some((*d, f.clone())),
                _ => None,
            }
        })
    };
    let snapshot = full_shapes.clone();
    full_shapes.retain(|s| slice_parent(s, &snapshot).is_none());
    full_shapes.sort();
    // A slice shape's home: the full shape it is first broadcast to, where it is a slice of
    // one (a column index [1, N] broadcast to the [M, N] it addresses), else the first full
    // shape it is a slice of. Homing it where it is broadcast keeps the two placements alike
    // without capping vectors: a [1, N] otherwise taking the slice of an unrelated [K, N]
    // (a weight tile) made that tile's loads 8-byte and kept them off cp.async and TMA.
    let mut homes: BTreeMap<Vec<i64>, (usize, Vec<i64>)> = BTreeMap::new();
    for (x, r) in &facts.broadcasts {
        let (sx, sr) = (func.ty(*x).shape().to_vec(), func.ty(*r).shape().to_vec());
        if facts.reduced.contains_key(x) || !full_shapes.contains(&sr) {
            continue;
        }
        if let Some(found) = slice_parent(&sx, std::slice::from_ref(&sr)) {
            homes.entry(sx).or_insert(found);
        }
    }
    let home = |s: &[i64], shapes: &[Vec<i64>]| homes.get(s).cloned().or_else(|| slice_parent(s, shapes));

    // Broadcasts as (full shape the operand is a slice of, sliced dim, result shape).
    let mut broadcasts: Vec<(Vec<i64>, usize, Vec<i64>)> = vec![];
    for (x, r) in &facts.broadcasts {
        let (sx, sr) = (func.ty(*x).shape().to_vec(), func.ty(*r).shape().to_vec());
        let parent = match facts.reduced.get(x) {
            Some((value, axis)) => Some((func.ty(*value).shape().to_vec(), *axis as usize)),
            None => home(&sx, &full_shapes).map(|(d, f)| (f, d)),
        };
        if let Some((p, d)) = parent {
            if p != sr {
                broadcasts.push((p, d, sr));
            }
        }
    }

    // Every tile is laid out over all the warps the kernel asks for (tiles smaller than the
    // block are replicated). Vector widths are capped (as a larger element size) where a row
    // broadcast to tiles of different heights needs both parents to place the row alike;
    // the first attempt uses the widest vectors.
    let warps = i64::from(func.num_warps);
    let mut caps: BTreeMap<Vec<i64>, u32> = BTreeMap::new();
    let mut layouts: BTreeMap<Vec<i64>, Blocked> = BTreeMap::new();
    for _attempt in 0..4 {
        layouts.clear();
        for s in &full_shapes {
            let bytes = bytes_of(s).max(caps.get(&squeeze(s)).copied().unwrap_or(0));
            let b = Blocked::row_major(s, bytes, warps).map_err(|e| {
                at(Diagnostic::error("E0020", format!("no layout for tile {s:?}: {e}")), s)
                    .with_note("tiles need power-of-two dims")
            })?;
            layouts.insert(s.clone(), b);
        }
        let mut changed = false;
        for (p, d, r) in &broadcasts {
            let (Some(lp), Some(lr)) = (layouts.get(p), layouts.get(r)) else { continue };
            let slice = |b: &Blocked| Layout::Slice { dim: *d, parent: Box::new(Layout::Blocked(b.clone())) };
            let mut row = p.clone();
            row[*d] = 1;
            if slice(lp).same_placement(&slice(lr), &row) {
                continue;
            }
            let vec = lp.size_per_thread.last().min(lr.size_per_thread.last()).copied().unwrap_or(1);
            let bytes = u32::try_from(16 / vec.max(1)).unwrap_or(16);
            for s in [p, r] {
                // Keyed like the vector widths: tiles a reshape connects change together.
                let c = caps.entry(squeeze(s)).or_insert(0);
                if *c < bytes {
                    *c = bytes;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }

    // A reshape's result shape that no load reads takes the layout that places its elements
    // where the operand's layout has them, where a blocked layout can: the reshape then
    // renames registers instead of going through shared memory (quant_fp4's [16, 256] rows
    // seen as [16, 16, 16] blocks, the quantized blocks as [16, 128, 2] pairs, their packed
    // [16, 128, 1] sum as the stored [16, 128]). The operand is a full shape or a reduction's
    // result (the slice of its operand's, which a blocked layout matches when the reduced
    // dim lay within a thread). A stored shape takes it only where its stores stay at least
    // 4 bytes (or as wide as before) a thread: narrower, the shared-memory exchange and wide
    // stores are cheaper than many narrow ones.
    for (x, r) in &facts.reshapes {
        let (sx, sr) = (func.ty(*x).shape().to_vec(), func.ty(*r).shape().to_vec());
        if facts.loaded.contains(&squeeze(&sr)) {
            continue;
        }
        let lx = match (layouts.get(&sx), facts.reduced.get(x)) {
            (Some(b), _) => Layout::Blocked(b.clone()),
            (None, Some((value, axis))) => match layouts.get(func.ty(*value).shape()) {
                Some(b) => Layout::Slice { dim: *axis as usize, parent: Box::new(Layout::Blocked(b.clone())) },
                None => continue,
            },
            (None, None) => continue,
        };
        let Some(lr) = layouts.get(&sr) else { continue };
        let flat = lx.to_linear(&sx).flattened();
        if lr.to_linear(&sr).flattened() == flat {
            continue;
        }
        let Some(b) = Blocked::matching_flat(&sr, &flat) else { continue };
        if let Some(&bytes) = facts.mem_bytes.get(&squeeze(&sr)) {
            let width = |b: &Blocked| b.size_per_thread.last().copied().unwrap_or(1) * i64::from(bytes);
            if width(&b) < width(lr).min(4) {
                continue;
            }
        }
        layouts.insert(sr, b);
    }

    let mut report = LayoutReport { num_warps: warps as u32, lines: vec![] };
    for (s, b) in &layouts {
        let l = Layout::Blocked(b.clone());
        let regs = l.regs_per_thread(s);
        if regs > MAX_REGS_PER_TILE {
            return Err(at(
                Diagnostic::error("E0020", format!("tile {s:?} needs {regs} registers per thread with {warps} warps")),
                s,
            )
            .with_note(format!(
                "the limit is {MAX_REGS_PER_TILE}; use more warps (hints {{ num_warps = … }}) or a smaller tile"
            )));
        }
        report.lines.push(format!(
            "tile {s:?}: {} ({} B vectors, {regs} elements per thread)",
            l.to_mlir(),
            b.size_per_thread.last().copied().unwrap_or(1) * i64::from(bytes_of(s).min(4))
        ));
    }

    // A shape's layout: its own, the slice of a full shape's, or (a [1, 1] beside [1, N] beside
    // [M, N]) the slice of a slice, as the reductions that make such tiles place them.
    fn sliced(shape: &[i64], layouts: &BTreeMap<Vec<i64>, Blocked>, all: &[Vec<i64>], depth: usize) -> Option<Layout> {
        if let Some(b) = layouts.get(shape) {
            return Some(Layout::Blocked(b.clone()));
        }
        if depth == 0 {
            return None;
        }
        all.iter().find_map(|f| {
            let diff: Vec<usize> = (0..shape.len()).filter(|&d| f.len() == shape.len() && f[d] != shape[d]).collect();
            match diff.as_slice() {
                [d] if shape[*d] == 1 => {
                    sliced(f, layouts, all, depth - 1).map(|p| Layout::Slice { dim: *d, parent: Box::new(p) })
                }
                _ => None,
            }
        })
    }
    // The keepdims results of reductions of full tiles, by shape: the first one's layout. Other
    // tiles of that shape (a `full((R, 1), …)` beside a row maximum) take it too, so that
    // elementwise ops between them need no conversion — whichever full shape sorts first.
    let mut reduced_layouts: BTreeMap<Vec<i64>, Layout> = BTreeMap::new();
    for (value, reduce_of) in &facts.defined {
        let Some((axis, operand)) = reduce_of else { continue };
        if let Some(b) = layouts.get(func.ty(*operand).shape()) {
            reduced_layouts
                .entry(func.ty(*value).shape().to_vec())
                .or_insert_with(|| Layout::Slice { dim: *axis as usize, parent: Box::new(Layout::Blocked(b.clone())) });
        }
    }
    let layout_of = |shape: &[i64]| -> Option<Layout> {
        if let Some(b) = layouts.get(shape) {
            return Some(Layout::Blocked(b.clone()));
        }
        if let Some(l) = reduced_layouts.get(shape) {
            return Some(l.clone());
        }
        let full: Vec<Vec<i64>> = layouts.keys().cloned().collect();
        home(shape, &full)
            .map(|(d, f)| Layout::Slice { dim: d, parent: Box::new(Layout::Blocked(layouts[&f].clone())) })
            .or_else(|| sliced(shape, &layouts, &snapshot, shape.len()))
    };

    // Assign in definition order: reductions take the slice of their operand's layout;
    // every other tile (op results, loop-carried values) the layout of its shape.
    for (value, reduce_of) in &facts.defined {
        let ty = func.ty(*value).clone();
        let Type::Tile { shape, dtype, .. } = ty else { continue };
        let layout = match reduce_of {
            Some((axis, operand)) => {
                let parent = func.ty(*operand).layout().cloned().ok_or_else(|| {
                    at(Diagnostic::error("E0900", "reduction of a tile without a layout is not lowered yet"), &shape)
                })?;
                Layout::Slice { dim: *axis as usize, parent: Box::new(parent) }
            }
            None => layout_of(&shape).ok_or_else(|| {
                at(
                    Diagnostic::error(
                        "E0900",
                        format!("tile {shape:?} has no layout: a layout conversion would be needed, which is not lowered yet"),
                    ),
                    &shape,
                )
            })?,
        };
        func.values[value.0 as usize] = Type::Tile { shape, dtype, layout: Some(layout) };
    }
    // Per-value layouts: ordered loads, and the tensor-core layouts around `mma`.
    tensor_core::ordered_loads(func, warps);
    if tensor_core::has_mma(func) {
        // The target table chooses the MMA family; a module without a known target (a
        // hand-written pass test) gets mma.sync, which every target has.
        let arch = tilec_core::target::resolve(&func.target).ok().map(|(a, _)| a);
        report.lines.extend(tensor_core::propagate(func, warps, arch, opts.tcgen05)?);
    }
    let tc_converts = tensor_core::insert_conversions(func, warps)?;
    if tc_converts > 0 {
        report
            .lines
            .push(format!("{tc_converts} operand conversion(s) (shared buffers for mma operands, register moves)"));
    }
    // What the lowering relies on: broadcast operands have the placement of the slice of the
    // result, loop-carried and `if` values keep one layout. Where they do not, a
    // `convert_layout` (through shared memory) gives the use the layout it needs.
    let ops = std::mem::take(&mut func.ops);
    let mut converts = 0;
    func.ops = insert_converts(func, ops, &mut converts)?;
    if converts > 0 {
        report.lines.push(format!("{converts} layout conversion(s) through shared memory"));
    }
    Ok(report)
}

/// A `convert_layout` of `v` to `layout`, appended to `out`; returns the converted value.
fn convert(func: &mut Func, out: &mut Vec<Op>, v: ValueId, layout: &Layout, span: Option<tilec_core::Span>) -> ValueId {
    let ty = func.ty(v).clone();
    let nv = func.new_value(Type::Tile { shape: ty.shape().to_vec(), dtype: ty.dtype(), layout: Some(layout.clone()) });
    let scratch = tilec_core::layout::Shared::for_exchange(ty.shape(), ty.dtype().bytes());
    out.push(Op { kind: OpKind::ConvertLayout { value: v, scratch }, result: Some(nv), span });
    nv
}

/// Converts `vs` (yields of a region) to the layouts of `targets`, at the end of `ops`.
fn convert_yields(func: &mut Func, ops: &mut Vec<Op>, vs: &mut [ValueId], targets: &[ValueId], n: &mut usize) {
    for (y, t) in vs.iter_mut().zip(targets) {
        if let Some(l) = func.ty(*t).layout().cloned() {
            if func.ty(*y).layout() != Some(&l) {
                *y = convert(func, ops, *y, &l, None);
                *n += 1;
            }
        }
    }
}

fn insert_converts(func: &mut Func, ops: Vec<Op>, n: &mut usize) -> Result<Vec<Op>, Diagnostic> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in ops {
        let span = op.span;
        match &mut op.kind {
            OpKind::Broadcast(x) => {
                let r = op.result.ok_or_else(|| Diagnostic::error("E0900", "broadcast without result"))?;
                let (xs, rs) = (func.ty(*x).shape().to_vec(), func.ty(r).shape().to_vec());
                let dims: Vec<usize> = (0..xs.len()).filter(|&d| xs[d] == 1 && rs[d] != 1).collect();
                let Some(rl) = func.ty(r).layout().cloned() else {
                    return Err(Diagnostic::error("E0900", "broadcast to a tile without layout"));
                };
                let want = match dims.as_slice() {
                    [] => rl,
                    [dim] => Layout::Slice { dim: *dim, parent: Box::new(rl) },
                    _ => {
                        let mut d = Diagnostic::error(
                            "E0900",
                            "a broadcast along several dims at once is not lowered yet (broadcast one dim at a time)",
                        );
                        if let Some(s) = span {
                            d = d.with_primary(s, "here");
                        }
                        return Err(d);
                    }
                };
                if !func.ty(*x).layout().is_some_and(|l| l.same_placement(&want, &xs)) {
                    *x = convert(func, &mut out, *x, &want, span);
                    *n += 1;
                }
            }
            OpKind::For { init, iters, body, yields, .. } => {
                let mut b = insert_converts(func, std::mem::take(body), n)?;
                convert_yields(func, &mut b, yields, iters, n);
                *body = b;
                convert_yields(func, &mut out, init, iters, n);
            }
            OpKind::If { then_ops, then_yields, else_ops, else_yields, results, .. } => {
                let mut t = insert_converts(func, std::mem::take(then_ops), n)?;
                convert_yields(func, &mut t, then_yields, results, n);
                *then_ops = t;
                let mut e = insert_converts(func, std::mem::take(else_ops), n)?;
                convert_yields(func, &mut e, else_yields, results, n);
                *else_ops = e;
            }
            _ => {}
        }
        out.push(op);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_core::tir::{Padding, ReduceKind};
    use tilec_core::DType;

    /// A `(R, 1)` tile that is not a reduction takes the layout of the reductions of its shape,
    /// whatever other full `(R, N)` shape sorts first (moe_route: a row maximum of `(16, 64)`
    /// beside a splat, with a `(16, 8)` top-k in the kernel).
    #[test]
    fn an_extent_one_splat_takes_the_layout_of_the_row_reductions() {
        let mut f = Func::new("k", "sm_90a", 4);
        let x = f.add_param("x", Type::Tensor { dtype: DType::F32, rank: 2 });
        let b = f.push(OpKind::Bid { axis: 0 }, Type::Scalar(DType::I32), None);
        let load = |f: &mut Func, n: i64| {
            f.push(
                OpKind::Load { tensor: x, index: vec![b, b], padding: Padding::Zero, order: vec![0, 1], latency: 0 },
                Type::tile(vec![16, n], DType::F32),
                None,
            )
        };
        let _narrow = load(&mut f, 8);
        let wide = load(&mut f, 64);
        let m = f.push(
            OpKind::Reduce { kind: ReduceKind::Max, axis: 1, value: wide },
            Type::tile(vec![16, 1], DType::F32),
            None,
        );
        let c = f.push(OpKind::ConstFloat(0.0), Type::Scalar(DType::F32), None);
        let z = f.push(OpKind::Splat(c), Type::tile(vec![16, 1], DType::F32), None);
        run(&mut f, &Options::default()).unwrap();
        assert_eq!(f.ty(z).layout(), f.ty(m).layout());
    }

    #[test]
    fn row_reduction_gets_slice_layout() {
        let mut f = Func::new("k", "sm_90a", 4);
        let x = f.add_param("x", Type::Tensor { dtype: DType::F16, rank: 2 });
        let b = f.push(OpKind::Bid { axis: 0 }, Type::Scalar(DType::I32), None);
        let t = f.push(
            OpKind::Load { tensor: x, index: vec![b, b], padding: Padding::Zero, order: vec![0, 1], latency: 0 },
            Type::tile(vec![2, 256], DType::F16),
            None,
        );
        let r = f.push(
            OpKind::Reduce { kind: ReduceKind::Sum, axis: 1, value: t },
            Type::tile(vec![2, 1], DType::F16),
            None,
        );
        let _ = f.push(OpKind::Broadcast(r), Type::tile(vec![2, 256], DType::F16), None);
        let rep = run(&mut f, &Options::default()).unwrap();
        // The block keeps its 4 warps: 512 elements over 128 threads, 4-wide vectors.
        assert_eq!(rep.num_warps, 4, "{rep:?}");
        let l = f.ty(t).layout().unwrap().to_linear(&[2, 256]);
        assert_eq!((l.num_regs(), l.replicated_lanes(), l.replicated_warps()), (4, 0, 0));
        assert!(matches!(f.ty(r).layout(), Some(Layout::Slice { dim: 1, .. })));
    }

    #[test]
    fn a_row_broadcast_to_incompatible_tiles_is_converted() {
        // [1, 256] broadcast to [64, 256] and [2, 256]: with 4 warps the two parents split
        // the row over different warps, so one broadcast needs a conversion.
        let mut f = Func::new("k", "sm_90a", 8);
        let x = f.add_param("x", Type::Tensor { dtype: DType::F32, rank: 2 });
        let b = f.push(OpKind::Bid { axis: 0 }, Type::Scalar(DType::I32), None);
        let load = |f: &mut Func, shape: Vec<i64>| {
            let kind =
                OpKind::Load { tensor: x, index: vec![b, b], padding: Padding::Zero, order: vec![0, 1], latency: 0 };
            f.push(kind, Type::tile(shape, DType::F32), None)
        };
        let row = load(&mut f, vec![1, 256]);
        let big = load(&mut f, vec![64, 256]);
        let small = load(&mut f, vec![2, 256]);
        for (t, h) in [(big, 64), (small, 2)] {
            let bc = f.push(OpKind::Broadcast(row), Type::tile(vec![h, 256], DType::F32), None);
            let add = OpKind::Binary {
                op: tilec_core::tir::BinOp::Add,
                lhs: t,
                rhs: bc,
                flags: tilec_core::tir::MathFlags::default(),
            };
            f.push(add, Type::tile(vec![h, 256], DType::F32), None);
        }
        let rep = run(&mut f, &Options::default()).unwrap();
        assert!(rep.lines.iter().any(|l| l == "1 layout conversion(s) through shared memory"), "{rep:?}");
        let conv: Vec<&Op> = f.ops.iter().filter(|o| matches!(o.kind, OpKind::ConvertLayout { .. })).collect();
        assert_eq!(conv.len(), 1);
        // Every broadcast now reads the slice of its result's layout.
        for op in &f.ops {
            if let (OpKind::Broadcast(x), Some(r)) = (&op.kind, op.result) {
                let want = Layout::Slice { dim: 0, parent: Box::new(f.ty(r).layout().unwrap().clone()) };
                assert!(f.ty(*x).layout().unwrap().same_placement(&want, &[1, 256]));
            }
        }
        // The tilegpu text (with its #tilegpu.shared scratch) verifies and reads back.
        let mlir = tilec_ir::Mlir::new().unwrap();
        let text = f.to_mlir();
        assert!(text.contains("{scratch = #tilegpu.shared<0 : i64>}"), "a single row needs no padding: {text}");
        let m = mlir.parse(&text, "tilegpu").unwrap();
        let back = mlir.parse(&tilec_ir::read_func(&m).unwrap().to_mlir(), "read back").unwrap();
        assert_eq!(mlir.print(&m), mlir.print(&back));
        // The conversion lowers to a shared-memory exchange that MLIR and LLVM accept.
        let (arch, _) = tilec_core::target::resolve("sm_90a").unwrap();
        let low = crate::tile_to_llvm::run(&f, arch, &Default::default()).unwrap();
        assert!(low.shared_bytes >= 1024 && low.text.contains("nvvm.barrier0"), "{}", low.text);
        let ir = mlir.translate_to_llvm_ir(&mlir.parse(&low.text, "llvm").unwrap()).unwrap();
        assert!(tilec_backend::codegen(&ir, arch, tilec_backend::Pipeline::tilec(3)).unwrap().ptx.contains("bar.sync"));
    }

    #[test]
    fn a_tiny_tile_is_replicated_and_stored_once() {
        let mut f = Func::new("k", "sm_90a", 4);
        let x = f.add_param("x", Type::Tensor { dtype: DType::F32, rank: 1 });
        let b = f.push(OpKind::Bid { axis: 0 }, Type::Scalar(DType::I32), None);
        let t = f.push(
            OpKind::Load { tensor: x, index: vec![b], padding: Padding::Zero, order: vec![0], latency: 0 },
            Type::tile(vec![16], DType::F32),
            None,
        );
        f.push_void(OpKind::Store { tensor: x, index: vec![b], tile: t, mask: None }, None);
        let rep = run(&mut f, &Options::default()).unwrap();
        assert_eq!(rep.num_warps, 4);
        let l = f.ty(t).layout().unwrap().to_linear(&[16]);
        assert_eq!((l.replicated_lanes(), l.replicated_warps()), (0b10000, 0b11));
        let (arch, _) = tilec_core::target::resolve("sm_90a").unwrap();
        let low = crate::tile_to_llvm::run(&f, arch, &Default::default()).unwrap();
        // Only lanes 0-15 of warp 0 store: (lane & 16) == 0 and (warp & 3) == 0.
        assert!(
            low.text.contains("llvm.mlir.constant(16 : i32)") && low.text.contains("llvm.mlir.constant(3 : i32)"),
            "{}",
            low.text
        );
    }
}
