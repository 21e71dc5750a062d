//! Expressions: names, fields, indexing, operators (folded on constants), casts, and the
//! materialisation of constants as values of a dtype.

use super::*;

/// The `by_target` key of the products' tcgen05 family.
const FAMILY_KEY: &str = "tcgen05";

impl Cx<'_> {
    pub(crate) fn expr(&mut self, e: &Expr) -> R<Val> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Val::Int(*v)),
            ExprKind::Float(v) => Ok(Val::Float(*v)),
            ExprKind::Bool(v) => Ok(Val::Bool(*v)),
            ExprKind::Str(s) => Ok(Val::Str(s.clone())),
            ExprKind::Name(n) => match self.lookup(n) {
                Some(&Val::Extent { value, param, axis }) => Ok(self.extent(value, param, axis, e.span)),
                Some(v) => {
                    let v = v.clone();
                    if self.host {
                        return Ok(match v {
                            Val::Scalar(id) => match self.func.ty(id).dtype() {
                                d if d.is_int() && d != DType::I1 => {
                                    let p = self.param_index(n).ok_or_else(|| self.unknown_name(n, e.span))?;
                                    Val::Host(HostExpr::Arg { param: p })
                                }
                                _ => {
                                    return Err(Diagnostic::error(
                                        "E0006",
                                        "host expressions (`grid`, `require`) use integer parameters only",
                                    )
                                    .with_primary(e.span, "not an integer"))
                                }
                            },
                            v => v,
                        });
                    }
                    Ok(v)
                }
                None if builtins::is_builtin(n) => {
                    Err(Diagnostic::error("E0006", format!("builtin `{n}` must be called"))
                        .with_primary(e.span, format!("write `{n}(…)`")))
                }
                None => Err(self.unknown_name(n, e.span)),
            },
            ExprKind::Tuple(items) => Ok(Val::Tuple(items.iter().map(|i| self.expr(i)).collect::<R<_>>()?)),
            ExprKind::ByTarget(entries) => self.by_target(entries, e.span),
            ExprKind::Unary(op, x) => {
                let v = self.expr(x)?;
                self.unary(*op, v, e.span)
            }
            ExprKind::Binary(op, a, b) => {
                let va = self.expr(a)?;
                let vb = self.expr(b)?;
                self.binary(*op, va, vb, a.span, b.span, e.span)
            }
            ExprKind::Field(base, f) => {
                let v = self.expr(base)?;
                self.field(v, f, base.span)
            }
            ExprKind::Index(base, items) => {
                let v = self.expr(base)?;
                self.index(v, items, e.span)
            }
            ExprKind::Call(callee, args) => self.call(callee, args, e.span),
        }
    }

    pub(crate) fn param_index(&self, name: &str) -> Option<usize> {
        self.param_names.iter().position(|p| p == name)
    }

    /// `by_target { sm_121: …, tcgen05: …, default: … }`: the entry of the target the kernel is
    /// compiled for (its choices: an emulated target's), or `tcgen05`'s where the products may
    /// take that family — it wins over the target's entry, since the same target then runs
    /// differently shaped code (FMHA's order keeps its accumulators in Tensor Memory, which
    /// `mma.sync` would hold in registers) — else `default`.
    pub(crate) fn by_target(&mut self, entries: &[(ast::Ident, Expr)], span: Span) -> R<Val> {
        let mut default = None;
        let mut chosen = None;
        let mut family = None;
        for (i, (k, e)) in entries.iter().enumerate() {
            let key = k.name.as_str();
            let same = |other: &str| {
                other == key
                    || tilec_core::target::by_key(other)
                        .zip(tilec_core::target::by_key(key))
                        .is_some_and(|(a, b)| a.name == b.name)
            };
            if let Some((prev, _)) = entries[..i].iter().find(|(p, _)| same(&p.name)) {
                return Err(Diagnostic::error("E0013", format!("by_target names `{key}` twice"))
                    .with_primary(k.span, "second entry")
                    .with_secondary(prev.span, "first entry"));
            }
            if key == "default" {
                default = Some(e);
                continue;
            }
            if key == FAMILY_KEY {
                family = Some(e);
                continue;
            }
            let Some(arch) = tilec_core::target::by_key(key) else {
                return Err(Diagnostic::error("E0013", format!("unknown target `{key}` in by_target"))
                    .with_primary(k.span, "not a target tilec knows")
                    .with_note(
                        "keys: sm_90, sm_103, sm_121 (with or without the `a` suffix), `tcgen05` and `default`",
                    ));
            };
            if arch.name == self.target {
                chosen = Some(e);
            }
        }
        match family.filter(|_| self.tcgen05).or(chosen).or(default) {
            Some(e) => self.expr(e),
            None => {
                Err(Diagnostic::error("E0014", format!("by_target has no entry for {} and no `default`", self.target))
                    .with_primary(span, "add `default: …`"))
            }
        }
    }

    pub(crate) fn field(&mut self, v: Val, f: &ast::Ident, span: Span) -> R<Val> {
        match (&v, f.name.as_str()) {
            (Val::Poison, _) => Ok(Val::Poison),
            (Val::Tensor { value, param }, "shape") => Ok(Val::Shape { value: *value, param: *param }),
            (Val::Tensor { value, .. } | Val::Tile(value) | Val::Scalar(value), "dtype") => {
                Ok(Val::DType(self.func.ty(*value).dtype()))
            }
            (Val::Tile(value), "shape") => {
                Ok(Val::Tuple(self.func.ty(*value).shape().iter().map(|d| Val::Int(*d)).collect()))
            }
            (Val::Tensor { value, .. }, "ndim") => match self.func.ty(*value) {
                Type::Tensor { rank, .. } => Ok(Val::Int(*rank as i64)),
                _ => Ok(Val::Poison),
            },
            // Methods resolve in `call`; reaching here means one was not called.
            (_, "astype" | "reshape" | "item") => {
                Err(Diagnostic::error("E0006", format!("method `{}` must be called", f.name))
                    .with_primary(f.span, "add `(…)`"))
            }
            _ => Err(Diagnostic::error("E0006", format!("{} has no field `{}`", kind_name(&v), f.name))
                .with_primary(f.span, "unknown field")
                .with_secondary(span, "this value")
                .with_note("tensors have .shape, .dtype and .ndim; tiles have .shape and .dtype")),
        }
    }

    /// Extent `axis` of tensor parameter `param`: a host expression in the grid, an i32 in
    /// the kernel.
    fn extent(&mut self, value: ValueId, param: usize, axis: usize, span: Span) -> Val {
        if self.host {
            Val::Host(HostExpr::Dim { param, axis })
        } else {
            Val::Scalar(self.func.push(
                OpKind::Dim { tensor: value, axis: axis as u32 },
                Type::Scalar(DType::I32),
                Some(span),
            ))
        }
    }

    pub(crate) fn index(&mut self, v: Val, items: &[IndexItem], span: Span) -> R<Val> {
        let single = |items: &[IndexItem]| -> R<Expr> {
            match items {
                [IndexItem::Expr(e)] => Ok(e.clone()),
                _ => Err(Diagnostic::error("E0006", "this value takes one integer index").with_primary(span, "here")),
            }
        };
        match v {
            Val::Poison => Ok(Val::Poison),
            Val::Shape { value, param } => {
                let e = single(items)?;
                let rank = match self.func.ty(value) {
                    Type::Tensor { rank, .. } => *rank as i64,
                    _ => 0,
                };
                let axis = self.const_axis(&e, rank)?;
                Ok(self.extent(value, param, axis as usize, span))
            }
            Val::Tensor { value, .. } => {
                let (d, rank) = match self.func.ty(value) {
                    Type::Tensor { dtype, rank } => (*dtype, *rank),
                    _ => return Ok(Val::Poison),
                };
                if items.len() != rank {
                    return Err(Diagnostic::error(
                        "E0012",
                        format!("`t[…]` needs {rank} indices, got {}", items.len()),
                    )
                    .with_primary(span, "here"));
                }
                let mut idx = vec![];
                for it in items {
                    let IndexItem::Expr(e) = it else {
                        return Err(Diagnostic::error(
                            "E0006",
                            "a tensor is indexed element by element; load a tile for slices",
                        )
                        .with_primary(span, "use load(t, index=…, shape=…)"));
                    };
                    let v = self.expr(e)?;
                    match v {
                        Val::Poison => return Ok(Val::Poison),
                        Val::Int(_) => idx.push(self.materialize(v, DType::I32, e.span)?),
                        Val::Scalar(id) if self.func.ty(id).dtype() == DType::I32 => idx.push(id),
                        Val::Scalar(id) if self.func.ty(id).dtype().is_int() => {
                            let d = self.func.ty(id).dtype();
                            return Err(Diagnostic::error(
                                "E0008",
                                format!("tensor indices are i32 scalars, found {d}"),
                            )
                            .with_primary(e.span, format!("an {d} scalar"))
                            .with_note("cast it with .astype(i32) (extents and strides are below 2^31)"));
                        }
                        other => {
                            return Err(Diagnostic::error(
                                "E0008",
                                format!("tensor indices are i32 scalars, found {}", kind_name(&other)),
                            )
                            .with_primary(e.span, "here"))
                        }
                    }
                }
                if self.host {
                    return Err(Diagnostic::error("E0006", "tensor elements cannot be read in the grid expression")
                        .with_primary(span, "here"));
                }
                Ok(Val::Scalar(self.func.push(
                    OpKind::Element { tensor: value, index: idx },
                    Type::Scalar(d),
                    Some(span),
                )))
            }
            Val::Tuple(t) => {
                let e = single(items)?;
                let i = self.const_axis(&e, t.len() as i64)?;
                Ok(t[i as usize].clone())
            }
            Val::Tile(id) => {
                // `t[:, None]`: `:` keeps a dim, `None` inserts one of extent 1; `a:b` keeps a
                // constant range of a dim (a slice, through `tile.slice`).
                let ty = self.func.ty(id).clone();
                let mut shape = vec![];
                let mut dims = ty.shape().iter();
                // Per source dim: (offset, extent kept).
                let mut kept: Vec<(i64, i64)> = vec![];
                for it in items {
                    match it {
                        IndexItem::Full(_) | IndexItem::Range(..) => match dims.next() {
                            Some(d) => {
                                let (lo, n) = match it {
                                    IndexItem::Range(lo, hi, s) => {
                                        self.slice_range(lo.as_ref(), hi.as_ref(), *d, *s)?
                                    }
                                    _ => (0, *d),
                                };
                                kept.push((lo, n));
                                shape.push(n);
                            }
                            None => {
                                return Err(Diagnostic::error(
                                    "E0011",
                                    format!("too many `:` for a tile of rank {}", ty.shape().len()),
                                )
                                .with_primary(span, "here"))
                            }
                        },
                        IndexItem::NewAxis(_) => shape.push(1),
                        IndexItem::Expr(e) => {
                            return Err(Diagnostic::error("E0006", "tiles are indexed with `:` and `None` only")
                                .with_primary(e.span, "an element index")
                                .with_note("to pick elements use where(...) or a reduction"))
                        }
                    }
                }
                kept.extend(dims.clone().map(|&d| (0, d)));
                shape.extend(dims.copied());
                let mut id = id;
                if kept.iter().zip(ty.shape()).any(|(&(lo, n), &d)| lo != 0 || n != d) {
                    let offsets = kept.iter().map(|k| k.0).collect();
                    let sliced = kept.iter().map(|k| k.1).collect();
                    id = self.func.push(
                        OpKind::Slice { value: id, offsets },
                        Type::tile(sliced, ty.dtype()),
                        Some(span),
                    );
                }
                Ok(Val::Tile(self.func.push(OpKind::Reshape(id), Type::tile(shape, ty.dtype()), Some(span))))
            }
            other => Err(Diagnostic::error("E0006", format!("{} cannot be indexed", kind_name(&other)))
                .with_primary(span, "here")),
        }
    }

    /// The (offset, extent) of `lo:hi` over a dim of extent `d`: constant bounds (negative
    /// ones count from the end, as in Python), a non-empty range inside the dim, whose extent
    /// is a power of two (a tile's).
    fn slice_range(&mut self, lo: Option<&Expr>, hi: Option<&Expr>, d: i64, span: Span) -> R<(i64, i64)> {
        let mut bound = |e: Option<&Expr>, default: i64| -> R<i64> {
            let Some(e) = e else { return Ok(default) };
            let host = std::mem::replace(&mut self.host, false);
            let v = self.expr(e);
            self.host = host;
            match v? {
                Val::Int(v) => Ok(if v < 0 { v + d } else { v }),
                other => Err(Diagnostic::error(
                    "E0009",
                    format!("a slice bound must be a constant integer, found {}", kind_name(&other)),
                )
                .with_primary(e.span, "not constant")),
            }
        };
        let (a, b) = (bound(lo, 0)?, bound(hi, d)?);
        if !(0 <= a && a < b && b <= d) {
            return Err(Diagnostic::error("E0011", format!("the slice {a}:{b} is not a non-empty range of 0..{d}"))
                .with_primary(span, format!("a dim of extent {d}")));
        }
        let n = b - a;
        if n.count_ones() != 1 {
            return Err(Diagnostic::error(
                "E0010",
                format!("the slice {a}:{b} keeps {n} elements, not a power of two"),
            )
            .with_primary(span, "tile dims are powers of two")
            .with_note(format!(
                "keep {} or {} elements",
                1i64 << (63 - n.leading_zeros()),
                (n as u64).next_power_of_two()
            )));
        }
        Ok((a, n))
    }

    /// A constant axis in `-rank..rank`, normalised to `0..rank`.
    pub(crate) fn const_axis(&mut self, e: &Expr, rank: i64) -> R<i64> {
        let host = std::mem::replace(&mut self.host, false);
        let v = self.expr(e);
        self.host = host;
        match v? {
            Val::Int(a) if (-rank..rank).contains(&a) => Ok(if a < 0 { a + rank } else { a }),
            Val::Int(a) => Err(Diagnostic::error("E0011", format!("axis {a} is out of range for rank {rank}"))
                .with_primary(e.span, format!("valid axes: {}..{}", -rank, rank - 1))),
            other => Err(Diagnostic::error(
                "E0009",
                format!("an axis must be a constant integer, found {}", kind_name(&other)),
            )
            .with_primary(e.span, "not constant")),
        }
    }

    pub(crate) fn unary(&mut self, op: UnaryOp, v: Val, span: Span) -> R<Val> {
        match (op, v) {
            (_, Val::Poison) => Ok(Val::Poison),
            (UnaryOp::Neg, Val::Int(i)) => i
                .checked_neg()
                .map(Val::Int)
                .ok_or_else(|| Diagnostic::error("E0014", "integer overflow").with_primary(span, "here")),
            (UnaryOp::Neg, Val::Float(f)) => Ok(Val::Float(-f)),
            (UnaryOp::Not | UnaryOp::BitNot, Val::Bool(b)) => Ok(Val::Bool(!b)),
            (UnaryOp::BitNot, Val::Int(i)) => Ok(Val::Int(!i)),
            (UnaryOp::BitNot, v @ (Val::Tile(_) | Val::Scalar(_))) => {
                let d = self.func.ty(self.value_id(&v)).dtype();
                if d.is_float() {
                    return Err(Diagnostic::error("E0008", format!("`~` needs integers or bools, found {d}"))
                        .with_primary(span, "a float"));
                }
                let ones = if d == DType::I1 { Val::Bool(true) } else { Val::Int(-1) };
                self.binary(AB::BitXor, v, ones, span, span, span)
            }
            (UnaryOp::Neg, Val::Host(h)) => Ok(Val::Host(HostExpr::Sub(Box::new(HostExpr::Int(0)), Box::new(h)))),
            (UnaryOp::Not, Val::Host(h)) => Ok(Val::Host(HostExpr::Not(Box::new(h)))),
            (UnaryOp::Not, v @ (Val::Tile(_) | Val::Scalar(_))) => {
                self.binary(AB::BitXor, v, Val::Bool(true), span, span, span)
            }
            (UnaryOp::Neg, v @ (Val::Tile(_) | Val::Scalar(_))) => {
                let id = self.value_id(&v);
                let ty = self.func.ty(id).clone();
                if ty.dtype().is_float() {
                    Ok(wrap(
                        &v,
                        self.func.push(
                            OpKind::Unary { op: UnOp::Neg, value: id, flags: MathFlags::default() },
                            ty,
                            Some(span),
                        ),
                    ))
                } else {
                    self.binary(AB::Sub, Val::Int(0), v, span, span, span)
                }
            }
            (op, v) => Err(Diagnostic::error(
                "E0006",
                format!(
                    "`{}` does not apply to {}",
                    match op {
                        UnaryOp::Neg => "-",
                        UnaryOp::Not => "not",
                        UnaryOp::BitNot => "~",
                    },
                    kind_name(&v)
                ),
            )
            .with_primary(span, "here")),
        }
    }

    pub(crate) fn value_id(&self, v: &Val) -> ValueId {
        match v {
            Val::Tile(id) | Val::Scalar(id) => *id,
            _ => ValueId(u32::MAX),
        }
    }

    pub(crate) fn binary(&mut self, op: AB, a: Val, b: Val, sa: Span, sb: Span, span: Span) -> R<Val> {
        use Val::*;
        if matches!(a, Poison) || matches!(b, Poison) {
            return Ok(Poison);
        }
        // Compile-time folding.
        match (&a, &b) {
            (Int(x), Int(y)) => return fold_int(op, *x, *y, sb, span),
            (Int(_) | Float(_), Int(_) | Float(_)) => {
                let x = as_f64(&a);
                let y = as_f64(&b);
                return fold_float(op, x, y, span);
            }
            (Bool(x), Bool(y)) => {
                return match op {
                    AB::And => Ok(Bool(*x && *y)),
                    AB::Or => Ok(Bool(*x || *y)),
                    AB::Eq => Ok(Bool(x == y)),
                    AB::Ne => Ok(Bool(x != y)),
                    _ => Err(bad_operands(op, &a, &b, span)),
                }
            }
            (DType(x), DType(y)) if matches!(op, AB::Eq | AB::Ne) => return Ok(Bool((x == y) == (op == AB::Eq))),
            _ => {}
        }
        // Integer identities with a constant (`head // GROUP` at GROUP = 1, `i * STRIDE` at
        // STRIDE = 1, `base + OFFSET` at OFFSET = 0): the run-time operand itself, exactly,
        // without an op that only LLVM would remove (`//` lowers with Python's sign rules).
        if let (Tile(id) | Scalar(id), Int(k)) = (&a, &b) {
            let identity = match op {
                AB::FloorDiv | AB::Mul => *k == 1,
                AB::Add | AB::Sub => *k == 0,
                _ => false,
            };
            // Computing integers only: storage types and bools keep their diagnostics.
            let d = self.func.ty(*id).dtype();
            if identity && d.is_int() && !d.is_storage_only() && d != tilec_core::DType::I1 {
                return Ok(a);
            }
        }
        // `CONST and x` / `CONST or x` fold on the constant side (short circuit).
        if matches!(op, AB::And | AB::Or) {
            match (&a, &b) {
                (Bool(x), other) | (other, Bool(x)) => {
                    return Ok(match (op, *x) {
                        (AB::And, false) => Bool(false),
                        (AB::Or, true) => Bool(true),
                        _ => other.clone(),
                    });
                }
                _ => {}
            }
        }
        if self.host || matches!(a, Host(_)) || matches!(b, Host(_)) {
            let h = |v: &Val| -> Option<HostExpr> {
                match v {
                    Int(i) => Some(HostExpr::Int(*i)),
                    Host(h) => Some(h.clone()),
                    _ => None,
                }
            };
            let (Some(x), Some(y)) = (h(&a), h(&b)) else { return Err(bad_operands(op, &a, &b, span)) };
            let (x, y) = (Box::new(x), Box::new(y));
            return Ok(Host(match op {
                AB::Add => HostExpr::Add(x, y),
                AB::Sub => HostExpr::Sub(x, y),
                AB::Mul => HostExpr::Mul(x, y),
                AB::FloorDiv => HostExpr::FloorDiv(x, y),
                AB::Rem => HostExpr::Rem(x, y),
                // Comparisons and logic: launch requirements (`require N <= BLOCK_N`).
                AB::Eq => HostExpr::Cmp(CmpPred::Eq, x, y),
                AB::Ne => HostExpr::Cmp(CmpPred::Ne, x, y),
                AB::Lt => HostExpr::Cmp(CmpPred::Lt, x, y),
                AB::Le => HostExpr::Cmp(CmpPred::Le, x, y),
                AB::Gt => HostExpr::Cmp(CmpPred::Gt, x, y),
                AB::Ge => HostExpr::Cmp(CmpPred::Ge, x, y),
                AB::And => HostExpr::And(x, y),
                AB::Or => HostExpr::Or(x, y),
                _ => return Err(bad_operands(op, &a, &b, span)),
            }));
        }
        let emit = match op {
            AB::Add => Emit::Bin(BinOp::Add, MathFlags::default()),
            AB::Sub => Emit::Bin(BinOp::Sub, MathFlags::default()),
            AB::Mul => Emit::Bin(BinOp::Mul, MathFlags::default()),
            AB::Div | AB::FloorDiv => Emit::Bin(BinOp::Div, MathFlags::default()),
            AB::Rem => Emit::Bin(BinOp::Rem, MathFlags::default()),
            AB::Eq => Emit::Cmp(CmpPred::Eq),
            AB::Ne => Emit::Cmp(CmpPred::Ne),
            AB::Lt => Emit::Cmp(CmpPred::Lt),
            AB::Le => Emit::Cmp(CmpPred::Le),
            AB::Gt => Emit::Cmp(CmpPred::Gt),
            AB::Ge => Emit::Cmp(CmpPred::Ge),
            AB::And | AB::BitAnd => Emit::Logic(LogicOp::And),
            AB::Or | AB::BitOr => Emit::Logic(LogicOp::Or),
            AB::BitXor => Emit::Logic(LogicOp::Xor),
            AB::Shl => Emit::Bin(BinOp::Shl, MathFlags::default()),
            AB::Shr => Emit::Bin(BinOp::Shr, MathFlags::default()),
        };
        self.arith(emit, a, b, sa, sb, span, op)
    }

    /// A run-time arithmetic op with broadcasting and literal adoption.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn arith(&mut self, emit: Emit, a: Val, b: Val, sa: Span, sb: Span, span: Span, src: AB) -> R<Val> {
        // The dtype of the operation: from the run-time operand(s); literals adopt it.
        let dt = |cx: &Cx, v: &Val| match v {
            Val::Tile(id) | Val::Scalar(id) => Some(cx.func.ty(*id).dtype()),
            _ => None,
        };
        let (da, db) = (dt(self, &a), dt(self, &b));
        let d = match (da, db) {
            (Some(x), Some(y)) if x != y => {
                return Err(Diagnostic::error("E0008", format!("cannot combine {x} and {y} with `{}`", src.symbol()))
                    .with_primary(sa, format!("{x}"))
                    .with_secondary(sb, format!("{y}"))
                    .with_note(format!("insert a cast: `.astype({x})` or `.astype({y})`")))
            }
            (Some(x), _) | (None, Some(x)) => x,
            (None, None) => return Err(bad_operands(src, &a, &b, span)),
        };
        if d.is_storage_only() {
            return Err(storage_only(d, &format!("`{}`", src.symbol()), span));
        }
        if src == AB::Div && !d.is_float() {
            return Err(Diagnostic::error("E0008", "`/` is true division and needs floats")
                .with_primary(span, format!("both sides are {d}"))
                .with_note("use `//` for integer floor division"));
        }
        if src == AB::FloorDiv && d.is_float() {
            // Python's float `//`: floor(a / b), of the rounded quotient.
            let q = self.arith(Emit::Bin(BinOp::Div, MathFlags::default()), a, b, sa, sb, span, AB::Div)?;
            let id = self.value_id(&q);
            let ty = self.func.ty(id).clone();
            let op = OpKind::Unary { op: UnOp::Floor, value: id, flags: MathFlags::default() };
            return Ok(wrap(&q, self.func.push(op, ty, Some(span))));
        }
        if matches!(src, AB::And | AB::Or) && d != DType::I1 {
            return Err(Diagnostic::error("E0008", format!("`{}` needs bools (i1), found {d}", src.symbol()))
                .with_primary(span, "not a bool")
                .with_note("compare first, e.g. `x > 0`; for bits use `&`, `|`, `^`"));
        }
        if matches!(emit, Emit::Logic(_)) && d.is_float() {
            return Err(Diagnostic::error("E0008", format!("`{}` needs integers or bools, found {d}", src.symbol()))
                .with_primary(span, "a float")
                .with_note("bitwise operators apply to integer and bool values"));
        }
        if let Emit::Bin(op, _) = emit {
            if !op.accepts(d) {
                // What the operator takes, and the cast to it (bools may become either).
                let (what, cast) = match (op.accepts(DType::I32), op.accepts(DType::F32)) {
                    (true, false) => ("integers", "i32"),
                    (false, true) => ("floats", "f32"),
                    _ => ("numbers", "i32"),
                };
                let found = if d == DType::I1 { "bool (i1)".to_string() } else { d.to_string() };
                return Err(Diagnostic::error("E0008", format!("`{}` needs {what}, found {found}", src.symbol()))
                    .with_primary(span, format!("{found} operands"))
                    .with_note(format!("cast first: `.astype({cast})`")));
            }
        }
        let result_dtype = if matches!(emit, Emit::Cmp(_)) { DType::I1 } else { d };
        let make = move |x: ValueId, y: ValueId| match emit {
            Emit::Bin(b, flags) => OpKind::Binary { op: b, lhs: x, rhs: y, flags },
            Emit::Cmp(p) => OpKind::Cmp(p, x, y),
            Emit::Logic(l) => OpKind::Logic(l, x, y),
        };
        let x = self.materialize(a, d, sa)?;
        let y = self.materialize(b, d, sb)?;
        let (tx, ty) = (self.func.ty(x).clone(), self.func.ty(y).clone());
        match (&tx, &ty) {
            (Type::Scalar(_), Type::Scalar(_)) => {
                Ok(Val::Scalar(self.func.push(make(x, y), Type::Scalar(result_dtype), Some(span))))
            }
            _ => {
                let shape = broadcast_shape(tx.shape(), ty.shape()).ok_or_else(|| {
                    Diagnostic::error("E0007", format!("shapes {:?} and {:?} do not broadcast", tx.shape(), ty.shape()))
                        .with_primary(sa, format!("{:?}", tx.shape()))
                        .with_secondary(sb, format!("{:?}", ty.shape()))
                        .with_note("dims are compared from the right; each pair must be equal or one of them 1")
                })?;
                super::builtins::check_tile_size(&shape, span)?;
                let x = self.as_tile(x, &shape, span)?;
                let y = self.as_tile(y, &shape, span)?;
                Ok(Val::Tile(self.func.push(make(x, y), Type::tile(shape, result_dtype), Some(span))))
            }
        }
    }

    /// A constant or run-time value as an SSA value of dtype `d`.
    pub(crate) fn materialize(&mut self, v: Val, d: DType, span: Span) -> R<ValueId> {
        match v {
            Val::Tile(id) | Val::Scalar(id) => Ok(id),
            Val::Int(i) if d.is_float() => {
                Ok(self.func.push(OpKind::ConstFloat(i as f64), Type::Scalar(d), Some(span)))
            }
            Val::Int(i) => {
                if d != DType::I64 && d != DType::I1 && d.round(i as f64) != i as f64 {
                    return Err(Diagnostic::error("E0014", format!("{i} does not fit in {d}"))
                        .with_primary(span, format!("out of {d}'s range")));
                }
                Ok(self.func.push(OpKind::ConstInt(i), Type::Scalar(d), Some(span)))
            }
            Val::Float(f) if d.is_float() => Ok(self.func.push(OpKind::ConstFloat(f), Type::Scalar(d), Some(span))),
            Val::Bool(b) if d == DType::I1 => {
                Ok(self.func.push(OpKind::ConstInt(i64::from(b)), Type::Scalar(d), Some(span)))
            }
            other => Err(Diagnostic::error("E0008", format!("{} cannot be used as {d}", kind_name(&other)))
                .with_primary(span, "here")),
        }
    }

    /// Splat or broadcast a value to a tile of `shape` (no-op when it already is one).
    pub(crate) fn as_tile(&mut self, v: ValueId, shape: &[i64], span: Span) -> R<ValueId> {
        let ty = self.func.ty(v).clone();
        match &ty {
            Type::Scalar(d) => Ok(self.func.push(OpKind::Splat(v), Type::tile(shape.to_vec(), *d), Some(span))),
            Type::Tile { shape: s, dtype, .. } if s.as_slice() == shape => {
                let _ = dtype;
                Ok(v)
            }
            Type::Tile { shape: s, dtype, .. } => {
                let mut v = v;
                if s.len() < shape.len() {
                    // NumPy broadcasting: missing leading dims are 1.
                    let mut s2 = vec![1; shape.len() - s.len()];
                    s2.extend_from_slice(s);
                    v = self.func.push(OpKind::Reshape(v), Type::tile(s2.clone(), *dtype), Some(span));
                    if s2 == shape {
                        return Ok(v);
                    }
                }
                Ok(self.func.push(OpKind::Broadcast(v), Type::tile(shape.to_vec(), *dtype), Some(span)))
            }
            Type::Tensor { .. } | Type::Smem { .. } => {
                Err(Diagnostic::error("E0006", "a tensor is not a tile; load it first").with_primary(span, "here"))
            }
        }
    }

    pub(crate) fn cast(&mut self, v: Val, d: DType, span: Span) -> R<Val> {
        match v {
            Val::Poison => Ok(Val::Poison),
            Val::Int(i) => Ok(if d.is_float() { Val::Float(i as f64) } else { Val::Int(i) }),
            // Constants convert as values do (`convert`: truncation toward zero, saturating).
            Val::Float(f) => Ok(if d.is_float() {
                Val::Float(f)
            } else {
                Val::Int(tilec_core::dtype::convert(f, DType::F32, d) as i64)
            }),
            Val::Tile(id) | Val::Scalar(id) => {
                let ty = self.func.ty(id).clone();
                if ty.dtype() == d {
                    return Ok(v);
                }
                // A packed fp4 pair has no one value: its bits move as a byte.
                let from = ty.dtype();
                if (from == DType::F4E2M1X2 || d == DType::F4E2M1X2) && !matches!(from, DType::U8 | DType::F4E2M1X2)
                    || (from == DType::F4E2M1X2 && d != DType::U8)
                {
                    return Err(Diagnostic::error("E0008", format!("a cast from {from} to {d}"))
                        .with_primary(span, "here")
                        .with_note("f4e2m1x2 holds two fp4 values a byte (low nibble first): unpack_fp4(x, 0 or 1) reads them as f32, pack_fp4 makes them; `.astype(u8)` and back reinterpret its bits"));
                }
                if d == DType::I1 {
                    // A number is true when it is not 0 (NaN included).
                    let zero = if ty.dtype().is_float() { Val::Float(0.0) } else { Val::Int(0) };
                    return self.binary(AB::Ne, v, zero, span, span, span);
                }
                Ok(wrap(&v, self.func.push(OpKind::Cast(id), ty.with_dtype(d), Some(span))))
            }
            other => {
                Err(Diagnostic::error("E0006", format!("{} cannot be cast", kind_name(&other)))
                    .with_primary(span, "here"))
            }
        }
    }

    pub(crate) fn int_fn(&mut self, name: &str, x: Val, y: Val, sx: Span, sy: Span, span: Span) -> R<Val> {
        match (&x, &y) {
            (Val::Poison, _) | (_, Val::Poison) => Ok(Val::Poison),
            (Val::Int(a), Val::Int(b)) => match name {
                "cdiv" if *b == 0 => Err(Diagnostic::error("E0014", "cdiv by zero").with_primary(sy, "zero")),
                "cdiv" => Ok(Val::Int(-((-a).div_euclid(*b)))),
                "min" => Ok(Val::Int(*a.min(b))),
                _ => Ok(Val::Int(*a.max(b))),
            },
            (Val::Int(_) | Val::Host(_), Val::Int(_) | Val::Host(_)) => {
                let h = |v: &Val| match v {
                    Val::Int(i) => HostExpr::Int(*i),
                    Val::Host(h) => h.clone(),
                    _ => HostExpr::Int(0),
                };
                let (a, b) = (Box::new(h(&x)), Box::new(h(&y)));
                Ok(Val::Host(match name {
                    "cdiv" => HostExpr::CeilDiv(a, b),
                    "min" => HostExpr::Min(a, b),
                    _ => HostExpr::Max(a, b),
                }))
            }
            (Val::Float(a), Val::Float(b)) if name != "cdiv" => {
                Ok(Val::Float(if name == "min" { a.min(*b) } else { a.max(*b) }))
            }
            _ if name == "cdiv" => {
                // cdiv(a, b) = (a + b - 1) // b on run-time integers.
                let bm1 = self.binary(AB::Sub, y.clone(), Val::Int(1), sy, sy, span)?;
                let num = self.binary(AB::Add, x, bm1, sx, sy, span)?;
                self.binary(AB::FloorDiv, num, y, sx, sy, span)
            }
            _ => {
                let op = if name == "min" { BinOp::Min } else { BinOp::Max };
                self.arith(Emit::Bin(op, MathFlags::default()), x, y, sx, sy, span, AB::Add)
            }
        }
    }
}
