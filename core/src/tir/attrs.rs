//! The small enums of the tile IR and their MLIR spellings, one table each. The printer and
//! the MLIR reader both read these tables, so an op name or a predicate number is written in
//! exactly one place.

use crate::dtype::DType;

/// Binary arithmetic. On integers `Div` and `Rem` are floor division and modulo (Python).
/// `Shl`/`Shr` (integers only) take the amount as unsigned: an amount of the width or more
/// gives 0 (`Shl`) or the sign fill (`Shr`, arithmetic), as PTX's `shl`/`shr` clamp it.
/// `Pow` is on floats only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Max,
    Min,
    Shl,
    Shr,
    Pow,
}

/// (op, the `arith` op on floats, the `arith` op on integers).
const BINOPS: &[(BinOp, &str, &str)] = &[
    (BinOp::Add, "arith.addf", "arith.addi"),
    (BinOp::Sub, "arith.subf", "arith.subi"),
    (BinOp::Mul, "arith.mulf", "arith.muli"),
    (BinOp::Div, "arith.divf", "arith.floordivsi"),
    (BinOp::Rem, "arith.remf", "arith.remsi"),
    (BinOp::Max, "arith.maximumf", "arith.maxsi"),
    (BinOp::Min, "arith.minimumf", "arith.minsi"),
    // Integer-only and float-only ops name the same op in both columns; the verifier keeps
    // them to their kind.
    (BinOp::Shl, "arith.shli", "arith.shli"),
    (BinOp::Shr, "arith.shrsi", "arith.shrsi"),
    (BinOp::Pow, "math.powf", "math.powf"),
];

/// The ops a scan combines with, by name.
const SCAN_OPS: &[(BinOp, &str)] =
    &[(BinOp::Add, "add"), (BinOp::Mul, "mul"), (BinOp::Max, "max"), (BinOp::Min, "min")];

impl BinOp {
    /// The name of a scan's op (`add`, `mul`, `max`, `min`), if it is one.
    pub fn scan_name(self) -> Option<&'static str> {
        SCAN_OPS.iter().find(|r| r.0 == self).map(|r| r.1)
    }

    /// The scan op of a name.
    pub fn parse_scan(s: &str) -> Option<BinOp> {
        SCAN_OPS.iter().find(|r| r.1 == s).map(|r| r.0)
    }

    /// Every scan op's name.
    pub fn scan_names() -> impl Iterator<Item = &'static str> {
        SCAN_OPS.iter().map(|r| r.1)
    }

    /// Whether the op applies to values of `d`.
    pub fn accepts(self, d: DType) -> bool {
        match self {
            BinOp::Shl | BinOp::Shr => !d.is_float() && d != DType::I1,
            BinOp::Pow => d.is_float(),
            _ => true,
        }
    }

    /// The `arith` op for this operation on values of `d`.
    pub fn arith_name(self, d: DType) -> &'static str {
        let row = BINOPS.iter().find(|r| r.0 == self).unwrap_or(&BINOPS[0]);
        if d.is_float() {
            row.1
        } else {
            row.2
        }
    }

    /// The operation an `arith` op name stands for.
    pub fn from_arith(name: &str) -> Option<BinOp> {
        BINOPS.iter().find(|r| r.1 == name || r.2 == name).map(|r| r.0)
    }
}

/// Unary arithmetic and the math list.
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
    Floor,
    Ceil,
    /// To the nearest integral value, halves to even (`round`, `rint`; torch and NumPy).
    RoundEven,
    /// Towards zero (`trunc`).
    Trunc,
    Erf,
}

const UNOPS: &[(UnOp, &str)] = &[
    (UnOp::Neg, "arith.negf"),
    (UnOp::Exp, "math.exp"),
    (UnOp::Exp2, "math.exp2"),
    (UnOp::Log, "math.log"),
    (UnOp::Log2, "math.log2"),
    (UnOp::Sqrt, "math.sqrt"),
    (UnOp::Rsqrt, "math.rsqrt"),
    (UnOp::Tanh, "math.tanh"),
    (UnOp::Sin, "math.sin"),
    (UnOp::Cos, "math.cos"),
    (UnOp::Abs, "math.absf"),
    (UnOp::Floor, "math.floor"),
    (UnOp::Ceil, "math.ceil"),
    (UnOp::RoundEven, "math.roundeven"),
    (UnOp::Trunc, "math.trunc"),
    (UnOp::Erf, "math.erf"),
];

