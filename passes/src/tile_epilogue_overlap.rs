//! `tile-epilogue-overlap`: in a persistent kernel whose products accumulate in Tensor Memory,
//! the epilogue of tile `i` runs after the products of tile `i + 1` are issued, so that the
//! tensor core works on the next tile while the threads read the last one out and store it
//! (CUTLASS's and FlashAttention-4's two TMEM accumulators on sm_100a/sm_103a).
//!
//! Needs: `tilegpu` after `tile-pipeline` and `tile-mma-overlap`, the kernel made persistent
//! by `tile-persistent` — a top-level tile loop (`for t = bid(0) to num_tiles(0) step
//! num_blocks(0)`, carrying nothing) whose body holds, at its top level, a loop carrying a
//! `tcgen05` accumulator chain (one 256-column block, no block scales) that `tile-pipeline`
//! keeps in flight, its `tilegpu.mma_wait {pending = 0}` right after that loop, and after the
//! wait only ops without regions, products, waits or ring ops (the epilogue: casts, scalar
//! arithmetic, stores). The chain's product must be the kernel's only tcgen05 product, and two
//! of its accumulators must fit the 512 columns.
//!
//! Does: the tile loop carries the chain's result (un-waited) and the scalars of its body that
//! the epilogue reads (its tile coordinates); the epilogue moves after the next iteration's
//! product loop, under `if t != bid(0)`, reading the carried accumulator through its own
//! `mma_wait` and the carried scalars; after the tile loop, under `if bid(0) < num_tiles(0)`
//! (the block ran a tile), a copy of it handles the last tile. `tile-to-llvm` keeps the chain
//! in two Tensor Memory regions that the tile loop's iterations alternate between (a run-time
//! slot), commits each tile's products to an mbarrier of its region after the product loop and
//! waits for that mbarrier in the next iteration's epilogue; the next product loop of a region
//! starts after a block-wide TMEM sync, so it never overwrites an accumulator being read.
//!
//! Guarantees: every tile's epilogue runs once with the accumulator and coordinates of that
//! tile (tiles share nothing, so the order of one tile's stores against the next tile's loads
//! is free); the interpreter runs the rewritten kernel as it ran the original.
//!
//! Leaves alone, and reports why: kernels that are not persistent, tile loops without such a
//! chain, epilogues with loops, branches, products or ring ops, epilogues that read a tile made
//! before the products (it would be carried in registers), and accumulators of more than 256
//! columns. Reports nothing for kernels without tcgen05 products.
//!
//! Options: none.

use std::collections::{BTreeMap, BTreeSet};
use tilec_core::layout::{Layout, Mma, MmaFamily, TMEM_COLUMNS};
use tilec_core::tir::{defined_values, walk_ops, CmpPred, Func, Op, OpKind, Type, ValueId};
use tilec_core::DType;

/// What the pass did, for `--report`.
#[derive(Clone, Debug, Default)]
pub struct EpilogueReport {
    pub lines: Vec<String>,
}

fn tcgen05_acc(func: &Func, v: ValueId) -> bool {
    matches!(func.ty(v).layout(), Some(Layout::Mma(m)) if m.family == MmaFamily::Tcgen05)
}

/// Runs the pass.
pub fn run(func: &mut Func) -> EpilogueReport {
    let mut report = EpilogueReport::default();
    let mut products = 0;
    func.walk(&mut |o| {
        if matches!(o.kind, OpKind::Mma { .. }) && o.result.is_some_and(|r| tcgen05_acc(func, r)) {
            products += 1;
        }
    });
    if products == 0 {
        return report;
    }
    let mut ops = std::mem::take(&mut func.ops);
    let tiles: BTreeSet<ValueId> =
        ops.iter().filter(|o| matches!(o.kind, OpKind::NumTiles { .. })).filter_map(|o| o.result).collect();
    let at = ops.iter().position(|o| matches!(&o.kind, OpKind::For { ub, .. } if tiles.contains(ub)));
    let line = match at {
        None => "no tile loop: the kernel is not persistent (`persistent = true` or `--persistent`)".to_string(),
        Some(i) => match rotate(func, &mut ops, i, products) {
            Ok(line) => line,
            Err(why) => format!("tile loop left alone: {why}"),
        },
    };
    report.lines.push(line);
    func.ops = ops;
    report
}

