//! The tensor-core part of `tile-layout`: per-value layouts around `mma`, and ordered loads.
//!
//! After every tile has its shape's `#blocked` layout, this assigns layouts *per value*:
//! - an ordered load (`order=`, FMHA's K) gets a `#blocked` layout whose vectors run along the
//!   tile dim that is contiguous in memory, and a reshape that only adds or drops unit dims
//!   keeps it;
//! - every `mma` result (and its accumulator) is `#mma`; the layout flows forward through
//!   elementwise ops, reductions (`#slice` of `#mma`), broadcasts of those slices, loop-carried
//!   values and `if` results, and backward into producers that are free to take any layout
//!   (splats, broadcasts, comparisons and elementwise ops used only by `#mma` tiles: a causal
//!   mask built from `arange` is computed directly in the accumulator's layout);
//! - a block-scaled `mma` (`mma_scaled`) is `mma.sync`'s, on targets with the block-scaled
//!   form only (sm_121a; E0900 elsewhere); its two scale tiles become shared buffers as its
//!   operands do (each lane reads its factors from there);
//! - an `mma` operand in another layout becomes a shared buffer (`local_alloc`, unswizzled
//!   until `tile-swizzle`) read as a `#dot_operand` (`local_load`), inserted right after the operand is
//!   defined (Q, loaded once before the loop, is written to shared memory once); an operand
//!   that already places its elements like the `#dot_operand` (P, the f16 accumulator of the
//!   previous `mma` over one N warp) is a `convert_layout` that moves nothing;
//! - any other use that needs a layout its operand lacks gets a `convert_layout` after the
//!   operand's definition (a splat is re-splatted instead).

use super::ValueId;
use std::collections::BTreeMap;
use tilec_core::layout::{Blocked, Layout, Mma, MmaFamily, SwizzledShared};
use tilec_core::tir::{Func, Op, OpKind, Type};
use tilec_core::Diagnostic;

fn set_layout(func: &mut Func, v: ValueId, l: Layout) {
    if let Type::Tile { layout, .. } = &mut func.values[v.0 as usize] {
        *layout = Some(l);
    }
}

fn layout(func: &Func, v: ValueId) -> Option<Layout> {
    func.ty(v).layout().cloned()
}

fn is_tile(func: &Func, v: ValueId) -> bool {
    matches!(func.ty(v), Type::Tile { .. })
}

/// The tile operands of an elementwise op (same shape as the result), mutable.
fn elementwise_operands(kind: &mut OpKind) -> Vec<&mut ValueId> {
    match kind {
        OpKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
        OpKind::Unary { value, .. } => vec![value],
        OpKind::Cast(x) => vec![x],
        OpKind::Cmp(_, a, b) | OpKind::Logic(_, a, b) => vec![a, b],
        OpKind::Select { cond, a, b } => vec![cond, a, b],
        OpKind::Gather { index, .. } => index.iter_mut().collect(),
        OpKind::Rand { offsets, .. } => vec![offsets],
        // An atomic pairs its tiles element by element with its result (the old values).
        OpKind::Atomic { tile, cmp, mask, index, at, .. } => {
            let mut v: Vec<&mut ValueId> = cmp.iter_mut().collect();
            v.push(tile);
            v.push(mask);
            if *at {
                v.extend(index.iter_mut());
            }
            v
        }
        _ => vec![],
    }
}

/// The tile operands of an elementwise op, read-only. Region ops (`for`, `if`) have none and
/// are not cloned: their bodies can be the whole kernel.
fn elementwise_reads(kind: &OpKind) -> Vec<ValueId> {
    match kind {
        OpKind::For { .. } | OpKind::If { .. } => vec![],
        k => elementwise_operands(&mut k.clone()).into_iter().map(|v| *v).collect(),
    }
}

/// Ordered loads and the reshapes of their tiles.
pub(super) fn ordered_loads(func: &mut Func, warps: i64) {
    let mut assign: Vec<(ValueId, Layout)> = vec![];
    let mut by_value: BTreeMap<ValueId, (Vec<usize>, u32)> = BTreeMap::new();
    func.walk(&mut |op| match (&op.kind, op.result) {
        (OpKind::Load { order, .. }, Some(r)) if order.iter().enumerate().any(|(i, &o)| o as usize != i) => {
            let ty = func.ty(r);
            if let Ok(b) = Blocked::for_load(ty.shape(), ty.dtype().bytes(), warps, order) {
                by_value.insert(r, (b.order.clone(), ty.dtype().bytes()));
                assign.push((r, Layout::Blocked(b)));
            }
        }
        (OpKind::Reshape(x), Some(r)) => {
            if let Some((lo, bytes)) = by_value.get(x).cloned() {
                let (xs, rs) = (func.ty(*x).shape().to_vec(), func.ty(r).shape().to_vec());
                // Map the order over the non-unit dims (they correspond one to one).
                let xk: Vec<usize> = (0..xs.len()).filter(|&d| xs[d] != 1).collect();
                let rk: Vec<usize> = (0..rs.len()).filter(|&d| rs[d] != 1).collect();
                if xk.iter().map(|&d| xs[d]).eq(rk.iter().map(|&d| rs[d])) {
                    let mut ro: Vec<usize> =
                        lo.iter().filter_map(|d| xk.iter().position(|k| k == d).map(|i| rk[i])).collect();
                    ro.extend((0..rs.len()).rev().filter(|d| rs[*d] == 1));
                    if let Ok(b) = Blocked::coalesced(&rs, bytes, warps, &ro) {
                        assign.push((r, Layout::Blocked(b)));
                        by_value.insert(r, (ro, bytes));
                    }
                }
            }
        }
        _ => {}
    });
    for (v, l) in assign {
        set_layout(func, v, l);
    }
}