impl UnOp {
    pub fn mlir_name(self) -> &'static str {
        UNOPS.iter().find(|r| r.0 == self).map(|r| r.1).unwrap_or("math.exp")
    }

    pub fn from_mlir(name: &str) -> Option<UnOp> {
        UNOPS.iter().find(|r| r.1 == name).map(|r| r.0)
    }
}

/// Per-op math options of the language: `flush_to_zero=true`, `rounding="approx"`.
/// Printed as discardable attributes `tile.ftz` / `tile.approx` on the arith/math op.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MathFlags {
    pub ftz: bool,
    pub approx: bool,
    /// The source gave this op's options (`flush_to_zero=`, `rounding=`): `tile-approx-math`
    /// leaves it as written, `--fast-math` or not.
    pub pinned: bool,
}

impl MathFlags {
    /// The attribute names, as printed (`tile.approx` first).
    pub const APPROX: &'static str = "tile.approx";
    pub const FTZ: &'static str = "tile.ftz";
    pub const PINNED: &'static str = "tile.pinned";

    /// ` {tile.approx, tile.ftz}`, or nothing for the defaults.
    pub fn attr(self) -> String {
        let mut a = vec![];
        if self.approx {
            a.push(Self::APPROX);
        }
        if self.ftz {
            a.push(Self::FTZ);
        }
        if self.pinned {
            a.push(Self::PINNED);
        }
        if a.is_empty() {
            String::new()
        } else {
            format!(" {{{}}}", a.join(", "))
        }
    }

    /// Whether the op computes as the plain operator does (pinned or not).
    pub fn is_default(self) -> bool {
        !self.ftz && !self.approx
    }
}

/// Comparison predicates (signed for integers, ordered for floats; `Ne` is unordered on
/// floats, so that NaN != NaN). Also the comparisons of host expressions (launch
/// requirements), in the metadata as `"eq"`, `"le"`, …
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CmpPred {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpPred {
    /// Whether `a pred b` holds (with `PartialOrd`: false for NaN but for `Ne`).
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpPred::Eq => a == b,
            CmpPred::Ne => a != b,
            CmpPred::Lt => a < b,
            CmpPred::Le => a <= b,
            CmpPred::Gt => a > b,
            CmpPred::Ge => a >= b,
        }
    }

    /// The operator as the tile language writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpPred::Eq => "==",
            CmpPred::Ne => "!=",
            CmpPred::Lt => "<",
            CmpPred::Le => "<=",
            CmpPred::Gt => ">",
            CmpPred::Ge => ">=",
        }
    }
}

/// (predicate, `arith.cmpf` name, its enum number, `arith.cmpi` name, its enum number).
const PREDICATES: &[(CmpPred, &str, i64, &str, i64)] = &[
    (CmpPred::Eq, "oeq", 1, "eq", 0),
    (CmpPred::Ne, "une", 13, "ne", 1),
    (CmpPred::Lt, "olt", 4, "slt", 2),
    (CmpPred::Le, "ole", 5, "sle", 3),
    (CmpPred::Gt, "ogt", 2, "sgt", 4),
    (CmpPred::Ge, "oge", 3, "sge", 5),
];

impl CmpPred {
    pub fn mlir(self, float: bool) -> &'static str {
        let row = PREDICATES.iter().find(|r| r.0 == self).unwrap_or(&PREDICATES[0]);
        if float {
            row.1
        } else {
            row.3
        }
    }

    /// The predicate of MLIR's enum number `n` of `arith.cmpf` (`float`) or `arith.cmpi`.
    pub fn from_mlir_number(float: bool, n: i64) -> Option<CmpPred> {
        PREDICATES.iter().find(|r| if float { r.2 == n } else { r.4 == n }).map(|r| r.0)
    }
}

/// Bitwise ops on integers (on i1: logical and, or, xor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogicOp {
    And,
    Or,
    Xor,
}

const LOGIC: &[(LogicOp, &str)] =
    &[(LogicOp::And, "arith.andi"), (LogicOp::Or, "arith.ori"), (LogicOp::Xor, "arith.xori")];

