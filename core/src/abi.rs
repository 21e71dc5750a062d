//! The calling convention of a compiled kernel, shared by the compiler and the runtime.
//!
//! A kernel's PTX entry takes, for each parameter in order:
//! - a tensor of rank r: the device pointer (`u64`), then r extents (`i64`), then r strides
//!   in elements (`i64`);
//! - a scalar: its value (`i32`, `i64` or `f32`).
//!
//! then, for a persistent kernel ([`Signature::persistent`]), an `i32`: the grid's x extent
//! as [`Signature::grid`] evaluates it — the number of tiles along x, which the kernel walks
//! `bid.x, bid.x + nctaid.x, …`; such a kernel may be launched with any grid x from 1 to that
//! extent (the runtime launches `min(extent, SMs × the blocks of it one SM holds)`), the grid's
//! y and z as they are;
//!
//! (a kernel whose [`Signature::cluster`] is 2 — `tile-cta-pair` — runs each block of the grid
//! on two CTAs: a launch runs twice the grid's x in CTAs, which the PTX's
//! `.reqnctapercluster 2, 1, 1` groups in pairs;)
//!
//! (a kernel compiled with `--emulate` also asks, in [`Signature::shared_pad`], for dynamic
//! shared memory beyond its own, so that no more of its blocks share an SM than on the
//! emulated target;)
//!
//! (a kernel whose [`Signature::grid_dependency`] is set waits, before anything else, for the
//! grid launched before it on the stream to complete — `griddepcontrol.wait` — and then lets
//! the next grid start launching: it may be launched with programmatic stream serialization,
//! so that its launch overlaps the tail of the kernel before (the runtime does so on request,
//! `tilec_runtime::Device::programmatic_launch`); launched plainly, the wait returns at once;)
//!
//! then, for each entry of [`Signature::tma`] in order, a 128-byte `CUtensorMap` passed by
//! value (a `__grid_constant__` parameter, 64-byte aligned): the tensor map of that tensor
//! argument, which the launcher encodes from the actual argument (`cuTensorMapEncodeTiled`:
//! the tensor's extents and byte strides innermost first, the entry's box, its swizzle,
//! interleave none, element strides 1, out-of-bounds elements filled with zeros).
//!
//! The [`Signature`] (written next to the PTX as JSON) lists the parameters with the
//! specialisation assumptions the code was compiled under (e.g. 16-byte alignment), the grid
//! as expressions of the launch arguments, the block size and the static shared memory.
//! The runtime validates every launch against it before anything reaches the GPU.

use crate::dtype::DType;
use crate::tir::CmpPred;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a kernel uses a tensor parameter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Only read (`load`, `gather`, element reads).
    #[default]
    Read,
    /// Only written (`store`, `scatter`).
    Write,
    /// Read and written (in place).
    ReadWrite,
}

impl Access {
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ParamSig {
    Tensor {
        name: String,
        dtype: DType,
        rank: usize,
        /// Compiled assuming the base address and every stride but the last are multiples of
        /// 16 bytes, and the last stride is 1 (the precondition of 16-byte vector access).
        aligned16: bool,
        /// Whether the kernel reads, writes or updates the tensor.
        #[serde(default)]
        access: Access,
        /// The extents the kernel declares (`tensor<T, [M, 64, _]>`), one per dimension;
        /// empty when it declares only the rank.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        extents: Vec<Extent>,
        /// The kernel's `independent` hint names it: no grid launched before this kernel
        /// writes it, and its loads may be issued before the kernel's `griddepcontrol.wait`
        /// (see the module docs). The runtime launches such a kernel with programmatic
        /// serialization only when the launch before it wrote nothing this tensor holds.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        independent: bool,
    },
    Scalar {
        name: String,
        dtype: DType,
    },
}

/// One declared extent of a tensor parameter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Extent {
    /// Exactly this many elements.
    Fixed(i64),
    /// A shape name: every tensor naming it has the same extent there.
    Named(String),
    /// Anything (`_`; JSON `null`).
    Any,
}

impl std::fmt::Display for Extent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Extent::Fixed(n) => write!(f, "{n}"),
            Extent::Named(s) => f.write_str(s),
            Extent::Any => f.write_str("_"),
        }
    }
}

