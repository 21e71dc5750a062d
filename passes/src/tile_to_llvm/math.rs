//! The math list, exactly as the flags say: `exp2` (`ex2.approx`), `exp` (with its rounding
//! correction), `sqrt`, `rsqrt`, `log`/`log2`, `sin`/`cos` (Cody–Waite reduction), `tanh`,
//! `floor`/`ceil` (exact), `erf`, `pow`, `flush_to_zero`, and `truediv` (`div.rn`, or
//! `div.approx`). f16/bf16 math runs in f32 and rounds once.

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

/// The Taylor coefficients of erf, c_k = 2/√π · (−1)^k / (k! (2k + 1)), k = 0..7.
fn erf_taylor() -> [f64; 7] {
    let mut c = [0.0; 7];
    let mut fact = 1.0f64;
    for (k, ck) in c.iter_mut().enumerate() {
        if k > 0 {
            fact *= k as f64;
        }
        let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
        *ck = std::f64::consts::FRAC_2_SQRT_PI * sign / (fact * (2 * k + 1) as f64);
    }
    c
}

/// The Chebyshev fit of erfc (Numerical Recipes' `erfcc`): erfc(z) = t·exp(−z² + P(t)),
/// t = 1/(1 + z/2), fractional error below 1.2e-7 for z ≥ 0. Lowest order first.
const ERFC_P: [f64; 10] = [
    -1.265_512_23,
    1.000_023_68,
    0.374_091_96,
    0.096_784_18,
    -0.186_288_06,
    0.278_868_07,
    -1.135_203_98,
    1.488_515_87,
    -0.822_152_23,
    0.170_872_77,
];

/// erf of an f32: for |x| < 0.5 the Taylor series to x^13 (truncation below 1e-9
/// relative), else 1 − erfc(|x|) with [`ERFC_P`], signed like x. Exact at 0, ±1 at ±inf,
/// NaN for NaN. `erf_model_is_within_its_bound` measures the formula in f32.
fn erf32(em: &mut Emitter, x: &Reg) -> Result<Reg, Diagnostic> {
    let coeffs = erf_taylor();
    let x2 = em.fmul(x, x);
    let mut p = em.cf32(coeffs[6]);
    for c in coeffs[..6].iter().rev() {
        let cc = em.cf32(*c);
        p = fma(em, &p, &x2, &cc);
    }
    let small = em.fmul(&p, x);
    // The large branch on |x|.
    let z = em.intr("fabs", &[x]);
    let (one, half) = (em.cf32(1.0), em.cf32(0.5));
    let d = fma(em, &z, &half, &one);
    let t = em.fdiv(&one, &d);
    let mut q = em.cf32(ERFC_P[9]);
    for c in ERFC_P[..9].iter().rev() {
        let cc = em.cf32(*c);
        q = fma(em, &q, &t, &cc);
    }
    let nz = em.fneg(&z);
    let arg = fma(em, &nz, &z, &q);
    let e = unop(em, UnOp::Exp, &arg, DType::F32, false)?;
    let erfc = em.fmul(&t, &e);
    let big = em.fsub(&one, &erfc);
    let big = em.intr("copysign", &[&big, x]);
    let is_small = em.cmp(true, "olt", &z, &half);
    // NaN compares false: it takes the large branch, whose arithmetic keeps it NaN.
    Ok(em.select(&is_small, &small, &big))
}

