//! `tile-mma-overlap`: an asynchronous product stays in flight until its result is read,
//! while the block issues its next products and computes what does not depend on it.
//!
//! Needs: `tilegpu` after `tile-pipeline` and `tile-warp-specialize` (their rings, stage
//! releases and ping-pong turns are in place; `tile-pipeline` keeps a GEMM's accumulator chain
//! in flight across iterations itself, and the turns are placed around products that are
//! still waited for at once).
//!
//! Does: in every op list (the kernel's and each region's), an asynchronous product — a
//! `wgmma` over every warp (`#tilegpu.wgmma` result) or a `tcgen05` one (`#tilegpu.tcgen05`
//! result, one 256-column block, no block scales), not already given a `tilegpu.mma_wait` —
//! whose result is first read at op `u` of the same list, with another such product issued or
//! other work done between it and `u`, gets `tilegpu.mma_wait {pending = n}` right before `u`
//! (`n`: the products issued between; wgmma groups complete in order, so at most `n` newer
//! ones may still run; a tcgen05 product is waited for by its own mbarrier, the count only
//! says how many overlap it) and every later read — the enclosing region's yields too — goes
//! through the wait. A `tilegpu.stage_release` between the product and `u` of a ring the
//! product reads moves to right after the wait: the producer may refill the stage only once
//! the product has read it. This is FlashAttention-3's intra-warpgroup overlap on sm_90a and
//! FlashAttention-4's order on sm_103a where the kernel issues its products that way
//! (`kernels/fmha.tile`'s `OVERLAP`: `Q·K_jᵀ` then `P_{j-1}·V_{j-1}`, the softmax of tile `j`
//! running while the second product is on the tensor cores): the lowering otherwise waits for
//! every product where it is issued. A tcgen05 product left in flight gets a Tensor Memory
//! region (and one for an A operand it reads from Tensor Memory) and an mbarrier of its own
//! in the lowering (`TmemPlan::deferred`, `deferred_a`).
//!
//! Guarantees: results unchanged (every read of a product's result follows its wait; a ring
//! stage a product reads is neither released nor refilled before the wait); a
//! product's wait stays in the list it was issued in, so no product crosses a loop's back
//! edge here.
//!
//! A product whose result only the region's yield reads (not a chain: its accumulator is no
//! iteration argument) is waited for at the end of the list, right before the yield — the
//! next iteration reads it: FlashAttention-4's next key tile's scores, issued at the top of
//! an iteration beside the previous tile's P·V so that neither softmax waits for a product
//! of its own iteration (`kernels/fmha.tile`'s two query tiles).
//!
//! Leaves alone, and reports why: a chain's product whose result is read only by a yield
//! (`tile-pipeline` decides those), one with nothing issued or computed before its first read
//! (nothing to overlap: turns, stage waits and releases, other waits and scalars only), one
//! with a nested product or a copy into a buffer it reads before its first read,
//! block-scaled and multi-block tcgen05 products, and `mma.sync` ones (synchronous).
//!
//! Options: none.

use std::collections::{BTreeMap, BTreeSet};
use tilec_core::layout::{Layout, Mma, MmaFamily};
use tilec_core::tir::{walk_ops, Func, Op, OpKind, ValueId};

use crate::tile_warp_specialize::is_wide_wgmma;

/// A product this pass may leave in flight: a wgmma over every warp, or a tcgen05 product of
/// one 256-column block without block scales (the lowering gives it a TMEM region — and one
/// for an A it reads from TMEM — and an mbarrier of its own).
fn deferrable(func: &Func, op: &Op) -> bool {
    if is_wide_wgmma(func, op) {
        return true;
    }
    let (OpKind::Mma { scales: None, .. }, Some(r)) = (&op.kind, op.result) else { return false };
    matches!(func.ty(r).layout(), Some(Layout::Mma(m))
        if m.family == MmaFamily::Tcgen05 && Mma::tcgen05_n_blocks(func.ty(r).shape()) == 1)
}

