//! `tile-approx-math`: the approximate forms of float math, per op or under `--fast-math`.
//!
//! Needs: the `tile` dialect (it runs before `tile-layout`; the ops it makes get their
//! layouts there).
//!
//! Does, on f32 values (f16/bf16 math already runs in f32 inside one op and keeps its
//! rounding):
//! - `exp(x)` that may be approximate (`rounding="approx"` in the source, or `--fast-math`)
//!   becomes `exp2(x · log2 e)`: one `ex2.approx` instead of `ex2` plus the rounding
//!   correction of the exact `exp`. When `x` is a product with a scalar (`s · scale`, the
//!   attention scores) used only there, log2 e is folded into that scalar — no extra multiply
//!   per element; otherwise one multiply is inserted.
//! - under `--fast-math`, every float `truediv` / `/` (a reciprocal `1 / x` included)
//!   becomes `div.approx` with flush-to-zero, and `exp2`, `exp`, `log`, `log2`, `sqrt`,
//!   `rsqrt` get flush-to-zero and their approximate variants.
//!
//! An op whose options the source wrote (`flush_to_zero=…` or `rounding=…`, printed
//! `tile.pinned`) keeps them: per-op attributes win over the flag.
//!
//! Guarantees: the error bounds of `docs/language.md` ("Approximate math"): `exp2(x·log2 e)`
//! differs from `exp(x)` by the rounding of the product (relative 2^-24 of x, so about
//! |x|·2^-24 relative in the result) plus `ex2.approx`'s 2 ulp; `div.approx` is within 2 ulp
//! for divisors below 2^126; flush-to-zero turns subnormals into zero. The interpreter test
//! `approximate_math_stays_within_the_kernels_tolerances` checks every kernel against its
//! reference with `--fast-math`.
//!
//! Options: `fast-math` (`true`/`false`, default false).

use std::collections::BTreeMap;
use tilec_core::tir::{BinOp, Func, MathFlags, Op, OpKind, Type, UnOp, ValueId};
use tilec_core::DType;

/// What the pass did, one line per op (for `--report`).
#[derive(Clone, Debug, Default)]
pub struct ApproxReport {
    pub lines: Vec<String>,
}

const LOG2_E: f64 = std::f64::consts::LOG2_E;

fn f32_value(func: &Func, v: ValueId) -> bool {
    func.ty(v).dtype() == DType::F32
}

fn describe(func: &Func, v: ValueId) -> String {
    match func.ty(v) {
        Type::Tile { shape, dtype, .. } => format!("{shape:?} {dtype}"),
        t => t.dtype().to_string(),
    }
}

struct Pass {
    fast: bool,
    defs: BTreeMap<ValueId, OpKind>,
    uses: BTreeMap<ValueId, usize>,
    /// Products whose scalar factor takes log2 e: product → (its splat operand, the scalar).
    fold: BTreeMap<ValueId, (ValueId, ValueId)>,
    report: Vec<String>,
}

impl Pass {
    /// Whether an op with `flags` may take the approximate form.
    fn may(&self, flags: MathFlags, asked: bool) -> bool {
        asked || (self.fast && !flags.pinned)
    }

    /// The product `x = a · splat(s)` (either side) whose scalar can take log2 e.
    fn foldable(&self, func: &Func, x: ValueId) -> Option<(ValueId, ValueId)> {
        if self.uses.get(&x) != Some(&1) {
            return None;
        }
        let OpKind::Binary { op: BinOp::Mul, lhs, rhs, .. } = self.defs.get(&x)? else { return None };
        [*rhs, *lhs].into_iter().find_map(|side| match self.defs.get(&side) {
            Some(OpKind::Splat(s)) if self.uses.get(&side) == Some(&1) && func.ty(*s) == &Type::Scalar(DType::F32) => {
                Some((side, *s))
            }
            _ => None,
        })
    }

    /// First walk: which exps fold into which products.
    fn plan(&mut self, func: &Func) {
        let mut fold = BTreeMap::new();
        func.walk(&mut |op| {
            if let OpKind::Unary { op: UnOp::Exp, value, flags } = &op.kind {
                if self.may(*flags, flags.approx) && f32_value(func, *value) {
                    if let Some(f) = self.foldable(func, *value) {
                        fold.insert(*value, f);
                    }
                }
            }
        });
        self.fold = fold;
    }

