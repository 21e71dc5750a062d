//! Reductions: `max`, `min`, `sum`, `argmax`, `argmin` along an axis; scans: `cumsum`,
//! `cumprod`, `scan(x, axis, op=)`.

use super::super::*;

/// `max`/`min`/`sum(x, axis, keepdims)`; `max(a, b)`/`min(a, b)` of two positional values are the integer functions.
pub(super) fn reduce(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    if args.len() == 2 && args.iter().all(|a| a.name.is_none()) && name != "sum" {
        return super::misc::cdiv(cx, name, args, span);
    }
    let a = Args::new(cx, args, &[("x", true), ("axis", true), ("keepdims", false)], name, span)?;
    let kind = match name {
        "max" => ReduceKind::Max,
        "min" => ReduceKind::Min,
        _ => ReduceKind::Sum,
    };
    cx.reduce(kind, &a, span)
}

/// `argmax`/`argmin(x, axis, keepdims)`.
pub(super) fn argreduce(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("x", true), ("axis", true), ("keepdims", false)], name, span)?;
    cx.reduce(if name == "argmax" { ReduceKind::Argmax } else { ReduceKind::Argmin }, &a, span)
}

/// `cumsum(x, axis=0)`, `cumprod(x, axis=0)`, `scan(x, axis=0, op="add"|"mul"|"max"|"min")`:
/// inclusive scans along an axis.
pub(super) fn scan(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let spec: &[(&str, bool)] =
        if name == "scan" { &[("x", true), ("axis", false), ("op", true)] } else { &[("x", true), ("axis", false)] };
    let a = Args::new(cx, args, spec, name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let op = match (name, a.get(2)) {
        ("cumsum", _) => BinOp::Add,
        ("cumprod", _) => BinOp::Mul,
        (_, Some(Val::Str(s))) if BinOp::parse_scan(s).is_some() => BinOp::parse_scan(s).unwrap_or(BinOp::Add),
        (_, other) => {
            let names: Vec<&str> = BinOp::scan_names().collect();
            return Err(Diagnostic::error(
                "E0009",
                format!(
                    "a scan's `op` is one of \"{}\", found {}",
                    names.join("\", \""),
                    other.map(const_text).unwrap_or_else(|| "nothing".into())
                ),
            )
            .with_primary(a.span(2), "here"));
        }
    };
    let id = a.tile(0, name)?;
    let ty = cx.func.ty(id).clone();
    if ty.dtype().is_storage_only() {
        return Err(storage_only(ty.dtype(), &format!("`{name}`"), a.span(0)));
    }
    if ty.dtype() == DType::I1 {
        return Err(Diagnostic::error("E0008", format!("`{name}` of a bool tile"))
            .with_primary(a.span(0), "cast it first: `.astype(i32)`"));
    }
    let rank = ty.shape().len() as i64;
    let axis = match a.get(1) {
        None => 0,
        Some(Val::Int(ax)) if (-rank..rank).contains(ax) => {
            if *ax < 0 {
                ax + rank
            } else {
                *ax
            }
        }
        Some(_) => {
            return Err(Diagnostic::error("E0011", format!("a scan axis is a constant in {}..{}", -rank, rank))
                .with_primary(a.span(1), "here"))
        }
    };
    Ok(Val::Tile(cx.func.push(OpKind::Scan { op, axis: axis as u32, value: id }, ty, Some(span))))
}

impl Cx<'_> {
    pub(crate) fn reduce(&mut self, kind: ReduceKind, a: &Args, span: Span) -> R<Val> {
        if a.any_poison() {
            return Ok(Val::Poison);
        }
        let id = match a.get(0) {
            Some(Val::Tile(id)) => *id,
            Some(other) => {
                return Err(Diagnostic::error(
                    "E0006",
                    format!("`{}` over an axis needs a tile, found {}", kind.name(), kind_name(other)),
                )
                .with_primary(a.span(0), "here")
                .with_note("for two scalars use min(a, b) / max(a, b) with two arguments"))
            }
            None => return Err(Diagnostic::error("E0004", "missing operand").with_primary(span, "here")),
        };
        let ty = self.func.ty(id).clone();
        if ty.dtype().is_storage_only() {
            return Err(storage_only(ty.dtype(), &format!("`{}`", kind.name()), a.span(0)));
        }
        let rank = ty.shape().len() as i64;
        let axis = match a.get(1) {
            Some(Val::Int(ax)) if (-rank..rank).contains(ax) => {
                if *ax < 0 {
                    ax + rank
                } else {
                    *ax
                }
            }
            Some(Val::Int(ax)) => {
                return Err(Diagnostic::error("E0011", format!("axis {ax} is out of range for a tile of rank {rank}"))
                    .with_primary(a.span(1), "here"))
            }
            _ => {
                return Err(Diagnostic::error("E0009", "the reduction axis must be a constant integer")
                    .with_primary(a.span(1), "here"))
            }
        };
        let keep = match a.get(2) {
            None => false,
            Some(Val::Bool(b)) => *b,
            Some(_) => {
                return Err(
                    Diagnostic::error("E0009", "keepdims must be a constant bool").with_primary(a.span(2), "here")
                )
            }
        };
        let mut shape = ty.shape().to_vec();
        shape[axis as usize] = 1;
        let rd = if matches!(kind, ReduceKind::Argmax | ReduceKind::Argmin) { DType::I32 } else { ty.dtype() };
        // Over an axis of one element max, min and sum are that element: no reduction (whose
        // result would take a sliced layout of a shape that has its own).
        let identity =
            ty.shape()[axis as usize] == 1 && matches!(kind, ReduceKind::Max | ReduceKind::Min | ReduceKind::Sum);
        let r = if identity {
            id
        } else {
            self.func.push(
                OpKind::Reduce { kind, axis: axis as u32, value: id },
                Type::tile(shape.clone(), rd),
                Some(span),
            )
        };
        if keep {
            return Ok(Val::Tile(r));
        }
        shape.remove(axis as usize);
        if shape.is_empty() {
            shape.push(1);
        }
        Ok(Val::Tile(self.func.push(OpKind::Reshape(r), Type::tile(shape, rd), Some(span))))
    }
}

