//! The Rust form of a kernel in the `tile` dialect (and, with layouts, `tilegpu`).
//!
//! The frontend builds a [`Func`]; [`Func::to_mlir`] prints it in the dialect's textual form,
//! which MLIR parses and verifies against the IRDL definitions of `tilec-ir`. Passes read and
//! rewrite this form and print the next stage. Ops are kept in one straight-line list in
//! definition order; values are numbered densely so that printing is deterministic.

mod attrs;
mod ops;
mod print;
pub mod verify;

pub use attrs::{
    cast_op, is_cast_op, AtomicOp, BinOp, CmpPred, LogicOp, MathFlags, MemScope, MemSem, Padding, ReduceKind, UnOp,
};
pub use ops::OpKind;
pub use print::PrintOptions;

use crate::diag::Span;
use crate::dtype::DType;
use crate::layout::{Layout, SwizzledShared};

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
    /// A tile held in shared memory (`tilegpu` only), laid out by a swizzle: printed as
    /// `memref<MxNxT, #tilegpu.swizzled_shared<…>>` (the layout in the memory-space slot,
    /// which MLIR allows for any non-builtin attribute); a ring of S such buffers
    /// (`StagesAlloc`) is `memref<SxMxNxT, …>`, the swizzle applying to each stage.
    Smem { shape: Vec<i64>, dtype: DType, layout: SwizzledShared },
}

impl Type {
    pub fn tile(shape: Vec<i64>, dtype: DType) -> Type {
        Type::Tile { shape, dtype, layout: None }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Type::Tensor { dtype, .. } | Type::Scalar(dtype) | Type::Tile { dtype, .. } | Type::Smem { dtype, .. } => {
                *dtype
            }
        }
    }

    pub fn shape(&self) -> &[i64] {
        match self {
            Type::Tile { shape, .. } | Type::Smem { shape, .. } => shape,
            _ => &[],
        }
    }

    pub fn layout(&self) -> Option<&Layout> {
        match self {
            Type::Tile { layout, .. } => layout.as_ref(),
            _ => None,
        }
    }

    /// A 2-D shared buffer seen with its dims swapped: the same bytes, the same swizzle
    /// (`SwizzledShared` places an element by its row and column along `order`, which swap
    /// with the dims). `None` for anything else.
    pub fn smem_transposed(&self) -> Option<Type> {
        match self {
            Type::Smem { shape, dtype, layout } if shape.len() == 2 => Some(Type::Smem {
                shape: vec![shape[1], shape[0]],
                dtype: *dtype,
                layout: SwizzledShared { order: [layout.order[1], layout.order[0]], ..layout.clone() },
            }),
            _ => None,
        }
    }

    pub fn with_dtype(&self, d: DType) -> Type {
        match self {
            Type::Tile { shape, layout, .. } => Type::Tile { shape: shape.clone(), dtype: d, layout: layout.clone() },
            Type::Scalar(_) => Type::Scalar(d),
            Type::Tensor { rank, .. } => Type::Tensor { dtype: d, rank: *rank },
            Type::Smem { shape, layout, .. } => Type::Smem { shape: shape.clone(), dtype: d, layout: layout.clone() },
        }
    }

    /// Reads a type as MLIR prints it (the inverse of [`Type::to_mlir`]); `None` for a type
    /// the tile IR has no form for.
    pub fn parse_mlir(text: &str) -> Option<Type> {
        let text = text.trim();
        if let Some(inner) = text.strip_prefix("memref<").and_then(|t| t.strip_suffix('>')) {
            let shared = inner.split_once(", #tilegpu.swizzled_shared").map(|(s, l)| (s, "swizzled_shared", l));
            let shared =
                shared.or_else(|| inner.split_once(", #tilegpu.nvmma_shared").map(|(s, l)| (s, "nvmma_shared", l)));
            if let Some((shape, kind, layout)) = shared {
                let layout = SwizzledShared::parse(&format!("#tilegpu.{kind}{layout}"))?;
                let (dims, dtype) = dims_and_dtype(shape)?;
                let shape =
                    dims.iter().map(|d| d.parse::<i64>().ok().filter(|n| *n > 0)).collect::<Option<Vec<_>>>()?;
                // M×N, or S×M×N for a ring of S stages.
                return (shape.len() == 2 || shape.len() == 3).then_some(Type::Smem { shape, dtype, layout });
            }
            let (shape, _strides) = inner.split_once(", strided<")?;
            let (dims, dtype) = dims_and_dtype(shape)?;
            return dims.iter().all(|d| *d == "?").then_some(Type::Tensor { dtype, rank: dims.len() });
        }
        if let Some(inner) = text.strip_prefix("tensor<").and_then(|t| t.strip_suffix('>')) {
            let (shape, layout) = match inner.split_once(", ") {
                Some((s, l)) => (s, Some(crate::layout::parse_layout(l)?)),
                None => (inner, None),
            };
            let (dims, dtype) = dims_and_dtype(shape)?;
            let shape = dims.iter().map(|d| d.parse::<i64>().ok().filter(|n| *n > 0)).collect::<Option<Vec<_>>>()?;
            return Some(Type::Tile { shape, dtype, layout });
        }
        match DType::parse(text)? {
            d if d.mlir_name() == text => Some(Type::Scalar(d)),
            _ => None,
        }
    }

    pub fn to_mlir(&self) -> String {
        match self {
            Type::Scalar(d) => d.mlir_name().to_string(),
            Type::Tensor { dtype, rank } => {
                let dims = vec!["?"; *rank].join("x");
                let strides = vec!["?"; *rank].join(", ");
                format!("memref<{dims}x{}, strided<[{strides}]>>", dtype.mlir_name())
            }
            Type::Tile { shape, dtype, layout } => {
                let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                match layout {
                    None => format!("tensor<{}x{}>", dims.join("x"), dtype.mlir_name()),
                    Some(l) => format!("tensor<{}x{}, {}>", dims.join("x"), dtype.mlir_name(), l.to_mlir()),
                }
            }
            Type::Smem { shape, dtype, layout } => {
                let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                format!("memref<{}x{}, {}>", dims.join("x"), dtype.mlir_name(), layout.to_mlir())
            }
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
    /// The kernel declares that no grid launched before it writes this tensor (the
    /// `independent` hint: a model's weights), so its loads may be issued before the kernel
    /// waits for that grid (`tile-grid-dependency`). Printed as `{tile.independent}`.
    pub independent: bool,
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
    /// Set by `tile-warp-specialize`: the block gets a producer warpgroup besides the
    /// `num_warps` consumer warps the layouts spread over. Printed as
    /// `tile.warp_specialize = array<i32: producer warps, producer regs, consumer regs>`.
    pub warp_spec: Option<WarpSpec>,
    /// CTAs a block of the program runs on (set by `tile-cta-pair`; 1 elsewhere): the block's
    /// rows are split over a cluster of that many CTAs, `bid`/`num_blocks` count clusters and
    /// `cluster_rank` tells the CTAs apart. Printed as `tile.cluster = N : i32` when above 1.
    pub cluster: u32,
}

/// The partition of a warp-specialized kernel (see `tile-warp-specialize`): `producer_warps`
/// warps after the consumers issue the TMA copies of the pipelined loop; each side sets its
/// register count with `setmaxnreg` (0: left as ptxas allocated it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpSpec {
    pub producer_warps: u32,
    pub producer_regs: u32,
    pub consumer_regs: u32,
}

