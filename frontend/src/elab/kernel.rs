//! The kernel: constants, hints, runtime parameters (the ABI), the tune space and the grid.

use super::*;

/// The kernel hints: name, the rule its values follow, and the setter (false: out of range).
type HintSetter = fn(i64, &mut Hints) -> bool;
/// The hint naming the tensors no grid before this kernel writes (`independent = (W1, W2)`):
/// their loads may run before the kernel waits for that grid (`tile-grid-dependency`).
const INDEPENDENT: &str = "independent";

const HINTS: &[(&str, &str, HintSetter)] = &[
    ("num_warps", "num_warps must be 1, 2, 4, 8, 16 or 32", |n, h| {
        let ok = [1, 2, 4, 8, 16, 32].contains(&n);
        if ok {
            h.num_warps = n as u32;
        }
        ok
    }),
    ("occupancy", "occupancy must be between 1 and 32", |n, h| {
        let ok = (1..=32).contains(&n);
        if ok {
            h.occupancy = Some(n as u32);
        }
        ok
    }),
    ("opt_level", "opt_level must be between 0 and 3", |n, h| {
        let ok = (0..=3).contains(&n);
        if ok {
            h.opt_level = n as u32;
        }
        ok
    }),
    ("warp_specialize", "warp_specialize is true or false", |n, h| {
        h.warp_specialize = n != 0;
        (0..=1).contains(&n)
    }),
    ("persistent", "persistent is true or false", |n, h| {
        h.persistent = n != 0;
        (0..=1).contains(&n)
    }),
    ("cta_pair", "cta_pair is true or false", |n, h| {
        h.cta_pair = n != 0;
        (0..=1).contains(&n)
    }),
    ("tma", "tma is true or false", |n, h| {
        h.no_tma = n == 0;
        (0..=1).contains(&n)
    }),
    ("strength_reduction", "strength_reduction is true or false", |n, h| {
        h.no_strength_reduction = n == 0;
        (0..=1).contains(&n)
    }),
];