/// Whether tile `v` (laid out) is stored contiguous along dim `kd`: the memory order of its
/// `#blocked` layout starts there.
fn k_contiguous(func: &Func, v: ValueId, kd: usize) -> bool {
    matches!(layout(func, v), Some(Layout::Blocked(b)) if b.order.first() == Some(&kd))
}

/// Whether any op is an `mma`.
pub(super) fn has_mma(func: &Func) -> bool {
    let mut any = false;
    func.walk(&mut |op| any |= matches!(op.kind, OpKind::Mma { .. }));
    any
}

/// Each product's run, in `Func::walk` positions (1 the first op): from its issue to the end
/// of the first op of its list that reads it (nested regions included) — where
/// `tile-mma-overlap` would wait for it at the latest, as it keeps each wait in the product's
/// list —, to the end of its list if only the list's yields read it, and to the kernel's end
/// if a yield does (a loop's accumulator chain: the lowering keeps those in TMEM throughout).
fn product_runs(func: &Func) -> BTreeMap<ValueId, (usize, usize)> {
    fn list(ops: &[Op], yields: &[ValueId], pos: &mut usize, out: &mut BTreeMap<ValueId, (usize, usize)>) {
        let mut spans = Vec::with_capacity(ops.len());
        for op in ops {
            *pos += 1;
            let start = *pos;
            match &op.kind {
                OpKind::For { body, yields, .. } => list(body, yields, pos, out),
                OpKind::If { then_ops, then_yields, else_ops, else_yields, .. } => {
                    list(then_ops, then_yields, pos, out);
                    list(else_ops, else_yields, pos, out);
                }
                _ => {}
            }
            spans.push((start, *pos));
        }
        let last = spans.last().map_or(*pos, |s| s.1);
        for (k, op) in ops.iter().enumerate() {
            let (OpKind::Mma { .. }, Some(r)) = (&op.kind, op.result) else { continue };
            let end = match ops.iter().enumerate().skip(k + 1).find(|(_, o)| crate::tile_mma_overlap::uses(o, r)) {
                Some((u, _)) => spans[u].1,
                None if yields.contains(&r) => usize::MAX,
                None => last,
            };
            out.insert(r, (spans[k].0, end));
        }
    }
    let mut out = BTreeMap::new();
    list(&func.ops, &[], &mut 0, &mut out);
    out
}

