//! `tile-cta-pair`: a block of the program runs on a pair of CTAs — a cluster of two — each
//! doing half of the block's rows, the B operand of its products loaded once for the pair.
//!
//! Why: a GEMM block of 256×N needs A's 256 rows and B's N columns a K step; two CTAs of
//! 128×N each read the same B. Paired in a cluster they fetch it once between them (TMA
//! multicast: each CTA loads half of B's tile into both CTAs' shared memory), halving B's
//! L2 traffic — and on sm_100a/sm_103a the pair is what `tcgen05.mma.cta_group::2` (one
//! 256-row product over both CTAs' shared memory) needs. CUTLASS's Hopper and Blackwell GEMMs
//! run in 2-CTA clusters for this.
//!
//! Needs: the `tile` stage (before `tile-persistent` and `tile-layout`); a target with thread
//! block clusters and TMA multicast (`Feature::ClusterMulticast`). The kernel's products all
//! have a rank-2 accumulator of the same M rows (M/2 a multiple of 64: a warpgroup's rows).
//! The *row-split* values — every product's accumulator, A operand and result, and whatever
//! reaches them through elementwise ops, broadcasts of a column, row reductions, loop-carried
//! and `if` values, loads and stores — have M rows; B operands do not.
//!
//! Does: every row-split value keeps M/2 of its rows (its next-to-last dim: a batched
//! GEMM's `[1, M, K]` tiles, reshaped to `[M, K]`, as well); a load or store of one addresses
//! tile `2·i + rank` of the half-height tiles along that dim instead of tile `i` (`rank` = `cluster_rank`, 0 or
//! 1), so CTA `rank` reads A's and writes C's rows `i·M + rank·M/2 …`; B's loads are unchanged:
//! both CTAs load the same tile, which `tile-pipeline` and the lowering turn into a multicast
//! (its coordinates do not depend on the rank: [`rank_dependent`]). The function is marked
//! `tile.cluster = 2`: the lowering declares the cluster (`.reqnctapercluster 2, 1, 1`), reads
//! `bid`/`num_blocks` as the cluster's index and count, and the launcher runs two CTAs a
//! block of the grid.
//!
//! Guarantees: the kernel computes what it did — each CTA the half of every row-split tile
//! its rank names (the interpreter runs a block as its two CTAs in turn and checks this).
//!
//! Leaves alone, and reports why: a target without clusters and multicast; a kernel without
//! products, or whose products differ in M, or an M/2 that is not a multiple of 64; any op
//! that would mix rows across the pair (a reduction over rows, a reshape, a product whose B
//! is row-split, …), named with the value.
//!
//! Options: `arch`. It runs where the kernel's `cta_pair = true` hint asks for it.

use std::collections::BTreeSet;
use tilec_core::target::{Arch, Feature};
use tilec_core::tir::{walk_ops, BinOp, Func, MathFlags, Op, OpKind, Type, ValueId};
use tilec_core::DType;

/// What the pass did, for `--report`.
#[derive(Clone, Debug, Default)]
pub struct CtaPairReport {
    pub lines: Vec<String>,
}

/// The values whose contents may differ between the two CTAs of a pair: `cluster_rank` and
/// everything computed from it (control dependence included: a value an `if` or a loop
/// yields under a rank-dependent condition or bound). A load whose coordinates are not
/// among them reads the same tile in both CTAs.
pub fn rank_dependent(func: &Func) -> BTreeSet<ValueId> {
    let mut out = BTreeSet::new();
    loop {
        let before = out.len();
        taint(&func.ops, &mut out, false);
        if out.len() == before {
            return out;
        }
    }
}

fn taint(ops: &[Op], out: &mut BTreeSet<ValueId>, under: bool) {
    for op in ops {
        let reads = under || op.kind.operands().iter().any(|v| out.contains(v));
        match &op.kind {
            OpKind::ClusterRank => {
                out.extend(op.result);
            }
            OpKind::For { lb, ub, step, iters, body, yields, results, iv, init } => {
                let bound = under || [lb, ub, step].iter().any(|v| out.contains(v));
                if bound {
                    out.insert(*iv);
                }
                for (k, (a, i)) in iters.iter().zip(init).enumerate() {
                    if bound || out.contains(i) || yields.get(k).is_some_and(|y| out.contains(y)) {
                        out.insert(*a);
                        out.extend(results.get(k));
                    }
                }
                taint(body, out, bound);
            }
            OpKind::If { cond, then_ops, then_yields, else_ops, else_yields, results } => {
                let c = under || out.contains(cond);
                taint(then_ops, out, c);
                taint(else_ops, out, c);
                for (k, r) in results.iter().enumerate() {
                    if c || [then_yields.get(k), else_yields.get(k)].into_iter().flatten().any(|y| out.contains(y)) {
                        out.insert(*r);
                    }
                }
            }
            _ => {
                if reads {
                    out.extend(op.result);
                }
            }
        }
    }
}

