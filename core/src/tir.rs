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
}

impl UnOp {
    pub fn mlir_name(self) -> &'static str {
        match self {
            UnOp::Neg => "arith.negf",
            UnOp::Exp => "math.exp",
            UnOp::Exp2 => "math.exp2",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceKind {
    Max,
    Min,
    Sum,
}

impl ReduceKind {
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
            ReduceKind::Sum => "sum",
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
    /// Tile `index` (in units of the tile shape) of a tensor; out-of-bounds reads `padding`.
    Load {
        tensor: ValueId,
        index: Vec<ValueId>,
        padding: Padding,
    },
    /// Tile `index` of a tensor; out-of-bounds elements are not written.
    Store {
        tensor: ValueId,
        index: Vec<ValueId>,
        tile: ValueId,
    },
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

    fn name_of(&self, v: ValueId) -> String {
        match self.params.iter().find(|p| p.value == v) {
            Some(p) => format!("%{}", p.name),
            None => format!("%{}", v.0),
        }
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
        for op in &self.ops {
            let _ = writeln!(s, "    {}", self.op_to_mlir(op));
        }
        let _ = writeln!(s, "    return\n  }}\n}}");
        s
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
            OpKind::Load { tensor, index, padding } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                format!(
                    "\"tile.load\"({}) {{padding = {}}} : ({}) -> {rty}",
                    args.join(", "),
                    padding.to_mlir(),
                    tys.join(", ")
                )
            }
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
    fn prints_a_load_store_kernel() {
        let mut f = Func::new("copy", "sm_90a", 4);
        let x = f.add_param("x", Type::Tensor { dtype: DType::F16, rank: 2 });
        let y = f.add_param("y", Type::Tensor { dtype: DType::F16, rank: 2 });
        let b = f.push(OpKind::Bid { axis: 0 }, Type::Scalar(DType::I32), None);
        let z = f.push(OpKind::ConstInt(0), Type::Scalar(DType::I32), None);
        let t = f.push(
            OpKind::Load { tensor: x, index: vec![b, z], padding: Padding::Zero },
            Type::tile(vec![1, 128], DType::F16),
            None,
        );
        f.push_void(OpKind::Store { tensor: y, index: vec![b, z], tile: t }, None);
        let text = f.to_mlir();
        assert!(text.contains("func.func @copy(%x: memref<?x?xf16, strided<[?, ?]>>"), "{text}");
        assert!(text.contains("\"tile.store\"(%y, %2, %3, %4)"), "{text}");
    }
}