/// Anchors `#mma` at every `mma` and propagates it; errors for products the instruction
/// cannot do. The MMA family is the target's: `tcgen05` where the table has it (and `tcgen05`
/// is on), the product fits the instruction (128-row blocks, N a multiple of 16 up to 256)
/// and the tcgen05 accumulators it may live beside (`product_runs`) leave it room in Tensor
/// Memory's 512 columns; `wgmma`
/// where the table has it and the product fits (whole warpgroups of 64-row blocks, N up to
/// 256); else `mma.sync`. Returns the `--report` lines (one per product: its family, or why
/// not the target's asynchronous one).
pub(super) fn propagate(
    func: &mut Func,
    warps: i64,
    arch: Option<&tilec_core::target::Arch>,
    tcgen05: bool,
) -> Result<Vec<String>, Diagnostic> {
    let has_wgmma = arch.is_some_and(|a| a.has(tilec_core::target::Feature::Wgmma));
    let block_scaled = arch.is_some_and(|a| a.has(tilec_core::target::Feature::BlockScaledMmaSync));
    let has_tcgen05 = tcgen05 && arch.is_some_and(|a| a.has(tilec_core::target::Feature::Tcgen05));
    // The tcgen05 accumulators chosen so far, each with the columns it takes while it may
    // live (`product_runs`): a product is tcgen05's only if those it may meet leave it room —
    // an upper bound of what the lowering allocates, whatever `tile-mma-overlap` leaves in
    // flight.
    let runs = product_runs(func);
    let mut chosen: Vec<((usize, usize), i64)> = vec![];
    let mut pos = 0usize;
    let mut lines = vec![];
    // Anchors. A kernel with one product is a GEMM (balanced warp grid); with a chain of
    // products (attention: S = QKᵀ, then PV) every warp owns whole rows.
    let mut n_mma = 0;
    func.walk(&mut |op| n_mma += usize::from(matches!(op.kind, OpKind::Mma { .. })));
    let mut anchors: Vec<(ValueId, Layout)> = vec![];
    let mut bad: Option<Diagnostic> = None;
    func.walk(&mut |op| {
        pos += 1;
        if let (OpKind::Mma { a, b, acc, scales }, Some(r)) = (&op.kind, op.result) {
            let run = runs.get(&r).copied().unwrap_or((pos, usize::MAX));
            let tmem_cols: i64 =
                chosen.iter().filter(|((f, t), _)| *f <= run.1 && run.0 <= *t).map(|(_, c)| c).sum();
            let (sa, sb) = (func.ty(*a).shape(), func.ty(*b).shape());
            let (m, k, n) = (sa[0], sa[1], sb[1]);
            let d = func.ty(*a).dtype();
            // A block-scaled product is mma.sync's (sm_121a); its operands are read as fp8's.
            let packed = d == tilec_core::DType::F4E2M1X2;
            // sm_103a's block scaling is tcgen05.mma … block_scale: 128-row tiles, the scales of
            // B in whole 32-row groups of TMEM lanes.
            let scaled_tc = scales.is_some() && has_tcgen05 && m == tilec_core::layout::TCGEN05_M && n % 32 == 0;
            let why = if scales.is_some() && has_tcgen05 && !scaled_tc {
                Some(format!(
                    "an mma_scaled of [{m}, {n}] on {}: tcgen05.mma … block_scale takes tiles of 128 rows and N a multiple of 32",
                    arch.map_or("this target", |a| a.name)
                ))
            } else if scales.is_some() && !block_scaled && !scaled_tc {
                Some(format!(
                    "mma_scaled on {}: the block-scaled products are sm_120a/sm_121a's mma.sync and sm_100a/sm_103a's tcgen05.mma; sm_90a has none",
                    arch.map_or("this target", |a| a.name)
                ))
            } else if scales.is_some() && !(k_contiguous(func, *a, 1) && k_contiguous(func, *b, 0)) {
                Some(
                    "an mma_scaled with an operand stored contiguous along M or N: the block-scaled products read both operands along K (no 8-bit ldmatrix.trans); load a K x N operand from an N x K tensor with order=(1, 0)".into(),
                )
            } else if scales.is_some() && !Mma::fits(m, n, 16) {
                Some(format!(
                    "an mma_scaled of [{m}, {n}]: the tensor-core path needs M >= 16 and N >= 8, powers of two"
                ))
            } else if scales.is_some() {
                None
            } else if packed {
                Some("an mma of f4e2m1x2 operands: packed fp4 is multiplied by mma_scaled, with its block scales".into())
            } else if !Mma::fits(m, n, k) {
                Some(format!(
                    "an mma of [{m}, {k}] x [{k}, {n}]: the tensor-core path needs M >= 16, N >= 8 and K >= 16, powers of two"
                ))
            } else if !matches!(d, tilec_core::DType::F16 | tilec_core::DType::BF16) && !d.is_fp8() {
                Some(format!("an mma of {d} operands: the tensor-core path takes f16, bf16 and fp8"))
            } else if d.is_fp8() && k % 32 != 0 {
                Some(format!(
                    "an mma of fp8 operands with K = {k}: the 8-bit product (m16n8k32) needs K a multiple of 32"
                ))
            } else if d.is_fp8() && !(k_contiguous(func, *a, 1) && k_contiguous(func, *b, 0)) {
                Some(
                    "an mma of fp8 operands stored contiguous along M or N: the 8-bit products read both operands along K (there is no 8-bit ldmatrix.trans, and wgmma's fp8 form is K-major only); load a K x N operand from an N x K tensor with order=(1, 0)".into(),
                )
            } else if func.ty(*acc).dtype() != tilec_core::DType::F32 {
                Some("an mma with a non-f32 accumulator: the tensor-core path accumulates in f32".into())
            } else {
                None
            };
            if let (Some(w), None) = (why, &bad) {
                let mut dg = Diagnostic::error("E0900", w);
                if let Some(s) = op.span {
                    dg = dg.with_primary(s, if scales.is_some() { "this mma_scaled" } else { "this mma" });
                }
                bad = Some(dg);
            }
            // The asynchronous families' fp8 forms are not built: fp8 runs on mma.sync.
            let fp8 = d.is_fp8();
            // tcgen05's kind::f8f6f4 reads fp8 operands K-major from shared memory, as wgmma's.
            let tc = if scales.is_some() && !scaled_tc {
                None
            } else if has_tcgen05 {
                Mma::tcgen05(&[m, n], k, warps)
                    .filter(|_| tmem_cols + Mma::tmem_columns(&[m, n]) <= tilec_core::layout::TMEM_COLUMNS)
            } else {
                None
            };
            if tc.is_some() {
                chosen.push((run, Mma::tmem_columns(&[m, n])));
            }
            // wgmma's fp8 form (k32) reads both operands K-major from shared memory.
            let wg = if has_wgmma && scales.is_none() { Mma::wgmma(&[m, n], k, warps) } else { None };
            let grid = tc.or(wg).unwrap_or_else(|| {
                if n_mma > 1 {
                    Mma::for_shape(&[m, n], warps)
                } else {
                    Mma::balanced(&[m, n], warps)
                }
            });
            lines.push(match (has_wgmma, wg) {
                _ if scales.is_some() && tc.is_some() => format!(
                    "mma_scaled [{m}, {n}, {}]: tcgen05.mma cta_group::1 block_scale, the accumulator in TMEM ({n} columns), the scales stored into TMEM (32 lanes a quarter, a column a 32-row group, four K blocks a column)",
                    k * if packed { 2 } else { 1 }
                ),
                _ if scales.is_some() => format!("mma_scaled [{m}, {n}, {}]: block-scaled mma.sync", k * if packed { 2 } else { 1 }),
                _ if tc.is_some() && m < tilec_core::layout::TCGEN05_M => format!(
                    "mma [{m}, {n}, {k}]: tcgen05.mma cta_group::1 kind::{} m64n{}k{}{}, A's {m} rows held {} time(s) in its buffer so that each TMEM quarter holds the product, the accumulator in TMEM ({} columns), read out with 16x32bx2 over {warps} warps ({} columns a thread)",
                    if fp8 { "f8f6f4" } else { "f16" },
                    Mma::tmem_columns(&[m, n]),
                    if fp8 { 32 } else { 16 },
                    match Mma::tcgen05_n_blocks(&[m, n]) {
                        1 => String::new(),
                        b => format!(" x {b} column blocks one after the other"),
                    },
                    Mma::tcgen05_a_replicas(m),
                    Mma::tmem_columns(&[m, n]),
                    n * m / 16 / warps / 2
                ),
                _ if tc.is_some() => format!(
                    "mma [{m}, {n}, {k}]: tcgen05.mma cta_group::1 kind::{} m128n{n}k{}, {} block(s) of 128 rows, the accumulator in TMEM ({} columns), read out over {warps} warps ({}{} columns a thread)",
                    if fp8 { "f8f6f4" } else { "f16" },
                    if fp8 { 32 } else { 16 },
                    m / 128,
                    Mma::tmem_columns(&[m, n]),
                    tc.map_or(String::new(), |t| match t.tcgen05_block_warps() {
                        1 => String::new(),
                        bw => format!("a warpgroup a block for {bw} blocks, a whole row a thread: "),
                    }),
                    n / tc.map_or(warps / 4, |t| t.warps_per_cta[1])
                ),
                _ if fp8 && wg.is_none() => format!("mma [{m}, {n}, {k}] fp8: mma.sync m16n8k32"),
                _ if has_tcgen05 => format!(
                    "mma [{m}, {n}, {k}]: mma.sync (tcgen05 needs M 16, 32, 64 or a multiple of 128, N a multiple of 16 from 16 to 256, K a multiple of 16, warps in whole warpgroups, and its accumulators within TMEM's {} columns; {tmem_cols} taken by those it may meet)",
                    tilec_core::layout::TMEM_COLUMNS
                ),
                (_, Some(_)) => format!(
                    "mma [{m}, {n}, {k}]: wgmma m64n{n}k{} over {} warpgroup(s), {} block(s) of 64 rows each",
                    if fp8 { 32 } else { 16 },
                    warps / 4,
                    m / (16 * warps)
                ),
                (true, None) => format!(
                    "mma [{m}, {n}, {k}]: mma.sync (wgmma needs warps in whole warpgroups, M a multiple of 16 x {warps} warps, 16 <= N <= 256, K a multiple of 16)"
                ),
                (false, None) => format!("mma [{m}, {n}, {k}]: mma.sync"),
            });
            let l = Layout::Mma(grid);
            anchors.push((r, l));
        }
    });
    if let Some(d) = bad {
        return Err(d);
    }
    for (v, l) in anchors {
        set_layout(func, v, l);
    }
    // Uses of each value (op results only), for the backward rule.
    let mut uses: BTreeMap<ValueId, Vec<Option<ValueId>>> = BTreeMap::new();
    func.walk(&mut |op| {
        let users: Vec<ValueId> = match &op.kind {
            OpKind::Broadcast(x) => vec![*x],
            OpKind::Mma { acc, .. } => vec![*acc],
            k => elementwise_reads(k),
        };
        for u in users {
            uses.entry(u).or_default().push(op.result);
        }
        match &op.kind {
            OpKind::For { init, iters, yields, .. } => {
                for ((i, it), y) in init.iter().zip(iters).zip(yields) {
                    uses.entry(*i).or_default().push(Some(*it));
                    uses.entry(*y).or_default().push(Some(*it));
                }
            }
            OpKind::If { then_yields, else_yields, results, .. } => {
                for ((t, e), r) in then_yields.iter().zip(else_yields).zip(results) {
                    uses.entry(*t).or_default().push(Some(*r));
                    uses.entry(*e).or_default().push(Some(*r));
                }
            }
            _ => {}
        }
    });
    // Forward and backward to a fixpoint (each step only turns a layout into a tensor-core
    // one, so it ends).
    for _ in 0..64 {
        let mut changes: Vec<(ValueId, Layout)> = vec![];
        let mma_of = |v: ValueId| layout(func, v).filter(Layout::is_mma_family);
        func.walk(&mut |op| {
            let Some(r) = op.result else {
                if let OpKind::For { init, iters, yields, results, .. } = &op.kind {
                    for (((i, it), y), res) in init.iter().zip(iters).zip(yields).zip(results) {
                        if let Some(l) = mma_of(*i).or_else(|| mma_of(*y)).or_else(|| mma_of(*it)) {
                            for v in [*it, *res] {
                                if mma_of(v).is_none() && is_tile(func, v) {
                                    changes.push((v, l.clone()));
                                }
                            }
                        }
                    }
                }
                if let OpKind::If { then_yields, else_yields, results, .. } = &op.kind {
                    for ((t, e), res) in then_yields.iter().zip(else_yields).zip(results) {
                        if let Some(l) = mma_of(*t).or_else(|| mma_of(*e)) {
                            if mma_of(*res).is_none() && is_tile(func, *res) {
                                changes.push((*res, l));
                            }
                        }
                    }
                }
                return;
            };
            if mma_of(r).is_some() || !is_tile(func, r) {
                return;
            }
            let rshape = func.ty(r).shape().to_vec();
            let fwd = match &op.kind {
                OpKind::Reduce { axis, value, .. } => {
                    mma_of(*value).map(|p| Layout::Slice { dim: *axis as usize, parent: Box::new(p) })
                }
                OpKind::Broadcast(x) => match mma_of(*x) {
                    Some(Layout::Slice { dim, parent }) if func.ty(*x).shape()[dim] == 1 && rshape[dim] != 1 => {
                        Some(*parent)
                    }
                    _ => None,
                },
                OpKind::Gather { .. } | OpKind::Rand { .. } => None,
                k => elementwise_reads(k)
                    .into_iter()
                    .find(|v| func.ty(*v).shape() == &rshape[..] && mma_of(*v).is_some())
                    .and_then(mma_of),
            };
            if let Some(l) = fwd {
                changes.push((r, l));
                return;
            }
            // Backward: a free producer whose every use wants one tensor-core layout.
            let free = matches!(
                op.kind,
                OpKind::Splat(_)
                    | OpKind::Broadcast(_)
                    | OpKind::Cmp(..)
                    | OpKind::Logic(..)
                    | OpKind::Binary { .. }
                    | OpKind::Select { .. }
                    | OpKind::Cast(_)
            );
            if !free {
                return;
            }
            let Some(us) = uses.get(&r) else { return };
            let wants: Vec<Option<Layout>> = us.iter().map(|u| u.and_then(mma_of)).collect();
            if let Some(Some(first)) = wants.first() {
                if wants.iter().all(|w| w.as_ref() == Some(first)) && first.rank() == rshape.len() {
                    changes.push((r, first.clone()));
                }
            }
        });
        if changes.is_empty() {
            break;
        }
        for (v, l) in changes {
            set_layout(func, v, l);
        }
    }
    Ok(lines)
}

