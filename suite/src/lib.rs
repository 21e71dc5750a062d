//! tilec-suite: the kernel library's cases, inputs, references and tolerances, as data.
//!
//! Contract: every kernel of `kernels/` that has a test is one [`Spec`]: which kernel of which
//! file, how a [`Case`] (dtype, dims, extra constants) becomes compile-time constants and
//! launch arguments, which arguments are outputs (and which must match bit for bit), the
//! plain-Rust reference, the tolerance, the bytes and FLOPs a benchmark counts, and how the
//! case names itself to the peers of `bench/peers.py`. Two executors read the same
//! specs: the CPU interpreter ([`run_on_interp`], CI's numerics tests, on the small
//! `interp_cases`) and the GPU harness of the `tilec` CLI (`tilec check` on `gpu_cases`,
//! `tilec bench` on `bench_cases`). So a case, its reference and its tolerance are written
//! once, and the interpreter is the oracle of every GPU result.
//!
//! The crate links neither MLIR nor LLVM nor CUDA (frontend + interpreter only).

pub mod inputs;
mod kernels;
pub use kernels::sorted_positions;

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use tilec_core::host::HostTensor;
use tilec_core::DType;
use tilec_frontend::{ConstArg, Request};
pub use tilec_interp::Arg;

/// One shape/dtype/config of a kernel.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub dtype: DType,
    pub dims: Vec<i64>,
    /// Constants set by the case, over what the spec derives from the shape.
    pub consts: Vec<(String, i64)>,
    /// A tolerance of its own (relative L2), tighter than the spec's where the case allows.
    pub tolerance: Option<f64>,
    /// Variable-length cases (decode): every sequence at the full length, as the peers of
    /// `anchors.py` run them, instead of the ragged spread of the checks.
    pub full_lengths: bool,
}

impl Case {
    pub fn new(dtype: DType, dims: &[i64]) -> Case {
        Case { dtype, dims: dims.to_vec(), consts: vec![], tolerance: None, full_lengths: false }
    }

    /// The case with constant `name` set to `value`.
    pub fn with(mut self, name: &str, value: i64) -> Case {
        self.consts.retain(|(n, _)| n != name);
        self.consts.push((name.to_string(), value));
        self
    }

    /// Every sequence at the full length (see [`Case::full_lengths`]).
    pub fn full_lengths(mut self) -> Case {
        self.full_lengths = true;
        self
    }

    pub fn with_tolerance(mut self, tol: f64) -> Case {
        self.tolerance = Some(tol);
        self
    }

    /// The value of constant `name` of the case, or `default`.
    pub fn konst(&self, name: &str, default: i64) -> i64 {
        self.consts.iter().find(|(k, _)| k == name).map(|(_, v)| *v).unwrap_or(default)
    }

    pub fn label(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(|d| d.to_string()).collect();
        let mut s = dims.join("x");
        for (k, v) in &self.consts {
            s.push_str(&format!(" {k}={v}"));
        }
        if self.full_lengths {
            s.push_str(" full");
        }
        s
    }
}

/// The class benchmark plots and peers group kernels by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Membound,
    Gemm,
    Fmha,
    Decode,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Membound => "membound",
            Class::Gemm => "gemm",
            Class::Fmha => "fmha",
            Class::Decode => "decode",
        }
    }
}

/// A kernel of the library with its tests. Functions take the case; `inputs` returns every
/// launch argument in parameter order (outputs poisoned, so an unwritten element is caught).
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The name `tilec check`/`bench` select it by.
    pub name: &'static str,
    /// Path under the kernels folder.
    pub file: &'static str,
    /// The kernel of the file.
    pub kernel: &'static str,
    pub class: Class,
    /// The kernel name anchors.py uses for the same problem.
    pub peer_kernel: &'static str,
    /// Small cases the interpreter runs in CI (ragged shapes, every code path).
    pub interp_cases: fn() -> Vec<Case>,
    /// Cases `tilec check` runs on the GPU.
    pub gpu_cases: fn() -> Vec<Case>,
    /// Cases `tilec bench` times (a subset when `quick`).
    pub bench_cases: fn(bool) -> Vec<Case>,
    /// Constants the kernel needs for a case (the case's own constants win).
    pub consts: fn(&Case) -> BTreeMap<String, ConstArg>,
    pub inputs: fn(&Case, &mut rand::rngs::StdRng) -> Vec<Arg>,
    /// Argument indices of the outputs.
    pub outputs: &'static [usize],
    /// Outputs that must equal the reference exactly (masks, copies).
    pub exact: &'static [usize],
    /// Expected values of each output, from the arguments as launched.
    pub reference: fn(&Case, &[Arg]) -> Vec<Vec<f64>>,
    /// Relative L2 tolerance: f32 outputs under 1e-5, f16/bf16 storage under 1e-2.
    pub tolerance: fn(&Case) -> f64,
    /// Fewest bytes moved (each input read once, each output written once).
    pub bytes: fn(&Case) -> f64,
    /// Floating-point operations, for compute-bound kernels.
    pub flops: Option<fn(&Case) -> f64>,
    /// The case for a user-given shape (`tilec bench --shapes`), or why it cannot run.
    pub case_for: fn(&[i64], DType) -> Result<Case, String>,
    /// The `config` anchors.py uses for the same problem, when the peers run it.
    pub peer_config: fn(&Case) -> Option<String>,
}

/// The default tolerance rule: f32 outputs well under 1e-5, f16/bf16 storage with f32
/// accumulation under 1e-2.
pub fn storage_tolerance(c: &Case) -> f64 {
    if c.dtype == DType::F32 {
        1e-5
    } else {
        1e-2
    }
}

