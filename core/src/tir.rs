//! The Rust form of a kernel in the `tile` dialect (and, with layouts, `tilegpu`).
//!
//! The frontend builds a [`Func`]; [`Func::to_mlir`] prints it in the dialect's textual form,
//! which MLIR parses and verifies against the IRDL definitions of `tilec-ir`. Passes read and
//! rewrite this form and print the next stage. Ops are kept in one straight-line list in
//! definition order; values are numbered densely so that printing is deterministic.

use crate::diag::Span;
use crate::dtype::DType;
use crate::layout::Layout;
use std::fmt::Write;

/// An SSA value: an index into [`Func::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// A global-memory tensor parameter: dynamic shape and strides (in elements).
    Tensor { dtype: DType, rank: usize },
    /// A scalar value held by every thread.
    Scalar(DType),
    /// A tile: a value-semantics block of elements, with a layout from `tilegpu` on.
    Tile { shape: Vec<i64>, dtype: DType, layout: Option<Layout> },
}

impl Type {
    pub fn tile(shape: Vec<i64>, dtype: DType) -> Type {
        Type::Tile { shape, dtype, layout: None }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Type::Tensor { dtype, .. } | Type::Scalar(dtype) | Type::Tile { dtype, .. } => *dtype,
        }
    }

    pub fn shape(&self) -> &[i64] {
        match self {
            Type::Tile { shape, .. } => shape,
            _ => &[],
        }
    }

    pub fn layout(&self) -> Option<&Layout> {
        match self {
            Type::Tile { layout, .. } => layout.as_ref(),
            _ => None,
        }
    }

    pub fn with_dtype(&self, d: DType) -> Type {
        match self {
            Type::Tile { shape, layout, .. } => Type::Tile { shape: shape.clone(), dtype: d, layout: layout.clone() },
            Type::Scalar(_) => Type::Scalar(d),
            Type::Tensor { rank, .. } => Type::Tensor { dtype: d, rank: *rank },
        }
    }

    /// Reads a type as MLIR prints it (the inverse of [`Type::to_mlir`]); `None` for a type
    /// the tile IR has no form for.
    pub fn parse_mlir(text: &str) -> Option<Type> {
        let text = text.trim();
        if let Some(inner) = text.strip_prefix("memref<").and_then(|t| t.strip_suffix('>')) {
            let (shape, _strides) = inner.split_once(", strided<")?;
            let mut dims: Vec<&str> = shape.split('x').collect();
            let dtype = DType::parse(dims.pop()?)?;
            return dims.iter().all(|d| *d == "?").then_some(Type::Tensor { dtype, rank: dims.len() });
        }
        if let Some(inner) = text.strip_prefix("tensor<").and_then(|t| t.strip_suffix('>')) {
            let (shape, layout) = match inner.split_once(", ") {
                Some((s, l)) => (s, Some(crate::layout::parse_layout(l)?)),
                None => (inner, None),
            };
            let mut dims: Vec<&str> = shape.split('x').collect();
            let dtype = DType::parse(dims.pop()?)?;
            let shape = dims.iter().map(|d| d.parse::<i64>().ok().filter(|n| *n > 0)).collect::<Option<Vec<_>>>()?;
            return Some(Type::Tile { shape, dtype, layout });
        }
        match DType::parse(text)? {
            d if d.name() == text => Some(Type::Scalar(d)),
            _ => None,
        }
    }

    pub fn to_mlir(&self) -> String {
        match self {
            Type::Scalar(d) => d.name().to_string(),
            Type::Tensor { dtype, rank } => {
                let dims = vec!["?"; *rank].join("x");
                let strides = vec!["?"; *rank].join(", ");
                format!("memref<{dims}x{dtype}, strided<[{strides}]>>")
            }
            Type::Tile { shape, dtype, layout } => {
                let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                match layout {
                    None => format!("tensor<{}x{dtype}>", dims.join("x")),
                    Some(l) => format!("tensor<{}x{dtype}, {}>", dims.join("x"), l.to_mlir()),
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Max,
    Min,
}

impl BinOp {
    /// The `arith` op for this operation on values of `d`.
    pub fn arith_name(self, d: DType) -> &'static str {
        let f = d.is_float();
        match (self, f) {
            (BinOp::Add, true) => "arith.addf",
            (BinOp::Add, false) => "arith.addi",
            (BinOp::Sub, true) => "arith.subf",
            (BinOp::Sub, false) => "arith.subi",
            (BinOp::Mul, true) => "arith.mulf",
            (BinOp::Mul, false) => "arith.muli",
            (BinOp::Div, true) => "arith.divf",
            (BinOp::Div, false) => "arith.floordivsi",
            (BinOp::Rem, true) => "arith.remf",
            (BinOp::Rem, false) => "arith.remsi",
            (BinOp::Max, true) => "arith.maximumf",
            (BinOp::Max, false) => "arith.maxsi",
            (BinOp::Min, true) => "arith.minimumf",
            (BinOp::Min, false) => "arith.minsi",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Exp,
    Exp2,
    Log,
    Log2,
    Sqrt,
    Rsqrt,
    Tanh,
    Sin,
    Cos,
    Abs,
}

impl UnOp {
    pub fn mlir_name(self) -> &'static str {
        match self {
            UnOp::Neg => "arith.negf",
            UnOp::Exp => "math.exp",
            UnOp::Exp2 => "math.exp2",
            UnOp::Log => "math.log",
            UnOp::Log2 => "math.log2",
            UnOp::Sqrt => "math.sqrt",
            UnOp::Rsqrt => "math.rsqrt",
            UnOp::Tanh => "math.tanh",
            UnOp::Sin => "math.sin",
            UnOp::Cos => "math.cos",
            UnOp::Abs => "math.absf",
        }
    }
}

/// Per-op math options of the language: `flush_to_zero=true`, `rounding="approx"`.
/// Printed as discardable attributes `tile.ftz` / `tile.approx` on the arith/math op.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MathFlags {
    pub ftz: bool,
    pub approx: bool,
}

impl MathFlags {
    fn attr(self) -> String {
        let mut a = vec![];
        if self.approx {
            a.push("tile.approx");
        }
        if self.ftz {
            a.push("tile.ftz");
        }
        if a.is_empty() {
            String::new()
        } else {
            format!(" {{{}}}", a.join(", "))
        }
    }
}

/// Comparison predicates (signed for integers, ordered for floats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpPred {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpPred {
    pub fn mlir(self, float: bool) -> &'static str {
        match (self, float) {
            (CmpPred::Eq, true) => "oeq",
            (CmpPred::Ne, true) => "une",
            (CmpPred::Lt, true) => "olt",
            (CmpPred::Le, true) => "ole",
            (CmpPred::Gt, true) => "ogt",
            (CmpPred::Ge, true) => "oge",
            (CmpPred::Eq, false) => "eq",
            (CmpPred::Ne, false) => "ne",
            (CmpPred::Lt, false) => "slt",
            (CmpPred::Le, false) => "sle",
            (CmpPred::Gt, false) => "sgt",
            (CmpPred::Ge, false) => "sge",
        }
    }
}

