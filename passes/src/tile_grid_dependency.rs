//! `tile-grid-dependency`: a kernel launched with programmatic dependent launch issues its
//! first TMA copies of the tensors no earlier grid writes (a model's weights) before it waits
//! for the grid before it, so that they arrive while that grid finishes.
//!
//! Needs: `tilegpu` after `tile-pipeline`, `tile-warp-specialize` and `tile-mma-overlap` (the
//! rings' prologue copies are in place at the kernel's top level); the kernel's `independent`
//! hint (its tensor parameters printed `{tile.independent}`); a target with `griddepcontrol`.
//!
//! Does: finds the first top-level op that does anything but scalar arithmetic and TMA copies
//! of independent tensors — the place the kernel has to wait for the grid before it (a read
//! of what it writes, a write of what it reads). Between there and the first loop (the rings'
//! prologue), a TMA copy of an independent tensor into a ring stage (alone or in the
//! result-less `if` that guards it) moves above that place with the scalars it needs, in its
//! order; a `tilegpu.grid_dependency_wait` goes after them. So do `prefetch`es of independent
//! tensors (alone, or in a loop that carries nothing and holds only scalars and such
//! prefetches: the kernel announcing the tiles its main loop will read), after the copies, so
//! that the tiles past the rings' first stages stream into L2 while the grid before finishes.
//! The kernel's loads of dependent tensors, its stores and atomics, its `cp.async` copies (one
//! commit group each, waited for by count: reordering them would change what a wait covers)
//! and its other loops stay after it. Without an independent tensor, on a target without
//! `griddepcontrol`, or in a warp-specialized kernel (a producer warpgroup issues the copies),
//! the pass does nothing and the lowering waits before anything else.
//!
//! Guarantees: before the wait, global memory is only read, and only through TMA copies of
//! independent tensors into ring stages no op before them touches and L2 prefetches of
//! independent tensors; every thread executes the wait (top level, uniform); a ring's copies
//! keep their order, so its stages and mbarrier phases are as `tile-pipeline` made them. What
//! the grid before wrote is read only after the wait; what it reads is written only after it.
//!
//! Options: `arch` (default: the module's `tile.target`).

use std::collections::{BTreeMap, BTreeSet};
use tilec_core::target::{Arch, Feature};
use tilec_core::tir::{walk_ops, Func, Op, OpKind, ValueId};

/// What the pass did, for `--report`.
#[derive(Clone, Debug, Default)]
pub struct GridDependencyReport {
    pub lines: Vec<String>,
}