/// Checks the extents a signature declares against the shapes of the arguments (`shape(i)`
/// of tensor parameter `i`; parameters whose shape it does not give are skipped): fixed
/// extents match, and a shape name has one value across all tensors naming it. `Err` holds
/// the index of the offending parameter and the reason.
pub fn check_extents<'a>(
    params: &[ParamSig],
    shape: impl Fn(usize) -> Option<&'a [i64]>,
) -> Result<(), (usize, String)> {
    // name -> (value, parameter, axis) of its first occurrence; a Vec keeps it deterministic.
    let mut seen: Vec<(&str, i64, usize, usize)> = vec![];
    for (i, p) in params.iter().enumerate() {
        let ParamSig::Tensor { extents, .. } = p else { continue };
        let Some(shape) = shape(i) else { continue };
        for (axis, (e, &got)) in extents.iter().zip(shape).enumerate() {
            match e {
                Extent::Fixed(n) if *n != got => {
                    return Err((i, format!("dimension {axis} must be {n} (the kernel declares it), got {got}")));
                }
                Extent::Named(name) => match seen.iter().find(|s| s.0 == name) {
                    Some(&(_, v, j, a)) if v != got => {
                        return Err((
                            i,
                            format!(
                                "dimension {axis} is {got}, but the kernel names it `{name}`, which is {v} in `{}` (dimension {a})",
                                params[j].name()
                            ),
                        ))
                    }
                    Some(_) => {}
                    None => seen.push((name, got, i, axis)),
                },
                _ => {}
            }
        }
    }
    Ok(())
}

impl ParamSig {
    pub fn name(&self) -> &str {
        match self {
            ParamSig::Tensor { name, .. } | ParamSig::Scalar { name, .. } => name,
        }
    }
}

/// The most bytes of parameters a kernel launch passes (CUDA 12.1+, Volta and later).
pub const MAX_PARAM_BYTES: usize = 32764;

/// An integer expression of the launch arguments, evaluated on the host (grid sizes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostExpr {
    Int(i64),
    /// Extent `axis` of tensor parameter `param`.
    Dim {
        param: usize,
        axis: usize,
    },
    /// Value of integer scalar parameter `param`.
    Arg {
        param: usize,
    },
    Add(Box<HostExpr>, Box<HostExpr>),
    Sub(Box<HostExpr>, Box<HostExpr>),
    Mul(Box<HostExpr>, Box<HostExpr>),
    FloorDiv(Box<HostExpr>, Box<HostExpr>),
    Rem(Box<HostExpr>, Box<HostExpr>),
    CeilDiv(Box<HostExpr>, Box<HostExpr>),
    Min(Box<HostExpr>, Box<HostExpr>),
    Max(Box<HostExpr>, Box<HostExpr>),
    /// A comparison: 1 where it holds, else 0 (launch requirements).
    Cmp(CmpPred, Box<HostExpr>, Box<HostExpr>),
    /// 1 where both / either are nonzero, else 0.
    And(Box<HostExpr>, Box<HostExpr>),
    Or(Box<HostExpr>, Box<HostExpr>),
    /// 1 where the operand is 0, else 0.
    Not(Box<HostExpr>),
}

/// A launch requirement of the kernel (a `require` clause): every launcher refuses a launch
/// whose arguments make `cond` zero, naming `text` — the runtime, the JIT, `tilec run` and the
/// interpreter through [`check_requirements`]; another launcher evaluates `cond` like a grid
/// expression.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Requirement {
    /// The requirement as the source writes it (`N <= BLOCK_N`).
    pub text: String,
    /// Its line in the kernel's source file.
    pub line: u32,
    pub cond: HostExpr,
}

/// Checks the requirements of `sig` against the launch arguments: `Err` names the first that
/// does not hold, its line, and, for a comparison, the values of both sides.
pub fn check_requirements(sig: &Signature, args: &dyn HostArgs) -> Result<(), String> {
    for r in &sig.requires {
        let unmet = |detail: String| {
            format!("kernel `{}` requires `{}` (line {} of its source){detail}", sig.name, r.text, r.line)
        };
        let v = r.cond.eval(args).map_err(|e| unmet(format!(", which cannot be evaluated: {e}")))?;
        if v == 0 {
            let detail = match &r.cond {
                HostExpr::Cmp(op, a, b) => match (a.eval(args), b.eval(args)) {
                    (Ok(a), Ok(b)) => format!(", which this launch does not meet: {a} {} {b} is false", op.symbol()),
                    _ => String::new(),
                },
                _ => ", which these arguments do not meet".into(),
            };
            return Err(unmet(detail));
        }
    }
    Ok(())
}

/// What a host expression can read: tensor extents and integer scalars.
pub trait HostArgs {
    fn dim(&self, param: usize, axis: usize) -> Option<i64>;
    fn int_arg(&self, param: usize) -> Option<i64>;
}