impl LogicOp {
    pub fn mlir_name(self) -> &'static str {
        LOGIC.iter().find(|r| r.0 == self).map(|r| r.1).unwrap_or("arith.andi")
    }

    pub fn from_mlir(name: &str) -> Option<LogicOp> {
        LOGIC.iter().find(|r| r.1 == name).map(|r| r.0)
    }
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

const REDUCE_KINDS: &[(ReduceKind, &str)] = &[
    (ReduceKind::Max, "max"),
    (ReduceKind::Min, "min"),
    (ReduceKind::Sum, "sum"),
    (ReduceKind::Argmax, "argmax"),
    (ReduceKind::Argmin, "argmin"),
];

impl ReduceKind {
    pub fn name(self) -> &'static str {
        REDUCE_KINDS.iter().find(|r| r.0 == self).map(|r| r.1).unwrap_or("sum")
    }

    pub fn parse(name: &str) -> Option<ReduceKind> {
        REDUCE_KINDS.iter().find(|r| r.1 == name).map(|r| r.0)
    }

    /// Every kind's name, for messages and the dialect definition.
    pub fn names() -> impl Iterator<Item = &'static str> {
        REDUCE_KINDS.iter().map(|r| r.1)
    }
}

/// The read-modify-write of an atomic op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Max,
    Min,
    /// Compare-and-swap: writes the new value where the element equals the compared one.
    Cas,
}

/// Memory-order semantics of an atomic (PTX `.relaxed`, `.acquire`, `.release`, `.acq_rel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemSem {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

/// The threads an atomic is coherent with (PTX `.cta`, `.gpu`, `.sys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemScope {
    Block,
    Gpu,
    System,
}

/// (op, language and attribute name).
const ATOMIC_OPS: &[(AtomicOp, &str)] =
    &[(AtomicOp::Add, "add"), (AtomicOp::Max, "max"), (AtomicOp::Min, "min"), (AtomicOp::Cas, "cas")];
/// (semantics, language and attribute name, PTX qualifier).
const MEM_SEMS: &[(MemSem, &str, &str)] = &[
    (MemSem::Relaxed, "relaxed", "relaxed"),
    (MemSem::Acquire, "acquire", "acquire"),
    (MemSem::Release, "release", "release"),
    (MemSem::AcqRel, "acq_rel", "acq_rel"),
];
/// (scope, language and attribute name, PTX qualifier).
const MEM_SCOPES: &[(MemScope, &str, &str)] =
    &[(MemScope::Block, "block", "cta"), (MemScope::Gpu, "gpu", "gpu"), (MemScope::System, "system", "sys")];

impl AtomicOp {
    pub fn name(self) -> &'static str {
        ATOMIC_OPS.iter().find(|r| r.0 == self).map(|r| r.1).unwrap_or("add")
    }
    pub fn parse(s: &str) -> Option<AtomicOp> {
        ATOMIC_OPS.iter().find(|r| r.1 == s).map(|r| r.0)
    }
    /// The dtypes the op takes (f32 max/min through the integer order of its bits).
    pub fn accepts(self, d: DType) -> bool {
        match self {
            AtomicOp::Add => matches!(d, DType::F32 | DType::F16 | DType::BF16 | DType::I32 | DType::I64),
            AtomicOp::Max | AtomicOp::Min | AtomicOp::Cas => matches!(d, DType::F32 | DType::I32),
        }
    }
}

impl MemSem {
    pub fn name(self) -> &'static str {
        MEM_SEMS.iter().find(|r| r.0 == self).map(|r| r.1).unwrap_or("relaxed")
    }
    pub fn ptx(self) -> &'static str {
        MEM_SEMS.iter().find(|r| r.0 == self).map(|r| r.2).unwrap_or("relaxed")
    }
    pub fn parse(s: &str) -> Option<MemSem> {
        MEM_SEMS.iter().find(|r| r.1 == s).map(|r| r.0)
    }
    pub fn names() -> impl Iterator<Item = &'static str> {
        MEM_SEMS.iter().map(|r| r.1)
    }
}

