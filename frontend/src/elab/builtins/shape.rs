//! Shape builtins: `arange`, `full`/`zeros`, `reshape`, `permute`, and tile shapes.

use super::super::*;

/// `arange(n)`.
pub(super) fn arange(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("n", true), ("dtype", false)], name, span)?;
    let n = a.const_int(cx, 0)?;
    let shape = cx.tile_shape(Some(&Val::Int(n)), a.span(0))?;
    if let Some(v) = a.get(1) {
        if !matches!(v, Val::DType(DType::I32)) {
            return Err(Diagnostic::error("E0008", "arange produces i32")
                .with_primary(a.span(1), "use dtype=i32 or cast with .astype"));
        }
    }
    Ok(Val::Tile(cx.func.push(OpKind::Arange, Type::tile(shape, DType::I32), Some(span))))
}

/// `permute(x, perm)`.
pub(super) fn permute(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("x", true), ("perm", true)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let Some(Val::Tile(id)) = a.get(0) else {
        return Err(Diagnostic::error("E0006", "permute needs a tile").with_primary(a.span(0), "here"));
    };
    let ty = cx.func.ty(*id).clone();
    let perm = cx.permutation(a.get(1), ty.shape().len(), a.span(1))?;
    let shape: Vec<i64> = perm.iter().map(|&p| ty.shape()[p as usize]).collect();
    Ok(Val::Tile(cx.func.push(OpKind::Permute { value: *id, perm }, Type::tile(shape, ty.dtype()), Some(span))))
}

/// `concat((a, b, …), axis)`: tiles of one dtype and rank, equal but along `axis`, one after
/// the other; the result's extent along `axis` is a power of two, as every tile's.
pub(super) fn concat(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("tiles", true), ("axis", false)], name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let items = match a.get(0) {
        Some(Val::Tuple(items)) if !items.is_empty() => items.clone(),
        _ => {
            return Err(Diagnostic::error("E0006", "concat takes a tuple of tiles: `concat((a, b), axis=1)`")
                .with_primary(a.span(0), "here"))
        }
    };
    let mut ids = vec![];
    for it in &items {
        match it {
            Val::Tile(id) => ids.push(*id),
            other => {
                return Err(Diagnostic::error("E0006", format!("concat joins tiles, found {}", kind_name(other)))
                    .with_primary(a.span(0), "here"))
            }
        }
    }
    let first = cx.func.ty(ids[0]).clone();
    let rank = first.shape().len() as i64;
    let axis = match a.get(1) {
        None => 0,
        Some(_) => {
            let v = a.const_int(cx, 1)?;
            if !(-rank..rank).contains(&v) {
                return Err(Diagnostic::error("E0011", format!("axis {v} is out of range for rank {rank}"))
                    .with_primary(a.span(1), format!("valid axes: {}..{}", -rank, rank - 1)));
            }
            (if v < 0 { v + rank } else { v }) as usize
        }
    };
    let mut shape = first.shape().to_vec();
    shape[axis] = 0;
    for &id in &ids {
        let t = cx.func.ty(id).clone();
        let agrees = t.shape().len() == first.shape().len()
            && t.shape().iter().zip(first.shape()).enumerate().all(|(i, (x, y))| i == axis || x == y);
        if !agrees {
            return Err(Diagnostic::error(
                "E0007",
                format!("concat along axis {axis} of tiles {:?} and {:?}", first.shape(), t.shape()),
            )
            .with_primary(a.span(0), "the other dims must agree"));
        }
        if t.dtype() != first.dtype() {
            return Err(Diagnostic::error("E0008", format!("concat of {} and {} tiles", first.dtype(), t.dtype()))
                .with_primary(a.span(0), "cast one with .astype"));
        }
        shape[axis] += t.shape()[axis];
    }
    if shape[axis].count_ones() != 1 {
        return Err(Diagnostic::error(
            "E0010",
            format!("the concat is {} long along axis {axis}, not a power of two", shape[axis]),
        )
        .with_primary(span, "tile dims are powers of two"));
    }
    Ok(Val::Tile(cx.func.push(
        OpKind::Concat { values: ids, axis: axis as u32 },
        Type::tile(shape, first.dtype()),
        Some(span),
    )))
}

