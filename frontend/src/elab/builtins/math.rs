//! Math builtins: the math list with its per-op options, the exact functions (`floor`,
//! `ceil`, `erf`, `abs` of integers), `pow`, `fma`, `isnan`/`isinf`, `clamp`,
//! `maximum`/`minimum`, `sigmoid`, `truediv`.

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
    // floor, ceil, round, rint, trunc and erf have no approximate or flushing variant to ask
    // for.
    let exact = matches!(name, "floor" | "ceil" | "round" | "rint" | "trunc" | "erf");
    let integral = matches!(name, "floor" | "ceil" | "round" | "rint" | "trunc");
    let spec: &[(&str, bool)] =
        if exact { &[("x", true)] } else { &[("x", true), ("flush_to_zero", false), ("rounding", false)] };
    let a = Args::new(cx, args, spec, name, span)?;
    let flags = if exact { MathFlags::default() } else { cx.math_flags(&a, 1, 2)? };
    let op = match name {
        "floor" => UnOp::Floor,
        "ceil" => UnOp::Ceil,
        "round" | "rint" => UnOp::RoundEven,
        "trunc" => UnOp::Trunc,
        "erf" => UnOp::Erf,
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
                UnOp::Floor => f.floor(),
                UnOp::Ceil => f.ceil(),
                UnOp::RoundEven => f.round_ties_even(),
                UnOp::Trunc => f.trunc(),
                UnOp::Erf => libm::erf(f),
            }))
        }
        Val::Tile(id) | Val::Scalar(id) => {
            let ty = cx.func.ty(id).clone();
            if op == UnOp::Abs && ty.dtype().is_int() && ty.dtype() != DType::I1 && flags == MathFlags::default() {
                // |x| of an integer: x < 0 ? 0 - x : x (the most negative value stays itself).
                let neg = cx.binary(AB::Lt, x.clone(), Val::Int(0), a.span(0), span, span)?;
                let minus = cx.binary(AB::Sub, Val::Int(0), x.clone(), span, a.span(0), span)?;
                return cx.select(neg, minus, x, [span, span, a.span(0)], span);
            }
            if integral && ty.dtype().is_int() && ty.dtype() != DType::I1 {
                return Ok(x);
            }
            if ty.dtype().is_storage_only() {
                return Err(storage_only(ty.dtype(), &format!("`{name}`"), a.span(0)));
            }
            if ty.dtype() == DType::F64 && ((op != UnOp::Abs && !integral) || flags.pinned) {
                return Err(Diagnostic::error("E0008", format!("`{name}` of f64 values is not lowered"))
                    .with_primary(a.span(0), "f64")
                    .with_note("f64 has arithmetic, comparisons, casts, abs, floor, ceil, round, rint, trunc, fma and reductions; the math list is f32 (cast with `.astype(f32)`)"));
            }
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

/// `pow(x, y)` on floats (elementwise, broadcasting).
pub(super) fn pow(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("x", true), ("y", true)], name, span)?;
    let (x, y) = (a.get(0).cloned().unwrap_or(Val::Poison), a.get(1).cloned().unwrap_or(Val::Poison));
    match (&x, &y) {
        (Val::Poison, _) | (_, Val::Poison) => return Ok(Val::Poison),
        (Val::Int(_) | Val::Float(_), Val::Int(_) | Val::Float(_)) => {
            return Ok(Val::Float(as_f64(&x).powf(as_f64(&y))))
        }
        _ => {}
    }
    cx.float_operands(name, &[(&x, a.span(0)), (&y, a.span(1))])?;
    cx.arith(Emit::Bin(BinOp::Pow, MathFlags::default()), x, y, a.span(0), a.span(1), span, AB::Mul)
}

/// `fma(a, b, c)`: `a · b + c` rounded once, on floats (elementwise, broadcasting).
pub(super) fn fma(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("a", true), ("b", true), ("c", true)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let vals: Vec<Val> = (0..3).map(|i| a.get(i).cloned().unwrap_or(Val::Poison)).collect();
    if vals.iter().all(|v| matches!(v, Val::Int(_) | Val::Float(_))) {
        return Ok(Val::Float(as_f64(&vals[0]).mul_add(as_f64(&vals[1]), as_f64(&vals[2]))));
    }
    let d = cx.float_operands(name, &[(&vals[0], a.span(0)), (&vals[1], a.span(1)), (&vals[2], a.span(2))])?;
    let mut ids = vec![];
    for (i, v) in vals.into_iter().enumerate() {
        ids.push(cx.materialize(v, d, a.span(i))?);
    }
    let mut shape: Vec<i64> = vec![];
    let mut scalar = true;
    for (i, id) in ids.iter().enumerate() {
        if let Type::Tile { shape: s, .. } = cx.func.ty(*id) {
            scalar = false;
            shape = broadcast_shape(&shape, s).ok_or_else(|| {
                Diagnostic::error("E0007", format!("shapes {shape:?} and {s:?} do not broadcast"))
                    .with_primary(a.span(i), format!("{s:?}"))
            })?;
        }
    }
    if scalar {
        let op = OpKind::Fma { a: ids[0], b: ids[1], c: ids[2] };
        return Ok(Val::Scalar(cx.func.push(op, Type::Scalar(d), Some(span))));
    }
    let mut t = vec![];
    for id in ids {
        t.push(cx.as_tile(id, &shape, span)?);
    }
    Ok(Val::Tile(cx.func.push(OpKind::Fma { a: t[0], b: t[1], c: t[2] }, Type::tile(shape, d), Some(span))))
}