/// `sort(x, axis=-1, descending=false)` → (values, indices); `argsort(x, axis=-1,
/// descending=false)` → indices; `topk(x, k, axis=-1, largest=true)` → (values, indices) of
/// the k first. Stable: equal elements keep the lower index first (torch's order); NaN sorts
/// above +inf. Indices are i32 positions along the axis.
pub(super) fn sort(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let spec: &[(&str, bool)] = match name {
        "topk" => &[("x", true), ("k", true), ("axis", false), ("largest", false)],
        _ => &[("x", true), ("axis", false), ("descending", false)],
    };
    let a = Args::new(cx, args, spec, name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let id = a.tile(0, name)?;
    let ty = cx.func.ty(id).clone();
    if !matches!(ty.dtype(), DType::F32 | DType::F16 | DType::BF16 | DType::I32) {
        return Err(Diagnostic::error("E0008", format!("`{name}` of a {} tile", ty.dtype()))
            .with_primary(a.span(0), "f32, f16, bf16 or i32 tiles sort")
            .with_note("cast it first, e.g. `.astype(f32)` or `.astype(i32)`"));
    }
    let (ai, di) = if name == "topk" { (2, 3) } else { (1, 2) };
    let rank = ty.shape().len() as i64;
    let axis = match a.get(ai) {
        None => rank - 1,
        Some(Val::Int(ax)) if (-rank..rank).contains(ax) => (ax + rank) % rank,
        Some(_) => {
            return Err(Diagnostic::error("E0011", format!("`{name}`'s axis is a constant in {}..{}", -rank, rank))
                .with_primary(a.span(ai), "here"))
        }
    };
    let descending = match a.get(di) {
        None => name == "topk",
        Some(Val::Bool(b)) => *b,
        Some(other) => {
            return Err(Diagnostic::error(
                "E0009",
                format!("`{}` is a constant bool, found {}", spec[di].0, kind_name(other)),
            )
            .with_primary(a.span(di), "here"))
        }
    };
    let n = ty.shape()[axis as usize];
    let k = if name == "topk" {
        match a.get(1) {
            Some(Val::Int(k)) if (1..=n).contains(k) && (*k as u64).is_power_of_two() => *k,
            Some(Val::Int(k)) => {
                let d = Diagnostic::error(
                    "E0011",
                    format!("`topk`'s k is {k}: a power of two from 1 to the axis' extent {n} (the result is a tile)"),
                )
                .with_primary(a.span(1), "here");
                // Only a k in range has a next power of two to suggest (a negative k as u64
                // would overflow it).
                return Err(if (1..=n).contains(k) {
                    d.with_note(format!(
                        "take the next power of two, topk(…, {}, …), and use its first {k} (the store's extent, or a mask)",
                        (*k as u64).next_power_of_two().min(n as u64)
                    ))
                } else {
                    d
                });
            }
            _ => {
                return Err(
                    Diagnostic::error("E0009", "`topk`'s k must be a constant integer").with_primary(a.span(1), "here")
                )
            }
        }
    } else {
        n
    };
    let mut shape = ty.shape().to_vec();
    shape[axis as usize] = k;
    let mut op = |indices: bool| {
        let dtype = if indices { DType::I32 } else { ty.dtype() };
        let kind = OpKind::Sort { value: id, axis: axis as u32, descending, k, indices };
        Val::Tile(cx.func.push(kind, Type::tile(shape.clone(), dtype), Some(span)))
    };
    Ok(match name {
        "argsort" => op(true),
        // The values first, then the positions: the lowering sorts once for both.
        _ => {
            let v = op(false);
            Val::Tuple(vec![v, op(true)])
        }
    })
}
