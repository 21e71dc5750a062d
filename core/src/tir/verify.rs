//! The invariants of the tile IR that MLIR's IRDL definitions cannot state: operand and
//! result types, shapes and dtypes of each op, definition before use, the structure of
//! loops and branches, and — from `tilegpu` on — a layout on every tile.
//!
//! Every tilec pass verifies its input with [`verify`] before it runs, so IR from a `.mlir`
//! file, a hand edit or a broken pass is rejected with a diagnostic naming the op and the
//! rule (`E0905`), never lowered into wrong code: an f32 tile stored into an f16 tensor
//! would write past the buffer; a block of zero warps would launch nothing.

use super::{AtomicOp, Func, Op, OpKind, ReduceKind, Type, ValueId};
use crate::diag::Diagnostic;
use crate::dtype::DType;

/// Largest tile the IR may hold, in elements: far above what one block keeps in registers
/// (256 per thread × 1024 threads), far below what would exhaust memory in a pass.
pub const MAX_TILE_ELEMENTS: i64 = 1 << 22;

/// The stage a kernel is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `tile`: no layouts.
    Tile,
    /// `tilegpu`: every tile has a layout.
    TileGpu,
}

/// Checks `func` against the rules of its ops at `level`.
pub fn verify(func: &Func, level: Level) -> Result<(), Diagnostic> {
    if !(1..=32).contains(&func.num_warps) || !func.num_warps.is_power_of_two() {
        return Err(bad(
            None,
            format!("the kernel asks for {} warps; a block has 1, 2, 4, 8, 16 or 32", func.num_warps),
        ));
    }
    if !matches!(func.cluster, 1 | 2) {
        return Err(bad(
            None,
            format!("a block of {} CTAs: tilec pairs CTAs (`tile.cluster` is 1 or 2)", func.cluster),
        ));
    }
    if let Some(w) = func.warp_spec {
        // A producer warpgroup beside whole consumer warpgroups (setmaxnreg acts per
        // warpgroup), register counts setmaxnreg accepts, within the SM's 64K registers.
        let regs_ok = |r: u32| r == 0 || ((24..=256).contains(&r) && r.is_multiple_of(8));
        let budget = (w.producer_regs * w.producer_warps + w.consumer_regs * func.num_warps) * 32;
        if w.producer_warps != 4
            || !func.num_warps.is_multiple_of(4)
            || func.num_warps + w.producer_warps > 32
            || !regs_ok(w.producer_regs)
            || !regs_ok(w.consumer_regs)
            || (w.producer_regs == 0) != (w.consumer_regs == 0)
            || budget > 65536
        {
            return Err(bad(
                None,
                format!(
                    "bad warp specialization {w:?} of a {}-warp kernel: one producer warpgroup (4 warps) beside whole consumer warpgroups, register counts 0 or 24..=256 in steps of 8 (both or neither), at most 65536 registers",
                    func.num_warps
                ),
            ));
        }
        if level == Level::Tile {
            return Err(bad(None, "warp specialization is a tilegpu property (set by `tile-warp-specialize`)".into()));
        }
    }
    // The values the IR holds: a pass may leave entries of the value table that no op
    // defines any more (a load it replaced), and those are never printed.
    let mut held = vec![false; func.values.len()];
    let mut hold = |v: ValueId| {
        if let Some(h) = held.get_mut(v.0 as usize) {
            *h = true;
        }
    };
    func.params.iter().for_each(|p| hold(p.value));
    func.walk(&mut |op| {
        op.result.into_iter().chain(op.kind.operands()).for_each(&mut hold);
        match &op.kind {
            OpKind::For { iv, iters, results, .. } => {
                std::iter::once(*iv).chain(iters.iter().copied()).chain(results.iter().copied()).for_each(&mut hold)
            }
            OpKind::If { results, .. } => results.iter().copied().for_each(&mut hold),
            _ => {}
        }
    });
    for (i, t) in func.values.iter().enumerate() {
        if held[i] {
            check_type(func, t, level).map_err(|m| bad(None, format!("value %{i}: {m}")))?;
        }
    }
    let mut defined = vec![false; func.values.len()];
    for p in &func.params {
        let ok = matches!(func.values.get(p.value.0 as usize), Some(Type::Tensor { .. } | Type::Scalar(_)));
        if !ok {
            return Err(bad(None, format!("parameter `{}` is not a tensor or a scalar", p.name)));
        }
        define(&mut defined, p.value, None)?;
    }
    ops(func, &func.ops, &mut defined)
}

fn bad(op: Option<&Op>, msg: String) -> Diagnostic {
    let d = Diagnostic::error("E0905", format!("ill-formed tile IR: {msg}"));
    match op.and_then(|o| o.span) {
        Some(s) => d.with_primary(s, "in this operation"),
        None => d,
    }
}