/// Logical ops on i1 values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogicOp {
    And,
    Or,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceKind {
    Max,
    Min,
    Sum,
    /// Index (i32) of the first maximum.
    Argmax,
    /// Index (i32) of the first minimum.
    Argmin,
}

impl ReduceKind {
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
            ReduceKind::Sum => "sum",
            ReduceKind::Argmax => "argmax",
            ReduceKind::Argmin => "argmin",
        }
    }
}

/// What an out-of-bounds element of a `load` reads as.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Padding {
    Zero,
    NegInf,
    PosInf,
    Value(f64),
}

impl Padding {
    pub fn value(self) -> f64 {
        match self {
            Padding::Zero => 0.0,
            Padding::NegInf => f64::NEG_INFINITY,
            Padding::PosInf => f64::INFINITY,
            Padding::Value(v) => v,
        }
    }
    fn to_mlir(self) -> String {
        match self {
            Padding::Zero => "\"zero\"".into(),
            Padding::NegInf => "\"neg_inf\"".into(),
            Padding::PosInf => "\"pos_inf\"".into(),
            Padding::Value(v) => format!("\"{}\"", float_literal(v)),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// Block index along an axis of the grid.
    Bid {
        axis: u32,
    },
    /// Extent of dimension `axis` of a tensor parameter.
    Dim {
        tensor: ValueId,
        axis: u32,
    },
    ConstInt(i64),
    ConstFloat(f64),
    /// A scalar broadcast to every element of a tile.
    Splat(ValueId),
    Binary(BinOp, ValueId, ValueId),
    Unary(UnOp, ValueId),
    /// Element type conversion (float widths, int↔float).
    Cast(ValueId),
    /// Reduction along `axis`, keeping it with extent 1.
    Reduce {
        kind: ReduceKind,
        axis: u32,
        value: ValueId,
    },
    /// Broadcast of extent-1 dimensions to the result shape.
    Broadcast(ValueId),
    /// Tile `index` (in units of the tile shape) of the tensor viewed with its dims in
    /// `order`; out-of-bounds reads `padding`. `latency` (0: none) is the pipelining hint.
    Load {
        tensor: ValueId,
        index: Vec<ValueId>,
        padding: Padding,
        order: Vec<u32>,
        latency: u32,
    },
    /// Tile `index` of a tensor; out-of-bounds elements are not written.
    Store {
        tensor: ValueId,
        index: Vec<ValueId>,
        tile: ValueId,
    },
    /// The elements at per-dimension element-index tiles (broadcast together): a gather.
    Gather {
        tensor: ValueId,
        index: Vec<ValueId>,
        padding: Padding,
    },
    /// Writes `tile` at per-dimension element-index tiles; out-of-bounds (e.g. negative)
    /// indices are skipped, which is how a scatter is masked.
    Scatter {
        tensor: ValueId,
        index: Vec<ValueId>,
        tile: ValueId,
    },
    /// `a · b + acc` (a: M×K, b: K×N, acc: M×N).
    Mma {
        a: ValueId,
        b: ValueId,
        acc: ValueId,
    },
    /// `[0, 1, …, N-1]` as an i32 tile.
    Arange,
    /// One element of a tensor, as a scalar (`t[i, j]`); out of bounds reads 0.
    Element {
        tensor: ValueId,
        index: Vec<ValueId>,
    },
    /// Number of blocks along grid axis `axis`.
    NumBlocks {
        axis: u32,
    },
    Cmp(CmpPred, ValueId, ValueId),
    Logic(LogicOp, ValueId, ValueId),
    /// Elementwise `cond ? a : b`.
    Select {
        cond: ValueId,
        a: ValueId,
        b: ValueId,
    },
    /// Same elements, new shape (row-major order).
    Reshape(ValueId),
    /// The same tile in another layout (`tilegpu` only; inserted by `tile-layout` where a
    /// use needs a layout its operand does not have).
    ConvertLayout {
        value: ValueId,
        /// The shared-memory buffer the tile passes through.
        scratch: crate::layout::Shared,
    },
    Permute {
        value: ValueId,
        perm: Vec<u32>,
    },
    /// A math op with the language's per-op options.
    Math {
        op: UnOp,
        value: ValueId,
        flags: MathFlags,
    },
    /// True division with the language's options (`truediv`).
    TrueDiv {
        lhs: ValueId,
        rhs: ValueId,
        flags: MathFlags,
    },
    /// Uniform f32 in [0, 1) from a counter-based RNG (Philox 4x32-10) keyed by `seed`,
    /// counters from the i32 `offsets` tile.
    Rand {
        seed: ValueId,
        offsets: ValueId,
    },
    /// Debug print of scalars and tiles, with a prefix.
    Print {
        prefix: String,
        values: Vec<ValueId>,
    },
    /// `for iv in range(lb, ub, step)`, with loop-carried values: `iters` are the block
    /// arguments inside `body` (initialised from `init`), `yields` their next values,
    /// `results` their final values.
    For {
        lb: ValueId,
        ub: ValueId,
        step: ValueId,
        iv: ValueId,
        init: Vec<ValueId>,
        iters: Vec<ValueId>,
        body: Vec<Op>,
        yields: Vec<ValueId>,
        results: Vec<ValueId>,
    },
    /// A run-time `if`; each branch yields the values of `results`.
    If {
        cond: ValueId,
        then_ops: Vec<Op>,
        then_yields: Vec<ValueId>,
        else_ops: Vec<Op>,
        else_yields: Vec<ValueId>,
        results: Vec<ValueId>,
    },
}

impl OpKind {
    /// The source-level name of the construct (for "not lowered yet" messages).
    pub fn describe(&self) -> &'static str {
        match self {
            OpKind::Gather { .. } => "gather",
            OpKind::Scatter { .. } => "scatter",
            OpKind::Mma { .. } => "mma",
            OpKind::Arange => "arange",
            OpKind::Element { .. } => "element reads (`t[i, j]`)",
            OpKind::NumBlocks { .. } => "num_blocks",
            OpKind::Cmp(..) => "comparisons",
            OpKind::Logic(..) => "logical operators",
            OpKind::Select { .. } => "where",
            OpKind::Reshape(_) => "reshape",
            OpKind::ConvertLayout { .. } => "convert_layout",
            OpKind::Permute { .. } => "permute",
            OpKind::Math { .. } => "math functions other than exp and exp2",
            OpKind::TrueDiv { .. } => "truediv",
            OpKind::Rand { .. } => "rand",
            OpKind::Print { .. } => "print",
            OpKind::For { .. } => "for loops",
            OpKind::If { .. } => "run-time if",
            OpKind::Load { .. } => "load",
            OpKind::Store { .. } => "store",
            OpKind::Reduce { .. } => "reductions",
            _ => "this op",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    pub result: Option<ValueId>,
    pub span: Option<Span>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub value: ValueId,
    /// Largest power of two (in bytes, up to 16) the compiled code may assume divides a
    /// tensor's base address, extents·itemsize and strides·itemsize but the last (which is 1).
    /// 1 assumes nothing. Printed as `{tile.divisibility = 16 : i32}`.
    pub divisibility: u32,
}

/// One kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub name: String,
    pub params: Vec<Param>,
    pub ops: Vec<Op>,
    /// Type of each value, indexed by `ValueId`.
    pub values: Vec<Type>,
    /// Warps per block requested by the kernel (the layout pass may use fewer).
    pub num_warps: u32,
    /// Target the constants were specialised for (`sm_90a`, …).
    pub target: String,
}

impl Func {
    pub fn new(name: impl Into<String>, target: impl Into<String>, num_warps: u32) -> Func {
        Func { name: name.into(), params: vec![], ops: vec![], values: vec![], num_warps, target: target.into() }
    }

    pub fn new_value(&mut self, ty: Type) -> ValueId {
        self.values.push(ty);
        ValueId(self.values.len() as u32 - 1)
    }

    pub fn ty(&self, v: ValueId) -> &Type {
        &self.values[v.0 as usize]
    }

    pub fn add_param(&mut self, name: &str, ty: Type) -> ValueId {
        let v = self.new_value(ty);
        self.params.push(Param { name: name.to_string(), value: v, divisibility: 1 });
        v
    }

    /// Appends an op with a result of type `ty`.
    pub fn push(&mut self, kind: OpKind, ty: Type, span: Option<Span>) -> ValueId {
        let v = self.new_value(ty);
        self.ops.push(Op { kind, result: Some(v), span });
        v
    }

    pub fn push_void(&mut self, kind: OpKind, span: Option<Span>) {
        self.ops.push(Op { kind, result: None, span });
    }

    /// The defining op of each value (params have none).
    pub fn def_map(&self) -> Vec<Option<usize>> {
        let mut m = vec![None; self.values.len()];
        for (i, op) in self.ops.iter().enumerate() {
            if let Some(r) = op.result {
                m[r.0 as usize] = Some(i);
            }
        }
        m
    }

    /// All ops, nested regions included, in printing order.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Op)) {
        fn go<'a>(ops: &'a [Op], f: &mut impl FnMut(&'a Op)) {
            for op in ops {
                f(op);
                match &op.kind {
                    OpKind::For { body, .. } => go(body, f),
                    OpKind::If { then_ops, else_ops, .. } => {
                        go(then_ops, f);
                        go(else_ops, f);
                    }
                    _ => {}
                }
            }
        }
        go(&self.ops, f);
    }

    fn name_of(&self, v: ValueId) -> String {
        if let Some(p) = self.params.iter().find(|p| p.value == v) {
            return format!("%{}", p.name);
        }
        // The k-th result of a multi-result op is `%first#k`.
        if let Some((first, k)) = self.multi_result_of(v) {
            return format!("%{}#{k}", first.0);
        }
        format!("%{}", v.0)
    }

    fn multi_result_of(&self, v: ValueId) -> Option<(ValueId, usize)> {
        let mut found = None;
        self.walk(&mut |op| {
            if let OpKind::For { results, .. } | OpKind::If { results, .. } = &op.kind {
                if results.len() > 1 {
                    if let Some(k) = results.iter().position(|r| *r == v) {
                        found = Some((results[0], k));
                    }
                }
            }
        });
        found
    }

    /// The textual MLIR form: a `builtin.module` holding one `func.func`.
    pub fn to_mlir(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "module attributes {{tile.target = \"{}\"}} {{", self.target);
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                let attr = if p.divisibility > 1 {
                    format!(" {{tile.divisibility = {} : i32}}", p.divisibility)
                } else {
                    String::new()
                };
                format!("{}: {}{attr}", self.name_of(p.value), self.ty(p.value).to_mlir())
            })
            .collect();
        let _ = writeln!(
            s,
            "  func.func @{}({}) attributes {{tile.kernel, tile.num_warps = {} : i32}} {{",
            self.name,
            params.join(", "),
            self.num_warps
        );
        self.print_ops(&mut s, &self.ops, 2);
        let _ = writeln!(s, "    return\n  }}\n}}");
        s
    }

    fn print_ops(&self, s: &mut String, ops: &[Op], depth: usize) {
        let pad = "  ".repeat(depth);
        for op in ops {
            match &op.kind {
                OpKind::For { lb, ub, step, iv, init, iters, body, yields, results } => {
                    let res = self.results_prefix(results);
                    let iter_args: Vec<String> = iters
                        .iter()
                        .zip(init)
                        .map(|(a, i)| format!("{} = {}", self.name_of(*a), self.name_of(*i)))
                        .collect();
                    let tys = self.type_list(results);
                    let header = if iters.is_empty() {
                        String::new()
                    } else {
                        format!(" iter_args({}) -> ({tys})", iter_args.join(", "))
                    };
                    let _ = writeln!(
                        s,
                        "{pad}{res}scf.for {} = {} to {} step {}{header} : i32 {{",
                        self.name_of(*iv),
                        self.name_of(*lb),
                        self.name_of(*ub),
                        self.name_of(*step)
                    );
                    self.print_ops(s, body, depth + 1);
                    self.print_yield(s, yields, depth + 1);
                    let _ = writeln!(s, "{pad}}}");
                }
                OpKind::If { cond, then_ops, then_yields, else_ops, else_yields, results } => {
                    let res = self.results_prefix(results);
                    let tys =
                        if results.is_empty() { String::new() } else { format!(" -> ({})", self.type_list(results)) };
                    let _ = writeln!(s, "{pad}{res}scf.if {}{tys} {{", self.name_of(*cond));
                    self.print_ops(s, then_ops, depth + 1);
                    self.print_yield(s, then_yields, depth + 1);
                    // MLIR prints no empty `else` (an `if` without results); neither do we.
                    if !else_ops.is_empty() || !results.is_empty() {
                        let _ = writeln!(s, "{pad}}} else {{");
                        self.print_ops(s, else_ops, depth + 1);
                        self.print_yield(s, else_yields, depth + 1);
                    }
                    let _ = writeln!(s, "{pad}}}");
                }
                _ => {
                    let _ = writeln!(s, "{pad}{}", self.op_to_mlir(op));
                }
            }
        }
    }

    fn results_prefix(&self, results: &[ValueId]) -> String {
        match results {
            [] => String::new(),
            [r] => format!("{} = ", self.name_of(*r)),
            [first, ..] => format!("%{}:{} = ", first.0, results.len()),
        }
    }

    fn type_list(&self, vs: &[ValueId]) -> String {
        vs.iter().map(|v| self.ty(*v).to_mlir()).collect::<Vec<_>>().join(", ")
    }

    fn print_yield(&self, s: &mut String, yields: &[ValueId], depth: usize) {
        let pad = "  ".repeat(depth);
        if yields.is_empty() {
            return;
        }
        let names: Vec<String> = yields.iter().map(|v| self.name_of(*v)).collect();
        let _ = writeln!(s, "{pad}scf.yield {} : {}", names.join(", "), self.type_list(yields));
    }

    fn op_to_mlir(&self, op: &Op) -> String {
        let n = |v: &ValueId| self.name_of(*v);
        let t = |v: &ValueId| self.ty(*v).to_mlir();
        let res = op.result.map(|r| format!("{} = ", self.name_of(r))).unwrap_or_default();
        let rty = op.result.map(|r| self.ty(r).to_mlir()).unwrap_or_default();
        let body = match &op.kind {
            OpKind::Bid { axis } => format!("\"tile.bid\"() {{axis = {axis} : i32}} : () -> {rty}"),
            OpKind::Dim { tensor, axis } => {
                format!("\"tile.dim\"({}) {{axis = {axis} : i32}} : ({}) -> {rty}", n(tensor), t(tensor))
            }
            OpKind::ConstInt(v) => format!("arith.constant {v} : {rty}"),
            OpKind::ConstFloat(v) => {
                let d = op.result.map(|r| self.ty(r).dtype()).unwrap_or(DType::F32);
                format!("arith.constant {} : {rty}", mlir_float(*v, d))
            }
            OpKind::Splat(x) => format!("\"tile.splat\"({}) : ({}) -> {rty}", n(x), t(x)),
            OpKind::Binary(b, x, y) => format!("{} {}, {} : {rty}", b.arith_name(self.ty(*x).dtype()), n(x), n(y)),
            OpKind::Unary(u, x) => format!("{} {} : {rty}", u.mlir_name(), n(x)),
            OpKind::Cast(x) => {
                let from = self.ty(*x).dtype();
                let to = op.result.map(|r| self.ty(r).dtype()).unwrap_or(from);
                format!("{} {} : {} to {rty}", cast_op(from, to), n(x), t(x))
            }
            OpKind::Reduce { kind, axis, value } => format!(
                "\"tile.reduce\"({}) {{kind = \"{}\", axis = {axis} : i32}} : ({}) -> {rty}",
                n(value),
                kind.name(),
                t(value)
            ),
            OpKind::Broadcast(x) => format!("\"tile.broadcast\"({}) : ({}) -> {rty}", n(x), t(x)),
            OpKind::Load { tensor, index, padding, order, latency } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                let ord: Vec<String> = order.iter().map(|o| o.to_string()).collect();
                format!(
                    "\"tile.load\"({}) {{latency = {latency} : i32, order = array<i32: {}>, padding = {}}} : ({}) -> {rty}",
                    args.join(", "),
                    ord.join(", "),
                    padding.to_mlir(),
                    tys.join(", ")
                )
            }
            OpKind::Gather { tensor, index, padding } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                format!(
                    "\"tile.gather\"({}) {{padding = {}}} : ({}) -> {rty}",
                    args.join(", "),
                    padding.to_mlir(),
                    tys.join(", ")
                )
            }
            OpKind::Scatter { tensor, index, tile } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                args.push(n(tile));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                tys.push(t(tile));
                format!("\"tile.scatter\"({}) : ({}) -> ()", args.join(", "), tys.join(", "))
            }
            OpKind::Mma { a, b, acc } => {
                format!("\"tile.mma\"({}, {}, {}) : ({}, {}, {}) -> {rty}", n(a), n(b), n(acc), t(a), t(b), t(acc))
            }
            OpKind::Arange => format!("\"tile.arange\"() : () -> {rty}"),
            OpKind::Element { tensor, index } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                format!("\"tile.element\"({}) : ({}) -> {rty}", args.join(", "), tys.join(", "))
            }
            OpKind::NumBlocks { axis } => format!("\"tile.num_blocks\"() {{axis = {axis} : i32}} : () -> {rty}"),
            OpKind::Cmp(p, x, y) => {
                let f = self.ty(*x).dtype().is_float();
                format!("{} {}, {}, {} : {}", if f { "arith.cmpf" } else { "arith.cmpi" }, p.mlir(f), n(x), n(y), t(x))
            }
            OpKind::Logic(l, x, y) => {
                let name = match l {
                    LogicOp::And => "arith.andi",
                    LogicOp::Or => "arith.ori",
                    LogicOp::Xor => "arith.xori",
                };
                format!("{name} {}, {} : {rty}", n(x), n(y))
            }
            OpKind::Select { cond, a, b } => {
                format!("arith.select {}, {}, {} : {}, {rty}", n(cond), n(a), n(b), t(cond))
            }
            OpKind::Reshape(x) => format!("\"tile.reshape\"({}) : ({}) -> {rty}", n(x), t(x)),
            OpKind::ConvertLayout { value: x, scratch } => format!(
                "\"tilegpu.convert_layout\"({}) {{scratch = {}}} : ({}) -> {rty}",
                n(x),
                scratch.to_mlir(),
                t(x)
            ),
            OpKind::Permute { value, perm } => {
                let p: Vec<String> = perm.iter().map(|o| o.to_string()).collect();
                format!(
                    "\"tile.permute\"({}) {{perm = array<i32: {}>}} : ({}) -> {rty}",
                    n(value),
                    p.join(", "),
                    t(value)
                )
            }
            OpKind::Math { op: u, value, flags } => format!("{} {}{} : {rty}", u.mlir_name(), n(value), flags.attr()),
            OpKind::TrueDiv { lhs, rhs, flags } => format!("arith.divf {}, {}{} : {rty}", n(lhs), n(rhs), flags.attr()),
            OpKind::Rand { seed, offsets } => {
                format!("\"tile.rand\"({}, {}) : ({}, {}) -> {rty}", n(seed), n(offsets), t(seed), t(offsets))
            }
            OpKind::Print { prefix, values } => {
                let args: Vec<String> = values.iter().map(n).collect();
                let tys: Vec<String> = values.iter().map(t).collect();
                format!("\"tile.print\"({}) {{prefix = {:?}}} : ({}) -> ()", args.join(", "), prefix, tys.join(", "))
            }
            OpKind::For { .. } | OpKind::If { .. } => "// region op printed by print_ops".to_string(),
            OpKind::Store { tensor, index, tile } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                args.push(n(tile));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                tys.push(t(tile));
                format!("\"tile.store\"({}) : ({}) -> ()", args.join(", "), tys.join(", "))
            }
        };
        format!("{res}{body}")
    }
}

