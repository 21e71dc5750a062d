//! Checking and emission: AST + target + constants → [`tir::Func`] and the kernel ABI.
//!
//! Elaboration walks the kernel once with every compile-time constant known (defaults, the
//! target's `by_target` choice, the caller's overrides). Compile-time values fold as they are
//! met (`BLOCK_N // 2`, `if CAUSAL { … }`); run-time values become ops of the tile IR. Shapes
//! and dtypes are checked at the point of use, so an error names the expression that broke
//! the rule. Errors in one statement do not stop the others: the statement's result becomes
//! a poison value that silences follow-up errors, and checking goes on.

use crate::ast::{self, AssignOp, BinOp as AB, Expr, ExprKind, IndexItem, Kernel, StmtKind, TypeExpr, UnaryOp};
use std::collections::{BTreeMap, BTreeSet};
use tilec_core::abi::{HostExpr, ParamSig, Signature};
use tilec_core::tir::{
    self, BinOp, CmpPred, Func, LogicOp, MathFlags, Op, OpKind, Padding, ReduceKind, Type, UnOp, ValueId,
};
use tilec_core::{DType, Diagnostic, Span};

/// A compile-time constant supplied by the caller (CLI `--const`, the API, the autotuner).
#[derive(Clone, Debug, PartialEq)]
pub enum ConstArg {
    Int(i64),
    Bool(bool),
    Float(f64),
    DType(DType),
}

impl ConstArg {
    /// Parses `64`, `true`, `0.5`, `f16`.
    pub fn parse(s: &str) -> Option<ConstArg> {
        let s = s.trim();
        if let Ok(v) = s.parse::<i64>() {
            return Some(ConstArg::Int(v));
        }
        match s {
            "true" => return Some(ConstArg::Bool(true)),
            "false" => return Some(ConstArg::Bool(false)),
            _ => {}
        }
        if let Some(d) = DType::parse(s) {
            return Some(ConstArg::DType(d));
        }
        s.parse::<f64>().ok().map(ConstArg::Float)
    }

    fn to_val(&self) -> Val {
        match self {
            ConstArg::Int(v) => Val::Int(*v),
            ConstArg::Bool(v) => Val::Bool(*v),
            ConstArg::Float(v) => Val::Float(*v),
            ConstArg::DType(d) => Val::DType(*d),
        }
    }
}

/// What to elaborate.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// Kernel name; `None` takes the only kernel of the file.
    pub kernel: Option<String>,
    /// Canonical target (`sm_90a`, `sm_103a`, `sm_121a`).
    pub target: String,
    pub consts: BTreeMap<String, ConstArg>,
    /// Tensor parameters *not* known to be 16-byte aligned with unit last stride.
    pub unaligned: BTreeSet<String>,
}

pub use tilec_core::artifact::Hints;

#[derive(Clone, Debug)]
pub struct Elaborated {
    pub func: Func,
    /// The ABI; `block_threads` and `shared_bytes` are filled in by the lowering.
    pub signature: Signature,
    pub hints: Hints,
    /// The tune space: constant name → candidates, in declaration order.
    pub tune: Vec<(String, Vec<ConstArg>)>,
    /// Whether this specialisation satisfies the tune block's `require` constraints.
    pub tune_ok: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Val {
    Poison,
    Int(i64),
    Float(f64),
    Bool(bool),
    DType(DType),
    Str(String),
    Tuple(Vec<Val>),
    Tensor {
        value: ValueId,
        param: usize,
    },
    /// `x.shape` of a tensor parameter, waiting for an index.
    Shape {
        value: ValueId,
        param: usize,
    },
    Scalar(ValueId),
    Tile(ValueId),
    /// A run-time integer of the host (grid expressions).
    Host(HostExpr),
}

type R<T> = Result<T, Diagnostic>;

/// Which elementwise op a binary operator becomes.
#[derive(Clone, Copy, Debug)]
enum Emit {
    /// Binary arithmetic, with the math options of `truediv`.
    Bin(BinOp, MathFlags),
    Cmp(CmpPred),
    Logic(LogicOp),
}

fn kind_name(v: &Val) -> &'static str {
    match v {
        Val::Poison => "an erroneous value",
        Val::Int(_) => "a constant integer",
        Val::Float(_) => "a constant float",
        Val::Bool(_) => "a constant bool",
        Val::DType(_) => "a dtype",
        Val::Str(_) => "a string",
        Val::Tuple(_) => "a tuple",
        Val::Tensor { .. } => "a tensor",
        Val::Shape { .. } => "a tensor shape",
        Val::Scalar(_) => "a run-time scalar",
        Val::Tile(_) => "a tile",
        Val::Host(_) => "a launch-time integer",
    }
}

pub use tilec_core::diag::close_matches;

fn pow2_suggestion(d: i64) -> String {
    if d <= 1 {
        return "use 1 or larger".to_string();
    }
    let lo = 1i64 << (63 - (d as u64).leading_zeros());
    let hi = lo.saturating_mul(2);
    format!("use {lo} or {hi}")
}

struct Cx<'a> {
    func: Func,
    scopes: Vec<Vec<(String, Val)>>,
    target: &'a str,
    diags: Vec<Diagnostic>,
    /// Evaluating the grid: tensor shapes and scalars are host expressions, not ops.
    host: bool,
    /// Runtime params in order, for host expressions (index into the signature).
    param_names: Vec<String>,
}

/// Checks and emits one kernel of a parsed file.
pub fn elaborate(file: &ast::File, req: &Request) -> Result<Elaborated, Vec<Diagnostic>> {
    let kernel = match &req.kernel {
        Some(name) => file.kernels.iter().find(|k| &k.name.name == name).ok_or_else(|| {
            let names: Vec<&str> = file.kernels.iter().map(|k| k.name.name.as_str()).collect();
            vec![Diagnostic::error("E0017", format!("no kernel named `{name}` in this file")).with_note(format!(
                "the file defines: {}",
                if names.is_empty() { "nothing".into() } else { names.join(", ") }
            ))]
        })?,
        None => match file.kernels.as_slice() {
            [k] => k,
            [] => return Err(vec![Diagnostic::error("E0017", "the file defines no kernel")]),
            ks => {
                let names: Vec<&str> = ks.iter().map(|k| k.name.name.as_str()).collect();
                return Err(vec![Diagnostic::error("E0017", "the file defines several kernels; name one")
                    .with_note(format!("kernels: {}", names.join(", ")))]);
            }
        },
    };
    for (i, k) in file.kernels.iter().enumerate() {
        if let Some(prev) = file.kernels[..i].iter().find(|p| p.name.name == k.name.name) {
            return Err(vec![Diagnostic::error("E0003", format!("kernel `{}` is defined twice", k.name.name))
                .with_primary(k.name.span, "second definition")
                .with_secondary(prev.name.span, "first definition")]);
        }
    }
    if tilec_core::target::by_name(&req.target).is_none() {
        let names: Vec<&str> = tilec_core::target::names().collect();
        return Err(vec![Diagnostic::error("E0013", format!("unknown target `{}`", req.target))
            .with_note(format!("supported targets: {}", names.join(", ")))]);
    }
    elaborate_kernel(kernel, req)
}