/// A tile's rows: its next-to-last dim, where the dims before it are 1 (a batched load's
/// `[1, M, K]` as well as `[M, K]`).
fn rows(func: &Func, v: ValueId) -> Option<i64> {
    match func.ty(v) {
        Type::Tile { shape, .. } if shape.len() >= 2 && shape[..shape.len() - 2].iter().all(|&d| d == 1) => {
            Some(shape[shape.len() - 2])
        }
        _ => None,
    }
}

fn is_tile(func: &Func, v: ValueId) -> bool {
    matches!(func.ty(v), Type::Tile { .. })
}

/// The row-split values: grown from the products' A, accumulator and result until every op
/// touching one is consistent; `Err` names the op that would mix the pair's rows.
fn row_split(func: &Func, m: i64) -> Result<BTreeSet<ValueId>, String> {
    let mut s = BTreeSet::new();
    func.walk(&mut |o| {
        if let OpKind::Mma { a, acc, .. } = &o.kind {
            s.extend([*a, *acc]);
            s.extend(o.result);
        }
    });
    loop {
        let before = s.len();
        let mut bad = None;
        walk_ops(&func.ops, &mut |o| {
            if bad.is_none() {
                if let Err(e) = grow(func, o, m, &mut s) {
                    bad = Some(e);
                }
            }
        });
        if let Some(e) = bad {
            return Err(e);
        }
        if s.len() == before {
            break;
        }
    }
    for &v in &s {
        if rows(func, v) != Some(m) {
            return Err(format!(
                "%{} ({}) meets the products' rows but is not a {m}-row tile",
                v.0,
                func.ty(v).to_mlir()
            ));
        }
    }
    Ok(s)
}

/// One op's share of [`row_split`]: the set grows by the values this op ties to its members.
fn grow(func: &Func, o: &Op, m: i64, s: &mut BTreeSet<ValueId>) -> Result<(), String> {
    let tied = |v: &ValueId, s: &BTreeSet<ValueId>| s.contains(v);
    let join = |vals: Vec<ValueId>, s: &mut BTreeSet<ValueId>| {
        if vals.iter().any(|v| tied(v, s)) {
            s.extend(vals);
        }
    };
    // The op's variant, for the message (`Reduce`, `Reshape`, …).
    let name = |o: &Op| {
        let d = format!("{:?}", o.kind);
        d.split(|c: char| !c.is_alphanumeric()).next().unwrap_or_default().to_string()
    };
    match &o.kind {
        OpKind::Binary { .. }
        | OpKind::Unary { .. }
        | OpKind::Fma { .. }
        | OpKind::Cast(_)
        | OpKind::Select { .. }
        | OpKind::Cmp(..)
        | OpKind::Logic(..) => {
            let mut vals: Vec<ValueId> = o.kind.operands().into_iter().filter(|v| is_tile(func, *v)).collect();
            vals.extend(o.result);
            join(vals, s);
        }
        // A reduction along the last dim keeps the rows (a reduction over any other would mix
        // them: the `_` arm refuses it).
        OpKind::Broadcast(x) | OpKind::Reduce { value: x, .. } if !matches!(&o.kind, OpKind::Reduce { axis, .. } if *axis as usize + 1 != func.ty(*x).shape().len()) =>
        {
            let r = o.result.into_iter().collect::<Vec<_>>();
            if r.iter().any(|v| tied(v, s)) || tied(x, s) {
                s.extend(r);
                if rows(func, *x) == Some(m) {
                    s.insert(*x);
                }
            }
        }
        OpKind::Splat(_) | OpKind::Load { .. } => {}
        // Leading unit dims added or dropped (a batched GEMM's `[1, M, K]` ↔ `[M, K]`): the
        // rows stay rows.
        OpKind::Reshape(x)
            if o.result.is_some_and(|r| {
                rows(func, r).is_some()
                    && rows(func, *x).is_some()
                    && func.ty(r).shape().last() == func.ty(*x).shape().last()
                    && rows(func, r) == rows(func, *x)
            }) =>
        {
            join(std::iter::once(*x).chain(o.result).collect(), s)
        }
        OpKind::Store { tile, mask, .. } => join(std::iter::once(*tile).chain(*mask).collect(), s),
        OpKind::Mma { b, scales, .. } => {
            // A's scale factors are per row of A; B's per column of B.
            if let Some((sa, _)) = scales {
                s.insert(*sa);
            }
            let sb = scales.map(|(_, sb)| sb);
            if let Some(v) = std::iter::once(*b).chain(sb).find(|v| tied(v, s)) {
                return Err(format!("the B operand %{} of a product (or its scales) meets the split rows", v.0));
            }
        }
        OpKind::For { init, iters, yields, results, .. } => {
            for k in 0..iters.len() {
                let vals: Vec<ValueId> =
                    [init.get(k), iters.get(k), yields.get(k), results.get(k)].into_iter().flatten().copied().collect();
                join(vals, s);
            }
        }
        OpKind::If { then_yields, else_yields, results, .. } => {
            for k in 0..results.len() {
                let vals: Vec<ValueId> =
                    [then_yields.get(k), else_yields.get(k), results.get(k)].into_iter().flatten().copied().collect();
                join(vals, s);
            }
        }
        _ => {
            let touches = o.kind.operands().iter().chain(o.result.iter()).any(|v| tied(v, s));
            if touches {
                return Err(format!("`{}` would mix the rows the two CTAs hold", name(o)));
            }
        }
    }
    Ok(())
}

