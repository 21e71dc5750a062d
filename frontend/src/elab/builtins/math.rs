//! Math builtins: the math list with its per-op options, `maximum`/`minimum`, `sigmoid`,
//! `truediv`.

use super::super::*;

/// `maximum(a, b)`/`minimum(a, b)` elementwise.
pub(super) fn maximum(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("a", true), ("b", true)], name, span)?;
    let op = if name == "maximum" { BinOp::Max } else { BinOp::Min };
    let (x, y) = (a.get(0).cloned().unwrap_or(Val::Poison), a.get(1).cloned().unwrap_or(Val::Poison));
    if matches!(x, Val::Poison) || matches!(y, Val::Poison) {
        return Ok(Val::Poison);
    }
    cx.arith(Emit::Bin(op, MathFlags::default()), x, y, a.span(0), a.span(1), span, AB::Add)
}

/// The math list: `exp(x, flush_to_zero=…, rounding=…)`, `exp2`, `log`, `log2`, `sqrt`, `rsqrt`, `tanh`, `sin`, `cos`, `abs`.
pub(super) fn unary(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("x", true), ("flush_to_zero", false), ("rounding", false)], name, span)?;
    let flags = cx.math_flags(&a, 1, 2)?;
    let op = match name {
        "exp" => UnOp::Exp,
        "exp2" => UnOp::Exp2,
        "log" => UnOp::Log,
        "log2" => UnOp::Log2,
        "sqrt" => UnOp::Sqrt,
        "rsqrt" => UnOp::Rsqrt,
        "tanh" => UnOp::Tanh,
        "sin" => UnOp::Sin,
        "cos" => UnOp::Cos,
        _ => UnOp::Abs,
    };
    let x = a.get(0).cloned().unwrap_or(Val::Poison);
    match x {
        Val::Poison => Ok(Val::Poison),
        Val::Float(_) | Val::Int(_) => {
            let f = as_f64(&x);
            Ok(Val::Float(match op {
                UnOp::Exp => f.exp(),
                UnOp::Exp2 => f.exp2(),
                UnOp::Log => f.ln(),
                UnOp::Log2 => f.log2(),
                UnOp::Sqrt => f.sqrt(),
                UnOp::Rsqrt => 1.0 / f.sqrt(),
                UnOp::Tanh => f.tanh(),
                UnOp::Sin => f.sin(),
                UnOp::Cos => f.cos(),
                UnOp::Abs => f.abs(),
                UnOp::Neg => -f,
            }))
        }
        Val::Tile(id) | Val::Scalar(id) => {
            let ty = cx.func.ty(id).clone();
            if !ty.dtype().is_float() {
                return Err(Diagnostic::error(
                    "E0008",
                    format!("`{name}` needs a float operand, found {}", ty.dtype()),
                )
                .with_primary(a.span(0), "not a float")
                .with_note("cast it first: `.astype(f32)`"));
            }
            Ok(wrap(&x, cx.func.push(OpKind::Unary { op, value: id, flags }, ty, Some(span))))
        }
        other => {
            Err(Diagnostic::error("E0006", format!("`{name}` needs a tile or a float, found {}", kind_name(&other)))
                .with_primary(a.span(0), "here"))
        }
    }
}

/// `sigmoid(x)`, built from lowered elementwise ops.
pub(super) fn sigmoid(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    // 1 / (1 + exp(-x)), built from lowered elementwise ops.
    let a = Args::new(cx, args, &[("x", true)], name, span)?;
    let x = a.get(0).cloned().unwrap_or(Val::Poison);
    let neg = cx.unary(UnaryOp::Neg, x, span)?;
    let e = match neg {
        Val::Tile(id) | Val::Scalar(id) => {
            let ty = cx.func.ty(id).clone();
            if !ty.dtype().is_float() {
                return Err(Diagnostic::error("E0008", "`sigmoid` needs a float operand")
                    .with_primary(a.span(0), "not a float"));
            }
            wrap(
                &neg,
                cx.func.push(OpKind::Unary { op: UnOp::Exp, value: id, flags: MathFlags::default() }, ty, Some(span)),
            )
        }
        Val::Float(f) => Val::Float(f.exp()),
        Val::Int(i) => Val::Float((i as f64).exp()),
        other => return Ok(other),
    };
    let d = cx.binary(AB::Add, Val::Float(1.0), e, span, span, span)?;
    cx.binary(AB::Div, Val::Float(1.0), d, span, span, span)
}

/// `truediv(a, b, flush_to_zero=…, rounding=…)`.
pub(super) fn truediv(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a =
        Args::new(cx, args, &[("a", true), ("b", true), ("flush_to_zero", false), ("rounding", false)], name, span)?;
    let flags = cx.math_flags(&a, 2, 3)?;
    let (x, y) = (a.get(0).cloned().unwrap_or(Val::Poison), a.get(1).cloned().unwrap_or(Val::Poison));
    if matches!(x, Val::Poison) || matches!(y, Val::Poison) {
        return Ok(Val::Poison);
    }
    cx.arith(Emit::Bin(BinOp::Div, flags), x, y, a.span(0), a.span(1), span, AB::Div)
}

impl Cx<'_> {
    /// `flush_to_zero=` (bool) and `rounding=` ("approx" | "nearest") at argument slots.
    pub(crate) fn math_flags(&mut self, a: &Args, ftz: usize, rounding: usize) -> R<MathFlags> {
        let mut f = MathFlags { pinned: a.get(ftz).is_some() || a.get(rounding).is_some(), ..MathFlags::default() };
        match a.get(ftz) {
            None => {}
            Some(Val::Bool(b)) => f.ftz = *b,
            Some(_) => {
                return Err(Diagnostic::error("E0009", "flush_to_zero must be a constant bool")
                    .with_primary(a.span(ftz), "here"))
            }
        }
        match a.get(rounding) {
            None => {}
            Some(Val::Str(r)) if r == "approx" => f.approx = true,
            Some(Val::Str(r)) if r == "nearest" || r == "full" => {}
            Some(_) => {
                return Err(Diagnostic::error("E0014", "rounding must be \"approx\" or \"nearest\"")
                    .with_primary(a.span(rounding), "here"))
            }
        }
        Ok(f)
    }
}
