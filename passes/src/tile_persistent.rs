//! `tile-persistent`: the kernel walks the tiles of its grid's x axis on as many blocks as the
//! GPU holds at once, instead of one block a tile.
//!
//! Needs: the `tile` stage (before `tile-layout`); nothing of the kernel's shape — blocks of a
//! tilec kernel have no order and share nothing, so any of them may run any tile.
//!
//! Does: the body becomes
//! `for %t = bid(0) to num_tiles(0) step num_blocks(0) { body }`, with the body's `bid(0)`
//! read as `%t` and its `num_blocks(0)` as `num_tiles(0)` (the grid the launch stands for:
//! `tile.num_tiles`, a parameter the launcher fills — the ABI's `persistent`). Then every pure
//! scalar op at the top of the loop body that reads nothing the loop makes moves before the
//! loop: extents, tile counts and the like are computed once a block, and the bounds of an
//! inner loop become values the tile loop does not change, which is what lets `tile-pipeline`
//! number a TMA ring's fills across tiles (its mbarrier phases run on from one tile to the
//! next) and `tile-warp-specialize` give the whole tile walk to the producer, whose copies
//! for tile i + 1 then overlap the consumers' epilogue of tile i (CUTLASS's and Triton's
//! persistent GEMMs).
//!
//! Guarantees: every tile `(x, y, z)` of the grid runs the body once, in one block, as long as
//! the launch has between 1 and `grid[0]` blocks along x (the runtime launches
//! `min(grid[0], SMs × blocks per SM)`, the interpreter at most
//! `tilec_interp::PERSISTENT_BLOCKS`); a block's tiles run in order, `bid(0)` first. Grid
//! axes 1 and 2 are unchanged.
//!
//! Leaves alone, and reports why: a kernel that reads `num_tiles` already (the pass ran).
//!
//! Options: none; it runs where the kernel's `persistent = true` hint or `--persistent` asks
//! for it.

use std::collections::BTreeSet;
use tilec_core::tir::{defined_values, BinOp, Func, MathFlags, Op, OpKind, Type, ValueId};
use tilec_core::DType;

use crate::tile_pipeline::pure_scalar;

/// What the pass did, for `--report`.
#[derive(Clone, Debug, Default)]
pub struct PersistentReport {
    pub lines: Vec<String>,
}

/// Every `bid(0)` of `ops` (nested regions included) becomes `t + 0`, every `num_blocks(0)`
/// `g + 0`: each value keeps its one definition, and LLVM folds the addition.
fn redirect(ops: &mut [Op], t: ValueId, g: ValueId, zero: ValueId) -> usize {
    let mut n = 0;
    for op in ops {
        let to = match &mut op.kind {
            OpKind::Bid { axis: 0 } => t,
            OpKind::NumBlocks { axis: 0 } => g,
            OpKind::For { body, .. } => {
                n += redirect(body, t, g, zero);
                continue;
            }
            OpKind::If { then_ops, else_ops, .. } => {
                n += redirect(then_ops, t, g, zero) + redirect(else_ops, t, g, zero);
                continue;
            }
            _ => continue,
        };
        op.kind = OpKind::Binary { op: BinOp::Add, lhs: to, rhs: zero, flags: MathFlags::default() };
        n += 1;
    }
    n
}

/// Runs the pass.
pub fn run(func: &mut Func) -> PersistentReport {
    let mut lines = vec![];
    let mut done = false;
    func.walk(&mut |o| done |= matches!(o.kind, OpKind::NumTiles { .. }));
    if done {
        lines.push("not applied: the kernel reads num_tiles already".into());
        return PersistentReport { lines };
    }
    let i32t = Type::Scalar(DType::I32);
    let mk = |func: &mut Func, kind: OpKind| {
        let v = func.new_value(i32t.clone());
        (Op { kind, result: Some(v), span: None }, v)
    };
    let (bid, b) = mk(func, OpKind::Bid { axis: 0 });
    let (nblocks, n) = mk(func, OpKind::NumBlocks { axis: 0 });
    let (ntiles, g) = mk(func, OpKind::NumTiles { axis: 0 });
    let (zero_op, zero) = mk(func, OpKind::ConstInt(0));
    let t = func.new_value(i32t);
    let mut body = std::mem::take(&mut func.ops);
    let reads = redirect(&mut body, t, g, zero);
    // Tile-invariant pure scalars leave the loop, in order.
    let mut inside: BTreeSet<ValueId> = BTreeSet::from([t]);
    let (mut hoisted, mut kept) = (vec![], vec![]);
    for op in body {
        let reads_inside = op.kind.operands().iter().any(|v| inside.contains(v));
        if pure_scalar(func, &op) && !reads_inside {
            hoisted.push(op);
        } else {
            inside.extend(defined_values(std::slice::from_ref(&op)));
            kept.push(op);
        }
    }
    let moved = hoisted.len();
    let mut ops = vec![bid, nblocks, ntiles, zero_op];
    ops.extend(hoisted);
    ops.push(Op {
        kind: OpKind::For {
            lb: b,
            ub: g,
            step: n,
            iv: t,
            init: vec![],
            iters: vec![],
            body: kept,
            yields: vec![],
            results: vec![],
        },
        result: None,
        span: None,
    });
    func.ops = ops;
    lines.push(format!(
        "the body walks tiles bid(0), bid(0) + num_blocks(0), … below num_tiles(0) (the grid's x; {reads} reads of bid(0) or num_blocks(0) redirected); {moved} tile-invariant scalar ops moved before the tile loop"
    ));
    PersistentReport { lines }
}