impl Func {
    pub fn new(name: impl Into<String>, target: impl Into<String>, num_warps: u32) -> Func {
        Func {
            name: name.into(),
            params: vec![],
            ops: vec![],
            values: vec![],
            num_warps,
            target: target.into(),
            warp_spec: None,
            cluster: 1,
        }
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
        self.params.push(Param { name: name.to_string(), value: v, divisibility: 1, independent: false });
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

    /// The name of the parameter `v` is, if it is one (reports name tensors by it).
    pub fn param_name(&self, v: ValueId) -> Option<&str> {
        self.params.iter().find(|p| p.value == v).map(|p| p.name.as_str())
    }

    /// How many times each value is read by an op (nested regions included; a region op's
    /// own operands and yields count, as [`OpKind::operands`] lists them).
    pub fn use_counts(&self) -> std::collections::BTreeMap<ValueId, usize> {
        let mut uses = std::collections::BTreeMap::new();
        self.walk(&mut |op| {
            for v in op.kind.operands() {
                *uses.entry(v).or_default() += 1;
            }
        });
        uses
    }

    /// All ops, nested regions included, in printing order.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Op)) {
        walk_ops(&self.ops, f);
    }
}

/// All ops of `ops`, nested regions included, in printing order (a region held apart from
/// its function, as a pass rewriting a loop body holds it).
pub fn walk_ops<'a>(ops: &'a [Op], f: &mut impl FnMut(&'a Op)) {
    for op in ops {
        f(op);
        match &op.kind {
            OpKind::For { body, .. } => walk_ops(body, f),
            OpKind::If { then_ops, else_ops, .. } => {
                walk_ops(then_ops, f);
                walk_ops(else_ops, f);
            }
            _ => {}
        }
    }
}

/// Every value `ops` and their regions define: results, induction variables, iteration
/// arguments, the results of loops and ifs.
pub fn defined_values(ops: &[Op]) -> std::collections::BTreeSet<ValueId> {
    let mut d = std::collections::BTreeSet::new();
    walk_ops(ops, &mut |o| {
        d.extend(o.result);
        match &o.kind {
            OpKind::For { iv, iters, results, .. } => {
                d.insert(*iv);
                d.extend(iters.iter().chain(results));
            }
            OpKind::If { results, .. } => d.extend(results),
            _ => {}
        }
    });
    d
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

/// The dims and the element type of a shaped type's `4x8xf16` (the element type may be a
/// vector, `4x8xvector<2xf4E2M1FN>`: split at its `vector<` first).
fn dims_and_dtype(shape: &str) -> Option<(Vec<&str>, DType)> {
    let (dims, elem) = match shape.find("vector<") {
        Some(i) => (shape[..i].strip_suffix('x').unwrap_or(""), &shape[i..]),
        None => shape.rsplit_once('x').unwrap_or(("", shape)),
    };
    let dims = if dims.is_empty() { vec![] } else { dims.split('x').collect() };
    Some((dims, DType::parse(elem)?))
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
        let b = crate::layout::Blocked::row_major(&[1, 64], 2, 1).unwrap();
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
        f.push_void(OpKind::Store { tensor: y, index: vec![b, z], tile: t, mask: None }, None);
        let text = f.to_mlir();
        assert!(text.contains("func.func @copy(%x: memref<?x?xf16, strided<[?, ?]>>"), "{text}");
        assert!(text.contains("\"tile.store\"(%y, %2, %3, %4)"), "{text}");
    }
}