/// Runs the pass.
pub fn run(func: &mut Func, arch: &Arch) -> GridDependencyReport {
    let mut report = GridDependencyReport::default();
    let independent: BTreeSet<ValueId> = func.params.iter().filter(|p| p.independent).map(|p| p.value).collect();
    if independent.is_empty() || !arch.has(Feature::GridDepControl) {
        return report;
    }
    if func.warp_spec.is_some() {
        report.lines.push("warp-specialized: waits before anything else (its producer issues the copies)".into());
        return report;
    }
    // The rings, and which ring each stage view is of: a copy's destination names its ring
    // through it.
    let mut ring_of = BTreeMap::new();
    func.walk(&mut |o| match (&o.kind, o.result) {
        (OpKind::Stage { buf, .. }, Some(r)) => {
            ring_of.insert(r, *buf);
        }
        (OpKind::StagesAlloc, Some(r)) => {
            ring_of.insert(r, r);
        }
        _ => {}
    });
    let cx = Cx { independent: &independent, ring_of: &ring_of };
    let mut ops = std::mem::take(&mut func.ops);
    let wait_at = ops.iter().position(|o| !cx.scalar(o) && !cx.early_copy(o)).unwrap_or(ops.len());
    // The prologue: up to the first loop or op with a region that yields.
    let end = ops[wait_at..].iter().position(|o| !(cx.scalar(o) || cx.copies(o))).map_or(ops.len(), |p| wait_at + p);
    let mut moved = BTreeSet::new();
    let mut defined_late: BTreeMap<ValueId, usize> = BTreeMap::new();
    for (i, o) in ops.iter().enumerate().take(end).skip(wait_at) {
        if cx.early_copy(o) && !touches_ring_before(&cx, &ops[wait_at..i], &moved, wait_at, o) {
            if let Some(slice) = slice(&ops, &defined_late, o, &cx) {
                moved.extend(slice);
                moved.insert(i);
            }
        }
        for r in results(o) {
            defined_late.insert(r, i);
        }
    }
    let copies = moved.iter().filter(|&&i| cx.early_copy(&ops[i]) && !cx.early_prefetch(&ops[i])).count();
    let tail = ops.split_off(wait_at);
    let (early, late): (Vec<_>, Vec<_>) =
        tail.into_iter().enumerate().partition(|(i, _)| moved.contains(&(i + wait_at)));
    // The rings' first copies go out before the prefetches of the tiles after them, wherever
    // the kernel wrote those (a prefetch only needs scalars, which stay before it).
    let (mut announce, head): (Vec<_>, Vec<_>) = ops.into_iter().partition(|o| cx.early_prefetch(o));
    let (more, fill): (Vec<_>, Vec<_>) = early.into_iter().map(|(_, o)| o).partition(|o| cx.early_prefetch(o));
    announce.extend(more);
    let loops = announce.iter().filter(|o| matches!(o.kind, OpKind::For { .. })).count();
    let prefetches = announce.len() - loops;
    let mut ops = head;
    ops.extend(fill);
    ops.extend(announce);
    ops.push(Op { kind: OpKind::GridDependencyWait, result: None, span: None });
    ops.extend(late.into_iter().map(|(_, o)| o));
    func.ops = ops;
    let names: Vec<&str> = func.params.iter().filter(|p| p.independent).map(|p| p.name.as_str()).collect();
    report.lines.push(format!(
        "{copies} TMA cop{} of {} issued before the wait for the grid before",
        if copies == 1 { "y" } else { "ies" },
        names.join(", ")
    ));
    if loops + prefetches > 0 {
        let mut of = BTreeSet::new();
        walk_ops(&func.ops, &mut |o| {
            if let OpKind::Prefetch { tensor, .. } = &o.kind {
                of.insert(*tensor);
            }
        });
        let of: Vec<&str> = func.params.iter().filter(|p| of.contains(&p.value)).map(|p| p.name.as_str()).collect();
        report.lines.push(format!(
            "L2 prefetches of {} issued before the wait ({loops} loop{}, {prefetches} alone)",
            of.join(", "),
            if loops == 1 { "" } else { "s" },
        ));
    }
    report
}

struct Cx<'a> {
    independent: &'a BTreeSet<ValueId>,
    ring_of: &'a BTreeMap<ValueId, ValueId>,
}