pub(crate) fn elaborate_kernel(k: &Kernel, req: &Request) -> Result<Elaborated, Vec<Diagnostic>> {
    let mut cx = Cx {
        func: Func::new(&k.name.name, &req.target, 4),
        scopes: vec![BTreeMap::new()],
        target: &req.target,
        tcgen05: req.tcgen05.unwrap_or_else(|| {
            tilec_core::target::by_name(&req.target).is_some_and(|a| a.has(tilec_core::target::Feature::Tcgen05))
        }),
        diags: vec![],
        host: false,
        param_names: vec![],
    };
    // Builtin names.
    cx.bind("inf", Val::Float(f64::INFINITY));
    cx.bind("nan", Val::Float(f64::NAN));
    for d in DType::ALL {
        cx.bind(d.name(), Val::DType(d));
    }
    // The language's name of the i1 dtype (docs/language.md), as in `zeros((8,), bool)`.
    cx.bind("bool", Val::DType(DType::I1));
    cx.bind("int32", Val::DType(DType::I32));
    cx.bind("float32", Val::DType(DType::F32));
    cx.bind("float16", Val::DType(DType::F16));
    cx.bind("bfloat16", Val::DType(DType::BF16));
    cx.scopes.push(BTreeMap::new());

    // Duplicate parameter names.
    for (i, p) in k.params.iter().enumerate() {
        if let Some(prev) = k.params[..i].iter().find(|q| q.name.name == p.name.name) {
            cx.diags.push(
                Diagnostic::error("E0003", format!("parameter `{}` is declared twice", p.name.name))
                    .with_primary(p.name.span, "second declaration")
                    .with_secondary(prev.name.span, "first declaration"),
            );
        }
    }

    // Constants first (tensor types may name them), in declaration order.
    let mut constants = BTreeMap::new();
    for p in k.params.iter().filter(|p| p.is_const) {
        let v = match cx.const_param(p, req) {
            Ok(v) => v,
            Err(d) => {
                cx.diags.push(d);
                Val::Poison
            }
        };
        constants.insert(p.name.name.clone(), const_text(&v));
        cx.bind(&p.name.name, v);
    }
    for name in req.consts.keys() {
        if !k.params.iter().any(|p| p.is_const && &p.name.name == name) {
            let consts: Vec<&str> = k.params.iter().filter(|p| p.is_const).map(|p| p.name.name.as_str()).collect();
            let mut d = Diagnostic::error("E0019", format!("kernel `{}` has no constant `{name}`", k.name.name));
            let close = close_matches(name, consts.iter().copied());
            if !close.is_empty() {
                d = d.with_note(format!("did you mean: {}", close.join(", ")));
            }
            cx.diags.push(d.with_note(format!("its constants: {}", consts.join(", "))));
        }
    }

    // Hints.
    let mut hints = Hints::default();
    let mut independent = None;
    for (i, (key, e)) in k.hints.iter().enumerate() {
        if let Some((prev, _)) = k.hints[..i].iter().find(|(p, _)| p.name == key.name) {
            cx.diags.push(
                Diagnostic::error("E0015", format!("hint `{}` is given twice", key.name))
                    .with_primary(key.span, "second value")
                    .with_secondary(prev.span, "first value"),
            );
            continue;
        }
        // Names parameters, which are bound after the hints: resolved below.
        if key.name == INDEPENDENT {
            independent = Some(e);
            continue;
        }
        let v = match cx.expr(e) {
            Ok(v) => v,
            Err(d) => {
                cx.diags.push(d);
                continue;
            }
        };
        let n = match v {
            Val::Int(n) => n,
            Val::Bool(b) => i64::from(b),
            Val::Poison => continue,
            other => {
                cx.diags.push(
                    Diagnostic::error("E0015", format!("hint `{}` needs a constant integer", key.name))
                        .with_primary(e.span, format!("this is {}", kind_name(&other))),
                );
                continue;
            }
        };
        match HINTS.iter().find(|h| h.0 == key.name) {
            Some((_, rule, set)) => {
                if !set(n, &mut hints) {
                    cx.diags.push(
                        Diagnostic::error("E0015", format!("bad value {n} for hint `{}`", key.name))
                            .with_primary(e.span, rule.to_string()),
                    );
                }
            }
            None => {
                let names: Vec<&str> = HINTS.iter().map(|h| h.0).chain([INDEPENDENT]).collect();
                let close = close_matches(&key.name, names.iter().copied());
                let mut d = Diagnostic::error("E0015", format!("unknown hint `{}`", key.name))
                    .with_primary(key.span, "not a hint")
                    .with_note(format!("known hints: {}", names.join(", ")));
                if !close.is_empty() {
                    d = d.with_note(format!("did you mean `{}`?", close[0]));
                }
                cx.diags.push(d);
            }
        }
    }
    cx.func.num_warps = hints.num_warps;

    // Runtime parameters: the ABI.
    let mut sig_params = vec![];
    for p in k.params.iter().filter(|p| !p.is_const) {
        match cx.runtime_param(p, req) {
            Ok((val, sig)) => {
                cx.param_names.push(p.name.name.clone());
                if let (Val::Tensor { value, param }, TypeExpr::Tensor { extents, .. }) = (&val, &p.ty) {
                    for (axis, e) in extents.iter().enumerate() {
                        let ExtentDecl::Named(id) = e else { continue };
                        if let Some(other) = k.params.iter().find(|q| q.name.name == id.name) {
                            cx.diags.push(
                                Diagnostic::error(
                                    "E0003",
                                    format!("`{}` names both an extent and a parameter", id.name),
                                )
                                .with_primary(id.span, "a shape name")
                                .with_secondary(other.name.span, "a parameter"),
                            );
                        } else if !matches!(cx.lookup(&id.name), Some(Val::Extent { .. })) {
                            cx.bind(&id.name, Val::Extent { value: *value, param: *param, axis });
                        }
                    }
                }
                sig_params.push(sig);
                cx.bind(&p.name.name, val);
            }
            Err(d) => {
                cx.diags.push(d);
                cx.bind(&p.name.name, Val::Poison);
            }
        }
    }
    if let Some(e) = independent {
        cx.independent_hint(k, e);
    }
    for name in &req.unaligned {
        let is_tensor = |p: &&ast::ParamDecl| !p.is_const && matches!(p.ty, TypeExpr::Tensor { .. });
        if !k.params.iter().filter(is_tensor).any(|p| &p.name.name == name) {
            let tensors: Vec<&str> = k.params.iter().filter(is_tensor).map(|p| p.name.name.as_str()).collect();
            let mut d = Diagnostic::error(
                "E0019",
                format!("kernel `{}` has no tensor parameter `{name}` to compile unaligned", k.name.name),
            );
            let close = close_matches(name, tensors.iter().copied());
            if !close.is_empty() {
                d = d.with_note(format!("did you mean: {}", close.join(", ")));
            }
            cx.diags.push(d.with_note(format!("its tensor parameters: {}", tensors.join(", "))));
        }
    }

    // The tune space: each key a constant of the kernel, each value a non-empty tuple of
    // candidates of that constant's kind; each `require` a constant bool (evaluated with the
    // current constants — the autotuner re-elaborates every point and drops those that fail).
    let mut tune = vec![];
    for (key, e) in &k.tune {
        let Some(decl) = k.params.iter().find(|p| p.is_const && p.name.name == key.name) else {
            cx.diags.push(
                Diagnostic::error("E0019", format!("tune names `{}`, which is not a constant of the kernel", key.name))
                    .with_primary(key.span, "not a constant"),
            );
            continue;
        };
        let kind = match &decl.ty {
            TypeExpr::Named(t) => t.name.clone(),
            TypeExpr::Tensor { .. } => String::new(),
        };
        match cx.expr(e) {
            Ok(Val::Tuple(items)) if !items.is_empty() => {
                let mut cands = vec![];
                for it in items {
                    match (kind.as_str(), it) {
                        ("int", Val::Int(v)) => cands.push(ConstArg::Int(v)),
                        ("bool", Val::Bool(v)) => cands.push(ConstArg::Bool(v)),
                        ("float", Val::Float(v)) => cands.push(ConstArg::Float(v)),
                        ("dtype", Val::DType(v)) => cands.push(ConstArg::DType(v)),
                        (_, other) => {
                            cx.diags.push(
                                Diagnostic::error(
                                    "E0006",
                                    format!(
                                        "tune candidate for `{}` is {}, but the constant is `{kind}`",
                                        key.name,
                                        kind_name(&other)
                                    ),
                                )
                                .with_primary(e.span, "in this list"),
                            );
                        }
                    }
                }
                tune.push((key.name.clone(), cands));
            }
            Ok(Val::Poison) => {}
            Ok(other) => cx.diags.push(
                Diagnostic::error(
                    "E0006",
                    format!("a tune entry is a non-empty tuple of candidates, found {}", kind_name(&other)),
                )
                .with_primary(e.span, "write `(64, 128)`"),
            ),
            Err(d) => cx.diags.push(d),
        }
    }
    let mut tune_ok = true;
    for r in &k.tune_require {
        match cx.expr(r) {
            Ok(Val::Bool(b)) => tune_ok &= b,
            Ok(Val::Poison) => {}
            Ok(other) => cx.diags.push(
                Diagnostic::error(
                    "E0009",
                    format!("a tune `require` must be a constant bool, found {}", kind_name(&other)),
                )
                .with_primary(r.span, "not a constant bool"),
            ),
            Err(d) => cx.diags.push(d),
        }
    }

    // Grid (host expressions).
    let mut grid = vec![];
    if let Some(g) = &k.grid {
        cx.host = true;
        match cx.expr(g) {
            Ok(v) => {
                let items = match v {
                    Val::Tuple(items) => items,
                    v => vec![v],
                };
                if items.is_empty() || items.len() > 3 {
                    cx.diags.push(
                        Diagnostic::error("E0006", "the grid has 1 to 3 dimensions")
                            .with_primary(g.span, format!("{} given", items.len())),
                    );
                }
                for (axis, it) in items.into_iter().take(3).enumerate() {
                    match it {
                        Val::Int(v) => {
                            let max = if axis == 0 { i64::from(i32::MAX) } else { 65535 };
                            if !(0..=max).contains(&v) {
                                cx.diags.push(
                                    Diagnostic::error(
                                        "E0014",
                                        format!("grid dimension {axis} is {v}, outside 0..={max}"),
                                    )
                                    .with_primary(g.span, "this grid"),
                                );
                            }
                            grid.push(HostExpr::Int(v))
                        }
                        Val::Host(h) => grid.push(h),
                        Val::Poison => {}
                        other => cx.diags.push(
                            Diagnostic::error("E0006", "grid dimensions must be integers")
                                .with_primary(g.span, format!("found {}", kind_name(&other))),
                        ),
                    }
                }
                while grid.len() < 3 {
                    grid.push(HostExpr::Int(1));
                }
            }
            Err(d) => cx.diags.push(d),
        }
        cx.host = false;
    }

    // Launch requirements (host expressions, like the grid).
    let mut requires = vec![];
    cx.host = true;
    for (e, text, line) in &k.requires {
        match cx.expr(e) {
            Ok(Val::Bool(true) | Val::Poison) => {}
            Ok(Val::Bool(false)) => cx.diags.push(
                Diagnostic::error("E0024", format!("the requirement `{text}` is false for these constants"))
                    .with_primary(e.span, "no launch can meet it")
                    .with_note(format!(
                        "constants: {}",
                        constants.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
                    )),
            ),
            Ok(Val::Host(cond)) => {
                requires.push(tilec_core::abi::Requirement { text: text.clone(), line: *line, cond })
            }
            Ok(other) => cx.diags.push(
                Diagnostic::error(
                    "E0024",
                    format!(
                        "a requirement is a bool of extents, integer scalar parameters and constants, found {}",
                        kind_name(&other)
                    ),
                )
                .with_primary(e.span, "not checkable at launch"),
            ),
            Err(d) => cx.diags.push(d),
        }
    }
    cx.host = false;

    // Body.
    cx.block(&k.body);

    // How the body uses each tensor: the runtime checks that no written tensor overlaps
    // another argument.
    let (mut read, mut written) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    cx.func.walk(&mut |op| match &op.kind {
        OpKind::Load { tensor, .. } | OpKind::Gather { tensor, .. } | OpKind::Element { tensor, .. } => {
            read.insert(*tensor);
        }
        OpKind::Store { tensor, .. } | OpKind::Scatter { tensor, .. } => {
            written.insert(*tensor);
        }
        OpKind::Atomic { tensor, .. } => {
            read.insert(*tensor);
            written.insert(*tensor);
        }
        _ => {}
    });
    let tensor_values: Vec<ValueId> =
        cx.func.params.iter().filter(|p| matches!(cx.func.ty(p.value), Type::Tensor { .. })).map(|p| p.value).collect();
    let mut tensors = tensor_values.iter();
    for p in sig_params.iter_mut() {
        if let ParamSig::Tensor { name, access, independent, .. } = p {
            if let Some(v) = tensors.next() {
                *access = match (read.contains(v), written.contains(v)) {
                    (true, true) => tilec_core::abi::Access::ReadWrite,
                    (_, true) => tilec_core::abi::Access::Write,
                    _ => tilec_core::abi::Access::Read,
                };
                *independent = cx.func.params.iter().any(|q| q.value == *v && q.independent);
                if *independent && access.writes() {
                    let span = k.hints.iter().find(|(key, _)| key.name == INDEPENDENT).map(|(_, e)| {
                        let named = |x: &&ast::Expr| matches!(&x.kind, ast::ExprKind::Name(n) if n == name);
                        match &e.kind {
                            ast::ExprKind::Tuple(items) => items.iter().find(named).map_or(e.span, |x| x.span),
                            _ => e.span,
                        }
                    });
                    let mut d = Diagnostic::error(
                        "E0015",
                        format!("`{name}` is written by the kernel, so it cannot be `independent`"),
                    )
                    .with_note("`independent` tensors are only read: their loads may run before the grid before this one has finished");
                    if let Some(span) = span {
                        d = d.with_primary(span, "in this hint");
                    }
                    cx.diags.push(d);
                }
            }
        }
    }

    // The parameter space of a launch (CUDA 12.1+ on Volta and later: 32764 bytes).
    let param_bytes: usize = sig_params
        .iter()
        .map(|p| match p {
            ParamSig::Tensor { rank, .. } => 8 + 16 * rank,
            ParamSig::Scalar { dtype, .. } => dtype.bytes() as usize,
        })
        .sum();
    if param_bytes > tilec_core::abi::MAX_PARAM_BYTES {
        cx.diags.push(
            Diagnostic::error(
                "E0016",
                format!(
                    "the kernel's parameters take {param_bytes} bytes; a launch passes at most {}",
                    tilec_core::abi::MAX_PARAM_BYTES
                ),
            )
            .with_primary(k.name.span, "this kernel")
            .with_note("a tensor takes 8 bytes plus 16 per dimension: pass fewer or lower-rank tensors"),
        );
    }
    if cx.diags.iter().any(|d| d.is_error()) {
        return Err(cx.diags);
    }
    let signature = Signature {
        name: k.name.name.clone(),
        target: req.target.clone(),
        params: sig_params,
        grid,
        block_threads: hints.num_warps * 32,
        shared_bytes: 0,
        constants,
        tma: vec![],
        requires,
        persistent: false,
        grid_dependency: false,
        shared_pad: 0,
        cluster: 1,
    };
    Ok(Elaborated { func: cx.func, signature, hints, tune, tune_ok })
}