fn elaborate_kernel(k: &Kernel, req: &Request) -> Result<Elaborated, Vec<Diagnostic>> {
    let mut cx = Cx {
        func: Func::new(&k.name.name, &req.target, 4),
        scopes: vec![vec![]],
        target: &req.target,
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
    cx.bind("int32", Val::DType(DType::I32));
    cx.bind("float32", Val::DType(DType::F32));
    cx.bind("float16", Val::DType(DType::F16));
    cx.bind("bfloat16", Val::DType(DType::BF16));
    cx.scopes.push(vec![]);

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
    for (key, e) in &k.hints {
        let v = match cx.expr(e) {
            Ok(v) => v,
            Err(d) => {
                cx.diags.push(d);
                continue;
            }
        };
        let n = match v {
            Val::Int(n) => n,
            Val::Poison => continue,
            other => {
                cx.diags.push(
                    Diagnostic::error("E0015", format!("hint `{}` needs a constant integer", key.name))
                        .with_primary(e.span, format!("this is {}", kind_name(&other))),
                );
                continue;
            }
        };
        let bad = |cx: &mut Cx, what: &str| {
            cx.diags.push(
                Diagnostic::error("E0015", format!("bad value {n} for hint `{}`", key.name))
                    .with_primary(e.span, what.to_string()),
            )
        };
        match key.name.as_str() {
            "num_warps" => {
                if [1, 2, 4, 8, 16, 32].contains(&n) {
                    hints.num_warps = n as u32
                } else {
                    bad(&mut cx, "num_warps must be 1, 2, 4, 8, 16 or 32")
                }
            }
            "occupancy" => {
                if (1..=32).contains(&n) {
                    hints.occupancy = Some(n as u32)
                } else {
                    bad(&mut cx, "occupancy must be between 1 and 32")
                }
            }
            "opt_level" => {
                if (0..=3).contains(&n) {
                    hints.opt_level = n as u32
                } else {
                    bad(&mut cx, "opt_level must be between 0 and 3")
                }
            }
            other => {
                let close = close_matches(other, ["num_warps", "occupancy", "opt_level"]);
                let mut d = Diagnostic::error("E0015", format!("unknown hint `{other}`"))
                    .with_primary(key.span, "not a hint")
                    .with_note("known hints: num_warps, occupancy, opt_level");
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
                sig_params.push(sig);
                cx.bind(&p.name.name, val);
            }
            Err(d) => {
                cx.diags.push(d);
                cx.bind(&p.name.name, Val::Poison);
            }
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
                for it in items.into_iter().take(3) {
                    match it {
                        Val::Int(v) => grid.push(HostExpr::Int(v)),
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

    // Body.
    cx.block(&k.body);

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
    };
    Ok(Elaborated { func: cx.func, signature, hints, tune, tune_ok })
}

fn const_text(v: &Val) -> String {
    match v {
        Val::Int(i) => i.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Float(f) => tir::float_literal(*f),
        Val::DType(d) => d.name().to_string(),
        _ => "<error>".to_string(),
    }
}

impl Cx<'_> {
    fn bind(&mut self, name: &str, v: Val) {
        if let Some(scope) = self.scopes.last_mut() {
            if let Some(slot) = scope.iter_mut().find(|(n, _)| n == name) {
                slot.1 = v;
            } else {
                scope.push((name.to_string(), v));
            }
        }
    }

    fn lookup(&self, name: &str) -> Option<&Val> {
        self.scopes.iter().rev().find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v))
    }

    /// Rebinds an existing name in the scope that holds it.
    fn assign(&mut self, name: &str, v: Val) -> bool {
        for s in self.scopes.iter_mut().rev() {
            if let Some(slot) = s.iter_mut().rev().find(|(n, _)| n == name) {
                slot.1 = v;
                return true;
            }
        }
        false
    }

    fn unknown_name(&self, name: &str, span: Span) -> Diagnostic {
        let all: Vec<&str> = self
            .scopes
            .iter()
            .flat_map(|s| s.iter().map(|(n, _)| n.as_str()))
            .chain(BUILTINS.iter().copied())
            .collect();
        let close = close_matches(name, all);
        let mut d = Diagnostic::error("E0002", format!("unknown name `{name}`")).with_primary(span, "not defined here");
        if !close.is_empty() {
            d = d.with_note(format!("did you mean: {}?", close.join(", ")));
        }
        d
    }

    fn const_param(&mut self, p: &ast::ParamDecl, req: &Request) -> R<Val> {
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
            (_, v) => v,
        })
    }

    fn runtime_param(&mut self, p: &ast::ParamDecl, req: &Request) -> R<(Val, ParamSig)> {
        if let Some(d) = &p.default {
            return Err(Diagnostic::error("E0006", "only `const` parameters take defaults")
                .with_primary(d.span, "run-time parameters are given at launch")
                .with_note(format!("write `const {}: …` to make it a compile-time constant", p.name.name)));
        }
        let name = p.name.name.clone();
        let index = self.param_names.len();
        match &p.ty {
            TypeExpr::Tensor { dtype, rank, span } => {
                let d = self.dtype_named(dtype)?;
                if !(1..=8).contains(rank) {
                    return Err(Diagnostic::error("E0016", format!("tensor rank {rank} is outside 1..=8"))
                        .with_primary(*span, "bad rank"));
                }
                let rank = *rank as usize;
                let value = self.func.add_param(&name, Type::Tensor { dtype: d, rank });
                let aligned16 = !req.unaligned.contains(&name);
                if let Some(p) = self.func.params.last_mut() {
                    p.divisibility = if aligned16 { 16 } else { 1 };
                }
                Ok((Val::Tensor { value, param: index }, ParamSig::Tensor { name, dtype: d, rank, aligned16 }))
            }
            TypeExpr::Named(t) => {
                let d = DType::parse(&t.name).ok_or_else(|| {
                    Diagnostic::error("E0016", format!("unknown scalar type `{}`", t.name))
                        .with_primary(t.span, "expected i32, i64, f32, f16, bf16 or bool")
                })?;
                let value = self.func.add_param(&name, Type::Scalar(d));
                Ok((Val::Scalar(value), ParamSig::Scalar { name, dtype: d }))
            }
        }
    }

    fn dtype_named(&mut self, id: &ast::Ident) -> R<DType> {
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
            None => Err(self
                .unknown_name(&id.name, id.span)
                .with_note("tensor element types are f16, bf16, f32, i32, i64, i1 or a `dtype` constant")),
        }
    }

    fn block(&mut self, b: &ast::Block) {
        self.scopes.push(vec![]);
        for s in &b.stmts {
            self.stmt(s);
        }
        self.scopes.pop();
    }

    fn stmt(&mut self, s: &ast::Stmt) {
        let r = self.stmt_inner(s);
        if let Err(d) = r {
            self.diags.push(d);
            // Poison what the statement would have bound, so its users stay quiet.
            if let StmtKind::Let(n, _) | StmtKind::Assign(n, _, _) = &s.kind {
                if !self.assign(&n.name, Val::Poison) {
                    self.bind(&n.name, Val::Poison);
                }
            }
        }
    }

    fn stmt_inner(&mut self, s: &ast::Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Let(n, e) => {
                let v = self.expr(e)?;
                if BUILTINS.contains(&n.name.as_str()) {
                    return Err(Diagnostic::error("E0003", format!("`{}` is a builtin and cannot be rebound", n.name))
                        .with_primary(n.span, "pick another name"));
                }
                self.bind(&n.name, v);
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
                        let cur = Expr { kind: ExprKind::Name(n.name.clone()), span: n.span };
                        let whole =
                            Expr { kind: ExprKind::Binary(b, Box::new(cur), Box::new(e.clone())), span: s.span };
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
                match v {
                    Val::Tuple(t) if t.is_empty() => Ok(()),
                    Val::Poison => Ok(()),
                    other => Err(Diagnostic::error(
                        "E0006",
                        format!("the value of this expression ({}) is unused", kind_name(&other)),
                    )
                    .with_primary(e.span, "bind it with `let` or drop it")),
                }
            }
        }
    }

    // ---------------------------------------------------------------- expressions ----

    fn expr(&mut self, e: &Expr) -> R<Val> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Val::Int(*v)),
            ExprKind::Float(v) => Ok(Val::Float(*v)),
            ExprKind::Bool(v) => Ok(Val::Bool(*v)),
            ExprKind::Str(s) => Ok(Val::Str(s.clone())),
            ExprKind::Name(n) => match self.lookup(n) {
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
                                        "grid expressions use integer parameters only",
                                    )
                                    .with_primary(e.span, "not an integer"))
                                }
                            },
                            v => v,
                        });
                    }
                    Ok(v)
                }
                None if BUILTINS.contains(&n.as_str()) => {
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

    fn param_index(&self, name: &str) -> Option<usize> {
        self.param_names.iter().position(|p| p == name)
    }

    fn by_target(&mut self, entries: &[(ast::Ident, Expr)], span: Span) -> R<Val> {
        let mut default = None;
        let mut chosen = None;
        for (k, e) in entries {
            let key = k.name.as_str();
            if key == "default" {
                default = Some(e);
                continue;
            }
            let Some(arch) = tilec_core::target::by_key(key) else {
                return Err(Diagnostic::error("E0013", format!("unknown target `{key}` in by_target"))
                    .with_primary(k.span, "not a target tilec knows")
                    .with_note("keys: sm_90, sm_103, sm_121 (with or without the `a` suffix) and `default`"));
            };
            if arch.name == self.target {
                chosen = Some(e);
            }
        }
        match chosen.or(default) {
            Some(e) => self.expr(e),
            None => {
                Err(Diagnostic::error("E0014", format!("by_target has no entry for {} and no `default`", self.target))
                    .with_primary(span, "add `default: …`"))
            }
        }
    }

    fn field(&mut self, v: Val, f: &ast::Ident, span: Span) -> R<Val> {
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
            (_, "astype" | "reshape") => Err(Diagnostic::error("E0006", format!("method `{}` must be called", f.name))
                .with_primary(f.span, "add `(…)`")),
            _ => Err(Diagnostic::error("E0006", format!("{} has no field `{}`", kind_name(&v), f.name))
                .with_primary(f.span, "unknown field")
                .with_secondary(span, "this value")
                .with_note("tensors have .shape, .dtype and .ndim; tiles have .shape and .dtype")),
        }
    }

    fn index(&mut self, v: Val, items: &[IndexItem], span: Span) -> R<Val> {
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
                if self.host {
                    Ok(Val::Host(HostExpr::Dim { param, axis: axis as usize }))
                } else {
                    Ok(Val::Scalar(self.func.push(
                        OpKind::Dim { tensor: value, axis: axis as u32 },
                        Type::Scalar(DType::I32),
                        Some(span),
                    )))
                }
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
                // `t[:, None]`: `:` keeps a dim, `None` inserts one of extent 1.
                let ty = self.func.ty(id).clone();
                let mut shape = vec![];
                let mut dims = ty.shape().iter();
                for it in items {
                    match it {
                        IndexItem::Full(_) => match dims.next() {
                            Some(d) => shape.push(*d),
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
                shape.extend(dims.copied());
                Ok(Val::Tile(self.func.push(OpKind::Reshape(id), Type::tile(shape, ty.dtype()), Some(span))))
            }
            other => Err(Diagnostic::error("E0006", format!("{} cannot be indexed", kind_name(&other)))
                .with_primary(span, "here")),
        }
    }

    /// A constant axis in `-rank..rank`, normalised to `0..rank`.
    fn const_axis(&mut self, e: &Expr, rank: i64) -> R<i64> {
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

    fn unary(&mut self, op: UnaryOp, v: Val, span: Span) -> R<Val> {
        match (op, v) {
            (_, Val::Poison) => Ok(Val::Poison),
            (UnaryOp::Neg, Val::Int(i)) => i
                .checked_neg()
                .map(Val::Int)
                .ok_or_else(|| Diagnostic::error("E0014", "integer overflow").with_primary(span, "here")),
            (UnaryOp::Neg, Val::Float(f)) => Ok(Val::Float(-f)),
            (UnaryOp::Not, Val::Bool(b)) => Ok(Val::Bool(!b)),
            (UnaryOp::Neg, Val::Host(h)) => Ok(Val::Host(HostExpr::Sub(Box::new(HostExpr::Int(0)), Box::new(h)))),
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
                format!("`{}` does not apply to {}", if op == UnaryOp::Neg { "-" } else { "not" }, kind_name(&v)),
            )
            .with_primary(span, "here")),
        }
    }

    fn value_id(&self, v: &Val) -> ValueId {
        match v {
            Val::Tile(id) | Val::Scalar(id) => *id,
            _ => ValueId(u32::MAX),
        }
    }

    fn binary(&mut self, op: AB, a: Val, b: Val, sa: Span, sb: Span, span: Span) -> R<Val> {
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
            AB::Shl | AB::Shr => return Err(not_lowered(span, "shifts on run-time values")),
        };
        self.arith(emit, a, b, sa, sb, span, op)
    }

    /// A run-time arithmetic op with broadcasting and literal adoption.
    #[allow(clippy::too_many_arguments)]
    fn arith(&mut self, emit: Emit, a: Val, b: Val, sa: Span, sb: Span, span: Span, src: AB) -> R<Val> {
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
        if src == AB::Div && !d.is_float() {
            return Err(Diagnostic::error("E0008", "`/` is true division and needs floats")
                .with_primary(span, format!("both sides are {d}"))
                .with_note("use `//` for integer floor division"));
        }
        if src == AB::FloorDiv && d.is_float() {
            return Err(not_lowered(span, "`//` on float values"));
        }
        if matches!(emit, Emit::Logic(_)) && d != DType::I1 {
            return Err(Diagnostic::error("E0008", format!("`{}` needs bools (i1), found {d}", src.symbol()))
                .with_primary(span, "not a bool")
                .with_note("compare first, e.g. `x > 0`"));
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
                let x = self.as_tile(x, &shape, span)?;
                let y = self.as_tile(y, &shape, span)?;
                Ok(Val::Tile(self.func.push(make(x, y), Type::tile(shape, result_dtype), Some(span))))
            }
        }
    }

    /// A constant or run-time value as an SSA value of dtype `d`.
    fn materialize(&mut self, v: Val, d: DType, span: Span) -> R<ValueId> {
        match v {
            Val::Tile(id) | Val::Scalar(id) => Ok(id),
            Val::Int(i) if d.is_float() => {
                Ok(self.func.push(OpKind::ConstFloat(i as f64), Type::Scalar(d), Some(span)))
            }
            Val::Int(i) => {
                if d == DType::I32 && i32::try_from(i).is_err() {
                    return Err(
                        Diagnostic::error("E0014", format!("{i} does not fit in i32")).with_primary(span, "too large")
                    );
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
    fn as_tile(&mut self, v: ValueId, shape: &[i64], span: Span) -> R<ValueId> {
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
            Type::Tensor { .. } => {
                Err(Diagnostic::error("E0006", "a tensor is not a tile; load it first").with_primary(span, "here"))
            }
        }
    }

    // --------------------------------------------------------------------- calls ----

    fn call(&mut self, callee: &Expr, args: &[ast::Arg], span: Span) -> R<Val> {
        // Methods: `value.astype(d)`, `value.reshape(shape)`.
        if let ExprKind::Field(base, m) = &callee.kind {
            if matches!(m.name.as_str(), "astype" | "reshape") {
                let recv = self.expr(base)?;
                let a = Args::new(self, args, &[("arg", true)], &m.name, span)?;
                return match m.name.as_str() {
                    "astype" => {
                        let d = a.dtype(self, 0)?;
                        self.cast(recv, d, span)
                    }
                    _ => self.reshape(recv, a.get(0), a.span(0), span),
                };
            }
        }
        let ExprKind::Name(name) = &callee.kind else {
            return Err(Diagnostic::error("E0006", "only builtins and methods can be called")
                .with_primary(callee.span, "not callable"));
        };
        if self.lookup(name).is_some() && !BUILTINS.contains(&name.as_str()) {
            return Err(Diagnostic::error("E0006", format!("`{name}` is a value, not a function"))
                .with_primary(callee.span, "not callable"));
        }
        match name.as_str() {
            "bid" => {
                let a = Args::new(self, args, &[("axis", true)], name, span)?;
                let axis = a.const_int(self, 0)?;
                if !(0..3).contains(&axis) {
                    return Err(Diagnostic::error("E0011", format!("grid axis {axis} is not 0, 1 or 2"))
                        .with_primary(span, "here"));
                }
                if self.host {
                    return Err(Diagnostic::error("E0006", "`bid` is not available in the grid expression")
                        .with_primary(span, "here"));
                }
                Ok(Val::Scalar(self.func.push(OpKind::Bid { axis: axis as u32 }, Type::Scalar(DType::I32), Some(span))))
            }
            "num_blocks" => {
                let a = Args::new(self, args, &[("axis", true)], name, span)?;
                let axis = a.const_int(self, 0)?;
                if !(0..3).contains(&axis) {
                    return Err(Diagnostic::error("E0011", format!("grid axis {axis} is not 0, 1 or 2"))
                        .with_primary(span, "here"));
                }
                Ok(Val::Scalar(self.func.push(
                    OpKind::NumBlocks { axis: axis as u32 },
                    Type::Scalar(DType::I32),
                    Some(span),
                )))
            }
            "cdiv" | "min" | "max" if args.len() == 2 && args.iter().all(|a| a.name.is_none()) => {
                let x = self.expr(&args[0].value)?;
                let y = self.expr(&args[1].value)?;
                self.int_fn(name, x, y, args[0].value.span, args[1].value.span, span)
            }
            "next_pow2" => {
                let a = Args::new(self, args, &[("n", true)], name, span)?;
                let n = a.const_int(self, 0)?;
                if !(1..=(1 << 40)).contains(&n) {
                    return Err(Diagnostic::error("E0014", format!("next_pow2({n}) is out of range"))
                        .with_primary(span, "here"));
                }
                Ok(Val::Int((n as u64).next_power_of_two() as i64))
            }
            "static_assert" => {
                let a = Args::new(self, args, &[("cond", true), ("msg", false)], name, span)?;
                let msg = match a.get(1) {
                    Some(Val::Str(s)) => s.clone(),
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
            "load" => self.load(args, span),
            "store" => self.store(args, span),
            "max" | "min" | "sum" => {
                let a = Args::new(self, args, &[("x", true), ("axis", true), ("keepdims", false)], name, span)?;
                let kind = match name.as_str() {
                    "max" => ReduceKind::Max,
                    "min" => ReduceKind::Min,
                    _ => ReduceKind::Sum,
                };
                self.reduce(kind, &a, span)
            }
            "maximum" | "minimum" => {
                let a = Args::new(self, args, &[("a", true), ("b", true)], name, span)?;
                let op = if name == "maximum" { BinOp::Max } else { BinOp::Min };
                let (x, y) = (a.get(0).cloned().unwrap_or(Val::Poison), a.get(1).cloned().unwrap_or(Val::Poison));
                if matches!(x, Val::Poison) || matches!(y, Val::Poison) {
                    return Ok(Val::Poison);
                }
                self.arith(Emit::Bin(op, MathFlags::default()), x, y, a.span(0), a.span(1), span, AB::Add)
            }
            "exp" | "exp2" | "log" | "log2" | "sqrt" | "rsqrt" | "tanh" | "sin" | "cos" | "abs" => {
                let a =
                    Args::new(self, args, &[("x", true), ("flush_to_zero", false), ("rounding", false)], name, span)?;
                let flags = self.math_flags(&a, 1, 2)?;
                let op = match name.as_str() {
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
                        let ty = self.func.ty(id).clone();
                        if !ty.dtype().is_float() {
                            return Err(Diagnostic::error(
                                "E0008",
                                format!("`{name}` needs a float operand, found {}", ty.dtype()),
                            )
                            .with_primary(a.span(0), "not a float")
                            .with_note("cast it first: `.astype(f32)`"));
                        }
                        Ok(wrap(&x, self.func.push(OpKind::Unary { op, value: id, flags }, ty, Some(span))))
                    }
                    other => Err(Diagnostic::error(
                        "E0006",
                        format!("`{name}` needs a tile or a float, found {}", kind_name(&other)),
                    )
                    .with_primary(a.span(0), "here")),
                }
            }
            "sigmoid" => {
                // 1 / (1 + exp(-x)), built from lowered elementwise ops.
                let a = Args::new(self, args, &[("x", true)], name, span)?;
                let x = a.get(0).cloned().unwrap_or(Val::Poison);
                let neg = self.unary(UnaryOp::Neg, x, span)?;
                let e = match neg {
                    Val::Tile(id) | Val::Scalar(id) => {
                        let ty = self.func.ty(id).clone();
                        if !ty.dtype().is_float() {
                            return Err(Diagnostic::error("E0008", "`sigmoid` needs a float operand")
                                .with_primary(a.span(0), "not a float"));
                        }
                        wrap(
                            &neg,
                            self.func.push(
                                OpKind::Unary { op: UnOp::Exp, value: id, flags: MathFlags::default() },
                                ty,
                                Some(span),
                            ),
                        )
                    }
                    Val::Float(f) => Val::Float(f.exp()),
                    Val::Int(i) => Val::Float((i as f64).exp()),
                    other => return Ok(other),
                };
                let d = self.binary(AB::Add, Val::Float(1.0), e, span, span, span)?;
                self.binary(AB::Div, Val::Float(1.0), d, span, span, span)
            }
            "truediv" => {
                let a = Args::new(
                    self,
                    args,
                    &[("a", true), ("b", true), ("flush_to_zero", false), ("rounding", false)],
                    name,
                    span,
                )?;
                let flags = self.math_flags(&a, 2, 3)?;
                let (x, y) = (a.get(0).cloned().unwrap_or(Val::Poison), a.get(1).cloned().unwrap_or(Val::Poison));
                if matches!(x, Val::Poison) || matches!(y, Val::Poison) {
                    return Ok(Val::Poison);
                }
                self.arith(Emit::Bin(BinOp::Div, flags), x, y, a.span(0), a.span(1), span, AB::Div)
            }
            "arange" => {
                let a = Args::new(self, args, &[("n", true), ("dtype", false)], name, span)?;
                let n = a.const_int(self, 0)?;
                let shape = self.tile_shape(Some(&Val::Int(n)), a.span(0))?;
                if let Some(v) = a.get(1) {
                    if !matches!(v, Val::DType(DType::I32)) {
                        return Err(Diagnostic::error("E0008", "arange produces i32")
                            .with_primary(a.span(1), "use dtype=i32 or cast with .astype"));
                    }
                }
                Ok(Val::Tile(self.func.push(OpKind::Arange, Type::tile(shape, DType::I32), Some(span))))
            }
            "where" => {
                let a = Args::new(self, args, &[("cond", true), ("a", true), ("b", true)], name, span)?;
                if a.any_poison() {
                    return Ok(Val::Poison);
                }
                self.select(
                    a.get(0).cloned().unwrap_or(Val::Poison),
                    a.get(1).cloned().unwrap_or(Val::Poison),
                    a.get(2).cloned().unwrap_or(Val::Poison),
                    [a.span(0), a.span(1), a.span(2)],
                    span,
                )
            }
            "mma" => {
                let a = Args::new(self, args, &[("a", true), ("b", true), ("acc", true)], name, span)?;
                if a.any_poison() {
                    return Ok(Val::Poison);
                }
                self.mma(&a, span)
            }
            "permute" => {
                let a = Args::new(self, args, &[("x", true), ("perm", true)], name, span)?;
                if a.any_poison() {
                    return Ok(Val::Poison);
                }
                let Some(Val::Tile(id)) = a.get(0) else {
                    return Err(Diagnostic::error("E0006", "permute needs a tile").with_primary(a.span(0), "here"));
                };
                let ty = self.func.ty(*id).clone();
                let perm = self.permutation(a.get(1), ty.shape().len(), a.span(1))?;
                let shape: Vec<i64> = perm.iter().map(|&p| ty.shape()[p as usize]).collect();
                Ok(Val::Tile(self.func.push(
                    OpKind::Permute { value: *id, perm },
                    Type::tile(shape, ty.dtype()),
                    Some(span),
                )))
            }
            "reshape" => {
                let a = Args::new(self, args, &[("x", true), ("shape", true)], name, span)?;
                let x = a.get(0).cloned().unwrap_or(Val::Poison);
                self.reshape(x, a.get(1), a.span(1), span)
            }
            "argmax" | "argmin" => {
                let a = Args::new(self, args, &[("x", true), ("axis", true), ("keepdims", false)], name, span)?;
                self.reduce(if name == "argmax" { ReduceKind::Argmax } else { ReduceKind::Argmin }, &a, span)
            }
            "rand" => {
                let a = Args::new(self, args, &[("seed", true), ("offsets", true)], name, span)?;
                if a.any_poison() {
                    return Ok(Val::Poison);
                }
                let seed = match a.get(0) {
                    Some(v @ Val::Int(_)) => self.materialize(v.clone(), DType::I32, a.span(0))?,
                    Some(Val::Scalar(id)) if self.func.ty(*id).dtype().is_int() => *id,
                    _ => {
                        return Err(Diagnostic::error("E0006", "rand's seed is an integer scalar")
                            .with_primary(a.span(0), "here"))
                    }
                };
                let Some(Val::Tile(off)) = a.get(1) else {
                    return Err(Diagnostic::error("E0006", "rand's offsets are an i32 tile (e.g. from arange)")
                        .with_primary(a.span(1), "here"));
                };
                let ot = self.func.ty(*off).clone();
                if ot.dtype() != DType::I32 {
                    return Err(Diagnostic::error(
                        "E0008",
                        format!("rand's offsets must be i32, found {}", ot.dtype()),
                    )
                    .with_primary(a.span(1), "here"));
                }
                Ok(Val::Tile(self.func.push(
                    OpKind::Rand { seed, offsets: *off },
                    Type::tile(ot.shape().to_vec(), DType::F32),
                    Some(span),
                )))
            }
            "print" => {
                let mut prefix = String::new();
                let mut values = vec![];
                for (i, arg) in args.iter().enumerate() {
                    if let Some(n) = &arg.name {
                        return Err(Diagnostic::error("E0005", format!("print takes no named argument `{}`", n.name))
                            .with_primary(n.span, "here"));
                    }
                    match self.expr(&arg.value)? {
                        Val::Str(s) if i == 0 => prefix = s,
                        Val::Tile(id) | Val::Scalar(id) => values.push(id),
                        Val::Poison => return Ok(Val::Tuple(vec![])),
                        v @ (Val::Int(_) | Val::Float(_)) => {
                            let d = if matches!(v, Val::Int(_)) { DType::I32 } else { DType::F32 };
                            values.push(self.materialize(v, d, arg.value.span)?)
                        }
                        other => {
                            return Err(Diagnostic::error("E0006", format!("print cannot show {}", kind_name(&other)))
                                .with_primary(arg.value.span, "here"))
                        }
                    }
                }
                self.func.push_void(OpKind::Print { prefix, values }, Some(span));
                Ok(Val::Tuple(vec![]))
            }
            "gather" => self.gather(args, span),
            "scatter" => self.scatter(args, span),
            "full" | "zeros" => {
                let spec: &[(&str, bool)] = if name == "full" {
                    &[("shape", true), ("value", true), ("dtype", true)]
                } else {
                    &[("shape", true), ("dtype", true)]
                };
                let a = Args::new(self, args, spec, name, span)?;
                if a.any_poison() {
                    return Ok(Val::Poison);
                }
                let shape = self.tile_shape(a.get(0), a.span(0))?;
                let (value, d) = if name == "full" {
                    (a.get(1).cloned().unwrap_or(Val::Poison), a.dtype(self, 2)?)
                } else {
                    (Val::Float(0.0), a.dtype(self, 1)?)
                };
                let value = match value {
                    Val::Int(i) if !d.is_float() => Val::Int(i),
                    Val::Int(i) => Val::Float(i as f64),
                    v => v,
                };
                let s = self.materialize(value, d, a.span(if name == "full" { 1 } else { 0 }))?;
                Ok(Val::Tile(self.func.push(OpKind::Splat(s), Type::tile(shape, d), Some(span))))
            }
            "range" => Err(Diagnostic::error("E0006", "`range` is only valid as the iterable of a `for` loop")
                .with_primary(span, "here")),
            _ => Err(self.unknown_name(name, callee.span)),
        }
    }

    fn int_fn(&mut self, name: &str, x: Val, y: Val, sx: Span, sy: Span, span: Span) -> R<Val> {
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

    fn cast(&mut self, v: Val, d: DType, span: Span) -> R<Val> {
        match v {
            Val::Poison => Ok(Val::Poison),
            Val::Int(i) => Ok(if d.is_float() { Val::Float(i as f64) } else { Val::Int(i) }),
            Val::Float(f) => Ok(if d.is_float() { Val::Float(f) } else { Val::Int(f as i64) }),
            Val::Tile(id) | Val::Scalar(id) => {
                let ty = self.func.ty(id).clone();
                if ty.dtype() == d {
                    return Ok(v);
                }
                if d == DType::I1 || ty.dtype() == DType::I1 {
                    return Err(not_lowered(span, "casts to or from i1"));
                }
                Ok(wrap(&v, self.func.push(OpKind::Cast(id), ty.with_dtype(d), Some(span))))
            }
            other => {
                Err(Diagnostic::error("E0006", format!("{} cannot be cast", kind_name(&other)))
                    .with_primary(span, "here"))
            }
        }
    }

    fn tile_shape(&mut self, v: Option<&Val>, span: Span) -> R<Vec<i64>> {
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
        let total = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d));
        if total.is_none_or(|t| t > (1 << 24)) {
            return Err(Diagnostic::error("E0020", format!("tile {shape:?} has more than 2^24 elements"))
                .with_primary(span, "too large"));
        }
        Ok(shape)
    }

    fn index_values(&mut self, v: Option<&Val>, rank: usize, span: Span) -> R<Vec<ValueId>> {
        let items = match v {
            Some(Val::Tuple(t)) => t.clone(),
            Some(v @ (Val::Int(_) | Val::Scalar(_))) => vec![v.clone()],
            Some(other) => {
                return Err(Diagnostic::error(
                    "E0006",
                    format!("an index is a tuple of integers, found {}", kind_name(other)),
                )
                .with_primary(span, "here"))
            }
            None => return Err(Diagnostic::error("E0004", "missing index").with_primary(span, "here")),
        };
        if items.len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("index has {} components but the tensor has rank {rank}", items.len()),
            )
            .with_primary(span, "here"));
        }
        let mut out = vec![];
        for it in items {
            match &it {
                Val::Scalar(id) if self.func.ty(*id).dtype() != DType::I32 => {
                    return Err(Diagnostic::error(
                        "E0008",
                        format!("index components are i32, found {}", self.func.ty(*id).dtype()),
                    )
                    .with_primary(span, "cast with .astype(i32)"))
                }
                Val::Int(_) | Val::Scalar(_) => out.push(self.materialize(it, DType::I32, span)?),
                other => {
                    return Err(Diagnostic::error(
                        "E0006",
                        format!("index components are integers, found {}", kind_name(other)),
                    )
                    .with_primary(span, "here"))
                }
            }
        }
        Ok(out)
    }

    fn tensor_arg(&self, v: Option<&Val>, span: Span) -> R<(ValueId, DType, usize)> {
        match v {
            Some(Val::Tensor { value, .. }) => match self.func.ty(*value) {
                Type::Tensor { dtype, rank } => Ok((*value, *dtype, *rank)),
                _ => Err(Diagnostic::error("E0006", "expected a tensor").with_primary(span, "here")),
            },
            Some(other) => {
                Err(Diagnostic::error("E0006", format!("expected a tensor parameter, found {}", kind_name(other)))
                    .with_primary(span, "here"))
            }
            None => Err(Diagnostic::error("E0004", "missing tensor").with_primary(span, "here")),
        }
    }

    fn load(&mut self, args: &[ast::Arg], span: Span) -> R<Val> {
        let a = Args::new(
            self,
            args,
            &[
                ("tensor", true),
                ("index", true),
                ("shape", true),
                ("padding", false),
                ("order", false),
                ("latency", false),
            ],
            "load",
            span,
        )?;
        if a.any_poison() {
            return Ok(Val::Poison);
        }
        let (t, d, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        let order = match a.get(4) {
            None => (0..rank as u32).collect(),
            Some(v) => self.permutation(Some(v), rank, a.span(4))?,
        };
        let latency = match a.get(5) {
            None => 0,
            Some(Val::Int(l)) if (1..=16).contains(l) => *l as u32,
            Some(v) => {
                return Err(Diagnostic::error(
                    "E0014",
                    format!("latency must be a constant from 1 to 16, found {}", const_text(v)),
                )
                .with_primary(a.span(5), "here")
                .with_note("the hint is the number of loop iterations a load is issued ahead"))
            }
        };
        let index = self.index_values(a.get(1), rank, a.span(1))?;
        let shape = self.tile_shape(a.get(2), a.span(2))?;
        if shape.len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("tile shape has rank {} but the tensor has rank {rank}", shape.len()),
            )
            .with_primary(a.span(2), "here"));
        }
        let padding = match a.get(3) {
            None => Padding::Zero,
            Some(Val::Int(0)) => Padding::Zero,
            Some(Val::Float(f)) if *f == 0.0 => Padding::Zero,
            Some(Val::Float(f)) if *f == f64::NEG_INFINITY => Padding::NegInf,
            Some(Val::Float(f)) if *f == f64::INFINITY => Padding::PosInf,
            Some(Val::Float(f)) => Padding::Value(*f),
            Some(Val::Int(i)) => Padding::Value(*i as f64),
            Some(other) => {
                return Err(Diagnostic::error(
                    "E0009",
                    format!("padding must be a constant number, found {}", kind_name(other)),
                )
                .with_primary(a.span(3), "here"))
            }
        };
        if !d.is_float() && matches!(padding, Padding::NegInf | Padding::PosInf) {
            return Err(Diagnostic::error("E0008", format!("infinite padding needs a float tensor; this one is {d}"))
                .with_primary(a.span(3), "here"));
        }
        Ok(Val::Tile(self.func.push(
            OpKind::Load { tensor: t, index, padding, order, latency },
            Type::tile(shape, d),
            Some(span),
        )))
    }

    fn store(&mut self, args: &[ast::Arg], span: Span) -> R<Val> {
        let a = Args::new(self, args, &[("tensor", true), ("index", true), ("tile", true)], "store", span)?;
        if a.any_poison() {
            return Ok(Val::Tuple(vec![]));
        }
        let (t, d, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        let index = self.index_values(a.get(1), rank, a.span(1))?;
        let tile = match a.get(2) {
            Some(Val::Tile(id)) => *id,
            Some(other) => {
                return Err(Diagnostic::error("E0006", format!("store needs a tile, found {}", kind_name(other)))
                    .with_primary(a.span(2), "here"))
            }
            None => return Err(Diagnostic::error("E0004", "missing tile").with_primary(span, "here")),
        };
        let tt = self.func.ty(tile).clone();
        if tt.shape().len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("a tile of rank {} cannot be stored into a tensor of rank {rank}", tt.shape().len()),
            )
            .with_primary(a.span(2), format!("shape {:?}", tt.shape())));
        }
        if tt.dtype() != d {
            return Err(Diagnostic::error("E0008", format!("storing a {} tile into a {d} tensor", tt.dtype()))
                .with_primary(a.span(2), format!("this tile is {}", tt.dtype()))
                .with_note(format!("cast it: `.astype({d})`")));
        }
        self.func.push_void(OpKind::Store { tensor: t, index, tile }, Some(span));
        Ok(Val::Tuple(vec![]))
    }

    fn reduce(&mut self, kind: ReduceKind, a: &Args, span: Span) -> R<Val> {
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
        let r = self.func.push(
            OpKind::Reduce { kind, axis: axis as u32, value: id },
            Type::tile(shape.clone(), rd),
            Some(span),
        );
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

impl Cx<'_> {
    /// `flush_to_zero=` (bool) and `rounding=` ("approx" | "nearest") at argument slots.
    fn math_flags(&mut self, a: &Args, ftz: usize, rounding: usize) -> R<MathFlags> {
        let mut f = MathFlags::default();
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

    /// A constant permutation of `0..rank`.
    fn permutation(&mut self, v: Option<&Val>, rank: usize, span: Span) -> R<Vec<u32>> {
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

    fn reshape(&mut self, x: Val, shape: Option<&Val>, sspan: Span, span: Span) -> R<Val> {
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

    fn select(&mut self, c: Val, a: Val, b: Val, spans: [Span; 3], span: Span) -> R<Val> {
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

    fn mma(&mut self, a: &Args, span: Span) -> R<Val> {
        let mut ids = [ValueId(0); 3];
        for (k, slot) in ids.iter_mut().enumerate() {
            match a.get(k) {
                Some(Val::Tile(id)) => *slot = *id,
                other => {
                    return Err(Diagnostic::error(
                        "E0006",
                        format!("mma's operands are tiles, found {}", other.map(kind_name).unwrap_or("nothing")),
                    )
                    .with_primary(a.span(k), "here"))
                }
            }
        }
        let [ta, tb, tc] = ids.map(|i| self.func.ty(i).clone());
        if ta.shape().len() != 2 || tb.shape().len() != 2 || tc.shape().len() != 2 {
            return Err(Diagnostic::error(
                "E0012",
                format!("mma takes 2-D tiles, got {:?} · {:?} + {:?}", ta.shape(), tb.shape(), tc.shape()),
            )
            .with_primary(span, "reshape the operands to 2-D first"));
        }
        let (m, k, k2, n) = (ta.shape()[0], ta.shape()[1], tb.shape()[0], tb.shape()[1]);
        if k != k2 {
            return Err(Diagnostic::error(
                "E0007",
                format!("mma: a is {m}x{k} but b is {k2}x{n}; the inner dims must agree"),
            )
            .with_primary(a.span(0), format!("{m}x{k}"))
            .with_secondary(a.span(1), format!("{k2}x{n}"))
            .with_note("to multiply by a transposed tile, load it with order=… or permute it"));
        }
        if tc.shape() != [m, n] {
            return Err(Diagnostic::error(
                "E0007",
                format!("mma: a·b is {m}x{n} but the accumulator is {:?}", tc.shape()),
            )
            .with_primary(a.span(2), "accumulator shape"));
        }
        if ta.dtype() != tb.dtype() {
            return Err(Diagnostic::error("E0008", format!("mma operands are {} and {}", ta.dtype(), tb.dtype()))
                .with_primary(a.span(0), format!("{}", ta.dtype()))
                .with_secondary(a.span(1), format!("{}", tb.dtype()))
                .with_note("cast one of them with .astype"));
        }
        let ok = matches!(
            (ta.dtype(), tc.dtype()),
            (DType::F16 | DType::BF16, DType::F32) | (DType::F16, DType::F16) | (DType::F32, DType::F32)
        );
        if !ok {
            return Err(Diagnostic::error(
                "E0008",
                format!("mma of {} operands into a {} accumulator is not supported", ta.dtype(), tc.dtype()),
            )
            .with_primary(span, "here")
            .with_note("supported: f16/bf16 operands with an f32 accumulator, f16 into f16, f32 (tf32) into f32"));
        }
        Ok(Val::Tile(self.func.push(OpKind::Mma { a: ids[0], b: ids[1], acc: ids[2] }, tc, Some(span))))
    }

    fn gather(&mut self, args: &[ast::Arg], span: Span) -> R<Val> {
        let a = Args::new(self, args, &[("tensor", true), ("index", true), ("padding", false)], "gather", span)?;
        if a.any_poison() {
            return Ok(Val::Poison);
        }
        let (t, d, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        let items = match a.get(1) {
            Some(Val::Tuple(t)) => t.clone(),
            Some(v) => vec![v.clone()],
            None => vec![],
        };
        if items.len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("gather needs {rank} index tiles (one per dim), got {}", items.len()),
            )
            .with_primary(a.span(1), "here"));
        }
        let mut ids = vec![];
        let mut shape: Vec<i64> = vec![];
        for it in items {
            let id = match it {
                Val::Tile(id) | Val::Scalar(id) if self.func.ty(id).dtype() == DType::I32 => id,
                v @ Val::Int(_) => self.materialize(v, DType::I32, a.span(1))?,
                other => {
                    return Err(Diagnostic::error(
                        "E0008",
                        format!("gather indices are i32 tiles, found {}", kind_name(&other)),
                    )
                    .with_primary(a.span(1), "here"))
                }
            };
            shape = broadcast_shape(&shape, self.func.ty(id).shape()).ok_or_else(|| {
                Diagnostic::error("E0007", "gather's index tiles do not broadcast together")
                    .with_primary(a.span(1), "here")
            })?;
            ids.push(id);
        }
        if shape.is_empty() {
            return Err(
                Diagnostic::error("E0006", "gather needs at least one index tile").with_primary(a.span(1), "here")
            );
        }
        let ids = ids.into_iter().map(|i| self.as_tile(i, &shape, span)).collect::<R<Vec<_>>>()?;
        let padding = match a.get(2) {
            None | Some(Val::Int(0)) => Padding::Zero,
            Some(Val::Float(f)) if *f == f64::NEG_INFINITY => Padding::NegInf,
            Some(Val::Float(f)) if *f == f64::INFINITY => Padding::PosInf,
            Some(Val::Float(f)) => Padding::Value(*f),
            Some(Val::Int(i)) => Padding::Value(*i as f64),
            Some(_) => {
                return Err(
                    Diagnostic::error("E0009", "padding must be a constant number").with_primary(a.span(2), "here")
                )
            }
        };
        Ok(Val::Tile(self.func.push(
            OpKind::Gather { tensor: t, index: ids, padding },
            Type::tile(shape, d),
            Some(span),
        )))
    }

    fn scatter(&mut self, args: &[ast::Arg], span: Span) -> R<Val> {
        let a = Args::new(self, args, &[("tensor", true), ("index", true), ("tile", true)], "scatter", span)?;
        if a.any_poison() {
            return Ok(Val::Tuple(vec![]));
        }
        let (t, d, rank) = self.tensor_arg(a.get(0), a.span(0))?;
        let Some(Val::Tile(tile)) = a.get(2) else {
            return Err(Diagnostic::error("E0006", "scatter writes a tile").with_primary(a.span(2), "here"));
        };
        let tile = *tile;
        let tt = self.func.ty(tile).clone();
        if tt.dtype() != d {
            return Err(Diagnostic::error("E0008", format!("scattering a {} tile into a {d} tensor", tt.dtype()))
                .with_primary(a.span(2), "here")
                .with_note(format!("cast it: `.astype({d})`")));
        }
        let items = match a.get(1) {
            Some(Val::Tuple(t)) => t.clone(),
            Some(v) => vec![v.clone()],
            None => vec![],
        };
        if items.len() != rank {
            return Err(Diagnostic::error(
                "E0012",
                format!("scatter needs {rank} index tiles (one per dim), got {}", items.len()),
            )
            .with_primary(a.span(1), "here"));
        }
        let shape = tt.shape().to_vec();
        let mut ids = vec![];
        for it in items {
            let id = match it {
                Val::Tile(id) | Val::Scalar(id) if self.func.ty(id).dtype() == DType::I32 => id,
                v @ Val::Int(_) => self.materialize(v, DType::I32, a.span(1))?,
                other => {
                    return Err(Diagnostic::error(
                        "E0008",
                        format!("scatter indices are i32 tiles, found {}", kind_name(&other)),
                    )
                    .with_primary(a.span(1), "here"))
                }
            };
            let s = self.func.ty(id).shape().to_vec();
            if broadcast_shape(&s, &shape).as_deref() != Some(shape.as_slice()) {
                return Err(Diagnostic::error(
                    "E0007",
                    format!("scatter index of shape {s:?} does not broadcast to the tile {shape:?}"),
                )
                .with_primary(a.span(1), "here"));
            }
            ids.push(self.as_tile(id, &shape, span)?);
        }
        self.func.push_void(OpKind::Scatter { tensor: t, index: ids, tile }, Some(span));
        Ok(Val::Tuple(vec![]))
    }

    /// A value bound before a loop or `if` as a run-time SSA value (constants materialised).
    fn carried_value(&mut self, name: &str, span: Span) -> R<Option<ValueId>> {
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
    fn yield_value(&mut self, name: &str, want: &Type, span: Span) -> R<ValueId> {
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
            .with_note(
                "a value carried through a loop or out of an if keeps its shape and dtype; cast it back with .astype",
            ));
        }
        Ok(id)
    }

    fn for_loop(&mut self, var: &ast::Ident, range: &Expr, body: &ast::Block, span: Span) -> R<()> {
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
        self.scopes.push(vec![]);
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
    fn branch(&mut self, outer: &[(String, ValueId)], span: Span, f: &dyn Fn(&mut Cx)) -> R<(Vec<Op>, Vec<ValueId>)> {
        let saved = std::mem::take(&mut self.func.ops);
        self.scopes.push(vec![]);
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

    fn runtime_if(&mut self, cond: ValueId, then: &ast::Block, els: Option<&ast::Stmt>, span: Span) -> R<()> {
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
fn assigned_names(stmts: &[ast::Stmt]) -> Vec<String> {
    fn go(stmts: &[ast::Stmt], declared: &mut Vec<String>, out: &mut Vec<String>) {
        for s in stmts {
            match &s.kind {
                StmtKind::Let(n, _) => declared.push(n.name.clone()),
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

/// Argument matching for builtins: positional then named, each parameter once.
struct Args {
    vals: Vec<Option<(Val, Span)>>,
}

impl Args {
    fn new(cx: &mut Cx, args: &[ast::Arg], spec: &[(&str, bool)], fname: &str, span: Span) -> R<Args> {
        let sig = spec
            .iter()
            .map(|(n, req)| if *req { n.to_string() } else { format!("{n}=…") })
            .collect::<Vec<_>>()
            .join(", ");
        let mut vals: Vec<Option<(Val, Span)>> = vec![None; spec.len()];
        let mut pos = 0;
        for a in args {
            let slot = match &a.name {
                None => {
                    if pos >= spec.len() {
                        return Err(Diagnostic::error(
                            "E0004",
                            format!("`{fname}` takes at most {} arguments", spec.len()),
                        )
                        .with_primary(a.value.span, "extra argument")
                        .with_note(format!("signature: {fname}({sig})")));
                    }
                    pos += 1;
                    pos - 1
                }
                Some(n) => match spec.iter().position(|(s, _)| *s == n.name) {
                    Some(i) if vals[i].is_none() => i,
                    Some(_) => {
                        return Err(Diagnostic::error("E0005", format!("argument `{}` given twice", n.name))
                            .with_primary(n.span, "repeated"))
                    }
                    None => {
                        let close = close_matches(&n.name, spec.iter().map(|s| s.0));
                        let mut d = Diagnostic::error("E0005", format!("`{fname}` has no argument `{}`", n.name))
                            .with_primary(n.span, "unknown argument")
                            .with_note(format!("signature: {fname}({sig})"));
                        if !close.is_empty() {
                            d = d.with_note(format!("did you mean `{}`?", close[0]));
                        }
                        return Err(d);
                    }
                },
            };
            let v = cx.expr(&a.value)?;
            vals[slot] = Some((v, a.value.span));
        }
        for (i, (n, req)) in spec.iter().enumerate() {
            if *req && vals[i].is_none() {
                return Err(Diagnostic::error("E0004", format!("`{fname}` is missing argument `{n}`"))
                    .with_primary(span, "in this call")
                    .with_note(format!("signature: {fname}({sig})")));
            }
        }
        Ok(Args { vals })
    }

    fn get(&self, i: usize) -> Option<&Val> {
        self.vals.get(i).and_then(|v| v.as_ref()).map(|v| &v.0)
    }

    fn span(&self, i: usize) -> Span {
        self.vals.get(i).and_then(|v| v.as_ref()).map(|v| v.1).unwrap_or_default()
    }

    fn any_poison(&self) -> bool {
        fn poisoned(v: &Val) -> bool {
            match v {
                Val::Poison => true,
                Val::Tuple(items) => items.iter().any(poisoned),
                _ => false,
            }
        }
        self.vals.iter().flatten().any(|(v, _)| poisoned(v))
    }

    fn const_int(&self, _cx: &Cx, i: usize) -> R<i64> {
        match self.get(i) {
            Some(Val::Int(v)) => Ok(*v),
            Some(other) => {
                Err(Diagnostic::error("E0009", format!("expected a constant integer, found {}", kind_name(other)))
                    .with_primary(self.span(i), "not constant"))
            }
            None => Err(Diagnostic::error("E0004", "missing argument").with_primary(self.span(i), "here")),
        }
    }

    fn dtype(&self, _cx: &Cx, i: usize) -> R<DType> {
        match self.get(i) {
            Some(Val::DType(d)) => Ok(*d),
            Some(other) => Err(Diagnostic::error("E0006", format!("expected a dtype, found {}", kind_name(other)))
                .with_primary(self.span(i), "not a dtype")),
            None => Err(Diagnostic::error("E0004", "missing dtype").with_primary(self.span(i), "here")),
        }
    }
}

/// Builtin function names (cannot be rebound with `let`).
pub const BUILTINS: &[&str] = &[
    "bid",
    "num_blocks",
    "abs",
    "argmin",
    "load",
    "store",
    "max",
    "min",
    "sum",
    "exp",
    "exp2",
    "maximum",
    "minimum",
    "cdiv",
    "full",
    "zeros",
    "next_pow2",
    "static_assert",
    "range",
    "arange",
    "where",
    "mma",
    "permute",
    "reshape",
    "log",
    "log2",
    "sqrt",
    "rsqrt",
    "tanh",
    "sigmoid",
    "sin",
    "cos",
    "truediv",
    "argmax",
    "print",
    "rand",
    "gather",
    "scatter",
];

fn wrap(like: &Val, id: ValueId) -> Val {
    match like {
        Val::Scalar(_) => Val::Scalar(id),
        _ => Val::Tile(id),
    }
}

fn not_lowered(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error("E0900", format!("not lowered yet: {what}"))
        .with_primary(span, "not supported by this version of tilec")
        .with_note("the language has this construct, but no lowering to GPU code exists for it yet")
}

fn bad_operands(op: AB, a: &Val, b: &Val, span: Span) -> Diagnostic {
    Diagnostic::error("E0006", format!("`{}` cannot combine {} and {}", op.symbol(), kind_name(a), kind_name(b)))
        .with_primary(span, "here")
}

fn as_f64(v: &Val) -> f64 {
    match v {
        Val::Int(i) => *i as f64,
        Val::Float(f) => *f,
        _ => f64::NAN,
    }
}

fn fold_int(op: AB, x: i64, y: i64, sy: Span, span: Span) -> R<Val> {
    let ovf = || Diagnostic::error("E0014", "integer overflow in a constant expression").with_primary(span, "here");
    let zero = || Diagnostic::error("E0014", "division by zero in a constant expression").with_primary(sy, "this is 0");
    Ok(match op {
        AB::Add => Val::Int(x.checked_add(y).ok_or_else(ovf)?),
        AB::Sub => Val::Int(x.checked_sub(y).ok_or_else(ovf)?),
        AB::Mul => Val::Int(x.checked_mul(y).ok_or_else(ovf)?),
        AB::FloorDiv => {
            if y == 0 {
                return Err(zero());
            }
            Val::Int(x.checked_div_euclid(y).ok_or_else(ovf)?)
        }
        AB::Rem => {
            if y == 0 {
                return Err(zero());
            }
            Val::Int(x.checked_rem_euclid(y).ok_or_else(ovf)?)
        }
        AB::Div => {
            if y == 0 {
                return Err(zero());
            }
            Val::Float(x as f64 / y as f64)
        }
        AB::Eq => Val::Bool(x == y),
        AB::Ne => Val::Bool(x != y),
        AB::Lt => Val::Bool(x < y),
        AB::Le => Val::Bool(x <= y),
        AB::Gt => Val::Bool(x > y),
        AB::Ge => Val::Bool(x >= y),
        AB::BitAnd => Val::Int(x & y),
        AB::BitOr => Val::Int(x | y),
        AB::BitXor => Val::Int(x ^ y),
        AB::Shl | AB::Shr => {
            if !(0..64).contains(&y) {
                return Err(
                    Diagnostic::error("E0014", format!("shift by {y} is out of range")).with_primary(sy, "here")
                );
            }
            Val::Int(if op == AB::Shl { x.checked_shl(y as u32).ok_or_else(ovf)? } else { x >> y })
        }
        AB::And | AB::Or => return Err(Diagnostic::error("E0006", "`and`/`or` take bools").with_primary(span, "here")),
    })
}

fn fold_float(op: AB, x: f64, y: f64, span: Span) -> R<Val> {
    Ok(match op {
        AB::Add => Val::Float(x + y),
        AB::Sub => Val::Float(x - y),
        AB::Mul => Val::Float(x * y),
        AB::Div => Val::Float(x / y),
        AB::Eq => Val::Bool(x == y),
        AB::Ne => Val::Bool(x != y),
        AB::Lt => Val::Bool(x < y),
        AB::Le => Val::Bool(x <= y),
        AB::Gt => Val::Bool(x > y),
        AB::Ge => Val::Bool(x >= y),
        _ => {
            return Err(Diagnostic::error("E0006", format!("`{}` does not apply to floats", op.symbol()))
                .with_primary(span, "here"))
        }
    })
}

fn broadcast_shape(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (x, y) {
            _ if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}