impl Cx<'_> {
    /// No memory, no synchronisation, no region: arithmetic on scalars, block ids, extents,
    /// ring and stage views (an op here may move above the wait, or stay before it).
    fn scalar(&self, o: &Op) -> bool {
        matches!(
            o.kind,
            OpKind::Bid { .. }
                | OpKind::Dim { .. }
                | OpKind::ConstInt(_)
                | OpKind::ConstFloat(_)
                | OpKind::Binary { .. }
                | OpKind::Unary { .. }
                | OpKind::Cmp(..)
                | OpKind::Logic(..)
                | OpKind::Select { .. }
                | OpKind::Cast(_)
                | OpKind::NumBlocks { .. }
                | OpKind::NumTiles { .. }
                | OpKind::ClusterRank
                | OpKind::Splat(_)
                | OpKind::StagesAlloc
                | OpKind::Stage { .. }
        )
    }

    /// A TMA copy of an independent tensor into a ring stage, alone or guarded by a
    /// result-less `if` holding nothing else but scalars and the wait for the stage to be
    /// free (`stage_acquire`, on the ring's own empty mbarrier: shared memory only); or
    /// prefetches of independent tensors, alone or in a loop carrying nothing that holds
    /// nothing else but scalars.
    fn early_copy(&self, o: &Op) -> bool {
        match &o.kind {
            OpKind::AsyncCopy { dst: Some(_), tensor, tma: true, .. } => self.independent.contains(tensor),
            OpKind::Prefetch { .. } | OpKind::For { .. } => self.early_prefetch(o),
            OpKind::If { then_ops, else_ops, results, .. } if results.is_empty() => {
                let all = then_ops.iter().chain(else_ops);
                all.clone().any(|n| self.early_copy(n))
                    && all.clone().all(|n| self.scalar(n) || self.acquire(n) || self.early_copy(n))
            }
            _ => false,
        }
    }

    /// A prefetch of an independent tensor, or a loop carrying nothing whose body holds only
    /// scalars and such prefetches (a kernel's loop announcing the tiles its main loop reads).
    fn early_prefetch(&self, o: &Op) -> bool {
        match &o.kind {
            OpKind::Prefetch { tensor, .. } => self.independent.contains(tensor),
            OpKind::For { body, init, results, .. } if init.is_empty() && results.is_empty() => {
                body.iter().any(|n| self.early_prefetch(n))
                    && body.iter().all(|n| self.scalar(n) || self.early_prefetch(n))
            }
            _ => false,
        }
    }

    /// Any copy into a ring stage (of any tensor, alone or under a result-less `if`): the ops
    /// of a prologue, which the pass looks through for early copies.
    fn copies(&self, o: &Op) -> bool {
        match &o.kind {
            OpKind::AsyncCopy { dst: Some(_), .. } => true,
            OpKind::Prefetch { .. } | OpKind::For { .. } => self.early_prefetch(o),
            OpKind::If { then_ops, else_ops, results, .. } if results.is_empty() => {
                then_ops.iter().chain(else_ops).all(|n| self.scalar(n) || self.acquire(n) || self.copies(n))
            }
            _ => false,
        }
    }

    fn acquire(&self, o: &Op) -> bool {
        matches!(o.kind, OpKind::StageAcquire { .. })
    }

    /// The rings an op (and its regions) copies into or otherwise names.
    fn rings(&self, o: &Op) -> BTreeSet<ValueId> {
        let mut out = BTreeSet::new();
        walk_ops(std::slice::from_ref(o), &mut |n| {
            out.extend(n.kind.operands().iter().filter_map(|v| self.ring_of.get(v)));
        });
        out
    }
}

/// The values an op defines at its own level.
fn results(o: &Op) -> Vec<ValueId> {
    let mut out: Vec<ValueId> = o.result.into_iter().collect();
    match &o.kind {
        OpKind::For { results, .. } | OpKind::If { results, .. } => out.extend(results),
        _ => {}
    }
    out
}

/// Whether an op that stays after the wait, between it and `o`, names a ring `o` copies into
/// (moving `o` above it would reorder the ring's fills).
fn touches_ring_before(cx: &Cx, before: &[Op], moved: &BTreeSet<usize>, base: usize, o: &Op) -> bool {
    let rings = cx.rings(o);
    before.iter().enumerate().any(|(k, n)| !moved.contains(&(base + k)) && !cx.rings(n).is_disjoint(&rings))
}

/// The ops after the wait's place that `o` needs moved with it (the scalars defining what it
/// reads, transitively), or `None` when one of them is not a scalar op.
fn slice(ops: &[Op], defined_late: &BTreeMap<ValueId, usize>, o: &Op, cx: &Cx) -> Option<BTreeSet<usize>> {
    let mut out = BTreeSet::new();
    let mut todo = vec![o];
    while let Some(n) = todo.pop() {
        let mut reads = vec![];
        walk_ops(std::slice::from_ref(n), &mut |m| reads.extend(m.kind.operands()));
        for v in reads {
            if let Some(&d) = defined_late.get(&v) {
                if !cx.scalar(&ops[d]) {
                    return None;
                }
                if out.insert(d) {
                    todo.push(&ops[d]);
                }
            }
        }
    }
    Some(out)
}