/// What the pass did, for `--report`.
#[derive(Clone, Debug, Default)]
pub struct OverlapReport {
    pub lines: Vec<String>,
}

/// Runs the pass.
pub fn run(func: &mut Func) -> OverlapReport {
    let mut report = OverlapReport::default();
    let mut facts = Facts::default();
    func.walk(&mut |o| match (&o.kind, o.result) {
        (OpKind::MmaWait { value, .. }, _) => {
            facts.waited.insert(*value);
        }
        (OpKind::LocalLoad { buf, .. } | OpKind::Stage { buf, .. }, Some(r)) => {
            facts.parent.insert(r, *buf);
        }
        _ => {}
    });
    let mut ops = std::mem::take(&mut func.ops);
    list(func, &mut ops, &mut [], &[], &facts, &mut report);
    func.ops = ops;
    if report.lines.is_empty() {
        report.lines.push("no asynchronous product to leave in flight".into());
    }
    report
}

/// What the pass reads off the whole kernel before it changes anything.
#[derive(Default)]
struct Facts {
    /// Products `tile-pipeline` already waits for (its in-flight chains).
    waited: BTreeSet<ValueId>,
    /// A `local_load`'s buffer, a stage's ring.
    parent: BTreeMap<ValueId, ValueId>,
}

impl Facts {
    /// The buffer a value reads and, for a stage, its ring.
    fn buffers(&self, v: ValueId) -> Vec<ValueId> {
        let mut out = vec![];
        let mut at = v;
        while let Some(&p) = self.parent.get(&at) {
            out.push(p);
            at = p;
        }
        out
    }
}

/// Whether `op` or an op of its regions reads `v`.
pub(crate) fn uses(op: &Op, v: ValueId) -> bool {
    let mut found = false;
    walk_ops(std::slice::from_ref(op), &mut |o| found |= o.kind.operands().contains(&v));
    found
}

/// The accumulator operand of a product.
fn accumulator(op: &Op) -> Option<ValueId> {
    match &op.kind {
        OpKind::Mma { acc, .. } => Some(*acc),
        _ => None,
    }
}

/// The pass over one op list; `yields` are the values its region yields (they read its
/// results after every op of the list), `chain_args` its loop's iteration arguments.
fn list(
    func: &mut Func,
    ops: &mut Vec<Op>,
    yields: &mut [ValueId],
    chain_args: &[ValueId],
    facts: &Facts,
    report: &mut OverlapReport,
) {
    for op in ops.iter_mut() {
        match &mut op.kind {
            OpKind::For { body, yields, iters, .. } => {
                let iters = iters.clone();
                list(func, body, yields, &iters, facts, report)
            }
            OpKind::If { then_ops, then_yields, else_ops, else_yields, .. } => {
                list(func, then_ops, then_yields, chain_args, facts, report);
                list(func, else_ops, else_yields, chain_args, facts, report);
            }
            _ => {}
        }
    }
    let mut i = 0;
    while i < ops.len() {
        let Some(r) = ops[i].result.filter(|r| deferrable(func, &ops[i]) && !facts.waited.contains(r)) else {
            i += 1;
            continue;
        };
        match defer(func, ops, yields, chain_args, i, r, facts) {
            Ok(line) => report.lines.push(line),
            Err(why) => report.lines.push(format!("product %{} waited for at once: {why}", r.0)),
        }
        i += 1;
    }
}

