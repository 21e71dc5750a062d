//! Builtins of the grid, constants and debugging: `bid`, `num_blocks`, `cdiv`, `next_pow2`,
//! `static_assert`, `where`, `rand`, `print`.

use super::super::*;

/// `bid(axis)`: the block index along a grid axis.
pub(super) fn bid(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("axis", true)], name, span)?;
    let axis = a.const_int(cx, 0)?;
    if !(0..3).contains(&axis) {
        return Err(Diagnostic::error("E0011", format!("grid axis {axis} is not 0, 1 or 2")).with_primary(span, "here"));
    }
    if cx.host {
        return Err(
            Diagnostic::error("E0006", "`bid` is not available in the grid expression").with_primary(span, "here")
        );
    }
    Ok(Val::Scalar(cx.func.push(OpKind::Bid { axis: axis as u32 }, Type::Scalar(DType::I32), Some(span))))
}

/// `num_blocks(axis)`: the grid extent along an axis.
pub(super) fn num_blocks(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("axis", true)], name, span)?;
    let axis = a.const_int(cx, 0)?;
    if !(0..3).contains(&axis) {
        return Err(Diagnostic::error("E0011", format!("grid axis {axis} is not 0, 1 or 2")).with_primary(span, "here"));
    }
    Ok(Val::Scalar(cx.func.push(OpKind::NumBlocks { axis: axis as u32 }, Type::Scalar(DType::I32), Some(span))))
}

/// `cdiv(a, b)`, and `min(a, b)`/`max(a, b)` of two values: integer functions (folded on
/// constants, host expressions in the grid).
pub(super) fn cdiv(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let [a, b] = args else {
        return Err(Diagnostic::error("E0004", format!("`{name}(a, b)` takes two arguments, {} given", args.len()))
            .with_primary(span, "here"));
    };
    if let Some(n) = a.name.as_ref().or(b.name.as_ref()) {
        return Err(Diagnostic::error("E0005", format!("`{name}(a, b)` takes no named argument `{}`", n.name))
            .with_primary(n.span, "here"));
    }
    let x = cx.expr(&a.value)?;
    let y = cx.expr(&b.value)?;
    cx.int_fn(name, x, y, a.value.span, b.value.span, span)
}

/// `next_pow2(n)` of a constant.
pub(super) fn next_pow2(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("n", true)], name, span)?;
    let n = a.const_int(cx, 0)?;
    if !(1..=(1 << 40)).contains(&n) {
        return Err(Diagnostic::error("E0014", format!("next_pow2({n}) is out of range")).with_primary(span, "here"));
    }
    Ok(Val::Int((n as u64).next_power_of_two() as i64))
}

/// `text` cut to its first `max` bytes (on a character boundary) with the rest counted: a
/// diagnostic never echoes megabytes of the source.
fn shortened(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let cut = (0..=max).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    format!("{}… ({} more bytes)", &text[..cut], text.len() - cut)
}

/// `static_assert(cond, "message")`.
pub(super) fn static_assert(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("cond", true), ("msg", false)], name, span)?;
    let msg = match a.get(1) {
        Some(Val::Str(s)) => shortened(s, 1000),
        _ => "static assertion failed".to_string(),
    };
    match a.get(0) {
        Some(Val::Bool(true)) | Some(Val::Poison) => Ok(Val::Tuple(vec![])),
        Some(Val::Bool(false)) => {
            Err(Diagnostic::error("E0018", msg).with_primary(args[0].value.span, "evaluated to false"))
        }
        _ => Err(Diagnostic::error("E0009", "static_assert needs a constant bool")
            .with_primary(args[0].value.span, "not constant")),
    }
}

/// `range` outside a `for` header.
pub(super) fn range(_cx: &mut Cx, _name: &str, _args: &[ast::Arg], span: Span) -> R<Val> {
    Err(Diagnostic::error("E0006", "`range` is only valid as the iterable of a `for` loop").with_primary(span, "here"))
}

/// `where(cond, a, b)`.
pub(super) fn where_(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("cond", true), ("a", true), ("b", true)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    cx.select(
        a.get(0).cloned().unwrap_or(Val::Poison),
        a.get(1).cloned().unwrap_or(Val::Poison),
        a.get(2).cloned().unwrap_or(Val::Poison),
        [a.span(0), a.span(1), a.span(2)],
        span,
    )
}

/// `rand(seed, offsets)`: Philox uniforms.
pub(super) fn rand(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("seed", true), ("offsets", true)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let seed = match a.get(0) {
        Some(v @ Val::Int(_)) => cx.materialize(v.clone(), DType::I32, a.span(0))?,
        Some(Val::Scalar(id)) if cx.func.ty(*id).dtype().is_int() => *id,
        _ => return Err(Diagnostic::error("E0006", "rand's seed is an integer scalar").with_primary(a.span(0), "here")),
    };
    let Some(Val::Tile(off)) = a.get(1) else {
        return Err(Diagnostic::error("E0006", "rand's offsets are an i32 tile (e.g. from arange)")
            .with_primary(a.span(1), "here"));
    };
    let ot = cx.func.ty(*off).clone();
    if ot.dtype() != DType::I32 {
        return Err(Diagnostic::error("E0008", format!("rand's offsets must be i32, found {}", ot.dtype()))
            .with_primary(a.span(1), "here"));
    }
    Ok(Val::Tile(cx.func.push(
        OpKind::Rand { seed, offsets: *off },
        Type::tile(ot.shape().to_vec(), DType::F32),
        Some(span),
    )))
}