/// `reshape(x, shape)`.
pub(super) fn reshape(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let a = Args::new(cx, args, &[("x", true), ("shape", true)], name, span)?;
    let x = a.get(0).cloned().unwrap_or(Val::Poison);
    cx.reshape(x, a.get(1), a.span(1), span)
}

/// `full(shape, value, dtype)` and `zeros(shape, dtype)`.
pub(super) fn full(cx: &mut Cx, name: &str, args: &[ast::Arg], span: Span) -> R<Val> {
    let spec: &[(&str, bool)] = if name == "full" {
        &[("shape", true), ("value", true), ("dtype", true)]
    } else {
        &[("shape", true), ("dtype", true)]
    };
    let a = Args::new(cx, args, spec, name, span)?;
    if a.any_poison() {
        return Ok(Val::Poison);
    }
    let shape = cx.tile_shape(a.get(0), a.span(0))?;
    let dt = a.dtype(cx, if name == "full" { 2 } else { 1 })?;
    if dt.is_storage_only() {
        return Err(storage_only(dt, &format!("`{name}`"), span));
    }
    let (value, d) = if name == "full" {
        (a.get(1).cloned().unwrap_or(Val::Poison), a.dtype(cx, 2)?)
    } else {
        (Val::Int(0), a.dtype(cx, 1)?)
    };
    let value = match value {
        Val::Int(i) if !d.is_float() => Val::Int(i),
        Val::Int(i) => Val::Float(i as f64),
        // A whole float fills an integer tile with that integer (`full(s, 0.0, i32)`); any
        // other float needs an explicit choice of rounding.
        Val::Float(f) if !d.is_float() && f.fract() == 0.0 && f.abs() < 9.0e15 => Val::Int(f as i64),
        Val::Bool(b) if !d.is_float() && d != DType::I1 => Val::Int(i64::from(b)),
        v => v,
    };
    let s = cx.materialize(value, d, a.span(if name == "full" { 1 } else { 0 }))?;
    Ok(Val::Tile(cx.func.push(OpKind::Splat(s), Type::tile(shape, d), Some(span))))
}