/// `isnan(x)` (`x != x`) and `isinf(x)` (`|x| == inf`) of floats: i1 results.
pub(super) fn isnan(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("x", true)], name, span)?;
    let x = a.get(0).cloned().unwrap_or(Val::Poison);
    match &x {
        Val::Poison => return Ok(Val::Poison),
        Val::Int(_) | Val::Float(_) => {
            let f = as_f64(&x);
            return Ok(Val::Bool(if name == "isnan" { f.is_nan() } else { f.is_infinite() }));
        }
        _ => {}
    }
    cx.float_operands(name, &[(&x, a.span(0))])?;
    if name == "isnan" {
        return cx.binary(AB::Ne, x.clone(), x, a.span(0), a.span(0), span);
    }
    let id = cx.value_id(&x);
    let ty = cx.func.ty(id).clone();
    let abs =
        wrap(&x, cx.func.push(OpKind::Unary { op: UnOp::Abs, value: id, flags: MathFlags::default() }, ty, Some(span)));
    cx.binary(AB::Eq, abs, Val::Float(f64::INFINITY), span, span, span)
}

/// `clamp(x, lo, hi)`: `minimum(maximum(x, lo), hi)` (NaN-propagating on floats).
pub(super) fn clamp(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("x", true), ("lo", true), ("hi", true)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let v = |i: usize| a.get(i).cloned().unwrap_or(Val::Poison);
    if let (Val::Int(x), Val::Int(lo), Val::Int(hi)) = (v(0), v(1), v(2)) {
        return Ok(Val::Int(x.max(lo).min(hi)));
    }
    if [v(0), v(1), v(2)].iter().all(|x| matches!(x, Val::Int(_) | Val::Float(_))) {
        return Ok(Val::Float(as_f64(&v(0)).max(as_f64(&v(1))).min(as_f64(&v(2)))));
    }
    let lo = cx.arith(Emit::Bin(BinOp::Max, MathFlags::default()), v(0), v(1), a.span(0), a.span(1), span, AB::Add)?;
    cx.arith(Emit::Bin(BinOp::Min, MathFlags::default()), lo, v(2), span, a.span(2), span, AB::Add)
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
            // Its exp is the f32 math list's (an f64 one reached LLVM as an fpext to float).
            if ty.dtype() == DType::F64 {
                return Err(Diagnostic::error("E0008", "`sigmoid` of f64 values is not lowered")
                    .with_primary(a.span(0), "f64")
                    .with_note("the math list is f32: `sigmoid(x.astype(f32))`"));
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
    let f64_operand =
        [&x, &y].iter().any(|v| matches!(v, Val::Tile(id) | Val::Scalar(id) if cx.func.ty(*id).dtype() == DType::F64));
    if f64_operand && !flags.is_default() {
        return Err(Diagnostic::error("E0008", "`truediv` options on f64 values are not lowered")
            .with_primary(span, "f64")
            .with_note("f64 division is `/` (correctly rounded)"));
    }
    cx.arith(Emit::Bin(BinOp::Div, flags), x, y, a.span(0), a.span(1), span, AB::Div)
}

impl Cx<'_> {
    /// The float dtype of the run-time operands of `name` (constants adopt it); an error
    /// naming the first integer operand otherwise.
    pub(crate) fn float_operands(&mut self, name: &str, vals: &[(&Val, Span)]) -> R<DType> {
        let mut d = None;
        for (v, s) in vals {
            if let Val::Tile(id) | Val::Scalar(id) = v {
                let t = self.func.ty(*id).dtype();
                if t.is_storage_only() {
                    return Err(storage_only(t, &format!("`{name}`"), *s));
                }
                if t == DType::F64 && name != "fma" {
                    return Err(Diagnostic::error("E0008", format!("`{name}` of f64 values is not lowered"))
                        .with_primary(*s, "f64")
                        .with_note("cast with `.astype(f32)`"));
                }
                if !t.is_float() {
                    return Err(Diagnostic::error("E0008", format!("`{name}` needs float operands, found {t}"))
                        .with_primary(*s, "not a float")
                        .with_note("cast it first: `.astype(f32)`"));
                }
                if let Some(p) = d {
                    if p != t {
                        return Err(Diagnostic::error("E0008", format!("`{name}` cannot combine {p} and {t}"))
                            .with_primary(*s, format!("{t}"))
                            .with_note(format!("insert a cast: `.astype({p})`")));
                    }
                }
                d = Some(t);
            } else if !matches!(v, Val::Int(_) | Val::Float(_)) {
                return Err(Diagnostic::error(
                    "E0006",
                    format!("`{name}` needs tiles or numbers, found {}", kind_name(v)),
                )
                .with_primary(*s, "here"));
            }
        }
        d.ok_or_else(|| Diagnostic::error("E0006", format!("`{name}` needs a run-time operand")))
    }

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
