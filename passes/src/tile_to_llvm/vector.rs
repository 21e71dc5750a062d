//! Elementwise chains as vectors of a thread's registers (`vector-lanes`, default 4).
//!
//! A thread holds N registers of a tile and an elementwise op does the same to each: written
//! register by register, a kernel's IR grows with N (gelu's tanh is ~25 ops a register, 16
//! to 32 registers a thread), and MLIR parses, converts and translates every copy before
//! LLVM optimises each. Written on `vector<4 x T>`s, the op is a quarter of the ops at every
//! stage until NVPTX's legaliser splits the vectors back into the same scalar instructions
//! (or sm_103a's paired ones) at instruction selection.
//!
//! The chain is written a group of four registers at a time (`Emitter::chunk`): each group's
//! ops are placed together, so its temporaries die before the next group's are made. Op
//! after op over all registers (one vector of 32) made ptxas keep every temporary of every
//! register live at once: gelu sm_121a 159 registers a thread instead of 45.
//!
//! A vector costs at its edges: an `insertelement` a register to make one of registers that
//! another op produced, an `extractelement` a register where an op that wants registers (a
//! store, a reduction, an `mma`, a loop's carried values) reads one. [`plan`] picks the
//! values worth it before the lowering starts: the connected groups of vectorizable ops (f32
//! arithmetic, float casts, the math list, float comparisons and selects; integer arithmetic,
//! logic, selects and casts, a float's conversion to an integer included) where the vectors
//! save more ops than their edges cost. Everything else is lowered as before.
//!
//! Needs: a tile-IR function after `tile-layout` (the register counts). Guarantees: a
//! vectorised value's lanes are its registers in the layout's order, so any consumer sees
//! the registers it saw before ([`Lowering::get`] extracts them, once a block).

use super::emit::{Emitter, Reg, Ty};
use super::regs::Value;
use super::{err, Lowering};
use std::collections::{BTreeMap, BTreeSet};
use tilec_core::tir::{walk_ops, BinOp, Func, OpKind, Type, UnOp, ValueId};
use tilec_core::{DType, Diagnostic};

/// What one vectorizable op costs a register: its scalar expansion's ops, and how many of
/// them are intrinsics without a vector form (`ex2.approx.ftz`, `lg2.approx`, `sin.approx`,
/// `rsqrt.approx`, `div.approx`), which a vector calls lane by lane — an extract and an
/// insert around each call.
fn cost(func: &Func, kind: &OpKind, result: ValueId) -> Option<(u32, u32)> {
    let is_f32 = |v: ValueId| func.ty(v).dtype() == DType::F32;
    let is_float = |v: ValueId| matches!(func.ty(v).dtype(), DType::F32 | DType::F16 | DType::BF16);
    let is_int = |v: ValueId| matches!(func.ty(v).dtype(), DType::I32 | DType::I64);
    let is_bits = |v: ValueId| {
        matches!(func.ty(v).dtype(), DType::I1 | DType::I8 | DType::I32 | DType::I64 | DType::U8 | DType::U32)
    };
    if !matches!(func.ty(result), Type::Tile { .. }) {
        return None;
    }
    // `ftz32` of an input and of a result: 4 ops each.
    let ftz = |on: bool| if on { 8 } else { 0 };
    Some(match kind {
        // f16/bf16 arithmetic stays scalar: as vectors NVPTX would pair it (`.f16x2`), other
        // PTX than today's; f32 is split back into the same instructions.
        OpKind::Binary { op, lhs, flags, .. } if is_f32(*lhs) => match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Max | BinOp::Min => (1, 0),
            BinOp::Div if flags.approx => (1, 1),
            BinOp::Div => (1 + if flags.ftz { 12 } else { 0 }, 0),
            BinOp::Rem => (8, 0),
            BinOp::Pow | BinOp::Shl | BinOp::Shr => return None,
        },
        OpKind::Fma { a, .. } if is_f32(*a) => (1, 0),
        // Between floats, integers and predicates (not fp8, fp4 or the scale types: inline
        // asm); a float's conversion to an integer is one `llvm.fpto[su]i.sat` on vectors.
        OpKind::Cast(x) if (is_bits(*x) || is_float(*x)) && (is_bits(result) || is_float(result)) => (1, 0),
        OpKind::Unary { op, value, flags } if is_float(*value) => match op {
            // On the value's own type (f16 too: paired as vectors, like the arithmetic above).
            UnOp::Neg | UnOp::Abs | UnOp::Floor | UnOp::Ceil | UnOp::RoundEven | UnOp::Trunc if !is_f32(*value) => {
                return None
            }
            UnOp::Neg | UnOp::Abs | UnOp::Floor | UnOp::Ceil | UnOp::RoundEven | UnOp::Trunc => (1 + ftz(flags.ftz), 0),
            // The `.ftz` instruction flushes by itself.
            UnOp::Exp2 if flags.ftz => (1, 1),
            UnOp::Exp2 => (1, 0),
            UnOp::Rsqrt if flags.approx => (1, 1),
            UnOp::Sqrt => (1 + ftz(flags.ftz), 0),
            UnOp::Rsqrt => (2 + ftz(flags.ftz), 0),
            UnOp::Log2 => (1 + ftz(flags.ftz), 1),
            UnOp::Log => (2 + ftz(flags.ftz), 1),
            UnOp::Sin | UnOp::Cos => (7 + ftz(flags.ftz), 1),
            UnOp::Exp => (10 + ftz(flags.ftz), 0),
            UnOp::Tanh => (24 + ftz(flags.ftz), 0),
            UnOp::Erf => (40 + ftz(flags.ftz), 0),
        },
        OpKind::Cmp(_, x, _) if is_f32(*x) => (1, 0),
        OpKind::Select { a, .. } if is_f32(*a) || is_bits(*a) => (1, 0),
        // Integers and predicates: NVPTX splits their vectors into the registers' instructions
        // (where the plan takes them in the library, the same instructions in another order).
        OpKind::Binary { op, lhs, .. } if is_int(*lhs) => match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Max | BinOp::Min => (1, 0),
            // PTX's clamped amount: a compare and a select beside the shift.
            BinOp::Shl | BinOp::Shr => (3, 0),
            BinOp::Div | BinOp::Rem | BinOp::Pow => return None,
        },
        // Integer comparisons stay register by register: an index tile's (an `arange` plus
        // offsets, a ragged tile's mask) compares one difference of bases with constants
        // (`affine_cmp`), which would leave the vectorised sums it reads unused.
        OpKind::Logic(_, x, _) if is_bits(*x) => (1, 0),
        // A reshape that renames registers passes the vectors on (nothing to extract or insert).
        OpKind::Reshape(x) if super::shared::renames(func, *x, result) => (0, 0),
        _ => return None,
    })
}