/// The layout operand `slot` of an op needs, given the op's result layout (`None`: any).
fn wanted(func: &Func, kind: &OpKind, result: Option<ValueId>) -> Vec<Option<Layout>> {
    let rl = result.and_then(|r| layout(func, r));
    match kind {
        // A scale tile goes to shared memory as its operand does (the lowering reads each
        // lane's factors from there).
        OpKind::Mma { a, scales, .. } => match rl {
            // A 16-bit A operand already in the accumulator's tcgen05 layout stays in
            // registers: the lowering stores it into Tensor Memory for the product.
            Some(Layout::Mma(m)) if scales.is_none() && super::reads_a_from_tmem(func, *a, &m) => {
                vec![None, Some(Layout::DotOperand { op_idx: 1, parent: m }), Some(Layout::Mma(m))]
            }
            // tcgen05's scales go to Tensor Memory from registers: each thread the factors of
            // rows `lane`, `lane + 32`, … (A; columns of B), all of the tile's K blocks
            // (`tilec_core::layout::tmem::scale_cell`), every warp a copy.
            Some(Layout::Mma(m)) if m.family == MmaFamily::Tcgen05 && scales.is_some() => {
                let ks = scales.map_or(1, |(sa, _)| func.ty(sa).shape()[1]);
                let [sa, sb] = Mma::tcgen05_scale_layouts(ks, m.num_warps());
                vec![
                    Some(Layout::DotOperand { op_idx: 0, parent: m }),
                    Some(Layout::DotOperand { op_idx: 1, parent: m }),
                    Some(Layout::Mma(m)),
                    Some(Layout::Blocked(sa)),
                    Some(Layout::Blocked(sb)),
                ]
            }
            Some(Layout::Mma(m)) => vec![
                Some(Layout::DotOperand { op_idx: 0, parent: m }),
                Some(Layout::DotOperand { op_idx: 1, parent: m }),
                Some(Layout::Mma(m)),
                Some(Layout::DotOperand { op_idx: 0, parent: m }),
                Some(Layout::DotOperand { op_idx: 1, parent: m }),
            ],
            _ => vec![None; 5],
        },
        OpKind::Scatter { index, tile, .. } => vec![layout(func, *tile); index.len()],
        // A masked store's mask follows the stored tile.
        OpKind::Store { tile, mask: Some(_), .. } => vec![layout(func, *tile)],
        _ => vec![rl; elementwise_reads(kind).len()],
    }
}