/// Leaves the product at `i` (result `r`) in flight until its first read, or says why not.
fn defer(
    func: &mut Func,
    ops: &mut Vec<Op>,
    yields: &mut [ValueId],
    chain_args: &[ValueId],
    i: usize,
    r: ValueId,
    facts: &Facts,
) -> Result<String, String> {
    // A product only the region's yield reads — not a chain's (its accumulator an iteration
    // argument: `tile-pipeline` decides those) — is waited for at the end of the list, before
    // the yield: FlashAttention-4's next key tile's scores, issued at the top of an iteration
    // and read by the next one.
    let u = match (i + 1..ops.len()).find(|&k| uses(&ops[k], r)) {
        Some(u) => u,
        None if yields.contains(&r) && !accumulator(&ops[i]).is_some_and(|a| chain_args.contains(&a)) => ops.len(),
        None => return Err("its result is only yielded".into()),
    };
    let reads: BTreeSet<ValueId> = ops[i].kind.operands().into_iter().flat_map(|v| facts.buffers(v)).collect();
    let mut newer = 0u32;
    let mut releases = vec![];
    for (k, o) in ops.iter().enumerate().take(u).skip(i + 1) {
        if deferrable(func, o) {
            newer += 1;
            continue;
        }
        let mut nested = false;
        walk_ops(std::slice::from_ref(o), &mut |n| nested |= matches!(n.kind, OpKind::Mma { .. }));
        if nested {
            return Err("another product before its first read is not an asynchronous product of this list".into());
        }
        let mut writes = false;
        walk_ops(std::slice::from_ref(o), &mut |n| {
            if let OpKind::AsyncCopy { dst: Some(d), .. } = &n.kind {
                writes |= std::iter::once(*d).chain(facts.buffers(*d)).any(|b| reads.contains(&b));
            }
        });
        if writes {
            return Err("a copy into a buffer it reads comes before its first read".into());
        }
        if let OpKind::StageRelease { ring, .. } = o.kind {
            if reads.contains(&ring) {
                releases.push(k);
            }
        }
    }
    if newer == 0 && ops[i + 1..u].iter().all(|o| bookkeeping(func, o)) {
        return Err("nothing is issued or computed before its first read".into());
    }
    let until =
        if u == ops.len() { "the end of its loop's iteration (read by the next one)" } else { "its first read" };
    let ty = func.ty(r).clone();
    let w = func.new_value(ty);
    for op in &mut ops[u..] {
        rename(op, r, w);
    }
    for y in yields.iter_mut().filter(|y| **y == r) {
        *y = w;
    }
    let wait = Op { kind: OpKind::MmaWait { value: r, pending: newer }, result: Some(w), span: ops[i].span };
    // The releases of its rings follow the wait, in their order.
    let moved: Vec<Op> = releases.iter().rev().map(|&k| ops.remove(k)).collect();
    let u = u - moved.len();
    ops.insert(u, wait);
    for (n, m) in moved.into_iter().rev().enumerate() {
        ops.insert(u + 1 + n, m);
    }
    Ok(format!(
        "product %{} left in flight until {until} (mma_wait pending={newer}: the {newer} product(s) issued after it may still run){}",
        r.0,
        if releases.is_empty() { String::new() } else { format!("; {} stage release(s) moved after the wait", releases.len()) }
    ))
}

/// An op that neither issues a product nor computes: a turn, a stage release or wait, another
/// product's wait, a scalar.
fn bookkeeping(func: &Func, op: &Op) -> bool {
    matches!(
        op.kind,
        OpKind::Turn { .. } | OpKind::StageRelease { .. } | OpKind::StageWait { .. } | OpKind::MmaWait { .. }
    ) || crate::tile_pipeline::pure_scalar(func, op)
}

/// Replaces every read of `from` in `op` (and its regions) with `to`.
fn rename(op: &mut Op, from: ValueId, to: ValueId) {
    op.kind.replace_operand(from, to);
    match &mut op.kind {
        OpKind::For { body, .. } => body.iter_mut().for_each(|o| rename(o, from, to)),
        OpKind::If { then_ops, else_ops, .. } => {
            then_ops.iter_mut().chain(else_ops.iter_mut()).for_each(|o| rename(o, from, to));
        }
        _ => {}
    }
}
