//! Checking and emission: AST + target + constants → [`tir::Func`] and the kernel ABI.
//!
//! Elaboration walks the kernel once with every compile-time constant known (defaults, the
//! target's `by_target` choice, the caller's overrides). Compile-time values fold as they are
//! met (`BLOCK_N // 2`, `if CAUSAL { … }`); run-time values become ops of the tile IR. Shapes
//! and dtypes are checked at the point of use, so an error names the expression that broke
//! the rule. Errors in one statement do not stop the others: the statement's result becomes
//! a poison value that silences follow-up errors, and checking goes on.

mod args;
mod builtins;
mod expr;
mod fold;
mod kernel;
mod stmt;

use crate::ast::{
    self, AssignOp, BinOp as AB, Expr, ExprKind, ExtentDecl, IndexItem, Kernel, StmtKind, TypeExpr, UnaryOp,
};
use std::collections::{BTreeMap, BTreeSet};
use tilec_core::abi::{Extent, HostExpr, ParamSig, Signature};
use tilec_core::tir::{
    self, AtomicOp, BinOp, CmpPred, Func, LogicOp, MathFlags, MemScope, MemSem, Op, OpKind, Padding, ReduceKind, Type,
    UnOp, ValueId,
};
use tilec_core::{DType, Diagnostic, Span};

use args::Args;
use fold::{broadcast_shape, fold_float, fold_int};
use kernel::elaborate_kernel;

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

    /// The text [`ConstArg::parse`] reads back as this value (`--const NAME=TEXT`): a float
    /// keeps its point, so that it is not read as an integer.
    pub fn text(&self) -> String {
        match self {
            ConstArg::Int(v) => v.to_string(),
            ConstArg::Bool(v) => v.to_string(),
            ConstArg::Float(v) => format!("{v:?}"),
            ConstArg::DType(d) => d.to_string(),
        }
    }

    pub(crate) fn to_val(&self) -> Val {
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
    /// Whether the products may take the tcgen05 family (`by_target`'s `tcgen05` key): `None`
    /// is the target's own (sm_100a, sm_103a); the compiler says `Some(false)` under
    /// `--no-tcgen05` and where an emulated target's products run as `mma.sync`.
    pub tcgen05: Option<bool>,
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
pub(crate) enum Val {
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
    /// A shape name of a tensor parameter's type (`tensor<T, [M, N]>`): reads as
    /// `x.shape[axis]` of the first tensor naming it.
    Extent {
        value: ValueId,
        param: usize,
        axis: usize,
    },
    /// A run-time integer of the host (grid expressions).
    Host(HostExpr),
}

pub(crate) type R<T> = Result<T, Diagnostic>;

/// Which elementwise op a binary operator becomes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Emit {
    /// Binary arithmetic, with the math options of `truediv`.
    Bin(BinOp, MathFlags),
    Cmp(CmpPred),
    Logic(LogicOp),
}

/// The error for arithmetic on a storage type (`u8`, `u32`, fp8): it takes a cast first.
pub(crate) fn storage_only(d: DType, what: &str, span: Span) -> Diagnostic {
    let to = if d.is_float() {
        "f32"
    } else if d == DType::U32 {
        "i64"
    } else {
        "i32"
    };
    Diagnostic::error("E0008", format!("{what} of {d} values: {d} is a storage type"))
        .with_primary(span, format!("{d}"))
        .with_note(format!("load, store and cast {d}; compute after a cast, e.g. `.astype({to})`"))
}

/// The builtin function names, in table order.
pub fn builtin_names() -> Vec<&'static str> {
    builtins::names().collect()
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
        Val::Extent { .. } => "a tensor extent",
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

pub(crate) struct Cx<'a> {
    func: Func,
    /// Name → value, innermost scope last (maps: lookups stay logarithmic in big kernels).
    scopes: Vec<BTreeMap<String, Val>>,
    target: &'a str,
    /// The products may take tcgen05 ([`Request::tcgen05`]).
    tcgen05: bool,
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
            let close = tilec_core::diag::close_matches(name, names.iter().copied());
            let mut d =
                Diagnostic::error("E0017", format!("no kernel named `{name}` in this file (`--kernel`)")).with_note(
                    format!("the file defines: {}", if names.is_empty() { "nothing".into() } else { names.join(", ") }),
                );
            if !close.is_empty() {
                d = d.with_note(format!("did you mean: {}?", close.join(", ")));
            }
            vec![d]
        })?,
        None => match file.kernels.as_slice() {
            [k] => k,
            [] => return Err(vec![Diagnostic::error("E0017", "the file defines no kernel")]),
            ks => {
                let names: Vec<&str> = ks.iter().map(|k| k.name.name.as_str()).collect();
                return Err(vec![Diagnostic::error("E0017", "the file defines several kernels; name one")
                    .with_note(format!("kernels: {}", names.join(", ")))
                    .with_note(format!("pass `--kernel {}` (or `CompileOptions::kernel`)", names[0]))]);
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

fn const_text(v: &Val) -> String {
    match v {
        Val::Int(i) => i.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Float(f) => tir::float_literal(*f),
        Val::DType(d) => d.name().to_string(),
        Val::Str(s) => format!("\"{s}\""),
        other => kind_name(other).to_string(),
    }
}

impl Cx<'_> {
    pub(crate) fn bind(&mut self, name: &str, v: Val) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), v);
        }
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<&Val> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// Rebinds an existing name in the scope that holds it.
    pub(crate) fn assign(&mut self, name: &str, v: Val) -> bool {
        for s in self.scopes.iter_mut().rev() {
            if let Some(slot) = s.get_mut(name) {
                *slot = v;
                return true;
            }
        }
        false
    }

    pub(crate) fn unknown_name(&self, name: &str, span: Span) -> Diagnostic {
        let mut d = Diagnostic::error("E0002", format!("unknown name `{name}`")).with_primary(span, "not defined here");
        // The suggestion scans every name in scope: only for the diagnostics that are shown,
        // so that thousands of errors stay linear (8,000 took 9 s when each scanned).
        if self.diags.len() >= tilec_core::diag::MAX_RENDERED {
            return d;
        }
        let mut all: Vec<&str> = self.scopes.iter().flat_map(|s| s.keys().map(String::as_str)).collect();
        for n in builtins::names() {
            all.push(n);
        }
        let close = close_matches(name, all);
        if !close.is_empty() {
            d = d.with_note(format!("did you mean: {}?", close.join(", ")));
        }
        d
    }

    // ---------------------------------------------------------------- expressions ----

    // --------------------------------------------------------------------- calls ----
}

fn wrap(like: &Val, id: ValueId) -> Val {
    match like {
        Val::Scalar(_) => Val::Scalar(id),
        _ => Val::Tile(id),
    }
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