fn check_type(func: &Func, t: &Type, level: Level) -> Result<(), String> {
    match t {
        Type::Tensor { rank, .. } if *rank == 0 || *rank > 8 => Err(format!("a tensor of rank {rank}")),
        Type::Tile { shape, layout, .. } => {
            if shape.is_empty() || shape.iter().any(|&d| d <= 0) {
                return Err(format!("a tile of shape {shape:?}"));
            }
            let n = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d));
            if n.is_none_or(|n| n > MAX_TILE_ELEMENTS) {
                return Err(format!("a tile of shape {shape:?} has more than {MAX_TILE_ELEMENTS} elements"));
            }
            match (level, layout) {
                (Level::TileGpu, None) => {
                    Err(format!("a tile of shape {shape:?} has no layout: run `tile-layout` before it"))
                }
                (Level::TileGpu, Some(l)) if l.rank() != shape.len() => {
                    Err(format!("a tile of shape {shape:?} with a layout of rank {}", l.rank()))
                }
                (_, Some(l)) => l
                    .check(i64::from(func.num_warps))
                    .map_err(|why| format!("the layout {} of a tile of shape {shape:?}: {why}", l.to_mlir())),
                _ => Ok(()),
            }
        }
        Type::Smem { shape, layout, .. } => {
            // M×N, or a ring S×M×N; no larger than a tile (the interpreter holds it).
            let n = shape.iter().try_fold(1i64, |a, &d| if d > 0 { a.checked_mul(d) } else { None });
            if !(2..=3).contains(&shape.len()) || n.is_none_or(|n| n > MAX_TILE_ELEMENTS) {
                return Err(format!("a shared buffer of shape {shape:?}"));
            }
            // The swizzle is index bit arithmetic: powers of two, or the addresses are wrong.
            let p2 = |x: i64| x > 0 && x & (x - 1) == 0;
            if ![layout.vec, layout.per_phase, layout.max_phase].into_iter().all(p2) {
                return Err(format!("the shared layout {}: sizes that are not powers of two", layout.to_mlir()));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn define(defined: &mut [bool], v: ValueId, op: Option<&Op>) -> Result<(), Diagnostic> {
    match defined.get_mut(v.0 as usize) {
        Some(d) if !*d => {
            *d = true;
            Ok(())
        }
        Some(_) => Err(bad(op, format!("%{} is defined twice", v.0))),
        None => Err(bad(op, format!("%{} has no type", v.0))),
    }
}

fn ops(func: &Func, list: &[Op], defined: &mut Vec<bool>) -> Result<(), Diagnostic> {
    for op in list {
        check_op(func, op, defined)?;
    }
    Ok(())
}

/// A value is usable where it was defined before, in this region or an enclosing one.
fn used(func: &Func, defined: &[bool], op: &Op, v: ValueId) -> Result<Type, Diagnostic> {
    if !defined.get(v.0 as usize).copied().unwrap_or(false) {
        return Err(bad(Some(op), format!("%{} is used before it is defined", v.0)));
    }
    Ok(func.values[v.0 as usize].clone())
}

fn shape_of(t: &Type) -> Option<&[i64]> {
    match t {
        Type::Tile { shape, .. } => Some(shape),
        _ => None,
    }
}

/// Scalars and tiles an elementwise op may combine: equal types (a scalar stands for every
/// element only through `splat`, so operands agree exactly).
fn same(a: &Type, b: &Type) -> bool {
    a.dtype() == b.dtype()
        && shape_of(a) == shape_of(b)
        && matches!((a, b), (Type::Scalar(_), Type::Scalar(_)) | (Type::Tile { .. }, Type::Tile { .. }))
}

/// In `tilegpu`, the tiles an op pairs element by element (operands of elementwise ops with
/// their result, gather indices with the result, scatter indices with the tile) must place
/// every element alike: the lowering pairs them register by register.
fn placement_mismatch(func: &Func, op: &Op) -> Option<String> {
    let (reference, operands): (ValueId, Vec<ValueId>) = match &op.kind {
        OpKind::Binary { lhs, rhs, .. } => (op.result?, vec![*lhs, *rhs]),
        OpKind::Unary { value, .. } | OpKind::Cast(value) | OpKind::Scan { value, .. } => (op.result?, vec![*value]),
        OpKind::Cmp(_, a, b) | OpKind::Logic(_, a, b) => (op.result?, vec![*a, *b]),
        OpKind::Select { cond, a, b } => (op.result?, vec![*cond, *a, *b]),
        OpKind::Fma { a, b, c } => (op.result?, vec![*a, *b, *c]),
        OpKind::Store { tile, mask: Some(m), .. } => (*tile, vec![*m]),
        OpKind::Atomic { tile, cmp, mask, index, at, .. } => (
            op.result?,
            cmp.iter().copied().chain([*tile, *mask]).chain(index.iter().copied().filter(|_| *at)).collect(),
        ),
        OpKind::Gather { index, .. } => (op.result?, index.clone()),
        OpKind::Rand { offsets, .. } => (op.result?, vec![*offsets]),
        OpKind::Scatter { index, tile, .. } => (*tile, index.clone()),
        _ => return None,
    };
    let rt = func.values.get(reference.0 as usize)?;
    let rl = rt.layout()?;
    for v in operands {
        let t = func.values.get(v.0 as usize)?;
        if let (Some(l), true) = (t.layout(), t.shape() == rt.shape()) {
            if !l.same_placement(rl, rt.shape()) {
                return Some(format!("operand %{} is laid out as {}, not as {}", v.0, l.to_mlir(), rl.to_mlir()));
            }
        }
    }
    None
}

fn check_op(func: &Func, op: &Op, defined: &mut Vec<bool>) -> Result<(), Diagnostic> {
    let u = |v: ValueId| used(func, defined, op, v);
    let fail = |m: String| Err(bad(Some(op), m));
    let rty = op
        .result
        .map(|r| func.values.get(r.0 as usize).cloned().ok_or_else(|| bad(Some(op), "result without a type".into())))
        .transpose()?;
    let want_result = !matches!(
        op.kind,
        OpKind::Store { .. }
            | OpKind::Prefetch { .. }
            | OpKind::Scatter { .. }
            | OpKind::Print { .. }
            | OpKind::For { .. }
            | OpKind::If { .. }
            | OpKind::AsyncWait { .. }
            | OpKind::Turn { .. }
            | OpKind::GridDependencyWait
            | OpKind::StageWait { .. }
            | OpKind::StageAcquire { .. }
            | OpKind::StageRelease { .. }
            | OpKind::AsyncCopy { dst: Some(_), .. }
    );
    if want_result != rty.is_some() {
        return fail(if want_result {
            "the op has no result".into()
        } else {
            "the op has a result it cannot have".into()
        });
    }
    let r = rty.clone().unwrap_or(Type::Scalar(DType::I32));
    if let Some(m) = placement_mismatch(func, op) {
        return fail(m);
    }
    let scalar_i32 = |t: &Type| matches!(t, Type::Scalar(DType::I32));
    match &op.kind {
        OpKind::Bid { axis } | OpKind::NumBlocks { axis } | OpKind::NumTiles { axis } => {
            if *axis > 2 || !scalar_i32(&r) {
                return fail(format!("grid axis {axis} (0, 1 or 2) with an i32 result"));
            }
        }
        OpKind::ClusterRank => {
            if !scalar_i32(&r) {
                return fail("a cluster rank is an i32".into());
            }
        }
        OpKind::Dim { tensor, axis } => match u(*tensor)? {
            Type::Tensor { rank, .. } if (*axis as usize) < rank && scalar_i32(&r) => {}
            t => return fail(format!("dim {axis} of {} to i32", t.to_mlir())),
        },
        OpKind::ConstInt(_) => {
            if !matches!(r, Type::Scalar(d) if !d.is_float()) {
                return fail(format!("an integer constant of type {}", r.to_mlir()));
            }
        }
        OpKind::ConstFloat(_) => {
            if !matches!(r, Type::Scalar(d) if d.is_float()) {
                return fail(format!("a float constant of type {}", r.to_mlir()));
            }
        }
        OpKind::Splat(x) => {
            let t = u(*x)?;
            if !matches!(t, Type::Scalar(d) if d == r.dtype()) || shape_of(&r).is_none() {
                return fail(format!("splat of {} to {}", t.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Binary { op: bop, lhs, rhs, flags } => {
            let (a, b) = (u(*lhs)?, u(*rhs)?);
            if !same(&a, &b) || !same(&a, &r) {
                return fail(format!("operands {} and {} to {}", a.to_mlir(), b.to_mlir(), r.to_mlir()));
            }
            if !bop.accepts(a.dtype()) {
                return fail(format!("{} on {}", bop.arith_name(a.dtype()), a.dtype()));
            }
            if !flags.is_default() && !a.dtype().is_float() {
                return fail("math options (ftz, approx) on integers".into());
            }
        }
        OpKind::Unary { value, .. } => {
            let a = u(*value)?;
            if !same(&a, &r) || !a.dtype().is_float() {
                return fail(format!("a unary op from {} to {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Fma { a, b, c } => {
            let (x, y, z) = (u(*a)?, u(*b)?, u(*c)?);
            if !same(&x, &y) || !same(&x, &z) || !same(&x, &r) || !x.dtype().is_float() {
                return fail(format!("fma of {}, {} and {}", x.to_mlir(), y.to_mlir(), z.to_mlir()));
            }
        }
        OpKind::Cast(x) => {
            let a = u(*x)?;
            if shape_of(&a) != shape_of(&r) || matches!(a, Type::Tensor { .. }) {
                return fail(format!("a cast from {} to {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Reduce { kind, axis, value } => {
            let a = u(*value)?;
            let Some(s) = shape_of(&a) else { return fail("a reduction of a non-tile".into()) };
            let mut want = s.to_vec();
            if (*axis as usize) >= want.len() {
                return fail(format!("reduction axis {axis} of a rank-{} tile", want.len()));
            }
            want[*axis as usize] = 1;
            let d = if matches!(kind, ReduceKind::Argmax | ReduceKind::Argmin) { DType::I32 } else { a.dtype() };
            if shape_of(&r) != Some(&want[..]) || r.dtype() != d {
                return fail(format!("{} of {} along {axis} to {}", kind.name(), a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Scan { op: sop, axis, value } => {
            let a = u(*value)?;
            let rank = shape_of(&a).map_or(0, <[i64]>::len);
            if !same(&a, &r) || (*axis as usize) >= rank || sop.scan_name().is_none() || a.dtype() == DType::I1 {
                return fail(format!("a scan along {axis} of {} to {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Broadcast(x) => {
            let a = u(*x)?;
            let ok = match (shape_of(&a), shape_of(&r)) {
                (Some(s), Some(t)) => s.len() == t.len() && s.iter().zip(t).all(|(x, y)| x == y || *x == 1),
                _ => false,
            };
            if !ok || a.dtype() != r.dtype() {
                return fail(format!("broadcast of {} to {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Load { tensor, index, order, .. } => {
            let (d, rank) = tensor_of(func, defined, op, *tensor)?;
            indices(func, defined, op, index, rank)?;
            if !is_permutation(order, rank) {
                return fail(format!("order {order:?} is not a permutation of the tensor's {rank} dims"));
            }
            if shape_of(&r).map(<[i64]>::len) != Some(rank) || r.dtype() != d {
                return fail(format!("a load from a rank-{rank} {d} tensor to {}", r.to_mlir()));
            }
        }
        OpKind::Prefetch { tensor, index, order, tile } => {
            let (_, rank) = tensor_of(func, defined, op, *tensor)?;
            indices(func, defined, op, index, rank)?;
            if !is_permutation(order, rank) || tile.len() != rank || tile.iter().any(|&e| e < 1) {
                return fail(format!("a prefetch of a {tile:?} tile in order {order:?} of a rank-{rank} tensor"));
            }
        }
        OpKind::Store { tensor, index, tile, mask } => {
            let (d, rank) = tensor_of(func, defined, op, *tensor)?;
            indices(func, defined, op, index, rank)?;
            let t = u(*tile)?;
            if shape_of(&t).map(<[i64]>::len) != Some(rank) || t.dtype() != d {
                return fail(format!("a store of {} into a rank-{rank} {d} tensor", t.to_mlir()));
            }
            if let Some(m) = mask {
                let m = u(*m)?;
                if m.dtype() != DType::I1 || shape_of(&m) != shape_of(&t) {
                    return fail(format!("a store of {} masked by {}", t.to_mlir(), m.to_mlir()));
                }
            }
        }
        OpKind::Atomic { op: aop, tensor, index, tile, cmp, mask, at, .. } => {
            let (d, rank) = tensor_of(func, defined, op, *tensor)?;
            let t = u(*tile)?;
            if *at {
                if index.len() != rank {
                    return fail(format!("{} index tiles for a rank-{rank} tensor", index.len()));
                }
                for i in index {
                    let it = u(*i)?;
                    if it.dtype() != DType::I32 || shape_of(&it) != shape_of(&t) {
                        return fail(format!("an atomic's index {} for a tile {}", it.to_mlir(), t.to_mlir()));
                    }
                }
            } else {
                indices(func, defined, op, index, rank)?;
            }
            let tile_rank_ok = *at || shape_of(&t).map(<[i64]>::len) == Some(rank);
            if !tile_rank_ok || t.dtype() != d || !aop.accepts(d) {
                return fail(format!("atomic {} of {} on a rank-{rank} {d} tensor", aop.name(), t.to_mlir()));
            }
            let m = u(*mask)?;
            if m.dtype() != DType::I1 || shape_of(&m) != shape_of(&t) || !same(&t, &r) {
                return fail(format!("atomic of {} masked by {} to {}", t.to_mlir(), m.to_mlir(), r.to_mlir()));
            }
            if let Some(c) = cmp {
                if !same(&u(*c)?, &t) {
                    return fail("a compare-and-swap whose compared tile is not the new one's type".into());
                }
            }
            if (*aop == AtomicOp::Cas) != cmp.is_some() {
                return fail("only `cas` compares".into());
            }
        }
        OpKind::Gather { tensor, index, .. } | OpKind::Element { tensor, index } => {
            let (d, rank) = tensor_of(func, defined, op, *tensor)?;
            if index.len() != rank {
                return fail(format!("{} indices for a rank-{rank} tensor", index.len()));
            }
            for i in index {
                if u(*i)?.dtype() != DType::I32 {
                    return fail("indices are i32".into());
                }
            }
            if r.dtype() != d {
                return fail(format!("a {} read from a {d} tensor", r.dtype()));
            }
        }
        OpKind::Scatter { tensor, index, tile } => {
            let (d, rank) = tensor_of(func, defined, op, *tensor)?;
            if index.len() != rank {
                return fail(format!("{} indices for a rank-{rank} tensor", index.len()));
            }
            for i in index {
                if u(*i)?.dtype() != DType::I32 {
                    return fail("indices are i32".into());
                }
            }
            if u(*tile)?.dtype() != d {
                return fail(format!("a scatter into a {d} tensor of another dtype"));
            }
        }
        OpKind::Mma { a, b, acc, scales: Some((sa, sb)) } => {
            let [ta, tsa, tb, tsb, tc] = [u(*a)?, u(*sa)?, u(*b)?, u(*sb)?, u(*acc)?];
            let shapes = [ta.shape(), tsa.shape(), tb.shape(), tsb.shape(), tc.shape()];
            let types = [ta.dtype(), tsa.dtype(), tb.dtype(), tsb.dtype(), tc.dtype()];
            if let Err(e) = crate::layout::blockscale::scaled_mma_form(shapes, types) {
                return fail(e);
            }
            if !same(&tc, &r) {
                return fail(format!("mma_scaled into {} to {}", tc.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Mma { a, b, acc, scales: None } => {
            let (ta, tb, tc) = (u(*a)?, u(*b)?, u(*acc)?);
            let ok = match (shape_of(&ta), shape_of(&tb), shape_of(&tc)) {
                (Some([m, k]), Some([k2, n]), Some([m2, n2])) => m == m2 && k == k2 && n == n2,
                _ => false,
            };
            if !ok || ta.dtype() != tb.dtype() || !same(&tc, &r) {
                return fail(format!(
                    "mma of {}, {} and {} to {}",
                    ta.to_mlir(),
                    tb.to_mlir(),
                    tc.to_mlir(),
                    r.to_mlir()
                ));
            }
        }
        OpKind::Arange => {
            if shape_of(&r).map(<[i64]>::len) != Some(1) || r.dtype() != DType::I32 {
                return fail(format!("arange to {}", r.to_mlir()));
            }
        }
        OpKind::Cmp(_, x, y) => {
            let (a, b) = (u(*x)?, u(*y)?);
            if !same(&a, &b) || shape_of(&a) != shape_of(&r) || r.dtype() != DType::I1 {
                return fail(format!("a comparison of {} and {} to {}", a.to_mlir(), b.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Logic(_, x, y) => {
            let (a, b) = (u(*x)?, u(*y)?);
            if !same(&a, &b) || !same(&a, &r) || a.dtype().is_float() {
                return fail(format!("a bitwise op on {} and {}", a.to_mlir(), b.to_mlir()));
            }
        }
        OpKind::Select { cond, a, b } => {
            let (c, x, y) = (u(*cond)?, u(*a)?, u(*b)?);
            if c.dtype() != DType::I1 || shape_of(&c) != shape_of(&x) || !same(&x, &y) || !same(&x, &r) {
                return fail(format!("where({}, {}, {})", c.to_mlir(), x.to_mlir(), y.to_mlir()));
            }
        }
        OpKind::Reshape(x) => {
            let a = u(*x)?;
            let n = |t: &Type| shape_of(t).map(|s| s.iter().product::<i64>());
            if n(&a).is_none() || n(&a) != n(&r) || a.dtype() != r.dtype() {
                return fail(format!("a reshape of {} to {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Item(x) => {
            let a = u(*x)?;
            if shape_of(&a).is_none_or(|s| s.iter().product::<i64>() != 1)
                || shape_of(&r).is_some()
                || a.dtype() != r.dtype()
            {
                return fail(format!("the item of {} as {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::ConvertLayout { value, .. } => {
            let a = u(*value)?;
            if shape_of(&a) != shape_of(&r) || a.dtype() != r.dtype() {
                return fail(format!("a layout conversion of {} to {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::AsyncCopy { dst, tensor, index, order, tile, .. } => {
            // The buffer filled: the result, or the stage view given.
            let r = match dst {
                Some(d) => u(*d)?,
                None => r.clone(),
            };
            let Type::Tensor { dtype, rank } = u(*tensor)? else {
                return fail("an async copy from a non-tensor".into());
            };
            for i in index {
                if u(*i)?.dtype() != DType::I32 {
                    return fail("indices are i32".into());
                }
            }
            let squeezed: Vec<i64> = tile.iter().copied().filter(|&d| d != 1).collect();
            let ok = index.len() == rank
                && tile.len() == rank
                && is_permutation(order, rank)
                && matches!(&r, Type::Smem { shape, dtype: d, .. } if *d == dtype && shape.len() == 2 && shape.iter().copied().filter(|&x| x != 1).eq(squeezed.iter().copied()));
            if !ok {
                return fail(format!("an async copy of a {tile:?} tile of a rank-{rank} tensor into {}", r.to_mlir()));
            }
        }
        OpKind::AsyncWait { .. } | OpKind::GridDependencyWait => {}
        OpKind::Turn { begin, last } => {
            if *begin && *last {
                return fail("a warpgroup turn's `last` marks an end, not a begin".into());
            }
        }
        OpKind::StageRelease { ring, slot } => {
            let ok = matches!(u(*ring)?, Type::Smem { shape, .. } if shape.len() == 3)
                && u(*slot)? == Type::Scalar(crate::DType::I32);
            if !ok {
                return fail("a stage release needs a ring of stages and an i32 slot".into());
            }
        }
        OpKind::StageWait { ring, slot, phase } | OpKind::StageAcquire { ring, slot, phase } => {
            let ok = matches!(u(*ring)?, Type::Smem { shape, .. } if shape.len() == 3)
                && u(*slot)? == Type::Scalar(crate::DType::I32)
                && u(*phase)? == Type::Scalar(crate::DType::I32);
            if !ok {
                return fail("a stage wait needs a ring of stages and i32 slot and phase".into());
            }
        }
        OpKind::StagesAlloc => {
            if !matches!(&r, Type::Smem { shape, .. } if shape.len() == 3) {
                return fail(format!("a ring of stages must be a memref<SxMxNxT, …>, not {}", r.to_mlir()));
            }
        }
        OpKind::Stage { buf, index } => {
            let a = u(*buf)?;
            if u(*index)? != Type::Scalar(DType::I32) {
                return fail("a stage index is an i32 scalar".into());
            }
            let ok = matches!((&a, &r), (Type::Smem { shape: s, dtype: d, layout: l }, Type::Smem { shape, dtype, layout })
                if s.len() == 3 && s[1..] == shape[..] && d == dtype && l == layout);
            if !ok {
                return fail(format!("a stage of {} as {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::LocalAlloc { value } => {
            let a = u(*value)?;
            let ok = matches!(&r, Type::Smem { shape, dtype, .. } if shape_of(&a) == Some(&shape[..]) && a.dtype() == *dtype);
            if !ok {
                return fail(format!("a shared buffer {} of {}", r.to_mlir(), a.to_mlir()));
            }
        }
        OpKind::MmaWait { value, .. } => {
            let a = u(*value)?;
            if a != r || !matches!(r.layout(), Some(crate::layout::Layout::Mma(_))) {
                return fail(format!("a wait for {} giving {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::LocalLoad { buf, trans } => {
            let a = u(*buf)?;
            let seen = if *trans { a.smem_transposed() } else { Some(a.clone()) };
            let ok = matches!(&seen, Some(Type::Smem { shape, dtype, .. }) if shape_of(&r) == Some(&shape[..]) && r.dtype() == *dtype);
            if !ok {
                return fail(format!("a read of {} into {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Concat { values, axis } => {
            let Some(rs) = shape_of(&r).map(<[i64]>::to_vec) else { return fail("a concat to a non-tile".into()) };
            let ax = *axis as usize;
            let mut total = 0i64;
            for v in values {
                let a = u(*v)?;
                let ok = shape_of(&a).is_some_and(|s| {
                    s.len() == rs.len()
                        && ax < s.len()
                        && s.iter().zip(&rs).enumerate().all(|(i, (x, y))| i == ax || x == y)
                });
                if !ok || a.dtype() != r.dtype() {
                    return fail(format!("a concat along {axis} of {} into {}", a.to_mlir(), r.to_mlir()));
                }
                total += shape_of(&a).map_or(0, |s| s[ax]);
            }
            if values.is_empty() || rs.get(ax) != Some(&total) {
                return fail(format!("a concat along {axis} to {}", r.to_mlir()));
            }
        }
        OpKind::Sort { value, axis, k, indices, .. } => {
            let a = u(*value)?;
            let (Some(s), Some(rs)) = (shape_of(&a), shape_of(&r)) else { return fail("a sort of a non-tile".into()) };
            let ax = *axis as usize;
            let mut want = s.to_vec();
            if let Some(d) = want.get_mut(ax) {
                *d = *k;
            }
            let dtype = if *indices { DType::I32 } else { a.dtype() };
            let sortable = matches!(a.dtype(), DType::F32 | DType::F16 | DType::BF16 | DType::I32);
            if ax >= s.len() || !(1..=s[ax]).contains(k) || rs != want.as_slice() || r.dtype() != dtype || !sortable {
                return fail(format!(
                    "a sort along {axis} of {} keeping {k} into {} (f32, f16, bf16 or i32; 1 <= k <= the extent)",
                    a.to_mlir(),
                    r.to_mlir()
                ));
            }
        }
        OpKind::Slice { value, offsets } => {
            let a = u(*value)?;
            let (Some(s), Some(rs)) = (shape_of(&a), shape_of(&r)) else { return fail("a slice of a non-tile".into()) };
            let fits = s.len() == offsets.len()
                && rs.len() == s.len()
                && offsets
                    .iter()
                    .zip(s)
                    .zip(rs)
                    .all(|((&o, &d), &n)| o >= 0 && n >= 1 && o.checked_add(n).is_some_and(|e| e <= d));
            if !fits || a.dtype() != r.dtype() {
                return fail(format!("a slice at {offsets:?} of {} to {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Permute { value, perm } => {
            let a = u(*value)?;
            let Some(s) = shape_of(&a) else { return fail("a permute of a non-tile".into()) };
            if !is_permutation(perm, s.len()) {
                return fail(format!("perm {perm:?} is not a permutation of {} dims", s.len()));
            }
            let want: Vec<i64> = perm.iter().map(|&i| s[i as usize]).collect();
            if shape_of(&r) != Some(&want[..]) || a.dtype() != r.dtype() {
                return fail(format!("permute {perm:?} of {} to {}", a.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Rand { seed, offsets } => {
            let (s, o) = (u(*seed)?, u(*offsets)?);
            if !matches!(s, Type::Scalar(d) if !d.is_float())
                || o.dtype() != DType::I32
                || shape_of(&o) != shape_of(&r)
                || r.dtype() != DType::F32
            {
                return fail(format!("rand({}, {}) to {}", s.to_mlir(), o.to_mlir(), r.to_mlir()));
            }
        }
        OpKind::Print { values, .. } => {
            for v in values {
                u(*v)?;
            }
        }
        OpKind::For { lb, ub, step, iv, init, iters, body, yields, results } => {
            for b in [lb, ub, step] {
                if !scalar_i32(&u(*b)?) {
                    return fail("loop bounds and step are i32 scalars".into());
                }
            }
            if init.len() != iters.len() || yields.len() != iters.len() || results.len() != iters.len() {
                return fail("a loop carries as many values in as out".into());
            }
            let init_t = init.iter().map(|v| u(*v)).collect::<Result<Vec<_>, _>>()?;
            define(defined, *iv, Some(op))?;
            for it in iters {
                define(defined, *it, Some(op))?;
            }
            ops(func, body, defined)?;
            for ((i, y), it) in init_t.iter().zip(yields).zip(iters) {
                let (yt, itt) = (used(func, defined, op, *y)?, func.values[it.0 as usize].clone());
                if i != &itt || yt != itt {
                    return fail(format!(
                        "a loop-carried value changes type: {} in, {} carried, {} yielded",
                        i.to_mlir(),
                        itt.to_mlir(),
                        yt.to_mlir()
                    ));
                }
            }
            for (res, it) in results.iter().zip(iters) {
                if func.values.get(res.0 as usize) != func.values.get(it.0 as usize) {
                    return fail("a loop result has another type than its carried value".into());
                }
                define(defined, *res, Some(op))?;
            }
        }
        OpKind::If { cond, then_ops, then_yields, else_ops, else_yields, results } => {
            if !matches!(u(*cond)?, Type::Scalar(DType::I1)) {
                return fail("a run-time if tests an i1 scalar".into());
            }
            if then_yields.len() != results.len() || else_yields.len() != results.len() {
                return fail("each branch yields one value per result".into());
            }
            ops(func, then_ops, defined)?;
            ops(func, else_ops, defined)?;
            for ((t, e), res) in then_yields.iter().zip(else_yields).zip(results) {
                let (tt, et) = (used(func, defined, op, *t)?, used(func, defined, op, *e)?);
                let rt = func.values.get(res.0 as usize).cloned();
                if Some(&tt) != rt.as_ref() || Some(&et) != rt.as_ref() {
                    return fail("the branches of an if yield values of another type than its results".into());
                }
                define(defined, *res, Some(op))?;
            }
        }
    }
    if let Some(res) = op.result {
        define(defined, res, Some(op))?;
    }
    Ok(())
}

/// Whether `p` holds each of `0..rank` exactly once.
fn is_permutation(p: &[u32], rank: usize) -> bool {
    let mut s = p.to_vec();
    s.sort_unstable();
    s.iter().copied().eq(0..rank as u32)
}

fn tensor_of(func: &Func, defined: &[bool], op: &Op, t: ValueId) -> Result<(DType, usize), Diagnostic> {
    match used(func, defined, op, t)? {
        Type::Tensor { dtype, rank } => Ok((dtype, rank)),
        other => Err(bad(Some(op), format!("{} is not a tensor", other.to_mlir()))),
    }
}

fn indices(func: &Func, defined: &[bool], op: &Op, index: &[ValueId], rank: usize) -> Result<(), Diagnostic> {
    if index.len() != rank {
        return Err(bad(Some(op), format!("{} indices for a rank-{rank} tensor", index.len())));
    }
    for i in index {
        if !matches!(used(func, defined, op, *i)?, Type::Scalar(DType::I32)) {
            return Err(bad(Some(op), "tile indices are i32 scalars".into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tir::Padding;

    fn kernel(store_dtype: DType) -> Func {
        let mut f = Func::new("k", "sm_90a", 4);
        let x = f.add_param("x", Type::Tensor { dtype: DType::F16, rank: 1 });
        let b = f.push(OpKind::Bid { axis: 0 }, Type::Scalar(DType::I32), None);
        let t = f.push(
            OpKind::Load { tensor: x, index: vec![b], padding: Padding::Zero, order: vec![0], latency: 0 },
            Type::tile(vec![64], DType::F16),
            None,
        );
        let c = f.push(OpKind::Cast(t), Type::tile(vec![64], store_dtype), None);
        f.push_void(OpKind::Store { tensor: x, index: vec![b], tile: c, mask: None }, None);
        f
    }

    #[test]
    fn accepts_a_well_formed_kernel() {
        verify(&kernel(DType::F16), Level::Tile).unwrap();
    }

    #[test]
    fn rejects_a_store_of_another_dtype_and_missing_layouts() {
        let e = verify(&kernel(DType::F32), Level::Tile).unwrap_err();
        assert_eq!(e.code, "E0905");
        assert!(e.message.contains("store of tensor<64xf32> into a rank-1 f16 tensor"), "{}", e.message);
        let e = verify(&kernel(DType::F16), Level::TileGpu).unwrap_err();
        assert!(e.message.contains("has no layout"), "{}", e.message);
    }

    #[test]
    fn rejects_zero_warps_use_before_definition_and_huge_tiles() {
        let mut f = kernel(DType::F16);
        f.num_warps = 0;
        assert!(verify(&f, Level::Tile).unwrap_err().message.contains("0 warps"));
        let mut f = kernel(DType::F16);
        f.ops.swap(0, 1);
        assert!(verify(&f, Level::Tile).unwrap_err().message.contains("used before it is defined"));
        let mut f = kernel(DType::F16);
        f.values[2] = Type::tile(vec![1 << 30, 1 << 30], DType::F16);
        assert!(verify(&f, Level::Tile).unwrap_err().message.contains("more than"));
    }

    /// Hand-written layouts are checked for their contents, not only their rank (issue 26,
    /// item 5: some of these panicked in `tile-to-llvm`, others were lowered to wrong code).
    #[test]
    fn rejects_layouts_whose_contents_are_wrong() {
        use crate::layout::parse_layout;
        let with = |text: &str| {
            let mut f = kernel(DType::F16);
            let l = parse_layout(text).unwrap_or_else(|| panic!("{text} does not parse"));
            for v in [2, 3] {
                if let Type::Tile { layout, .. } = &mut f.values[v] {
                    *layout = Some(l.clone());
                }
            }
            verify(&f, Level::TileGpu)
        };
        // A good one: 64 elements, 2 a thread, 32 lanes, 4 warps... of which 1 holds copies.
        assert!(with("#tilegpu.blocked<[2], [32], [4], [0]>").is_ok());
        for (text, why) in [
            ("#tilegpu.blocked<[2], [32], [4], [1]>", "not a permutation"),
            ("#tilegpu.blocked<[0], [32], [4], [0]>", "not a positive power of two"),
            ("#tilegpu.blocked<[-2], [32], [4], [0]>", "not a positive power of two"),
            ("#tilegpu.blocked<[3], [32], [4], [0]>", "not a positive power of two"),
            ("#tilegpu.blocked<[2], [16], [4], [0]>", "not 32"),
            ("#tilegpu.blocked<[2], [32], [8], [0]>", "the block has 4"),
        ] {
            let e = with(text).unwrap_err();
            assert_eq!(e.code, "E0905");
            assert!(e.message.contains(why) && e.message.contains("#tilegpu.blocked"), "{text}: {}", e.message);
        }
        let mut f = kernel(DType::F16);
        let parent = parse_layout("#tilegpu.blocked<[2], [32], [4], [0]>").unwrap();
        if let Type::Tile { layout, .. } = &mut f.values[2] {
            *layout = Some(crate::layout::Layout::Slice { dim: 3, parent: Box::new(parent) });
        }
        assert!(verify(&f, Level::TileGpu).unwrap_err().message.contains("slice dim 3"));
    }
}