    fn ops(&mut self, func: &mut Func, ops: Vec<Op>) -> Vec<Op> {
        let mut out = Vec::with_capacity(ops.len());
        for mut op in ops {
            match &mut op.kind {
                OpKind::For { body, .. } => *body = self.ops(func, std::mem::take(body)),
                OpKind::If { then_ops, else_ops, .. } => {
                    *then_ops = self.ops(func, std::mem::take(then_ops));
                    *else_ops = self.ops(func, std::mem::take(else_ops));
                }
                _ => {}
            }
            let folded = op.result.and_then(|r| self.fold.get(&r).copied());
            if let (Some((splat, s)), OpKind::Binary { lhs, rhs, .. }) = (folded, &mut op.kind) {
                // s · log2 e, splatted in place of s's splat.
                let c = push(func, &mut out, OpKind::ConstFloat(LOG2_E), Type::Scalar(DType::F32));
                let mul = OpKind::Binary { op: BinOp::Mul, lhs: s, rhs: c, flags: MathFlags::default() };
                let s2 = push(func, &mut out, mul, Type::Scalar(DType::F32));
                let sp = push(func, &mut out, OpKind::Splat(s2), func.ty(splat).clone());
                for side in [lhs, rhs] {
                    if *side == splat {
                        *side = sp;
                    }
                }
            }
            self.rewrite(func, &mut op, &mut out);
            out.push(op);
        }
        out
    }

    /// The op itself: exp → exp2, and the fast-math flags.
    fn rewrite(&mut self, func: &mut Func, op: &mut Op, out: &mut Vec<Op>) {
        let fast = self.fast;
        match &mut op.kind {
            OpKind::Unary { op: u @ UnOp::Exp, value, flags } if f32_value(func, *value) => {
                if !self.may(*flags, flags.approx) {
                    return;
                }
                let what = describe(func, *value);
                if self.fold.contains_key(value) {
                    self.report.push(format!("exp of {what} → exp2, log2 e folded into the scalar factor"));
                } else {
                    let c = push(func, out, OpKind::ConstFloat(LOG2_E), Type::Scalar(DType::F32));
                    let c = match func.ty(*value).clone() {
                        t @ Type::Tile { .. } => push(func, out, OpKind::Splat(c), t),
                        _ => c,
                    };
                    let mul = OpKind::Binary { op: BinOp::Mul, lhs: *value, rhs: c, flags: MathFlags::default() };
                    *value = push(func, out, mul, func.ty(*value).clone());
                    self.report.push(format!("exp of {what} → exp2 of x · log2 e"));
                }
                *u = UnOp::Exp2;
                if fast && !flags.pinned {
                    flags.ftz = true;
                }
            }
            OpKind::Unary { op: u, value, flags }
                if fast
                    && !flags.pinned
                    && func.ty(*value).dtype().is_float()
                    && func.ty(*value).dtype() != DType::F64
                    && matches!(u, UnOp::Exp2 | UnOp::Exp | UnOp::Log | UnOp::Log2 | UnOp::Sqrt | UnOp::Rsqrt) =>
            {
                let before = *flags;
                flags.ftz = true;
                flags.approx = true;
                if *flags != before {
                    self.report.push(format!(
                        "{} of {}: approximate, flush-to-zero",
                        u.mlir_name(),
                        describe(func, *value)
                    ));
                }
            }
            OpKind::Binary { op: BinOp::Div, lhs, flags, .. }
                if fast
                    && !flags.pinned
                    && func.ty(*lhs).dtype().is_float()
                    && func.ty(*lhs).dtype() != DType::F64
                    && !(flags.ftz && flags.approx) =>
            {
                flags.ftz = true;
                flags.approx = true;
                self.report.push(format!("division of {}: div.approx, flush-to-zero", describe(func, *lhs)));
            }
            _ => {}
        }
    }
}

fn push(func: &mut Func, out: &mut Vec<Op>, kind: OpKind, ty: Type) -> ValueId {
    let v = func.new_value(ty);
    out.push(Op { kind, result: Some(v), span: None });
    v
}

/// Runs the pass over a `tile` kernel.
pub fn run(func: &mut Func, fast_math: bool) -> ApproxReport {
    let mut p =
        Pass { fast: fast_math, defs: BTreeMap::new(), uses: func.use_counts(), fold: BTreeMap::new(), report: vec![] };
    func.walk(&mut |op| {
        if let Some(r) = op.result {
            p.defs.insert(r, op.kind.clone());
        }
    });
    p.plan(func);
    let ops = std::mem::take(&mut func.ops);
    func.ops = p.ops(func, ops);
    ApproxReport { lines: p.report }
}
