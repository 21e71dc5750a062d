//! `tile-load-order`: a permuted load becomes an ordered load.
//!
//! Needs: the `tile` dialect (before `tile-layout`).
//!
//! Does: `permute(load(t, index, shape, order), perm)` — also through a reshape that only
//! drops the load's unit dims, FMHA's `load(K, …, shape=(1, 1, N, D)).reshape((N, D))` then
//! `permute(…, (1, 0))` — becomes one load of the permuted tile: its non-unit dims, indices
//! and `order` permuted alike, so that it reads the same elements already in the permuted
//! places. The load and the reshape must have no other use.
//!
//! Guarantees: no register permute is left where the permuted tile comes from a load;
//! `tile-layout` then lays the ordered load out with its vectors along the tensor's
//! contiguous dim and, as an `mma` operand, stores it into a shared buffer kept in the
//! tensor's order, read by `ldmatrix.trans` (tested on FMHA steps 3 and 4).
//!
//! Options: none.

use std::collections::BTreeMap;
use tilec_core::tir::{Func, Op, OpKind, Type, ValueId};

/// What the pass did, one line per folded permute (for `--report`).
#[derive(Clone, Debug, Default)]
pub struct LoadOrderReport {
    pub lines: Vec<String>,
}

/// A permute to fold: the permute's result becomes the new load's (through a new reshape when
/// the load had unit dims).
struct Fold {
    load: ValueId,
    reshape: Option<ValueId>,
    new_load: OpKind,
    new_shape: Vec<i64>,
}

/// Runs the pass over a `tile` kernel.
pub fn run(func: &mut Func) -> LoadOrderReport {
    let mut defs: BTreeMap<ValueId, OpKind> = BTreeMap::new();
    func.walk(&mut |op| {
        if let Some(r) = op.result {
            defs.insert(r, op.kind.clone());
        }
    });
    let uses = func.use_counts();
    let once = |v: &ValueId| uses.get(v) == Some(&1);
    let mut folds: BTreeMap<ValueId, Fold> = BTreeMap::new();
    let mut report = LoadOrderReport::default();
    func.walk(&mut |op| {
        let (OpKind::Permute { value, perm }, Some(p)) = (&op.kind, op.result) else { return };
        let (load, reshape) = match defs.get(value) {
            Some(OpKind::Load { .. }) => (*value, None),
            Some(OpKind::Reshape(x)) if matches!(defs.get(x), Some(OpKind::Load { .. })) && once(x) => {
                (*x, Some(*value))
            }
            _ => return,
        };
        if !once(value) {
            return;
        }
        let Some(OpKind::Load { tensor, index, padding, order, latency }) = defs.get(&load).cloned() else { return };
        let shape = func.ty(load).shape().to_vec();
        // The load's dims the permuted tile's dims are (the non-unit ones, or all of them).
        let dims: Vec<usize> = match reshape {
            Some(_) => (0..shape.len()).filter(|&d| shape[d] != 1).collect(),
            None => (0..shape.len()).collect(),
        };
        let inner = match reshape {
            Some(r) => func.ty(r).shape().to_vec(),
            None => shape.clone(),
        };
        if dims.len() != perm.len() || dims.iter().map(|&d| shape[d]).ne(inner.iter().copied()) {
            return;
        }
        let (mut nshape, mut nindex, mut norder) = (shape.clone(), index.clone(), order.clone());
        for (i, &src) in perm.iter().enumerate() {
            let (to, from) = (dims[i], dims[src as usize]);
            nshape[to] = shape[from];
            nindex[to] = index[from];
            norder[to] = order[from];
        }
        let new_load = OpKind::Load { tensor, index: nindex, padding, order: norder.clone(), latency };
        let name = func.param_name(tensor).unwrap_or("?");
        report.lines.push(format!(
            "permute {perm:?} of the load of {name} folded: a load in order {norder:?} of a {nshape:?} tile"
        ));
        folds.insert(p, Fold { load, reshape, new_load, new_shape: nshape });
    });
    if folds.is_empty() {
        return report;
    }
    let ops = std::mem::take(&mut func.ops);
    func.ops = rewrite(func, ops, &folds);
    report
}

/// The new load goes where the old one was (so it reads memory at the same point); the old
/// load, its reshape and the permute go.
fn rewrite(func: &mut Func, ops: Vec<Op>, folds: &BTreeMap<ValueId, Fold>) -> Vec<Op> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in ops {
        match &mut op.kind {
            OpKind::For { body, .. } => *body = rewrite(func, std::mem::take(body), folds),
            OpKind::If { then_ops, else_ops, .. } => {
                *then_ops = rewrite(func, std::mem::take(then_ops), folds);
                *else_ops = rewrite(func, std::mem::take(else_ops), folds);
            }
            _ => {}
        }
        let Some(r) = op.result else {
            out.push(op);
            continue;
        };
        if folds.contains_key(&r) || folds.values().any(|f| f.reshape == Some(r)) {
            continue;
        }
        let Some((&p, f)) = folds.iter().find(|(_, f)| f.load == r) else {
            out.push(op);
            continue;
        };
        let span = op.span;
        if f.reshape.is_some() {
            let l = func.new_value(Type::tile(f.new_shape.clone(), func.ty(p).dtype()));
            out.push(Op { kind: f.new_load.clone(), result: Some(l), span });
            out.push(Op { kind: OpKind::Reshape(l), result: Some(p), span });
        } else {
            out.push(Op { kind: f.new_load.clone(), result: Some(p), span });
        }
    }
    out
}
