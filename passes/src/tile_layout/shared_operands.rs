//! The part of `tile-layout` that fills one shared buffer for two `mma` operands that are the
//! same tile of memory read both ways.
//!
//! `mla_decode` multiplies its queries by the latent tile transposed (`q · Cᵀ`: C's rows are
//! the keys, K-major) and then the probabilities by the latent tile itself (`p · C`: the
//! values, N-major). Written as two loads — `load(C, …)` and `load(C, …, order=(0, 2, 1))` —
//! each operand gets its own buffer, so the tile crosses from global memory twice and the
//! second load, whose layout the first product fixed, could not even be copied
//! asynchronously. Both operands go through shared memory anyway, where reading a tile
//! transposed costs nothing (`ldmatrix` with or without `.trans`, a matrix descriptor K- or
//! MN-major): so the later use reads the earlier's buffer through `local_load_trans`, and
//! the second load goes.
//!
//! A pair is taken when: both loads read the same tensor with the same padding, the same
//! element indices along every tensor dim and the same extents, their 2-D operand tiles
//! (the loads, or reshapes that drop their unit dims) are each other's transposes; each is
//! used once, as the A or B operand of an `mma` (not the replicated A of a tcgen05 product
//! of fewer than 64 rows: its copies are made per buffer read); both are defined in the same
//! block before either is used; and the one kept can be copied asynchronously
//! (`async_source`), so that `tile-pipeline` makes one ring of it.

use super::ValueId;
use std::collections::{BTreeMap, BTreeSet};
use tilec_core::layout::{Layout, Mma, MmaFamily};
use tilec_core::tir::{Func, Op, OpKind};

/// A load whose 2-D tile is an `mma` operand: `load`, and `tile` (the load itself or the
/// reshape that drops its unit dims).
struct Operand {
    load: ValueId,
    tile: ValueId,
    /// Tensor dim → (index value, extent) of the load, and the tensor dims of the tile's two
    /// dims in order.
    dims: BTreeMap<u32, (ValueId, i64)>,
    pair: [u32; 2],
    /// The block (by first op's position in the walk) and the position of the tile's
    /// definition in it.
    block: usize,
    pos: usize,
}