fn operands_mut(kind: &mut OpKind) -> Vec<&mut ValueId> {
    match kind {
        OpKind::Mma { a, b, acc, scales } => {
            let mut v = vec![a, b, acc];
            if let Some((sa, sb)) = scales {
                v.extend([sa, sb]);
            }
            v
        }
        OpKind::Scatter { index, .. } => index.iter_mut().collect(),
        OpKind::Store { mask: Some(m), .. } => vec![m],
        k => elementwise_operands(k),
    }
}

/// Where a value's conversion goes: after its defining op, or at the top of the loop body
/// whose iteration argument it is.
#[derive(Default)]
struct Plan {
    /// (value, wanted layout text) → converted value, in creation order.
    made: BTreeMap<(ValueId, String), ValueId>,
    /// Conversion ops to emit after the op defining each value.
    after: BTreeMap<ValueId, Vec<Op>>,
    /// Ops replaced by an async copy (a load and the reshape of its tile): not emitted.
    remove: std::collections::BTreeSet<ValueId>,
    /// Operand buffers made, by the tile they hold and the operand layout they were made for
    /// (none for a tile another reads transposed: one buffer for both readers).
    bufs: BTreeMap<(ValueId, String), ValueId>,
}

/// What the conversions need to know about the kernel.
struct Ctx {
    defs: BTreeMap<ValueId, OpKind>,
    /// Where each value's op is in the source (an async copy keeps its load's).
    spans: BTreeMap<ValueId, tilec_core::Span>,
    uses: BTreeMap<ValueId, usize>,
    /// How many of each value's uses are as the B operand of an `mma`.
    b_operand_uses: BTreeMap<ValueId, usize>,
    warps: i64,
    /// Values the kernel's top level defines (outside every loop and branch).
    top: std::collections::BTreeSet<ValueId>,
    /// Operand tiles read transposed from another's buffer (`shared_operands::pairs`): the
    /// tile → (the tile whose buffer holds it, the later of the two, after which it is read).
    views: BTreeMap<ValueId, (ValueId, ValueId)>,
    /// Tiles whose buffer some reader reads through a matrix descriptor (wgmma, tcgen05).
    by_descriptor: std::collections::BTreeSet<ValueId>,
}

