//! `tile-licm`: layout conversions of loop-invariant tiles move out of their loops.
//!
//! Needs: `tilegpu` after `tile-layout`, which puts a `tilegpu.convert_layout` right before the
//! use that needs another layout — inside a loop, and inside an `if` of it, even when the
//! converted tile is made before the loop (causal FMHA's query offsets `offs_m`, blocked,
//! compared with the key offsets in the scores' `#wgmma` layout inside the diagonal tiles'
//! `if`).
//!
//! Does: in every `scf.for` (innermost first, so that a conversion climbs out of a nest one
//! loop at a time), a `convert_layout` whose operand is defined outside the loop — not by the
//! body, its nested regions, the induction variable or a loop-carried value — and whose
//! result is small (at most [`MAX_ELEMS_PER_THREAD`] elements a thread) moves to just before
//! the loop, from the body or from any `if` nested in it (not from a nested loop: that loop's
//! own run moved it already, if it could). A conversion is a shared-memory round trip with
//! two barriers; out of the loop it runs once instead of once per iteration, and no barrier
//! is left where the loop's warpgroups may be out of step (the ping-pong turns of
//! `tile-warp-specialize` forbid a consumer-wide barrier inside a turn).
//!
//! Guarantees: the program's results are unchanged (a conversion has no effect but its value,
//! which depends only on its operand; running it where the `if` would not have is harmless);
//! the moved value lives across the loop, so only small tiles move.
//!
//! Options: none.

use std::collections::BTreeSet;
use tilec_core::tir::{defined_values, Func, Op, OpKind, ValueId};

/// The largest conversion moved, in elements a thread holds (a slice's few rows; a full tile
/// kept live across the loop would cost its registers for the loop's whole length).
pub const MAX_ELEMS_PER_THREAD: i64 = 8;

/// What the pass did, for `--report`.
#[derive(Clone, Debug, Default)]
pub struct LicmReport {
    pub lines: Vec<String>,
}

/// Runs the pass.
pub fn run(func: &mut Func) -> LicmReport {
    let mut report = LicmReport::default();
    let threads = i64::from(func.num_warps.max(1)) * 32;
    let elems = |func: &Func, v: ValueId| -> i64 { func.ty(v).shape().iter().product::<i64>().max(1) };
    let mut ops = std::mem::take(&mut func.ops);
    hoist_in(&mut ops, &mut |op: &Op, inside: &BTreeSet<ValueId>| {
        let OpKind::ConvertLayout { value, .. } = &op.kind else { return false };
        let Some(r) = op.result else { return false };
        let small = (elems(func, r) + threads - 1) / threads <= MAX_ELEMS_PER_THREAD;
        if small && !inside.contains(value) {
            report.lines.push(format!(
                "convert_layout of %{} ({:?}) moved before its loop",
                value.0,
                func.ty(r).shape()
            ));
            true
        } else {
            false
        }
    });
    func.ops = ops;
    report
}

/// Runs over `ops` and their regions, innermost loops first: ops that `movable` accepts (given
/// the values defined inside the loop) leave each loop for just before it.
fn hoist_in(ops: &mut Vec<Op>, movable: &mut dyn FnMut(&Op, &BTreeSet<ValueId>) -> bool) {
    let mut i = 0;
    while i < ops.len() {
        let mut moved = vec![];
        match &mut ops[i].kind {
            OpKind::For { body, iv, iters, .. } => {
                hoist_in(body, movable);
                let mut inside = defined_values(body);
                inside.insert(*iv);
                inside.extend(iters.iter().copied());
                take_movable(body, &inside, movable, &mut moved);
            }
            OpKind::If { then_ops, else_ops, .. } => {
                hoist_in(then_ops, movable);
                hoist_in(else_ops, movable);
            }
            _ => {}
        }
        let n = moved.len();
        ops.splice(i..i, moved);
        i += n + 1;
    }
}

/// Takes out of `ops` (a loop body) and the `if`s nested in it the ops `movable` accepts, in
/// program order, into `out`.
fn take_movable(
    ops: &mut Vec<Op>,
    inside: &BTreeSet<ValueId>,
    movable: &mut dyn FnMut(&Op, &BTreeSet<ValueId>) -> bool,
    out: &mut Vec<Op>,
) {
    let mut kept = Vec::with_capacity(ops.len());
    for mut op in std::mem::take(ops) {
        if let OpKind::If { then_ops, else_ops, .. } = &mut op.kind {
            take_movable(then_ops, inside, movable, out);
            take_movable(else_ops, inside, movable, out);
        }
        if movable(&op, inside) {
            out.push(op);
        } else {
            kept.push(op);
        }
    }
    *ops = kept;
}
