//! The math list, exactly as the flags say: `exp2` (`ex2.approx`), `exp` (with its rounding
//! correction), `sqrt`, `rsqrt`, `log`/`log2`, `sin`/`cos` (Cody–Waite reduction), `tanh`,
//! `flush_to_zero`, and `truediv` (`div.rn`, or `div.approx`). f16/bf16 math runs in f32 and
//! rounds once.

use super::elementwise::binop;
use super::emit::{Emitter, Reg, Ty};
use super::regs::Value;
use super::{err, Lowering};
use tilec_core::tir::{BinOp, OpKind, UnOp};
use tilec_core::{DType, Diagnostic};

fn extend_f32(em: &mut Emitter, v: &Reg, d: DType) -> Reg {
    if d == DType::F32 {
        v.clone()
    } else {
        em.convert("fpext", v, Ty::F32)
    }
}

fn round_from_f32(em: &mut Emitter, v: &Reg, d: DType) -> Reg {
    if d == DType::F32 {
        v.clone()
    } else {
        em.convert("fptrunc", v, Ty::of(d))
    }
}

fn ex2(em: &mut Emitter, x: &Reg) -> Reg {
    em.call_intrinsic("llvm.nvvm.ex2.approx.f32", &[x], Ty::F32)
}

fn fma(em: &mut Emitter, a: &Reg, b: &Reg, c: &Reg) -> Reg {
    em.intr("fma", &[a, b, c])
}

/// Flushes an f32 subnormal to a zero of its sign.
fn ftz32(em: &mut Emitter, v: &Reg) -> Reg {
    let ax = em.intr("fabs", &[v]);
    let min = em.cf32(f64::from(f32::MIN_POSITIVE));
    let zero = em.cf32(0.0);
    let sub = em.cmp(true, "olt", &ax, &min);
    let z = em.fmul(v, &zero);
    em.select(&sub, &z, v)
}

/// A unary op on a scalar of dtype `d`; `approx` asks for the approximate variants.
pub(crate) fn unop(em: &mut Emitter, op: UnOp, a: &Reg, d: DType, approx: bool) -> Result<Reg, Diagnostic> {
    Ok(match op {
        UnOp::Neg => em.fneg(a),
        UnOp::Abs => em.intr("fabs", &[a]),
        UnOp::Exp2 => {
            let x = extend_f32(em, a, d);
            let r = ex2(em, &x);
            round_from_f32(em, &r, d)
        }
        UnOp::Sqrt | UnOp::Rsqrt | UnOp::Log2 | UnOp::Log => {
            let x = extend_f32(em, a, d);
            let r = match (op, approx) {
                // sqrt.rn: correctly rounded.
                (UnOp::Sqrt, _) => em.intr("sqrt", &[&x]),
                (UnOp::Rsqrt, true) => em.call_intrinsic("llvm.nvvm.rsqrt.approx.f", &[&x], Ty::F32),
                // 1 / sqrt.rn(x) with div.rn: within 1 ulp of the exact value.
                (UnOp::Rsqrt, false) => {
                    let s = em.intr("sqrt", &[&x]);
                    let one = em.cf32(1.0);
                    em.fdiv(&one, &s)
                }
                // lg2.approx (max error 2^-22 relative away from 1); ln x = lg2 x · ln 2.
                _ => {
                    let l = em.call_intrinsic("llvm.nvvm.lg2.approx.f", &[&x], Ty::F32);
                    if op == UnOp::Log {
                        let ln2 = em.cf32(std::f64::consts::LN_2);
                        em.fmul(&l, &ln2)
                    } else {
                        l
                    }
                }
            };
            round_from_f32(em, &r, d)
        }
        UnOp::Sin | UnOp::Cos => {
            // x - k·2π with k = rint(x / 2π) (2π split in two for an exact product), then
            // sin.approx/cos.approx (absolute error 2^-20.5 on the reduced range).
            let x = extend_f32(em, a, d);
            let tau = std::f64::consts::TAU;
            let (inv, hi) = (em.cf32(1.0 / tau), em.cf32(f64::from(tau as f32)));
            let lo = em.cf32(tau - f64::from(tau as f32));
            let q = em.fmul(&x, &inv);
            let k = em.intr("rint", &[&q]);
            let nk = em.fneg(&k);
            let r1 = fma(em, &nk, &hi, &x);
            let r = fma(em, &nk, &lo, &r1);
            let name = if op == UnOp::Sin { "llvm.nvvm.sin.approx.f" } else { "llvm.nvvm.cos.approx.f" };
            let y = em.call_intrinsic(name, &[&r], Ty::F32);
            round_from_f32(em, &y, d)
        }
        UnOp::Tanh => {
            // |x| < 0.3: the odd Taylor polynomial to x^11 (truncation < 2e-8 relative);
            // else sign(x)·(1 − 2 / (exp(2|x|) + 1)), which loses under 2 bits there.
            let x = extend_f32(em, a, d);
            let ax = em.intr("fabs", &[&x]);
            let x2 = em.fmul(&x, &x);
            let coeffs = [-1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0, -1382.0 / 155_925.0];
            let mut p = em.cf32(coeffs[4]);
            for c in coeffs[..4].iter().rev() {
                let cc = em.cf32(*c);
                p = fma(em, &p, &x2, &cc);
            }
            let px = em.fmul(&p, &x2);
            let small = fma(em, &px, &x, &x);
            let two = em.cf32(2.0);
            let one = em.cf32(1.0);
            let t = em.fmul(&ax, &two);
            let e = unop(em, UnOp::Exp, &t, DType::F32, approx)?;
            let e1 = em.fadd(&e, &one);
            let q = em.fdiv(&two, &e1);
            let big = em.fsub(&one, &q);
            let signed = em.intr("copysign", &[&big, &x]);
            let cut = em.cf32(0.3);
            let is_small = em.cmp(true, "olt", &ax, &cut);
            let r = em.select(&is_small, &small, &signed);
            round_from_f32(em, &r, d)
        }
        UnOp::Exp => {
            let x = extend_f32(em, a, d);
            // t = x·log2(e) rounded; e = the rounding error of that product, exactly (fma),
            // plus the low part of log2(e); exp(x) = 2^t · 2^e ≈ 2^t · (1 + e·ln 2). e is
            // clamped so that ±inf inputs (e = NaN) still give 0 and inf, and the correction
            // is a factor (never 0) so that an overflowed 2^t stays inf.
            let hi = em.cf32(f64::from(std::f32::consts::LOG2_E));
            let lo = em.cf32(std::f64::consts::LOG2_E - f64::from(std::f32::consts::LOG2_E));
            let ln2 = em.cf32(std::f64::consts::LN_2);
            let (m1, p1) = (em.cf32(-1.0), em.cf32(1.0));
            let t = em.fmul(&x, &hi);
            let nt = em.fneg(&t);
            let e0 = fma(em, &x, &hi, &nt);
            let e1 = fma(em, &x, &lo, &e0);
            let e2 = em.intr("maxnum", &[&e1, &m1]);
            let e3 = em.intr("minnum", &[&e2, &p1]);
            let y = ex2(em, &t);
            let f = fma(em, &e3, &ln2, &p1);
            let r = em.fmul(&y, &f);
            round_from_f32(em, &r, d)
        }
    })
}