impl Spec {
    /// The constants of a case: the spec's, overridden by the case's own (an integer of
    /// the case becomes a bool where the spec gives the constant as a bool: `CAUSAL=1`).
    pub fn constants(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        let mut m = (self.consts)(c);
        for (n, v) in &c.consts {
            let value = match m.get(n) {
                Some(ConstArg::Bool(_)) => ConstArg::Bool(*v != 0),
                _ => ConstArg::Int(*v),
            };
            m.insert(n.clone(), value);
        }
        m
    }

    pub fn tolerance_of(&self, c: &Case) -> f64 {
        c.tolerance.unwrap_or_else(|| (self.tolerance)(c))
    }

    /// Compares the outputs of a run (every argument after the run, in parameter order)
    /// with the reference computed from the arguments before it.
    pub fn compare(&self, c: &Case, before: &[Arg], after: &[HostTensor]) -> Comparison {
        let tol = self.tolerance_of(c);
        let mut cmp = Comparison { max_abs: 0.0, rel_l2: 0.0, tolerance: tol, pass: false, note: String::new() };
        let expected = (self.reference)(c, before);
        for (&o, want) in self.outputs.iter().zip(&expected) {
            let Some(t) = after.get(o) else {
                cmp.note = format!("output {o} missing");
                return cmp;
            };
            let got = t.to_f64();
            if got.len() != want.len() {
                cmp.note = format!("output {o} has {} elements, the reference {}", got.len(), want.len());
                return cmp;
            }
            if self.exact.contains(&o) {
                let bad = got.iter().zip(want).filter(|(g, w)| g != w).count();
                if bad > 0 {
                    cmp.note =
                        format!("{bad} of {} elements of output {o} differ from the exact reference", want.len());
                    return cmp;
                }
                // Equal element for element, infinities included (whose differences the
                // error norms below cannot take).
                continue;
            }
            let (a, r) = tilec_interp::reference::errors(&got, want);
            if a.is_nan() {
                cmp.max_abs = f64::NAN;
                cmp.rel_l2 = f64::NAN;
                cmp.note = "NaN or unwritten output".into();
                return cmp;
            }
            cmp.max_abs = cmp.max_abs.max(a);
            cmp.rel_l2 = cmp.rel_l2.max(r);
        }
        cmp.pass = cmp.rel_l2 <= tol;
        cmp
    }
}

/// How a run's outputs compare with the reference.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub max_abs: f64,
    pub rel_l2: f64,
    pub tolerance: f64,
    pub pass: bool,
    pub note: String,
}

/// Every kernel with tests, memory-bound first.
pub fn all() -> Vec<&'static Spec> {
    kernels::ALL.to_vec()
}

/// The spec called `name`.
pub fn find(name: &str) -> Option<&'static Spec> {
    kernels::ALL.iter().copied().find(|s| s.name == name)
}

/// The tensors of a launch's arguments, in order (scalars skipped).
pub fn tensors(args: &[Arg]) -> Vec<&HostTensor> {
    args.iter()
        .filter_map(|a| match a {
            Arg::Tensor(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// Runs a case on the CPU interpreter — blocks in forward and in reverse order, which must
/// agree bit for bit (a difference is a race between blocks) — and compares with the
/// reference. `kernels_dir` holds the `.tile` files.
pub fn run_on_interp(spec: &Spec, case: &Case, kernels_dir: &Path, seed: u64) -> Result<Comparison, String> {
    run_on_interp_with(spec, case, kernels_dir, seed, &|f| Ok(f.clone()))
}

/// [`run_on_interp`] on the kernel as `lower` rewrites it (compiler passes, which the
/// interpreter then checks against the same reference).
pub fn run_on_interp_with(
    spec: &Spec,
    case: &Case,
    kernels_dir: &Path,
    seed: u64,
    lower: &dyn Fn(&tilec_core::tir::Func) -> Result<tilec_core::tir::Func, String>,
) -> Result<Comparison, String> {
    use rand::SeedableRng;
    let path = kernels_dir.join(spec.file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let req = Request {
        kernel: Some(spec.kernel.to_string()),
        target: "sm_90a".into(),
        consts: spec.constants(case),
        ..Default::default()
    };
    let el = tilec_frontend::check(&text, &req).map_err(|d| {
        tilec_core::diag::render(&d, &tilec_core::Source::new(path.display().to_string(), text.clone()))
    })?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let args = (spec.inputs)(case, &mut rng);
    let grid = tilec_interp::grid(&el.signature, &args)?;
    let func = lower(&el.func)?;
    let run =
        |order| tilec_interp::run_ordered(&func, grid, args.clone(), order).map_err(|e| format!("{}: {e}", spec.name));
    let fwd = run(tilec_interp::BlockOrder::Forward)?;
    let rev = run(tilec_interp::BlockOrder::Reverse)?;
    for (i, (a, b)) in fwd.tensors.iter().zip(&rev.tensors).enumerate() {
        if a.data != b.data {
            return Err(format!(
                "{} {}: tensor argument {i} depends on the order of the blocks (a race between blocks)",
                spec.name,
                case.label()
            ));
        }
    }
    // The interpreter returns the tensor arguments only; put them back at their positions.
    let mut after = vec![];
    let mut it = fwd.tensors.into_iter();
    for a in &args {
        match a {
            Arg::Tensor(_) => after.push(it.next().ok_or("the interpreter returned too few tensors")?),
            _ => after.push(HostTensor::from_f64(DType::F32, &[0], &[])),
        }
    }
    Ok(spec.compare(case, &args, &after))
}