impl Cx<'_> {
    pub(crate) fn tile_shape(&mut self, v: Option<&Val>, span: Span) -> R<Vec<i64>> {
        let items = match v {
            Some(Val::Tuple(t)) => t.clone(),
            Some(v @ Val::Int(_)) => vec![v.clone()],
            Some(other) => {
                return Err(Diagnostic::error(
                    "E0009",
                    format!("a tile shape is a tuple of constant integers, found {}", kind_name(other)),
                )
                .with_primary(span, "here"))
            }
            None => return Err(Diagnostic::error("E0004", "missing tile shape").with_primary(span, "here")),
        };
        if items.is_empty() {
            return Err(
                Diagnostic::error("E0009", "a tile shape needs at least one dimension").with_primary(span, "empty")
            );
        }
        let mut shape = vec![];
        for it in items {
            match it {
                Val::Int(d) if d > 0 && d & (d - 1) == 0 => shape.push(d),
                Val::Int(d) if d > 0 => {
                    return Err(Diagnostic::error("E0010", format!("tile dim {d} is not a power of two"))
                        .with_primary(span, "in this shape")
                        .with_note(pow2_suggestion(d)))
                }
                Val::Int(d) => {
                    return Err(Diagnostic::error("E0014", format!("tile dim {d} must be positive"))
                        .with_primary(span, "in this shape"))
                }
                other => {
                    return Err(Diagnostic::error(
                        "E0009",
                        format!("tile dims must be constant integers, found {}", kind_name(&other)),
                    )
                    .with_primary(span, "in this shape")
                    .with_note("use a `const` parameter or a literal"))
                }
            }
        }
        check_tile_size(&shape, span)?;
        Ok(shape)
    }

    /// A constant permutation of `0..rank`.
    pub(crate) fn permutation(&mut self, v: Option<&Val>, rank: usize, span: Span) -> R<Vec<u32>> {
        let bad = |what: String| {
            Diagnostic::error("E0011", format!("{what} is not a permutation of the {rank} axes"))
                .with_primary(span, format!("needs each axis 0..{} exactly once", rank.saturating_sub(1)))
        };
        let items = match v {
            Some(Val::Tuple(t)) => t.clone(),
            _ => {
                return Err(
                    Diagnostic::error("E0009", "a permutation is a tuple of constant axes").with_primary(span, "here")
                )
            }
        };
        let mut perm = vec![];
        for it in &items {
            match it {
                Val::Int(i) if (0..rank as i64).contains(i) => perm.push(*i as u32),
                other => return Err(bad(const_text(other))),
            }
        }
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        if sorted != (0..rank as u32).collect::<Vec<_>>() {
            let text = perm.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
            return Err(bad(format!("({text})")));
        }
        Ok(perm)
    }

    pub(crate) fn reshape(&mut self, x: Val, shape: Option<&Val>, sspan: Span, span: Span) -> R<Val> {
        let id = match x {
            Val::Poison => return Ok(Val::Poison),
            Val::Tile(id) => id,
            other => {
                return Err(Diagnostic::error("E0006", format!("reshape needs a tile, found {}", kind_name(&other)))
                    .with_primary(span, "here"))
            }
        };
        if matches!(shape, Some(Val::Poison)) {
            return Ok(Val::Poison);
        }
        let ty = self.func.ty(id).clone();
        let new = self.tile_shape(shape, sspan)?;
        let (a, b): (i64, i64) = (ty.shape().iter().product(), new.iter().product());
        if a != b {
            return Err(Diagnostic::error(
                "E0007",
                format!("cannot reshape {:?} ({a} elements) to {new:?} ({b} elements)", ty.shape()),
            )
            .with_primary(sspan, "element counts differ"));
        }
        Ok(Val::Tile(self.func.push(OpKind::Reshape(id), Type::tile(new, ty.dtype()), Some(span))))
    }

    /// `t.item()`: the element of a one-element tile as a run-time scalar.
    pub(crate) fn item(&mut self, x: Val, xspan: Span, span: Span) -> R<Val> {
        let id = match x {
            Val::Poison => return Ok(Val::Poison),
            Val::Tile(id) => id,
            other => {
                return Err(Diagnostic::error("E0006", format!("item needs a tile, found {}", kind_name(&other)))
                    .with_primary(xspan, "not a tile"))
            }
        };
        let ty = self.func.ty(id).clone();
        let n: i64 = ty.shape().iter().product();
        if n != 1 {
            return Err(Diagnostic::error(
                "E0007",
                format!("item needs a tile of one element, this one is {:?} ({n} elements)", ty.shape()),
            )
            .with_primary(xspan, "more than one element")
            .with_note("reduce it to one element first: `max(t, axis=0, keepdims=true).item()`"));
        }
        Ok(Val::Scalar(self.func.push(OpKind::Item(id), Type::Scalar(ty.dtype()), Some(span))))
    }
}

/// A tile of more elements than the tile IR holds (`MAX_TILE_ELEMENTS`, the verifier's one
/// limit) is refused here, with the span that made it, rather than later without one.
pub(crate) fn check_tile_size(shape: &[i64], span: Span) -> R<()> {
    let max = tilec_core::tir::verify::MAX_TILE_ELEMENTS;
    let total = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d));
    if total.is_none_or(|t| t > max) {
        return Err(Diagnostic::error("E0020", format!("tile {shape:?} has more than {max} (2^22) elements"))
            .with_primary(span, "too large")
            .with_note("split the work over more blocks (a grid dimension) or a loop"));
    }
    Ok(())
}