impl HostExpr {
    /// Evaluates the expression with checked arithmetic; `Err` names what is missing, what
    /// divides by zero or what overflows 64 bits.
    pub fn eval(&self, args: &dyn HostArgs) -> Result<i64, String> {
        use HostExpr::*;
        let bin = |a: &HostExpr, b: &HostExpr| -> Result<(i64, i64), String> { Ok((a.eval(args)?, b.eval(args)?)) };
        let nz = |b: i64| if b == 0 { Err("division by zero in a grid expression".to_string()) } else { Ok(b) };
        let of = |what: &str, a: i64, b: i64| format!("{a} {what} {b} overflows 64 bits in a grid expression");
        Ok(match self {
            Int(v) => *v,
            Dim { param, axis } => {
                args.dim(*param, *axis).ok_or_else(|| format!("parameter {param} has no dimension {axis}"))?
            }
            Arg { param } => {
                args.int_arg(*param).ok_or_else(|| format!("parameter {param} is not an integer scalar"))?
            }
            Add(a, b) => {
                let (a, b) = bin(a, b)?;
                a.checked_add(b).ok_or_else(|| of("+", a, b))?
            }
            Sub(a, b) => {
                let (a, b) = bin(a, b)?;
                a.checked_sub(b).ok_or_else(|| of("-", a, b))?
            }
            Mul(a, b) => {
                let (a, b) = bin(a, b)?;
                a.checked_mul(b).ok_or_else(|| of("*", a, b))?
            }
            FloorDiv(a, b) => {
                let (a, b) = bin(a, b)?;
                a.checked_div_euclid(nz(b)?).ok_or_else(|| of("//", a, b))?
            }
            Rem(a, b) => {
                let (a, b) = bin(a, b)?;
                a.checked_rem_euclid(nz(b)?).ok_or_else(|| of("%", a, b))?
            }
            CeilDiv(a, b) => {
                let (a, b) = bin(a, b)?;
                let b = nz(b)?;
                let q = a.checked_neg().and_then(|n| n.checked_div_euclid(b)).and_then(i64::checked_neg);
                q.ok_or_else(|| of("cdiv", a, b))?
            }
            Min(a, b) => bin(a, b).map(|(a, b)| a.min(b))?,
            Max(a, b) => bin(a, b).map(|(a, b)| a.max(b))?,
            Cmp(op, a, b) => bin(a, b).map(|(a, b)| i64::from(op.holds(a, b)))?,
            And(a, b) => bin(a, b).map(|(a, b)| i64::from(a != 0 && b != 0))?,
            Or(a, b) => bin(a, b).map(|(a, b)| i64::from(a != 0 || b != 0))?,
            Not(a) => i64::from(a.eval(args)? == 0),
        })
    }
}

/// A tensor map the kernel takes after its parameters: which tensor, and how the Tensor
/// Memory Accelerator copies it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TmaParam {
    /// Index of the tensor parameter in [`Signature::params`].
    pub param: usize,
    /// Box extents, innermost (the tensor's contiguous dimension) first: one per dimension.
    #[serde(rename = "box")]
    pub box_dims: Vec<u32>,
    /// Shared-memory swizzle of the box in bytes: 32, 64 or 128.
    pub swizzle: u32,
}

/// Everything the runtime needs to launch a compiled kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Signature {
    /// PTX entry name.
    pub name: String,
    /// Target the code was compiled for (`sm_90a`, …).
    pub target: String,
    pub params: Vec<ParamSig>,
    /// Grid (x, y, z) as expressions of the arguments.
    pub grid: Vec<HostExpr>,
    /// Threads per block.
    pub block_threads: u32,
    /// Static shared memory the kernel declares, in bytes.
    pub shared_bytes: u32,
    /// The compile-time constants the kernel was specialised with, by name.
    pub constants: BTreeMap<String, String>,
    /// Tensor maps passed after the parameters (see the module docs), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tma: Vec<TmaParam>,
    /// The kernel's launch requirements (`require` clauses), checked at every launch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<Requirement>,
    /// A persistent kernel (`tile-persistent`; see the module docs): it takes the grid's x
    /// extent after its parameters and may run on fewer blocks along x.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
    /// The kernel opens with `griddepcontrol.wait` (see the module docs): it may be launched
    /// with programmatic stream serialization.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub grid_dependency: bool,
    /// Dynamic shared memory the launcher adds to each block beyond what the kernel uses:
    /// a kernel compiled to emulate another target (`--emulate`) is padded so that no more
    /// of its blocks share an SM than on that target.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_pad: u32,
    /// CTAs each block of the grid runs on (`tile-cta-pair`: 2, a cluster declared in the PTX
    /// with `.reqnctapercluster`): the launch runs `cluster` times the grid's x extent in CTAs.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cluster: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