/// The results to lower as vectors: the groups of vectorizable ops (connected through their
/// operands) where the vectors save ops. Counted a register, with groups of four: the group's
/// `ops` become `ops / 4`, each edge costs 1 — an operand other ops made (inserted into
/// vectors; a scalar, a splat, or a broadcast whose every group of registers holds one value
/// is a constant or one shuffle, not an edge) or a result an op that wants registers reads
/// (extracted) — and each lane-by-lane call 3 instead of 1. A reshape that renames registers
/// joins its operand's group to its users' at no cost: the vectors pass through it. A group
/// is taken where `3·ops − 20·calls > 6·edges`: what the vectors save, `3·ops/4 − edges`, beyond
/// half the edges again, and the calls' inserts and extracts at about twice their count (LLVM
/// folds chains of them at a cost beyond their number: rope_table's `sin`/`cos`, 19 ops, 2
/// calls and 3 edges, compiled 1–2 % slower as vectors; with its position broadcast as a
/// splat, 2 edges, it is taken: +1.3 % instructions on sm_90a and sm_121a, −0.2 % on sm_103a,
/// the same SASS count and speed on an H200, bench/results/2026-11-30-session43/). gelu's chain:
/// 34 ops, no calls, 2 edges; FMHA's `exp2(s·scale − m)` into the `mma`: 4 ops, 1 call
/// (`ex2.approx.ftz`), 4 edges.
/// A group reading a product's accumulator (`mma`), or in the body of a loop with a product,
/// stays register by register too: an epilogue or a softmax is a small part of such a
/// kernel's compile (matmul_swiglu 1.3 %, the tutorial's FMHA step 2 3.8 %), and
/// matmul_swiglu's epilogue as vectors timed 0.2 % slower on an H200 (median of 100, two
/// pairs; the minimum 0.3 % faster): not worth a doubt.
pub(crate) fn plan(func: &Func, lanes: usize) -> BTreeSet<ValueId> {
    let mut costs: BTreeMap<ValueId, (u32, u32)> = BTreeMap::new();
    let mut operands: BTreeMap<ValueId, Vec<ValueId>> = BTreeMap::new();
    let mut users: BTreeMap<ValueId, Vec<Option<ValueId>>> = BTreeMap::new();
    let mut splats: BTreeSet<ValueId> = BTreeSet::new();
    let mut products: BTreeSet<ValueId> = BTreeSet::new();
    // The values made in the body of a loop with a product (an attention's or a GEMM's loop).
    let mut product_loop: BTreeSet<ValueId> = BTreeSet::new();
    func.walk(&mut |op| {
        if let (OpKind::Mma { .. } | OpKind::MmaWait { .. }, Some(r)) = (&op.kind, op.result) {
            products.insert(r);
        }
        if let OpKind::For { body, .. } = &op.kind {
            let mut has_product = false;
            walk_ops(body, &mut |o| has_product |= matches!(o.kind, OpKind::Mma { .. }));
            if has_product {
                walk_ops(body, &mut |o| product_loop.extend(o.result));
            }
        }
        let ins = op.kind.operands();
        for v in &ins {
            // `None`: an op that is not vectorizable (or has no result) reads it.
            users.entry(*v).or_default().push(op.result);
        }
        match (&op.kind, op.result) {
            (OpKind::Splat(_), Some(r)) => {
                splats.insert(r);
            }
            // A row broadcast along a group's registers (a block's scale over its elements)
            // gives each group one value: a splat, not an edge.
            (OpKind::Broadcast(x), Some(r)) if splat_groups(func, *x, r, lanes) => {
                splats.insert(r);
            }
            _ => {}
        }
        let Some(r) = op.result else { return };
        if let Some(c) = cost(func, &op.kind, r) {
            costs.insert(r, c);
            operands.insert(r, ins);
        }
    });
    // Groups: union-find over the vectorizable results and their vectorizable operands.
    let mut parent: BTreeMap<ValueId, ValueId> = costs.keys().map(|&v| (v, v)).collect();
    fn root(parent: &mut BTreeMap<ValueId, ValueId>, v: ValueId) -> ValueId {
        let mut r = v;
        while parent[&r] != r {
            r = parent[&r];
        }
        parent.insert(v, r);
        r
    }
    for (r, ins) in &operands {
        for x in ins {
            if costs.contains_key(x) {
                let (a, b) = (root(&mut parent, *r), root(&mut parent, *x));
                parent.insert(a, b);
            }
        }
    }
    let mut work: BTreeMap<ValueId, (i64, i64)> = BTreeMap::new();
    let mut in_loop: BTreeSet<ValueId> = BTreeSet::new();
    let mut edges: BTreeMap<ValueId, BTreeSet<(bool, ValueId)>> = BTreeMap::new();
    for (r, ins) in &operands {
        let g = root(&mut parent, *r);
        if product_loop.contains(r) {
            in_loop.insert(g);
        }
        let (w, c) = work.entry(g).or_default();
        *w += i64::from(costs[r].0);
        *c += i64::from(costs[r].1);
        for x in ins {
            let tile = matches!(func.ty(*x), Type::Tile { .. });
            if tile && !costs.contains_key(x) && !splats.contains(x) {
                edges.entry(g).or_default().insert((false, *x));
            }
        }
        let vectorizable = |u: &Option<ValueId>| u.is_some_and(|u| costs.contains_key(&u));
        if users.get(r).is_some_and(|us| !us.iter().all(vectorizable)) {
            edges.entry(g).or_default().insert((true, *r));
        }
    }
    let worth: BTreeSet<ValueId> = work
        .iter()
        .filter(|(g, _)| !edges.get(g).is_some_and(|e| e.iter().any(|(out, v)| !out && products.contains(v))))
        .filter(|(g, _)| !in_loop.contains(g))
        .filter(|(g, (ops, calls))| 3 * ops - 20 * calls > 6 * edges.get(g).map_or(0, |e| e.len() as i64))
        .map(|(g, _)| *g)
        .collect();
    costs.keys().copied().filter(|v| worth.contains(&root(&mut parent, *v))).collect()
}