impl Lowering<'_> {
    /// Unary ops with the language's flags, and a division with them (`truediv`).
    pub(crate) fn math_op(&mut self, kind: &OpKind) -> Result<Value, Diagnostic> {
        let func = self.func;
        match kind {
            OpKind::Unary { op: u, value, flags } => {
                let d = func.ty(*value).dtype();
                self.elementwise(&[*value], |em, a| {
                    if !flags.ftz {
                        return unop(em, *u, &a[0], d, flags.approx);
                    }
                    let x = extend_f32(em, &a[0], d);
                    // The instructions with a `.ftz` form flush their input and result
                    // themselves (one MUFU, where the plain form costs ptxas a subnormal
                    // scaling around it).
                    let hw = match (u, flags.approx) {
                        (UnOp::Exp2, _) => Some("llvm.nvvm.ex2.approx.ftz.f32"),
                        (UnOp::Rsqrt, true) => Some("llvm.nvvm.rsqrt.approx.ftz.f"),
                        _ => None,
                    };
                    if let Some(name) = hw {
                        let r = em.call_intrinsic(name, &[&x], Ty::F32);
                        return Ok(round_from_f32(em, &r, d));
                    }
                    // Flush the f32 input and result, as the interpreter does.
                    let x = ftz32(em, &x);
                    let r = unop(em, *u, &x, DType::F32, flags.approx)?;
                    let r = ftz32(em, &r);
                    Ok(round_from_f32(em, &r, d))
                })
            }
            OpKind::Binary { op: BinOp::Div, lhs, rhs, flags } => {
                let d = func.ty(*lhs).dtype();
                self.elementwise(&[*lhs, *rhs], |em, a| {
                    if !flags.approx && !flags.ftz {
                        return Ok(binop(em, BinOp::Div, &a[0], &a[1], d));
                    }
                    let (mut x, mut y) = (extend_f32(em, &a[0], d), extend_f32(em, &a[1], d));
                    if flags.approx && flags.ftz {
                        // div.approx.ftz flushes its operands and result itself.
                        let q = em.call_intrinsic("llvm.nvvm.div.approx.ftz.f", &[&x, &y], Ty::F32);
                        return Ok(round_from_f32(em, &q, d));
                    }
                    if flags.ftz {
                        (x, y) = (ftz32(em, &x), ftz32(em, &y));
                    }
                    let mut q = if flags.approx {
                        em.call_intrinsic("llvm.nvvm.div.approx.f", &[&x, &y], Ty::F32)
                    } else {
                        em.fdiv(&x, &y)
                    };
                    if flags.ftz {
                        q = ftz32(em, &q);
                    }
                    Ok(round_from_f32(em, &q, d))
                })
            }
            _ => Err(err("not a math op")),
        }
    }
}