impl Ctx {
    /// Whether another operand tile reads `v`'s buffer transposed (one buffer for both).
    fn read_both_ways(&self, v: ValueId) -> bool {
        self.views.values().any(|&(x, _)| x == v)
    }
}

/// A load that can fill an operand buffer with `cp.async` instead of registers: `v` is the
/// load's tile (or its reshape that only drops unit dims), used once, or only as the B operand
/// of `mma`s (two query tiles' products reading one key tile: one buffer where they want one
/// layout — not an A operand: the activations of `matmul_swiglu`'s untransposed form, read
/// by its gate and up products, ran 14 % slower from a cp.async ring than from registers on
/// the H100, bench/results/2026-11-27-session19/swiglu-a-ring/); 16-bit or 8-bit float
/// elements; a tensor specialised as 16-byte aligned; 16-byte vectors along the contiguous dim.
/// Returns the load (its op and result) and the reshape's result if there is one.
fn async_source(func: &Func, ctx: &Ctx, v: ValueId) -> Option<(OpKind, ValueId, Option<ValueId>)> {
    let once = |x: ValueId| ctx.uses.get(&x) == Some(&1);
    let (load, lv, rv) = match ctx.defs.get(&v)? {
        k @ OpKind::Load { .. } => (k.clone(), v, None),
        OpKind::Reshape(x) => match ctx.defs.get(x)? {
            k @ OpKind::Load { .. } if once(*x) => (k.clone(), *x, Some(v)),
            _ => return None,
        },
        _ => return None,
    };
    let OpKind::Load { tensor, order, .. } = &load else { return None };
    let aligned = func.params.iter().any(|p| p.value == *tensor && p.divisibility >= 16);
    let lt = func.ty(lv);
    let eb = lt.dtype().bytes();
    let b = Blocked::for_load(lt.shape(), eb, ctx.warps, order).ok()?;
    let same = |l: &Layout, x: ValueId| {
        func.ty(x)
            .layout()
            .is_some_and(|h| h.to_linear(func.ty(x).shape()).squeezed() == l.to_linear(lt.shape()).squeezed())
    };
    let ok = (once(v) || ctx.b_operand_uses.get(&v).is_some_and(|n| Some(n) == ctx.uses.get(&v)))
        && aligned
        && (eb == 2 || (eb == 1 && (lt.dtype().is_fp8() || lt.dtype() == tilec_core::DType::F4E2M1X2)))
        && b.size_per_thread[b.order[0]] == i64::from(16 / eb)
        && same(&Layout::Blocked(b.clone()), v);
    ok.then_some((load, lv, rv))
}