/// Loads and stores of row-split tiles address tile `2·i + rank` of the half-height tiles.
fn readdress(
    ops: Vec<Op>,
    split: &BTreeSet<ValueId>,
    func: &mut Func,
    rank: ValueId,
    two: ValueId,
) -> (Vec<Op>, usize) {
    let mut out = Vec::with_capacity(ops.len());
    let mut n = 0;
    for mut op in ops {
        let target = match &mut op.kind {
            OpKind::Load { index, .. } if op.result.is_some_and(|r| split.contains(&r)) => Some(index),
            OpKind::Store { index, tile, .. } if split.contains(tile) => Some(index),
            OpKind::For { body, .. } => {
                let (b, k) = readdress(std::mem::take(body), split, func, rank, two);
                *body = b;
                n += k;
                None
            }
            OpKind::If { then_ops, else_ops, .. } => {
                let (t, k1) = readdress(std::mem::take(then_ops), split, func, rank, two);
                let (e, k2) = readdress(std::mem::take(else_ops), split, func, rank, two);
                *then_ops = t;
                *else_ops = e;
                n += k1 + k2;
                None
            }
            _ => None,
        };
        if let Some(index) = target {
            // The rows' index: the next-to-last (the tile's rows, after any unit dims).
            let at = index.len().saturating_sub(2);
            if let Some(i0) = index.get_mut(at) {
                let ty = func.ty(*i0).clone();
                let dt = ty.dtype();
                let (c2, r) = if dt == DType::I32 {
                    (two, rank)
                } else {
                    // An i64 index: the constant and the rank widened to it.
                    let c = func.new_value(ty.clone());
                    out.push(Op { kind: OpKind::ConstInt(2), result: Some(c), span: None });
                    let w = func.new_value(ty.clone());
                    out.push(Op { kind: OpKind::Cast(rank), result: Some(w), span: None });
                    (c, w)
                };
                let d = func.new_value(ty.clone());
                out.push(Op {
                    kind: OpKind::Binary { op: BinOp::Mul, lhs: *i0, rhs: c2, flags: MathFlags::default() },
                    result: Some(d),
                    span: op.span,
                });
                let e = func.new_value(ty);
                out.push(Op {
                    kind: OpKind::Binary { op: BinOp::Add, lhs: d, rhs: r, flags: MathFlags::default() },
                    result: Some(e),
                    span: op.span,
                });
                *i0 = e;
                n += 1;
            }
        }
        out.push(op);
    }
    (out, n)
}

/// Runs the pass for `arch`.
pub fn run(func: &mut Func, arch: &Arch) -> CtaPairReport {
    let skip = |why: String| CtaPairReport { lines: vec![format!("not applied: {why}")] };
    if !arch.has(Feature::ClusterMulticast) {
        return skip(format!("{} has no thread block clusters with TMA multicast", arch.name));
    }
    if func.cluster > 1 {
        return skip("the kernel's blocks are CTA pairs already".into());
    }
    let mut ms = BTreeSet::new();
    let mut products = 0;
    func.walk(&mut |o| {
        if let OpKind::Mma { acc, .. } = &o.kind {
            products += 1;
            ms.insert(rows(func, *acc));
        }
    });
    if products == 0 {
        return skip("the kernel has no product to pair".into());
    }
    let m = match ms.iter().collect::<Vec<_>>()[..] {
        [Some(m)] => *m,
        _ => return skip(format!("its products' accumulators are not rank-2 tiles of one row count ({ms:?})")),
    };
    if m % 128 != 0 {
        return skip(format!("{m} rows do not split into two halves of whole warpgroups (64 rows each)"));
    }
    let split = match row_split(func, m) {
        Ok(s) => s,
        Err(why) => return skip(why),
    };
    for &v in &split {
        if let Type::Tile { shape, .. } = &mut func.values[v.0 as usize] {
            let at = shape.len() - 2;
            shape[at] = m / 2;
        }
    }
    let i32t = Type::Scalar(DType::I32);
    let rank = func.new_value(i32t.clone());
    let two = func.new_value(i32t);
    let ops = std::mem::take(&mut func.ops);
    let (body, n) = readdress(ops, &split, func, rank, two);
    let mut ops = vec![
        Op { kind: OpKind::ClusterRank, result: Some(rank), span: None },
        Op { kind: OpKind::ConstInt(2), result: Some(two), span: None },
    ];
    ops.extend(body);
    func.ops = ops;
    func.cluster = 2;
    let lines = vec![format!(
        "a block is a cluster of 2 CTAs, each {} of its {m} rows ({} row-split values, {n} loads and stores readdressed to tile 2·i + rank); B operands loaded by both (multicast where TMA copies them)",
        m / 2,
        split.len()
    )];
    CtaPairReport { lines }
}