/// Operand tiles read through another's buffer: `y → (x, later)`, the tile `y` is `x`
/// transposed and reads `x`'s buffer (`x` is one `async_source` accepts; `keep(x)` says
/// whether it does), after the later of the two tiles' definitions.
pub(super) fn pairs(func: &Func, keep: &dyn Fn(ValueId) -> bool) -> BTreeMap<ValueId, (ValueId, ValueId)> {
    let uses = func.use_counts();
    let once = |v: &ValueId| uses.get(v) == Some(&1);
    let consts: BTreeMap<ValueId, i64> = {
        let mut m = BTreeMap::new();
        func.walk(&mut |o| {
            if let (OpKind::ConstInt(c), Some(r)) = (&o.kind, o.result) {
                m.insert(r, *c);
            }
        });
        m
    };
    let same_index = |a: ValueId, b: ValueId| a == b || consts.get(&a).is_some_and(|c| consts.get(&b) == Some(c));

    // Operand uses that may read a buffer seen transposed.
    let mut operand_use: BTreeSet<ValueId> = BTreeSet::new();
    func.walk(&mut |o| {
        let (OpKind::Mma { a, b, scales: None, .. }, Some(r)) = (&o.kind, o.result) else { return };
        let Some(Layout::Mma(m)) = func.ty(r).layout() else { return };
        let replicated = m.family == MmaFamily::Tcgen05 && Mma::tcgen05_a_replicas(func.ty(r).shape()[0]) > 1;
        if !replicated && !super::reads_a_from_tmem(func, *a, m) {
            operand_use.insert(*a);
        }
        if a != b {
            operand_use.insert(*b);
        }
    });

    // Every block's ops in order, with the loads and their reshapes.
    let mut blocks: Vec<Vec<&Op>> = vec![];
    collect_blocks(&func.ops, &mut blocks);
    let mut defs: BTreeMap<ValueId, &OpKind> = BTreeMap::new();
    for ops in &blocks {
        for o in ops {
            if let Some(r) = o.result {
                defs.insert(r, &o.kind);
            }
        }
    }
    let mut operands: Vec<Operand> = vec![];
    for (bi, ops) in blocks.iter().enumerate() {
        for (pos, o) in ops.iter().enumerate() {
            let Some(tile) = o.result else { continue };
            if !operand_use.contains(&tile) || !once(&tile) {
                continue;
            }
            let load = match &o.kind {
                OpKind::Load { .. } => tile,
                OpKind::Reshape(x) if matches!(defs.get(x), Some(OpKind::Load { .. })) && once(x) => *x,
                _ => continue,
            };
            let Some(OpKind::Load { order, index, .. }) = defs.get(&load) else { continue };
            let (shape, tshape) = (func.ty(load).shape(), func.ty(tile).shape());
            if tshape.len() != 2 || order.len() != shape.len() || index.len() != shape.len() {
                continue;
            }
            let big: Vec<u32> = (0..shape.len()).filter(|&t| shape[t] != 1).map(|t| order[t]).collect();
            let sizes: Vec<i64> = shape.iter().copied().filter(|&d| d != 1).collect();
            // A reshape must only drop unit dims (a load of a 2-D tile keeps its own).
            let pair = match (big.as_slice(), sizes.as_slice()) {
                ([p, q], [m, n]) if [*m, *n] == tshape[..] => [*p, *q],
                _ if shape.len() == 2 && tile == load => [order[0], order[1]],
                _ => continue,
            };
            let dims = (0..shape.len()).map(|t| (order[t], (index[t], shape[t]))).collect();
            operands.push(Operand { load, tile, dims, pair, block: bi, pos });
        }
    }

    let load_of = |o: &Operand| match defs.get(&o.load) {
        Some(OpKind::Load { tensor, padding, .. }) => Some((*tensor, *padding)),
        _ => None,
    };
    let first_use = |bi: usize, t: ValueId| blocks[bi].iter().position(|o| o.kind.operands().contains(&t));
    let mut out = BTreeMap::new();
    let mut taken = BTreeSet::new();
    for (i, x) in operands.iter().enumerate() {
        for y in &operands[i + 1..] {
            if taken.contains(&x.tile) || taken.contains(&y.tile) || x.block != y.block {
                continue;
            }
            let (Some(lx), Some(ly)) = (load_of(x), load_of(y)) else { continue };
            let same_elems = lx == ly
                && x.pair == [y.pair[1], y.pair[0]]
                && x.pair[0] != x.pair[1]
                && x.dims.len() == y.dims.len()
                && x.dims
                    .iter()
                    .all(|(d, (ix, ex))| y.dims.get(d).is_some_and(|(iy, ey)| ex == ey && same_index(*ix, *iy)));
            if !same_elems {
                continue;
            }
            // Both defined before either is used.
            let defined = x.pos.max(y.pos);
            let used = [x.tile, y.tile].iter().filter_map(|&t| first_use(x.block, t)).min();
            if used.is_none_or(|u| u <= defined) {
                continue;
            }
            let (kept, read) = if keep(x.tile) {
                (x, y)
            } else if keep(y.tile) {
                (y, x)
            } else {
                continue;
            };
            let later = if x.pos > y.pos { x.tile } else { y.tile };
            out.insert(read.tile, (kept.tile, later));
            taken.extend([x.tile, y.tile]);
        }
    }
    out
}

/// Every op list (the kernel's, each loop body, each branch), in walk order.
fn collect_blocks<'a>(ops: &'a [Op], out: &mut Vec<Vec<&'a Op>>) {
    out.push(ops.iter().collect());
    for o in ops {
        match &o.kind {
            OpKind::For { body, .. } => collect_blocks(body, out),
            OpKind::If { then_ops, else_ops, .. } => {
                collect_blocks(then_ops, out);
                collect_blocks(else_ops, out);
            }
            _ => {}
        }
    }
}