impl Signature {
    /// The dynamic shared memory a launch passes: the kernel's own when it is over the static
    /// limit (it then declares it dynamic), plus [`Signature::shared_pad`].
    pub fn dynamic_shared_bytes(&self) -> u32 {
        let own = if self.shared_bytes > crate::target::STATIC_SMEM_LIMIT { self.shared_bytes } else { 0 };
        own.saturating_add(self.shared_pad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct A;
    impl HostArgs for A {
        fn dim(&self, p: usize, a: usize) -> Option<i64> {
            (p == 0 && a < 2).then_some(if a == 0 { 1000 } else { 64 })
        }
        fn int_arg(&self, p: usize) -> Option<i64> {
            (p == 1).then_some(7)
        }
    }

    #[test]
    fn evaluates_grid_expressions() {
        use HostExpr::*;
        let e = CeilDiv(Box::new(Dim { param: 0, axis: 0 }), Box::new(Int(3)));
        assert_eq!(e.eval(&A), Ok(334));
        let e = Mul(Box::new(Arg { param: 1 }), Box::new(Dim { param: 0, axis: 1 }));
        assert_eq!(e.eval(&A), Ok(448));
        assert!(FloorDiv(Box::new(Int(1)), Box::new(Int(0))).eval(&A).is_err());
        assert!(Dim { param: 0, axis: 5 }.eval(&A).is_err());
        // Overflow is an error, never a panic or a wrapped grid.
        let min = || Box::new(Int(i64::MIN));
        assert!(FloorDiv(min(), Box::new(Int(-1))).eval(&A).unwrap_err().contains("overflows"));
        assert!(CeilDiv(min(), Box::new(Int(-1))).eval(&A).is_err());
        assert!(Mul(min(), Box::new(Int(2))).eval(&A).is_err());
        assert!(Rem(min(), Box::new(Int(-1))).eval(&A).is_err());
    }

    #[test]
    fn signature_json_round_trips() {
        let s = Signature {
            name: "k".into(),
            target: "sm_90a".into(),
            params: vec![
                ParamSig::Tensor {
                    name: "x".into(),
                    dtype: DType::F16,
                    rank: 2,
                    aligned16: true,
                    access: Access::Read,
                    extents: vec![Extent::Named("M".into()), Extent::Fixed(64)],
                    independent: false,
                },
                ParamSig::Tensor {
                    name: "y".into(),
                    dtype: DType::F16,
                    rank: 2,
                    aligned16: true,
                    access: Access::Write,
                    extents: vec![Extent::Named("M".into()), Extent::Any],
                    independent: false,
                },
                ParamSig::Scalar { name: "n".into(), dtype: DType::I32 },
            ],
            grid: vec![HostExpr::Int(4), HostExpr::Int(1), HostExpr::Int(1)],
            block_threads: 128,
            shared_bytes: 16,
            constants: BTreeMap::new(),
            tma: vec![TmaParam { param: 0, box_dims: vec![64, 128], swizzle: 128 }],
            requires: vec![Requirement {
                text: "n <= M".into(),
                line: 3,
                cond: HostExpr::Cmp(
                    CmpPred::Le,
                    Box::new(HostExpr::Arg { param: 2 }),
                    Box::new(HostExpr::Dim { param: 0, axis: 0 }),
                ),
            }],
            persistent: true,
            grid_dependency: false,
            shared_pad: 4096,
            cluster: 1,
        };
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Signature>(&j).unwrap(), s);
        // Declared extents: M agrees across x and y, x's second extent is 64, y's anything.
        let shapes: [&[i64]; 3] = [&[5, 64], &[5, 7], &[]];
        assert_eq!(check_extents(&s.params, |i| Some(shapes[i])), Ok(()));
        let shapes: [&[i64]; 3] = [&[5, 64], &[6, 7], &[]];
        let (i, why) = check_extents(&s.params, |i| Some(shapes[i])).unwrap_err();
        assert_eq!(i, 1);
        assert!(why.contains("names it `M`, which is 5 in `x` (dimension 0)"), "{why}");
        let shapes: [&[i64]; 3] = [&[5, 63], &[5, 7], &[]];
        assert!(check_extents(&s.params, |i| Some(shapes[i])).unwrap_err().1.contains("must be 64"));
    }
}