/// The `arith` conversion op from `from` to `to`.
pub fn cast_op(from: DType, to: DType) -> &'static str {
    match (from.is_float(), to.is_float()) {
        (true, true) if to.bits() > from.bits() => "arith.extf",
        (true, true) => "arith.truncf",
        (false, true) => "arith.sitofp",
        (true, false) => "arith.fptosi",
        (false, false) if to.bits() > from.bits() => "arith.extsi",
        (false, false) => "arith.trunci",
    }
}

/// A float literal MLIR accepts for `d`: decimal when finite, the bit pattern otherwise.
pub fn mlir_float(v: f64, d: DType) -> String {
    if v.is_finite() {
        float_literal(v)
    } else {
        let digits = (d.bits() / 4) as usize;
        format!("0x{:0digits$X}", d.float_bits(v))
    }
}

/// Shortest decimal form that always has a `.` (MLIR's float literal grammar needs one).
pub fn float_literal(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let s = format!("{v:?}");
    if s.contains('.') {
        if let Some((m, e)) = s.split_once('e') {
            return format!("{m}e{e}");
        }
        s
    } else if let Some((m, e)) = s.split_once('e') {
        format!("{m}.0e{e}")
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_literals_always_have_a_dot() {
        assert_eq!(float_literal(1.0), "1.0");
        assert_eq!(float_literal(1e-6), "1e-6".replace("1e", "1.0e"));
        assert_eq!(float_literal(0.5), "0.5");
        assert_eq!(mlir_float(f64::NEG_INFINITY, DType::F32), "0xFF800000");
        assert_eq!(mlir_float(f64::NEG_INFINITY, DType::F16), "0xFC00");
    }

    #[test]
    fn type_text_round_trips() {
        let (b, _) = crate::layout::Blocked::row_major(&[1, 64], 2, 1).unwrap();
        for t in [
            Type::Scalar(DType::BF16),
            Type::Tensor { dtype: DType::F16, rank: 3 },
            Type::tile(vec![16, 1], DType::I1),
            Type::Tile { shape: vec![1, 64], dtype: DType::F16, layout: Some(Layout::Blocked(b)) },
        ] {
            assert_eq!(Type::parse_mlir(&t.to_mlir()), Some(t.clone()));
        }
        for bad in ["tensor<?x4xf32>", "memref<4xf32>", "float", "vector<4xf32>", "tensor<4xf32, #foo>"] {
            assert_eq!(Type::parse_mlir(bad), None, "{bad}");
        }
    }

    #[test]
    fn prints_a_load_store_kernel() {
        let mut f = Func::new("copy", "sm_90a", 4);
        let x = f.add_param("x", Type::Tensor { dtype: DType::F16, rank: 2 });
        let y = f.add_param("y", Type::Tensor { dtype: DType::F16, rank: 2 });
        let b = f.push(OpKind::Bid { axis: 0 }, Type::Scalar(DType::I32), None);
        let z = f.push(OpKind::ConstInt(0), Type::Scalar(DType::I32), None);
        let t = f.push(
            OpKind::Load { tensor: x, index: vec![b, z], padding: Padding::Zero, order: vec![0, 1], latency: 0 },
            Type::tile(vec![1, 128], DType::F16),
            None,
        );
        f.push_void(OpKind::Store { tensor: y, index: vec![b, z], tile: t }, None);
        let text = f.to_mlir();
        assert!(text.contains("func.func @copy(%x: memref<?x?xf16, strided<[?, ?]>>"), "{text}");
        assert!(text.contains("\"tile.store\"(%y, %2, %3, %4)"), "{text}");
    }
}