impl MemScope {
    pub fn name(self) -> &'static str {
        MEM_SCOPES.iter().find(|r| r.0 == self).map(|r| r.1).unwrap_or("gpu")
    }
    pub fn ptx(self) -> &'static str {
        MEM_SCOPES.iter().find(|r| r.0 == self).map(|r| r.2).unwrap_or("gpu")
    }
    pub fn parse(s: &str) -> Option<MemScope> {
        MEM_SCOPES.iter().find(|r| r.1 == s).map(|r| r.0)
    }
    pub fn names() -> impl Iterator<Item = &'static str> {
        MEM_SCOPES.iter().map(|r| r.1)
    }
}

/// What an out-of-bounds element of a `load` or `gather` reads as.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Padding {
    Zero,
    NegInf,
    PosInf,
    Value(f64),
}

const PADDINGS: &[(&str, Padding)] =
    &[("zero", Padding::Zero), ("neg_inf", Padding::NegInf), ("pos_inf", Padding::PosInf)];

impl Padding {
    pub fn value(self) -> f64 {
        match self {
            Padding::Zero => 0.0,
            Padding::NegInf => f64::NEG_INFINITY,
            Padding::PosInf => f64::INFINITY,
            Padding::Value(v) => v,
        }
    }

    /// The attribute's string: a name, or a float literal for any other value.
    pub fn name(self) -> String {
        match PADDINGS.iter().find(|r| r.1 == self) {
            Some(r) => r.0.to_string(),
            None => super::float_literal(self.value()),
        }
    }

    pub fn parse(s: &str) -> Option<Padding> {
        match PADDINGS.iter().find(|r| r.0 == s) {
            Some(r) => Some(r.1),
            None => s.parse().ok().map(Padding::Value),
        }
    }
}

/// The `arith` conversion op from `from` to `to`.
pub fn cast_op(from: DType, to: DType) -> &'static str {
    // `arith` takes signless integers and no fp8 arithmetic: casts of the storage types
    // are the tile dialect's own.
    if from.is_storage_only() || to.is_storage_only() {
        return "tile.cast";
    }
    // A bool is 0 or 1 (`true` is 1, not the -1 of a signed i1). Casts to bool are
    // comparisons with 0, which the frontend writes as such.
    if from == DType::I1 {
        return if to.is_float() { "arith.uitofp" } else { "arith.extui" };
    }
    match (from.is_float(), to.is_float()) {
        (true, true) if to.bits() > from.bits() => "arith.extf",
        (true, true) => "arith.truncf",
        (false, true) => "arith.sitofp",
        (true, false) => "arith.fptosi",
        (false, false) if to.bits() > from.bits() => "arith.extsi",
        (false, false) => "arith.trunci",
    }
}

/// Whether `name` is one of the conversion ops [`cast_op`] produces.
pub fn is_cast_op(name: &str) -> bool {
    DType::ALL.iter().any(|&a| DType::ALL.iter().any(|&b| a != b && cast_op(a, b) == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_inverts() {
        for (op, f, i) in BINOPS {
            assert_eq!(BinOp::from_arith(f), Some(*op));
            assert_eq!(BinOp::from_arith(i), Some(*op));
        }
        for (op, n) in UNOPS {
            assert_eq!(UnOp::from_mlir(n), Some(*op));
        }
        for (p, _, fnum, _, inum) in PREDICATES {
            assert_eq!(CmpPred::from_mlir_number(true, *fnum), Some(*p));
            assert_eq!(CmpPred::from_mlir_number(false, *inum), Some(*p));
        }
        for k in ReduceKind::names() {
            assert_eq!(ReduceKind::parse(k).map(ReduceKind::name), Some(k));
        }
        for (op, n) in ATOMIC_OPS {
            assert_eq!(AtomicOp::parse(n), Some(*op));
            assert_eq!(op.name(), *n);
        }
        for (m, n, _) in MEM_SEMS {
            assert_eq!(MemSem::parse(n), Some(*m));
        }
        for (m, n, _) in MEM_SCOPES {
            assert_eq!(MemScope::parse(n), Some(*m));
        }
        for p in [Padding::Zero, Padding::NegInf, Padding::PosInf, Padding::Value(-2.5)] {
            assert_eq!(Padding::parse(&p.name()), Some(p));
        }
        assert!(is_cast_op("arith.extf") && !is_cast_op("arith.addf"));
    }
}
