//! The calling convention of a compiled kernel, shared by the compiler and the runtime.
//!
//! A kernel's PTX entry takes, for each parameter in order:
//! - a tensor of rank r: the device pointer (`u64`), then r extents (`i64`), then r strides
//!   in elements (`i64`);
//! - a scalar: its value (`i32`, `i64` or `f32`).
//!
//! The [`Signature`] (written next to the PTX as JSON) lists the parameters with the
//! specialisation assumptions the code was compiled under (e.g. 16-byte alignment), the grid
//! as expressions of the launch arguments, the block size and the static shared memory.
//! The runtime validates every launch against it before anything reaches the GPU.

use crate::dtype::DType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    },
    Scalar {
        name: String,
        dtype: DType,
    },
}

impl ParamSig {
    pub fn name(&self) -> &str {
        match self {
            ParamSig::Tensor { name, .. } | ParamSig::Scalar { name, .. } => name,
        }
    }
}

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
}

/// What a host expression can read: tensor extents and integer scalars.
pub trait HostArgs {
    fn dim(&self, param: usize, axis: usize) -> Option<i64>;
    fn int_arg(&self, param: usize) -> Option<i64>;
}

impl HostExpr {
    /// Evaluates the expression; `Err` names what is missing or divides by zero.
    pub fn eval(&self, args: &dyn HostArgs) -> Result<i64, String> {
        use HostExpr::*;
        let bin = |a: &HostExpr, b: &HostExpr| -> Result<(i64, i64), String> { Ok((a.eval(args)?, b.eval(args)?)) };
        let nz = |b: i64| if b == 0 { Err("division by zero in a grid expression".to_string()) } else { Ok(b) };
        Ok(match self {
            Int(v) => *v,
            Dim { param, axis } => {
                args.dim(*param, *axis).ok_or_else(|| format!("parameter {param} has no dimension {axis}"))?
            }
            Arg { param } => {
                args.int_arg(*param).ok_or_else(|| format!("parameter {param} is not an integer scalar"))?
            }
            Add(a, b) => bin(a, b).map(|(a, b)| a.saturating_add(b))?,
            Sub(a, b) => bin(a, b).map(|(a, b)| a.saturating_sub(b))?,
            Mul(a, b) => bin(a, b).map(|(a, b)| a.saturating_mul(b))?,
            FloorDiv(a, b) => {
                let (a, b) = bin(a, b)?;
                a.div_euclid(nz(b)?)
            }
            Rem(a, b) => {
                let (a, b) = bin(a, b)?;
                a.rem_euclid(nz(b)?)
            }
            CeilDiv(a, b) => {
                let (a, b) = bin(a, b)?;
                let b = nz(b)?;
                -((-a).div_euclid(b))
            }
            Min(a, b) => bin(a, b).map(|(a, b)| a.min(b))?,
            Max(a, b) => bin(a, b).map(|(a, b)| a.max(b))?,
        })
    }
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
    }

    #[test]
    fn signature_json_round_trips() {
        let s = Signature {
            name: "k".into(),
            target: "sm_90a".into(),
            params: vec![
                ParamSig::Tensor { name: "x".into(), dtype: DType::F16, rank: 2, aligned16: true },
                ParamSig::Scalar { name: "n".into(), dtype: DType::I32 },
            ],
            grid: vec![HostExpr::Int(4), HostExpr::Int(1), HostExpr::Int(1)],
            block_threads: 128,
            shared_bytes: 16,
            constants: BTreeMap::new(),
        };
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Signature>(&j).unwrap(), s);
    }
}