/// Whether every group of `lanes` consecutive registers of the broadcast `r` of `x` holds one
/// value: the register bases within a group step along broadcast dims only.
fn splat_groups(func: &Func, x: ValueId, r: ValueId, lanes: usize) -> bool {
    let (xt, rt) = (func.ty(x), func.ty(r));
    let Some(l) = rt.layout() else { return false };
    let map = l.to_linear(rt.shape());
    let bits = lanes.max(1).trailing_zeros() as usize;
    let broadcast = |d: usize| xt.shape().get(d) == Some(&1) && rt.shape()[d] != 1;
    map.regs.len() >= bits
        && map.regs[..bits].iter().all(|b| b.iter().enumerate().all(|(d, &c)| c == 0 || broadcast(d)))
}

/// The lanes of a vector type (0 for any other).
fn width(ty: &Ty) -> usize {
    match ty {
        Ty::Vector(n, _) => *n as usize,
        _ => 0,
    }
}

impl Lowering<'_> {
    /// The registers of a vectorised value where they are read now: its lanes, extracted
    /// once a block (a block's extraction does not dominate the next block's use), after the
    /// deferred groups that compute them.
    pub(crate) fn lanes(&mut self, v: ValueId, chunks: &[Reg]) -> Vec<Reg> {
        let serial = self.em.block_serial();
        if let Some((at, regs)) = self.lane_cache.get(&v) {
            if *at == serial {
                return regs.clone();
            }
        }
        self.em.flush_chunks();
        let mut regs = vec![];
        for c in chunks {
            regs.extend(self.em.unpack(c));
        }
        self.lane_cache.insert(v, (serial, regs.clone()));
        regs
    }

    /// Group `k` (registers `start..start + w`) of `v` as a vector: its own if vectorised, a
    /// splat of a scalar, a tile's registers inserted into one (once a block).
    fn vector_of(&mut self, v: ValueId, k: usize, start: usize, w: usize) -> Result<Reg, Diagnostic> {
        let lanes = u32::try_from(w).map_err(|_| err("a vector too wide"))?;
        match self.vals.get(&v).cloned() {
            Some(Value::Vector(chunks)) => match chunks.get(k) {
                Some(r) if width(&r.ty) == w => Ok(r.clone()),
                _ => Err(err("elementwise operands of different layouts")),
            },
            Some(Value::Scalar(s)) => Ok(self.em.splat(&s, lanes)),
            Some(Value::Tile(regs)) if start + w <= regs.len() => {
                let regs = &regs[start..start + w];
                if regs.iter().all(|r| r.name == regs[0].name) {
                    return Ok(self.em.splat(&regs[0], lanes));
                }
                let serial = self.em.block_serial();
                if let Some((at, r)) = self.pack_cache.get(&(v, k)) {
                    if *at == serial {
                        return Ok(r.clone());
                    }
                }
                let out = self.em.pack(regs);
                self.pack_cache.insert((v, k), (serial, out.clone()));
                Ok(out)
            }
            Some(Value::Tile(_)) => Err(err("elementwise operands of different layouts")),
            Some(_) => Err(err("elementwise op on a tensor, a shared buffer or Tensor Memory")),
            None => Err(err(format!("value %{} used before definition", v.0))),
        }
    }

    /// The op of `f` written on vectors of the operands' registers, a group of registers at a
    /// time, when [`plan`] chose the result being lowered ([`Lowering::vector_now`]); `None`
    /// otherwise.
    pub(crate) fn vector_elementwise(
        &mut self,
        operands: &[ValueId],
        f: &mut impl FnMut(&mut Emitter, &[Reg]) -> Result<Reg, Diagnostic>,
    ) -> Result<Option<Value>, Diagnostic> {
        if !self.vector_now {
            return Ok(None);
        }
        let n = operands.iter().find_map(|v| match self.vals.get(v) {
            Some(Value::Vector(chunks)) => Some(chunks.iter().map(|c| width(&c.ty)).sum()),
            Some(Value::Tile(regs)) => Some(regs.len()),
            _ => None,
        });
        let Some(n) = n.filter(|n| *n >= 2) else { return Ok(None) };
        let group = self.vector_lanes.max(2);
        let mut out = vec![];
        let mut start = 0;
        while start < n {
            let (k, w) = (out.len(), group.min(n - start));
            // The group's operands are made in its place too: a tile's registers inserted
            // into a vector right before the group reads it.
            self.em.chunk = Some(k);
            let vs = operands.iter().map(|v| self.vector_of(*v, k, start, w)).collect::<Result<Vec<_>, _>>();
            let r = vs.and_then(|vs| {
                self.em.lanes = Some(w as u32);
                f(&mut self.em, &vs)
            });
            self.em.chunk = None;
            self.em.lanes = None;
            let r = r?;
            if width(&r.ty) != w {
                return Err(err(format!("a vectorised elementwise op made {}", r.ty.text())));
            }
            out.push(r);
            start += w;
        }
        Ok(Some(Value::Vector(out)))
    }
}