/// `print("prefix", values…)`.
pub(super) fn print(cx: &mut Cx, _name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let mut prefix = String::new();
    let mut values = vec![];
    for (i, arg) in args.iter().enumerate() {
        if let Some(n) = &arg.name {
            return Err(Diagnostic::error("E0005", format!("print takes no named argument `{}`", n.name))
                .with_primary(n.span, "here"));
        }
        match cx.expr(&arg.value)? {
            Val::Str(s) if i == 0 => prefix = s,
            Val::Tile(id) | Val::Scalar(id) => values.push(id),
            Val::Poison => return Ok(Val::Tuple(vec![])),
            v @ (Val::Int(_) | Val::Float(_)) => {
                let d = if matches!(v, Val::Int(_)) { DType::I32 } else { DType::F32 };
                values.push(cx.materialize(v, d, arg.value.span)?)
            }
            other => {
                return Err(Diagnostic::error("E0006", format!("print cannot show {}", kind_name(&other)))
                    .with_primary(arg.value.span, "here"))
            }
        }
    }
    cx.func.push_void(OpKind::Print { prefix, values }, Some(span));
    Ok(Val::Tuple(vec![]))
}

impl Cx<'_> {
    pub(crate) fn select(&mut self, c: Val, a: Val, b: Val, spans: [Span; 3], span: Span) -> R<Val> {
        for v in [&a, &b] {
            if let Val::Tile(id) | Val::Scalar(id) = v {
                let d = self.func.ty(*id).dtype();
                if d.is_storage_only() {
                    return Err(storage_only(d, "`where`", span));
                }
            }
        }
        let cid = match &c {
            Val::Tile(id) | Val::Scalar(id) if self.func.ty(*id).dtype() == DType::I1 => *id,
            Val::Bool(true) => return Ok(a),
            Val::Bool(false) => return Ok(b),
            other => {
                let what = match other {
                    Val::Tile(id) | Val::Scalar(id) => format!("{} of {}", kind_name(other), self.func.ty(*id).dtype()),
                    _ => kind_name(other).to_string(),
                };
                return Err(Diagnostic::error("E0008", format!("where's condition must be a bool tile, found {what}"))
                    .with_primary(spans[0], "here")
                    .with_note("build it with a comparison, e.g. `offs_m >= offs_n`"));
            }
        };
        let dt = |cx: &Cx, v: &Val| match v {
            Val::Tile(id) | Val::Scalar(id) => Some(cx.func.ty(*id).dtype()),
            _ => None,
        };
        let d = match (dt(self, &a), dt(self, &b)) {
            (Some(x), Some(y)) if x != y => {
                return Err(Diagnostic::error("E0008", format!("where's branches are {x} and {y}"))
                    .with_primary(spans[1], format!("{x}"))
                    .with_secondary(spans[2], format!("{y}"))
                    .with_note("cast one of them with .astype"))
            }
            (Some(x), _) | (None, Some(x)) => x,
            (None, None) => {
                if matches!(a, Val::Float(_)) || matches!(b, Val::Float(_)) {
                    DType::F32
                } else {
                    DType::I32
                }
            }
        };
        let x = self.materialize(a, d, spans[1])?;
        let y = self.materialize(b, d, spans[2])?;
        let shapes =
            [self.func.ty(cid).shape().to_vec(), self.func.ty(x).shape().to_vec(), self.func.ty(y).shape().to_vec()];
        let shape =
            broadcast_shape(&shapes[0], &shapes[1]).and_then(|s| broadcast_shape(&s, &shapes[2])).ok_or_else(|| {
                Diagnostic::error(
                    "E0007",
                    format!("where's operands {:?}, {:?}, {:?} do not broadcast", shapes[0], shapes[1], shapes[2]),
                )
                .with_primary(span, "here")
            })?;
        if shape.is_empty() {
            return Ok(Val::Scalar(self.func.push(
                OpKind::Select { cond: cid, a: x, b: y },
                Type::Scalar(d),
                Some(span),
            )));
        }
        let cid = self.as_tile(cid, &shape, spans[0])?;
        let x = self.as_tile(x, &shape, spans[1])?;
        let y = self.as_tile(y, &shape, spans[2])?;
        Ok(Val::Tile(self.func.push(OpKind::Select { cond: cid, a: x, b: y }, Type::tile(shape, d), Some(span))))
    }
}

#[cfg(test)]
mod tests {
    /// A 5 MB static_assert message is not echoed whole (issue 26, item 8).
    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        assert_eq!(super::shortened("short", 1000), "short");
        let long = "é".repeat(3_000_000);
        let s = super::shortened(&long, 1000);
        assert!(s.len() < 1100 && s.ends_with("more bytes)"), "{}", s.len());
        assert!(s.contains("(5999000 more bytes)"), "{s}");
    }
}