/// The shared buffer holding `v` for the `mma` operand `want` (made once per tile, its ops
/// recorded after `v`'s definition): filled by an async copy where `v` is a load that can be
/// (the load then goes), else from registers.
fn operand_buffer(func: &mut Func, plan: &mut Plan, ctx: &Ctx, v: ValueId, want: &Layout) -> ValueId {
    let key = (v, if ctx.read_both_ways(v) { String::new() } else { want.to_mlir() });
    if let Some(&b) = plan.bufs.get(&key) {
        return b;
    }
    let ty = func.ty(v).clone();
    let (shape, dtype) = (ty.shape().to_vec(), ty.dtype());
    // Through a shared buffer swizzled for ldmatrix, in the operand's own order.
    let order = match ty.layout() {
        Some(Layout::Blocked(b)) if b.order.first() == Some(&0) => [0, 1],
        _ => [1, 0],
    };
    // Unswizzled: `tile-swizzle` picks the swizzle from the buffer's writer and reader.
    // wgmma and tcgen05 read it through a descriptor, which knows only the NVMMA
    // layouts: the widest one its contiguous dim takes (`Mma::wgmma` and
    // `Mma::tcgen05` keep every operand at 32 bytes or more), whatever passes follow.
    let eb = i64::from(dtype.bytes());
    let nvmma = if want.reads_by_descriptor() || ctx.by_descriptor.contains(&v) {
        SwizzledShared::nvmma_for(shape[order[0]], eb, order)
    } else {
        None
    };
    let sl = nvmma.unwrap_or_else(|| SwizzledShared::plain(eb, order));
    let buf = func.new_value(Type::Smem { shape: shape.clone(), dtype, layout: sl });
    // The A operand of a tcgen05 product of fewer than 64 rows is held several times
    // over (`Mma::tcgen05_a_replicas`): registers write every copy; a copy from global
    // memory fills one, which the lowering copies whole 8-row atoms of where a product
    // reads it — so only in a loop, whose copies become a ring (outside, registers
    // write the copies once), and K-major (along M the copies would change the
    // buffer's swizzle).
    let replicated = matches!(want, Layout::DotOperand { op_idx: 0, parent }
        if parent.family == MmaFamily::Tcgen05 && Mma::tcgen05_a_replicas(shape[0]) > 1);
    let copyable = !replicated || (order == [1, 0] && !ctx.top.contains(&v));
    let mut ops = vec![];
    match async_source(func, ctx, v).filter(|_| copyable) {
        Some((OpKind::Load { tensor, index, padding, order, latency }, lv, rv)) => {
            // Global → shared without registers, then wait (`tile-pipeline` moves the
            // copy ahead when it is in a loop).
            let tile = func.ty(lv).shape().to_vec();
            let kind = OpKind::AsyncCopy { dst: None, tensor, index, padding, order, tile, latency, tma: false };
            ops.push(Op { kind, result: Some(buf), span: ctx.spans.get(&lv).copied() });
            ops.push(Op { kind: OpKind::AsyncWait { pending: 0 }, result: None, span: None });
            plan.remove.insert(lv);
            plan.remove.extend(rv);
        }
        _ => ops.push(Op { kind: OpKind::LocalAlloc { value: v }, result: Some(buf), span: None }),
    }
    plan.after.entry(v).or_default().extend(ops);
    plan.bufs.insert(key, buf);
    buf
}

/// Makes a value of `v` laid out as `want`: returns the new value, the ops recorded in `plan`.
fn convert_to(func: &mut Func, plan: &mut Plan, ctx: &Ctx, v: ValueId, want: &Layout) -> ValueId {
    let key = (v, want.to_mlir());
    if let Some(c) = plan.made.get(&key) {
        return *c;
    }
    let ty = func.ty(v).clone();
    let (shape, dtype) = (ty.shape().to_vec(), ty.dtype());
    let tile = |l: Layout| Type::Tile { shape: shape.clone(), dtype, layout: Some(l) };
    let mut ops = vec![];
    let same = ty.layout().is_some_and(|l| l.same_placement(want, &shape));
    let out = match (ctx.defs.get(&v).cloned(), want) {
        (Some(OpKind::Splat(s)), _) => {
            let nv = func.new_value(tile(want.clone()));
            ops.push(Op { kind: OpKind::Splat(s), result: Some(nv), span: None });
            nv
        }
        // Read transposed from the buffer of the tile it is the transpose of.
        (_, Layout::DotOperand { .. }) if ctx.views.contains_key(&v) => {
            let (x, after) = ctx.views[&v];
            let buf = operand_buffer(func, plan, ctx, x, want);
            let nv = func.new_value(tile(want.clone()));
            plan.after.entry(after).or_default().push(Op {
                kind: OpKind::LocalLoad { buf, trans: true },
                result: Some(nv),
                span: None,
            });
            // The load it replaces (and its reshape) go.
            if let Some(OpKind::Reshape(l)) = ctx.defs.get(&v) {
                plan.remove.insert(*l);
            }
            plan.remove.insert(v);
            plan.made.insert(key, nv);
            return nv;
        }
        // wgmma reads B from shared memory only, whatever registers hold it; tcgen05 both;
        // an 8-bit operand too (its fragments are read from byte pairs in a buffer).
        (_, Layout::DotOperand { op_idx, parent })
            if !same
                || (*op_idx == 1 && parent.family == MmaFamily::Wgmma)
                || parent.family == MmaFamily::Tcgen05
                || dtype.is_fp8()
                || dtype.is_scale()
                || dtype == tilec_core::DType::F4E2M1X2
                || ctx.read_both_ways(v) =>
        {
            let buf = operand_buffer(func, plan, ctx, v, want);
            let nv = func.new_value(tile(want.clone()));
            ops.push(Op { kind: OpKind::LocalLoad { buf, trans: false }, result: Some(nv), span: None });
            nv
        }
        // A block-scale tile loaded for one product, wanted in registers (tcgen05's scales,
        // `Mma::tcgen05_scale_layouts`: a thread its rows' factors of every K block): loaded
        // in that layout, 16-byte vectors along K, instead of loaded in the load's own layout
        // and exchanged through shared memory (on sm_103a's NVFP4 GEMM 16 byte stores, 128
        // byte loads and 108 byte permutes a warp a K step).
        (Some(load @ OpKind::Load { .. }), Layout::Blocked(_)) if dtype.is_scale() && ctx.uses.get(&v) == Some(&1) => {
            let nv = func.new_value(tile(want.clone()));
            ops.push(Op { kind: load, result: Some(nv), span: ctx.spans.get(&v).copied() });
            plan.remove.insert(v);
            nv
        }
        _ => {
            let nv = func.new_value(tile(want.clone()));
            let scratch = tilec_core::layout::Shared::for_exchange(&shape, dtype.bytes());
            ops.push(Op { kind: OpKind::ConvertLayout { value: v, scratch }, result: Some(nv), span: None });
            nv
        }
    };
    plan.after.entry(v).or_default().extend(ops);
    plan.made.insert(key, out);
    out
}