/// `pow(a, b)` of dtype `d` as `2^(b · log2 |a|)` (`lg2.approx`, `ex2.approx`, in f32), with
/// IEEE's special cases: `pow(x, 0) = pow(1, y) = 1`, `pow(±1, ±inf) = 1`; a negative base
/// gives NaN unless `b` is an integer, when the sign is that of odd `b`. The relative error is
/// about `(2 + |b · log2 a|) · 2^-22`: exact-looking for small exponents, 1e-5 at 2^±100.
pub(crate) fn pow(em: &mut Emitter, a: &Reg, b: &Reg, d: DType) -> Reg {
    let (x, y) = (extend_f32(em, a, d), extend_f32(em, b, d));
    let ax = em.intr("fabs", &[&x]);
    let l = em.call_intrinsic("llvm.nvvm.lg2.approx.f", &[&ax], Ty::F32);
    let p = em.fmul(&y, &l);
    let mag = ex2(em, &p);
    // The sign: y an integer (floor(y) == y) and odd (floor(y/2) != y/2) with x < 0.
    let (zero, one, half) = (em.cf32(0.0), em.cf32(1.0), em.cf32(0.5));
    let inf = em.cf32(f64::INFINITY);
    let fy = em.intr("floor", &[&y]);
    let integral = em.cmp(true, "oeq", &fy, &y);
    let hy = em.fmul(&y, &half);
    let fhy = em.intr("floor", &[&hy]);
    let odd0 = em.cmp(true, "une", &fhy, &hy);
    let odd = em.and(&integral, &odd0);
    let negx = em.cmp(true, "olt", &x, &zero);
    let flip = em.and(&negx, &odd);
    let neg_mag = em.fneg(&mag);
    let signed = em.select(&flip, &neg_mag, &mag);
    let nan = em.cf32(f64::NAN);
    let t = em.cint(1, Ty::I1);
    let not_integral = em.xor(&integral, &t);
    let bad = em.and(&negx, &not_integral);
    let r = em.select(&bad, &nan, &signed);
    // pow(x, 0) = 1, pow(1, y) = 1, pow(-1, ±inf) = 1.
    let y0 = em.cmp(true, "oeq", &y, &zero);
    let x1 = em.cmp(true, "oeq", &x, &one);
    let ay = em.intr("fabs", &[&y]);
    let yinf = em.cmp(true, "oeq", &ay, &inf);
    let ax1 = em.cmp(true, "oeq", &ax, &one);
    let unit = em.and(&yinf, &ax1);
    let ones0 = em.or(&y0, &x1);
    let ones = em.or(&ones0, &unit);
    let r = em.select(&ones, &one, &r);
    round_from_f32(em, &r, d)
}

/// A unary op on a scalar of dtype `d`; `approx` asks for the approximate variants.
pub(crate) fn unop(em: &mut Emitter, op: UnOp, a: &Reg, d: DType, approx: bool) -> Result<Reg, Diagnostic> {
    Ok(match op {
        UnOp::Neg => em.fneg(a),
        UnOp::Abs => em.intr("fabs", &[a]),
        // Exact in every float dtype (cvt.rmi / cvt.rpi).
        UnOp::Floor => em.intr("floor", &[a]),
        UnOp::Ceil => em.intr("ceil", &[a]),
        // cvt.rni / cvt.rzi: exact, halves to even as torch.round and NumPy's rint.
        UnOp::RoundEven => em.intr("roundeven", &[a]),
        UnOp::Trunc => em.intr("trunc", &[a]),
        UnOp::Erf => {
            let x = extend_f32(em, a, d);
            let r = erf32(em, &x)?;
            round_from_f32(em, &r, d)
        }
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

#[cfg(test)]
mod tests {
    use super::{erf_taylor, ERFC_P};

    /// [`super::erf32`]'s formula evaluated in f32 exactly as emitted (fma, correctly rounded
    /// division and exp): the error of the formula itself, over [-6, 6].
    fn erf_model(x: f32) -> f32 {
        let c = erf_taylor();
        let x2 = x * x;
        let mut p = c[6] as f32;
        for ck in c[..6].iter().rev() {
            p = p.mul_add(x2, *ck as f32);
        }
        let small = p * x;
        let z = x.abs();
        let t = 1.0 / z.mul_add(0.5, 1.0);
        let mut q = ERFC_P[9] as f32;
        for ck in ERFC_P[..9].iter().rev() {
            q = q.mul_add(t, *ck as f32);
        }
        let arg = (-z).mul_add(z, q);
        let e = f64::from(arg).exp() as f32;
        let big = (1.0 - t * e).copysign(x);
        if z < 0.5 {
            small
        } else {
            big
        }
    }

    #[test]
    fn erf_model_is_within_its_bound() {
        let mut worst = 0.0f64;
        for i in -600_000..=600_000 {
            let x = i as f32 * 1e-5;
            let want = libm::erf(f64::from(x));
            let got = f64::from(erf_model(x));
            if want != 0.0 {
                worst = worst.max(((got - want) / want).abs());
            }
        }
        // 2.83e-7 (worst near |x| = 0.5) with a correctly rounded exp; the GPU's exp adds at
        // most 3 ulp of erfc (below 1.3e-7 of erf above 0.5): the documented 4.2e-7.
        assert!(worst < 2.9e-7, "erf model: worst relative error {worst:e}");
        assert_eq!(erf_model(0.0), 0.0);
        assert_eq!(erf_model(f32::INFINITY), 1.0);
        assert_eq!(erf_model(f32::NEG_INFINITY), -1.0);
        assert!(erf_model(f32::NAN).is_nan());
    }
}