/// The tile loop's product loop: its position in the body, the chain's result and the wait
/// on it (its position is the next).
struct Chain {
    at: usize,
    result: ValueId,
    waited: ValueId,
}

fn chain(func: &Func, body: &[Op]) -> Result<Chain, String> {
    for (at, op) in body.iter().enumerate() {
        let OpKind::For { iters, body: inner, yields, results, .. } = &op.kind else { continue };
        let [it] = iters.as_slice() else { continue };
        let chained = inner.iter().any(|o| {
            matches!(&o.kind, OpKind::Mma { acc, scales: None, .. } if acc == it)
                && o.result == Some(yields[0])
                && tcgen05_acc(func, yields[0])
        });
        if !chained {
            continue;
        }
        let result = results[0];
        let waited = match body.get(at + 1) {
            Some(Op { kind: OpKind::MmaWait { value, pending: 0 }, result: Some(w), .. }) if *value == result => *w,
            _ => return Err("its product loop's result is not waited for right after the loop".into()),
        };
        return Ok(Chain { at, result, waited });
    }
    Err("its body has no loop carrying a tcgen05 accumulator chain".into())
}

/// What keeps `op` out of an epilogue that moves: a region, a product, a wait or a ring op.
fn unmovable(op: &Op) -> Option<&'static str> {
    Some(match op.kind {
        OpKind::For { .. } => "a loop",
        OpKind::If { .. } => "a branch",
        OpKind::Mma { .. } => "a product",
        OpKind::MmaWait { .. } | OpKind::AsyncWait { .. } | OpKind::GridDependencyWait => "a wait",
        OpKind::StagesAlloc
        | OpKind::Stage { .. }
        | OpKind::StageWait { .. }
        | OpKind::StageAcquire { .. }
        | OpKind::StageRelease { .. }
        | OpKind::AsyncCopy { .. }
        | OpKind::Turn { .. } => "a ring op",
        OpKind::NumTiles { .. } => "the tile count",
        _ => return None,
    })
}

/// A constant of `ty` (a scalar) at the top of the kernel: the carried values' unused initial
/// values.
fn zero_of(func: &mut Func, ty: &Type) -> Result<Op, String> {
    let d = ty.dtype();
    let kind = if d.is_float() { OpKind::ConstFloat(0.0) } else { OpKind::ConstInt(0) };
    if !matches!(ty, Type::Scalar(_)) || d == DType::I1 {
        return Err(format!("a carried value of type {}", ty.to_mlir()));
    }
    let r = func.new_value(ty.clone());
    Ok(Op { kind, result: Some(r), span: None })
}

/// `if a pred b { w = mma_wait(acc); epilogue }`, the epilogue reading `w` for the value it
/// waited for (`waited`) and `map`'s values for the carried ones; with `fresh`, its results
/// made anew (the copy after the loop).
fn guarded(
    func: &mut Func,
    (pred, a, b): (CmpPred, ValueId, ValueId),
    (acc, waited): (ValueId, ValueId),
    epilogue: &[Op],
    mut map: BTreeMap<ValueId, ValueId>,
    fresh: bool,
) -> [Op; 2] {
    let w = func.new_value(func.ty(acc).clone());
    map.insert(waited, w);
    let mut then_ops = vec![Op { kind: OpKind::MmaWait { value: acc, pending: 0 }, result: Some(w), span: None }];
    for o in epilogue {
        let mut o = o.clone();
        for (from, to) in &map {
            o.kind.replace_operand(*from, *to);
        }
        if let (true, Some(r)) = (fresh, o.result) {
            let r2 = func.new_value(func.ty(r).clone());
            map.insert(r, r2);
            o.result = Some(r2);
        }
        then_ops.push(o);
    }
    let cond = func.new_value(Type::Scalar(DType::I1));
    [
        Op { kind: OpKind::Cmp(pred, a, b), result: Some(cond), span: None },
        Op {
            kind: OpKind::If {
                cond,
                then_ops,
                then_yields: vec![],
                else_ops: vec![],
                else_yields: vec![],
                results: vec![],
            },
            result: None,
            span: None,
        },
    ]
}