/// Inserts the conversions the uses of tensor-core-era layouts need (elementwise operands,
/// `mma` operands, gather/rand indices), each right after its operand's definition.
pub(super) fn insert_conversions(func: &mut Func, warps: i64) -> Result<usize, Diagnostic> {
    let top = func.ops.iter().filter_map(|o| o.result).collect();
    let mut ctx = Ctx {
        defs: BTreeMap::new(),
        spans: BTreeMap::new(),
        uses: func.use_counts(),
        b_operand_uses: BTreeMap::new(),
        warps,
        top,
        views: BTreeMap::new(),
        by_descriptor: Default::default(),
    };
    func.walk(&mut |op| {
        if let OpKind::Mma { b, .. } = &op.kind {
            *ctx.b_operand_uses.entry(*b).or_default() += 1;
        }
        if let Some(r) = op.result {
            ctx.defs.insert(r, op.kind.clone());
            if let Some(s) = op.span {
                ctx.spans.insert(r, s);
            }
        }
    });
    let views = super::shared_operands::pairs(func, &|x| async_source(func, &ctx, x).is_some());
    ctx.views = views;
    // A shared buffer is NVMMA-laid-out when any of its readers reads it by descriptor.
    func.walk(&mut |op| {
        let (OpKind::Mma { a, b, .. }, Some(r)) = (&op.kind, op.result) else { return };
        if func.ty(r).layout().is_some_and(Layout::reads_by_descriptor) {
            for x in [a, b] {
                ctx.by_descriptor.insert(ctx.views.get(x).map_or(*x, |&(k, _)| k));
            }
        }
    });
    let mut plan = Plan::default();
    let mut ops = std::mem::take(&mut func.ops);
    rewrite_uses(func, &mut plan, &ctx, &mut ops);
    let n = plan.made.len();
    func.ops = place(&mut plan, ops);
    Ok(n)
}

fn rewrite_uses(func: &mut Func, plan: &mut Plan, ctx: &Ctx, ops: &mut [Op]) {
    for op in ops.iter_mut() {
        let want = wanted(func, &op.kind, op.result);
        for (slot, w) in operands_mut(&mut op.kind).into_iter().zip(want) {
            let Some(w) = w else { continue };
            if !is_tile(func, *slot) {
                continue;
            }
            let shape = func.ty(*slot).shape().to_vec();
            let has = func.ty(*slot).layout().cloned();
            let exact = has.as_ref() == Some(&w);
            let fine = has.as_ref().is_some_and(|h| h.same_placement(&w, &shape))
                && !matches!(w, Layout::DotOperand { .. } | Layout::Mma(_));
            if exact || fine {
                continue;
            }
            *slot = convert_to(func, plan, ctx, *slot, &w);
        }
        match &mut op.kind {
            OpKind::For { body, .. } => rewrite_uses(func, plan, ctx, body),
            OpKind::If { then_ops, else_ops, .. } => {
                rewrite_uses(func, plan, ctx, then_ops);
                rewrite_uses(func, plan, ctx, else_ops);
            }
            _ => {}
        }
    }
}

/// Places the planned conversions after their operands' definitions (loop iteration
/// arguments: at the top of the body; if results: after the `if`).
fn place(plan: &mut Plan, ops: Vec<Op>) -> Vec<Op> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in ops {
        let mut extra: Vec<Op> = vec![];
        match &mut op.kind {
            OpKind::For { body, iters, results, .. } => {
                let mut top = vec![];
                for it in iters.iter() {
                    top.extend(plan.after.remove(it).unwrap_or_default());
                }
                let inner = place(plan, std::mem::take(body));
                top.extend(inner);
                *body = top;
                for r in results.iter() {
                    extra.extend(plan.after.remove(r).unwrap_or_default());
                }
            }
            OpKind::If { then_ops, else_ops, results, .. } => {
                *then_ops = place(plan, std::mem::take(then_ops));
                *else_ops = place(plan, std::mem::take(else_ops));
                for r in results.iter() {
                    extra.extend(plan.after.remove(r).unwrap_or_default());
                }
            }
            _ => {}
        }
        let removed = op.result.is_some_and(|r| plan.remove.contains(&r));
        if let Some(r) = op.result {
            extra.extend(plan.after.remove(&r).unwrap_or_default());
        }
        if !removed {
            out.push(op);
        }
        out.extend(extra);
    }
    out
}
