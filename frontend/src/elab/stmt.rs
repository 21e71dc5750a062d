//! Statements: `let`, assignments, run-time `for` loops with loop-carried values, compile-time
//! and run-time `if`.

use super::*;

impl Cx<'_> {
    pub(crate) fn block(&mut self, b: &ast::Block) {
        self.scopes.push(BTreeMap::new());
        for s in &b.stmts {
            self.stmt(s);
        }
        self.scopes.pop();
    }

    pub(crate) fn stmt(&mut self, s: &ast::Stmt) {
        let r = self.stmt_inner(s);
        if let Err(d) = r {
            self.diags.push(d);
            // Poison what the statement would have bound, so its users stay quiet.
            let names: Vec<&ast::Ident> = match &s.kind {
                StmtKind::Let(ns, _) => ns.iter().collect(),
                StmtKind::Assign(n, _, _) => vec![n],
                _ => vec![],
            };
            for n in names {
                if !self.assign(&n.name, Val::Poison) {
                    self.bind(&n.name, Val::Poison);
                }
            }
        }
    }

    pub(crate) fn stmt_inner(&mut self, s: &ast::Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Let(names, e) => {
                let v = self.expr(e)?;
                if let Some(n) = names.iter().find(|n| builtins::is_builtin(&n.name)) {
                    return Err(Diagnostic::error("E0003", format!("`{}` is a builtin and cannot be rebound", n.name))
                        .with_primary(n.span, "pick another name"));
                }
                let values = match (names.as_slice(), v) {
                    ([_], v) => vec![v],
                    (_, Val::Tuple(items)) if items.len() == names.len() => items,
                    (_, Val::Poison) => vec![Val::Poison; names.len()],
                    (_, other) => {
                        let what = match &other {
                            Val::Tuple(items) => format!("a tuple of {}", items.len()),
                            o => kind_name(o).to_string(),
                        };
                        return Err(Diagnostic::error(
                            "E0006",
                            format!("`let` binds {} names, and the value is {what}", names.len()),
                        )
                        .with_primary(e.span, "this value"));
                    }
                };
                for (n, v) in names.iter().zip(values) {
                    self.bind(&n.name, v);
                }
                Ok(())
            }
            StmtKind::Assign(n, op, e) => {
                if self.lookup(&n.name).is_none() {
                    return Err(self.unknown_name(&n.name, n.span).with_note("declare it first with `let`"));
                }
                let v = match op {
                    AssignOp::Set => self.expr(e)?,
                    _ => {
                        let b = match op {
                            AssignOp::Add => AB::Add,
                            AssignOp::Sub => AB::Sub,
                            AssignOp::Mul => AB::Mul,
                            _ => AB::Div,
                        };
                        let cur = Expr::new(ExprKind::Name(n.name.clone()), n.span);
                        let whole = Expr::new(ExprKind::Binary(b, Box::new(cur), Box::new(e.clone())), s.span);
                        self.expr(&whole)?
                    }
                };
                self.assign(&n.name, v);
                Ok(())
            }
            StmtKind::If { cond, then, els } => match self.expr(cond)? {
                Val::Bool(true) => {
                    self.block(then);
                    Ok(())
                }
                Val::Bool(false) => {
                    if let Some(e) = els {
                        match &e.kind {
                            StmtKind::Block(b) => self.block(b),
                            _ => self.stmt(e),
                        }
                    }
                    Ok(())
                }
                Val::Poison => Ok(()),
                Val::Scalar(id) if self.func.ty(id).dtype() == DType::I1 => {
                    self.runtime_if(id, then, els.as_deref(), s.span)
                }
                Val::Scalar(_) => Err(Diagnostic::error("E0008", "an `if` condition must be a bool")
                    .with_primary(cond.span, "not a bool")
                    .with_note("compare it, e.g. `x != 0`")),
                Val::Tile(_) => Err(Diagnostic::error("E0006", "an `if` condition must be a scalar, not a tile")
                    .with_primary(cond.span, "a tile")
                    .with_note("to choose per element use where(cond, a, b)")),
                other => Err(Diagnostic::error(
                    "E0006",
                    format!("an `if` condition must be a bool, found {}", kind_name(&other)),
                )
                .with_primary(cond.span, "not a bool")),
            },
            StmtKind::For { var, range, body } => self.for_loop(var, range, body, s.span),
            StmtKind::Block(b) => {
                self.block(b);
                Ok(())
            }
            StmtKind::Expr(e) => {
                let v = self.expr(e)?;
                // An atomic's old values may be dropped: it is done for its write.
                let atomic = matches!(&e.kind, ExprKind::Call(f, _)
                    if matches!(&f.kind, ExprKind::Name(n) if n.starts_with("atomic_")));
                match v {
                    Val::Tuple(t) if t.is_empty() => Ok(()),
                    Val::Poison => Ok(()),
                    Val::Tile(_) if atomic => Ok(()),
                    other => Err(Diagnostic::error(
                        "E0006",
                        format!("the value of this expression ({}) is unused", kind_name(&other)),
                    )
                    .with_primary(e.span, "bind it with `let` or drop it")),
                }
            }
        }
    }

    /// A value bound before a loop or `if` as a run-time SSA value (constants materialised).
    pub(crate) fn carried_value(&mut self, name: &str, span: Span) -> R<Option<ValueId>> {
        let v = self.lookup(name).cloned();
        Ok(match v {
            Some(Val::Tile(id)) | Some(Val::Scalar(id)) => Some(id),
            Some(v @ Val::Int(_)) => Some(self.materialize(v, DType::I32, span)?),
            Some(v @ Val::Float(_)) => Some(self.materialize(v, DType::F32, span)?),
            Some(v @ Val::Bool(_)) => Some(self.materialize(v, DType::I1, span)?),
            Some(Val::Poison) | None => None,
            Some(other) => {
                return Err(Diagnostic::error(
                    "E0006",
                    format!("`{name}` is {} and cannot change inside a run-time loop or if", kind_name(&other)),
                )
                .with_primary(span, "assigned in here"))
            }
        })
    }

    /// The value `name` has now, as an SSA value of type `want` (constants materialised).
    pub(crate) fn yield_value(&mut self, name: &str, want: &Type, span: Span) -> R<ValueId> {
        let v = self.lookup(name).cloned().unwrap_or(Val::Poison);
        let id = match v {
            Val::Tile(id) | Val::Scalar(id) => id,
            v @ (Val::Int(_) | Val::Float(_) | Val::Bool(_)) => self.materialize(v, want.dtype(), span)?,
            _ => {
                return Err(Diagnostic::error(
                    "E0021",
                    format!("`{name}` has no run-time value at the end of this block"),
                )
                .with_primary(span, "here"))
            }
        };
        let got = self.func.ty(id).clone();
        if got.shape() != want.shape()
            || got.dtype() != want.dtype()
            || std::mem::discriminant(&got) != std::mem::discriminant(want)
        {
            return Err(Diagnostic::error(
                "E0021",
                format!("`{name}` changes type from {} to {}", want.to_mlir(), got.to_mlir()),
            )
            .with_primary(span, "in this block")
            .with_note(if got.shape() != want.shape() {
                "a value carried through a loop or out of an if keeps its shape: reshape or broadcast it back, or use a new name"
            } else {
                "a value carried through a loop or out of an if keeps its dtype: cast it back with .astype"
            }));
        }
        Ok(id)
    }

    pub(crate) fn for_loop(&mut self, var: &ast::Ident, range: &Expr, body: &ast::Block, span: Span) -> R<()> {
        let not_range = || {
            Diagnostic::error("E0006", "a for loop iterates over range(start, stop[, step])")
                .with_primary(range.span, "not a range")
        };
        let ExprKind::Call(callee, rargs) = &range.kind else { return Err(not_range()) };
        if !matches!(&callee.kind, ExprKind::Name(n) if n == "range") {
            return Err(not_range());
        }
        let a = Args::new(self, rargs, &[("start", true), ("stop", false), ("step", false)], "range", range.span)?;
        if a.any_poison() {
            return Ok(());
        }
        let (lb, ub, step) = match (a.get(0).cloned(), a.get(1).cloned(), a.get(2).cloned()) {
            (Some(ub), None, None) => (Val::Int(0), ub, Val::Int(1)),
            (Some(lb), Some(ub), None) => (lb, ub, Val::Int(1)),
            (Some(lb), Some(ub), Some(st)) => (lb, ub, st),
            _ => {
                return Err(Diagnostic::error("E0004", "range takes (stop), (start, stop) or (start, stop, step)")
                    .with_primary(range.span, "here"))
            }
        };
        if let Val::Int(st) = step {
            if st <= 0 {
                return Err(Diagnostic::error("E0014", format!("range step {st} must be positive"))
                    .with_primary(range.span, "here"));
            }
        }
        let as_i32 = |cx: &mut Cx, v: Val, sp: Span| -> R<ValueId> {
            match v {
                Val::Scalar(id) if cx.func.ty(id).dtype() == DType::I32 => Ok(id),
                Val::Int(_) => cx.materialize(v, DType::I32, sp),
                other => Err(Diagnostic::error("E0008", format!("range bounds are i32, found {}", kind_name(&other)))
                    .with_primary(sp, "here")),
            }
        };
        let lbv = as_i32(self, lb, a.span(0))?;
        let ubv = as_i32(self, ub, range.span)?;
        let stv = as_i32(self, step, range.span)?;
        // Loop-carried: names assigned in the body that exist outside it.
        let names: Vec<String> =
            assigned_names(&body.stmts).into_iter().filter(|n| n != &var.name && self.lookup(n).is_some()).collect();
        let mut carried = vec![];
        for n in &names {
            if let Some(id) = self.carried_value(n, span)? {
                carried.push((n.clone(), id));
            }
        }
        let iv = self.func.new_value(Type::Scalar(DType::I32));
        let iters: Vec<ValueId> = carried
            .iter()
            .map(|(_, id)| {
                let t = self.func.ty(*id).clone();
                self.func.new_value(t)
            })
            .collect();
        let saved = std::mem::take(&mut self.func.ops);
        self.scopes.push(BTreeMap::new());
        self.bind(&var.name, Val::Scalar(iv));
        for ((n, _), it) in carried.iter().zip(&iters) {
            let v = if matches!(self.func.ty(*it), Type::Tile { .. }) { Val::Tile(*it) } else { Val::Scalar(*it) };
            self.bind(n, v);
        }
        self.block(body);
        let mut yields = vec![];
        let mut err = None;
        for ((n, _), it) in carried.iter().zip(&iters) {
            let want = self.func.ty(*it).clone();
            match self.yield_value(n, &want, body.span) {
                Ok(y) => yields.push(y),
                Err(d) => {
                    err.get_or_insert(d);
                    yields.push(*it);
                }
            }
        }
        self.scopes.pop();
        let body_ops = std::mem::replace(&mut self.func.ops, saved);
        let results: Vec<ValueId> = iters
            .iter()
            .map(|it| {
                let t = self.func.ty(*it).clone();
                self.func.new_value(t)
            })
            .collect();
        let init: Vec<ValueId> = carried.iter().map(|(_, id)| *id).collect();
        self.func.ops.push(Op {
            kind: OpKind::For {
                lb: lbv,
                ub: ubv,
                step: stv,
                iv,
                init,
                iters,
                body: body_ops,
                yields,
                results: results.clone(),
            },
            result: None,
            span: Some(span),
        });
        for ((n, _), r) in carried.iter().zip(&results) {
            let v = if matches!(self.func.ty(*r), Type::Tile { .. }) { Val::Tile(*r) } else { Val::Scalar(*r) };
            self.assign(n, v);
        }
        match err {
            Some(d) => Err(d),
            None => Ok(()),
        }
    }

    /// Elaborates one branch of a run-time `if` into its own op list and yields the values of
    /// `outer`'s names at its end.
    pub(crate) fn branch(
        &mut self,
        outer: &[(String, ValueId)],
        span: Span,
        f: &dyn Fn(&mut Cx),
    ) -> R<(Vec<Op>, Vec<ValueId>)> {
        let saved = std::mem::take(&mut self.func.ops);
        self.scopes.push(BTreeMap::new());
        // Shadow the merged names so that assignments in this branch stay in it.
        for (n, id) in outer {
            let v = if matches!(self.func.ty(*id), Type::Tile { .. }) { Val::Tile(*id) } else { Val::Scalar(*id) };
            self.bind(n, v);
        }
        f(self);
        let mut ys = vec![];
        let mut err = None;
        for (n, id) in outer {
            let want = self.func.ty(*id).clone();
            match self.yield_value(n, &want, span) {
                Ok(y) => ys.push(y),
                Err(d) => {
                    err.get_or_insert(d);
                    ys.push(*id);
                }
            }
        }
        self.scopes.pop();
        let ops = std::mem::replace(&mut self.func.ops, saved);
        match err {
            Some(d) => Err(d),
            None => Ok((ops, ys)),
        }
    }

    pub(crate) fn runtime_if(
        &mut self,
        cond: ValueId,
        then: &ast::Block,
        els: Option<&ast::Stmt>,
        span: Span,
    ) -> R<()> {
        let mut names = assigned_names(&then.stmts);
        if let Some(e) = els {
            for n in assigned_names(std::slice::from_ref(e)) {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let names: Vec<String> = names.into_iter().filter(|n| self.lookup(n).is_some()).collect();
        let mut outer = vec![];
        for n in &names {
            if let Some(id) = self.carried_value(n, span)? {
                outer.push((n.clone(), id));
            }
        }
        let (then_ops, then_yields) = self.branch(&outer, then.span, &|cx: &mut Cx| cx.block(then))?;
        let (else_ops, else_yields) = match els {
            Some(e) => self.branch(&outer, e.span, &|cx: &mut Cx| match &e.kind {
                StmtKind::Block(b) => cx.block(b),
                _ => cx.stmt(e),
            })?,
            None => self.branch(&outer, then.span, &|_: &mut Cx| {})?,
        };
        let results: Vec<ValueId> = outer
            .iter()
            .map(|(_, id)| {
                let t = self.func.ty(*id).clone();
                self.func.new_value(t)
            })
            .collect();
        self.func.ops.push(Op {
            kind: OpKind::If { cond, then_ops, then_yields, else_ops, else_yields, results: results.clone() },
            result: None,
            span: Some(span),
        });
        for ((n, _), r) in outer.iter().zip(&results) {
            let v = if matches!(self.func.ty(*r), Type::Tile { .. }) { Val::Tile(*r) } else { Val::Scalar(*r) };
            self.assign(n, v);
        }
        Ok(())
    }
}

/// Names assigned (not `let`-declared) in statements, nested blocks included, in order.
pub(crate) fn assigned_names(stmts: &[ast::Stmt]) -> Vec<String> {
    fn go(stmts: &[ast::Stmt], declared: &mut Vec<String>, out: &mut Vec<String>) {
        for s in stmts {
            match &s.kind {
                StmtKind::Let(ns, _) => declared.extend(ns.iter().map(|n| n.name.clone())),
                StmtKind::Assign(n, _, _) => {
                    if !declared.contains(&n.name) && !out.contains(&n.name) {
                        out.push(n.name.clone());
                    }
                }
                StmtKind::For { body, .. } => go(&body.stmts, &mut declared.clone(), out),
                StmtKind::If { then, els, .. } => {
                    go(&then.stmts, &mut declared.clone(), out);
                    if let Some(e) = els {
                        go(std::slice::from_ref(e), &mut declared.clone(), out);
                    }
                }
                StmtKind::Block(b) => go(&b.stmts, &mut declared.clone(), out),
                StmtKind::Expr(_) => {}
            }
        }
    }
    let mut out = vec![];
    go(stmts, &mut vec![], &mut out);
    out
}