impl Cx<'_> {
    /// `independent = (A, B)` (or `= A`): marks those tensor parameters independent.
    fn independent_hint(&mut self, k: &Kernel, e: &ast::Expr) {
        let names: Vec<&ast::Expr> = match &e.kind {
            ast::ExprKind::Tuple(items) => items.iter().collect(),
            _ => vec![e],
        };
        for n in names {
            let tensors = || -> Vec<&str> {
                k.params
                    .iter()
                    .filter(|p| !p.is_const && matches!(p.ty, TypeExpr::Tensor { .. }))
                    .map(|p| p.name.name.as_str())
                    .collect()
            };
            let ast::ExprKind::Name(name) = &n.kind else {
                self.diags.push(
                    Diagnostic::error("E0015", "hint `independent` names tensor parameters")
                        .with_primary(n.span, "not a parameter's name")
                        .with_note(format!("its tensor parameters: {}", tensors().join(", "))),
                );
                continue;
            };
            match self.func.params.iter_mut().find(|p| &p.name == name) {
                Some(p) if matches!(self.func.values[p.value.0 as usize], Type::Tensor { .. }) => {
                    p.independent = true;
                }
                Some(_) => self.diags.push(
                    Diagnostic::error("E0015", format!("hint `independent` names `{name}`, a scalar parameter"))
                        .with_primary(n.span, "not a tensor")
                        .with_note("`independent` names tensors the kernel loads (a scalar is passed by value)"),
                ),
                None => {
                    let all = tensors();
                    let mut d = Diagnostic::error(
                        "E0015",
                        format!("hint `independent` names `{name}`, which is not a tensor parameter"),
                    )
                    .with_primary(n.span, "not a tensor parameter");
                    let close = close_matches(name, all.iter().copied());
                    if !close.is_empty() {
                        d = d.with_note(format!("did you mean: {}", close.join(", ")));
                    }
                    self.diags.push(d.with_note(format!("its tensor parameters: {}", all.join(", "))));
                }
            }
        }
    }

    pub(crate) fn const_param(&mut self, p: &ast::ParamDecl, req: &Request) -> R<Val> {
        let TypeExpr::Named(ty) = &p.ty else {
            return Err(Diagnostic::error("E0016", "a constant cannot be a tensor")
                .with_primary(p.span, "declared `const` here"));
        };
        let kind = ty.name.as_str();
        if !["int", "bool", "dtype", "float"].contains(&kind) {
            return Err(Diagnostic::error(
                "E0016",
                format!("constants are `int`, `bool`, `float` or `dtype`, not `{kind}`"),
            )
            .with_primary(ty.span, "unknown constant kind"));
        }
        let v = if let Some(o) = req.consts.get(&p.name.name) {
            o.to_val()
        } else if let Some(d) = &p.default {
            self.expr(d)?
        } else {
            return Err(Diagnostic::error(
                "E0009",
                format!("constant `{}` has no default and no value was given", p.name.name),
            )
            .with_primary(p.span, "needs `= value` or --const")
            .with_note(format!("pass one with `--const {}=VALUE`", p.name.name)));
        };
        let ok = matches!(
            (kind, &v),
            ("int", Val::Int(_))
                | ("bool", Val::Bool(_))
                | ("dtype", Val::DType(_))
                | ("float", Val::Float(_))
                | ("float", Val::Int(_))
                | (_, Val::Poison)
        );
        // A bool given as 0 or 1 from outside (`--const CTA_PAIR=1`, the suites' integer
        // overrides), as a float constant takes an integer.
        let given = req.consts.contains_key(&p.name.name);
        let ok = ok || (given && kind == "bool" && matches!(v, Val::Int(0 | 1)));
        if !ok {
            let code = if req.consts.contains_key(&p.name.name) { "E0019" } else { "E0006" };
            return Err(Diagnostic::error(
                code,
                format!("constant `{}` is declared `{kind}` but its value is {}", p.name.name, kind_name(&v)),
            )
            .with_primary(p.span, "declared here"));
        }
        Ok(match (kind, v) {
            ("float", Val::Int(i)) => Val::Float(i as f64),
            ("bool", Val::Int(i)) => Val::Bool(i != 0),
            (_, v) => v,
        })
    }

    pub(crate) fn runtime_param(&mut self, p: &ast::ParamDecl, req: &Request) -> R<(Val, ParamSig)> {
        if let Some(d) = &p.default {
            return Err(Diagnostic::error("E0006", "only `const` parameters take defaults")
                .with_primary(d.span, "run-time parameters are given at launch")
                .with_note(format!("write `const {}: …` to make it a compile-time constant", p.name.name)));
        }
        let name = p.name.name.clone();
        let index = self.param_names.len();
        match &p.ty {
            TypeExpr::Tensor { dtype, rank, extents, span } => {
                let d = self.dtype_named(dtype)?;
                if !(1..=8).contains(rank) {
                    return Err(Diagnostic::error("E0016", format!("tensor rank {rank} is outside 1..=8"))
                        .with_primary(*span, "bad rank"));
                }
                let rank = *rank as usize;
                let mut sig_extents = vec![];
                for e in extents {
                    sig_extents.push(match e {
                        ExtentDecl::Any(_) => Extent::Any,
                        ExtentDecl::Named(id) => Extent::Named(id.name.clone()),
                        ExtentDecl::Fixed(n, _) if (0..=i64::from(i32::MAX)).contains(n) => Extent::Fixed(*n),
                        ExtentDecl::Fixed(n, sp) => {
                            return Err(Diagnostic::error("E0016", format!("tensor extent {n} is outside 0..=2^31-1"))
                                .with_primary(*sp, "bad extent"))
                        }
                    });
                }
                let value = self.func.add_param(&name, Type::Tensor { dtype: d, rank });
                let aligned16 = !req.unaligned.contains(&name);
                if let Some(p) = self.func.params.last_mut() {
                    p.divisibility = if aligned16 { 16 } else { 1 };
                }
                let sig = ParamSig::Tensor {
                    name,
                    dtype: d,
                    rank,
                    aligned16,
                    access: Default::default(),
                    extents: sig_extents,
                    independent: false,
                };
                Ok((Val::Tensor { value, param: index }, sig))
            }
            TypeExpr::Named(t) => {
                let d = DType::parse(&t.name).ok_or_else(|| {
                    Diagnostic::error("E0016", format!("unknown scalar type `{}`", t.name))
                        .with_primary(t.span, "expected i32, i64 or f32")
                })?;
                if !matches!(d, DType::I32 | DType::I64 | DType::F32) {
                    return Err(Diagnostic::error("E0016", format!("a run-time scalar parameter cannot be {d}"))
                        .with_primary(t.span, "the kernel ABI passes i32, i64 and f32 scalars")
                        .with_note(format!(
                            "take an f32 (or i32) and convert it in the kernel: `{}.astype({d})`",
                            p.name.name
                        )));
                }
                let value = self.func.add_param(&name, Type::Scalar(d));
                Ok((Val::Scalar(value), ParamSig::Scalar { name, dtype: d }))
            }
        }
    }

    pub(crate) fn dtype_named(&mut self, id: &ast::Ident) -> R<DType> {
        if let Some(d) = DType::parse(&id.name) {
            return Ok(d);
        }
        match self.lookup(&id.name) {
            Some(Val::DType(d)) => Ok(*d),
            Some(Val::Poison) => {
                Err(Diagnostic::error("E0016", "dtype depends on an erroneous constant").with_primary(id.span, "here"))
            }
            Some(other) => {
                Err(Diagnostic::error("E0016", format!("`{}` is {}, not a dtype", id.name, kind_name(other)))
                    .with_primary(id.span, "expected a dtype"))
            }
            None => Err(self.unknown_name(&id.name, id.span).with_note(format!(
                "tensor element types are {} or a `dtype` constant",
                DType::ALL.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }
}