fn rotate(func: &mut Func, ops: &mut Vec<Op>, i: usize, products: usize) -> Result<String, String> {
    let OpKind::For { lb, ub, iv, iters, body, .. } = &ops[i].kind else { unreachable!() };
    let (lb, ub, iv) = (*lb, *ub, *iv);
    if !iters.is_empty() {
        return Err("it carries values".into());
    }
    let c = chain(func, body)?;
    if products != 1 {
        return Err(format!(
            "the kernel has {products} tcgen05 products (the second accumulator would take columns the others need)"
        ));
    }
    let acc_ty = func.ty(c.result).clone();
    let cols = Mma::tmem_columns(acc_ty.shape());
    if Mma::tcgen05_n_blocks(acc_ty.shape()) != 1 || 2 * cols > TMEM_COLUMNS {
        return Err(format!("two accumulators of {cols} columns do not fit the {TMEM_COLUMNS} of Tensor Memory"));
    }
    let epilogue = &body[c.at + 2..];
    if epilogue.is_empty() {
        return Err("nothing after the products' wait".into());
    }
    if let Some(what) = epilogue.iter().find_map(unmovable) {
        return Err(format!("its epilogue holds {what} (only ops without regions, products, waits or ring ops move)"));
    }
    // What the epilogue reads from the body before it: carried to the next iteration.
    let before: BTreeSet<ValueId> = defined_values(&body[..c.at + 2]).into_iter().chain([iv]).collect();
    let own = defined_values(epilogue);
    let mut carried: Vec<ValueId> = vec![];
    walk_ops(epilogue, &mut |o| {
        for v in o.kind.operands() {
            if before.contains(&v) && !own.contains(&v) && v != c.waited && !carried.contains(&v) {
                carried.push(v);
            }
        }
    });
    if let Some(t) = carried.iter().find(|v| !matches!(func.ty(**v), Type::Scalar(_))) {
        return Err(format!(
            "its epilogue reads %{}, a tile made before the products (it would be carried in registers)",
            t.0
        ));
    }
    if carried.contains(&c.result) {
        return Err("its epilogue reads the product loop's result without its wait".into());
    }
    // Initial values (never read: the first iteration has no epilogue to run).
    let mut pre = vec![];
    let zero = func.new_value(Type::Scalar(DType::F32));
    pre.push(Op { kind: OpKind::ConstFloat(0.0), result: Some(zero), span: None });
    let acc_init = func.new_value(acc_ty.clone());
    pre.push(Op { kind: OpKind::Splat(zero), result: Some(acc_init), span: None });
    let mut init = vec![acc_init];
    for v in &carried {
        let ty = func.ty(*v).clone();
        let op = zero_of(func, &ty)?;
        init.extend(op.result);
        pre.push(op);
    }
    let mut new_iters = vec![func.new_value(acc_ty.clone())];
    let mut new_results = vec![func.new_value(acc_ty.clone())];
    for v in &carried {
        let ty = func.ty(*v).clone();
        new_iters.push(func.new_value(ty.clone()));
        new_results.push(func.new_value(ty));
    }
    let n_moved = epilogue.len();
    // The body: the epilogue of the previous tile after this tile's products.
    let OpKind::For { body, init: loop_init, iters, yields, results, .. } = &mut ops[i].kind else { unreachable!() };
    let moved: Vec<Op> = body.drain(c.at + 1..).skip(1).collect();
    let prev: BTreeMap<ValueId, ValueId> = carried.iter().copied().zip(new_iters[1..].iter().copied()).collect();
    let in_loop = guarded(func, (CmpPred::Ne, iv, lb), (new_iters[0], c.waited), &moved, prev, false);
    body.extend(in_loop);
    *loop_init = init;
    *iters = new_iters;
    *yields = std::iter::once(c.result).chain(carried.iter().copied()).collect();
    *results = new_results.clone();
    // After the loop, if the block ran a tile: the last tile's epilogue, its values made anew.
    let last: BTreeMap<ValueId, ValueId> = carried.iter().copied().zip(new_results[1..].iter().copied()).collect();
    let after = guarded(func, (CmpPred::Lt, lb, ub), (new_results[0], c.waited), &moved, last, true);
    ops.splice(i + 1..i + 1, after);
    ops.splice(i..i, pre);
    Ok(format!(
        "each tile's epilogue ({n_moved} ops) runs after the next tile's products are issued: its accumulator carried in Tensor Memory (two regions of {cols} columns, the tiles alternating), {} scalar(s) of its coordinates carried; the last tile's after the loop",
        carried.len()
    ))
}
