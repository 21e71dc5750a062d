//! `tilec._tilec`: the Rust half of the `tilec` Python package.
//!
//! Contract: the same JIT, cache and validation as the Rust API (`tilec::jit`), reached from
//! Python. A [`Kernel`] is a `KernelSpec`; [`Kernel::launch`] takes the arguments as the
//! Python half (`python/tilec/__init__.py`) describes them — a tensor as `("tensor", address,
//! shape, strides in elements, dtype, bytes it may address)`, read off a PyTorch tensor or a
//! `__cuda_array_interface__` without a copy, a scalar as a Python number — and launches on
//! the stream the caller names (PyTorch's current stream), through one `Jit` per device that
//! lives as long as the process. Every argument is validated by the runtime before anything
//! reaches the GPU, and a refusal is `LaunchError` with the runtime's message, which names the
//! argument and the offending value, word for word as in Rust. A kernel that does not compile
//! is `CompileError` with the rendered diagnostics; a machine without a GPU is `DeviceError`.
//! Nothing panics on bad input; the GIL is released while compiling and launching.
//!
//! [`Kernel::compile`] and [`Kernel::check`] need no GPU: the PTX and metadata for a target,
//! and the validation of a launch (its grid) against a target's compile — both through the
//! compilation cache, as `tilec compile` is. [`main`] is the whole
//! `tilec` command line, so that the wheel carries the CLI as well.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use tilec::jit::{Arg, Bound as BoundKernel, External, Jit, JitError, KernelSpec};
use tilec::{CompileOptions, ConstArg, DType};
use tilec_core::abi::ParamSig;
use tilec_runtime::cache::Cache;
use tilec_runtime::{ArgDesc, Device, RawStream, RuntimeError, TensorDesc};

create_exception!(_tilec, TilecError, PyException, "Any error of tilec.");
create_exception!(_tilec, CompileError, TilecError, "The kernel does not compile: the diagnostics, rendered.");
create_exception!(
    _tilec,
    LaunchError,
    TilecError,
    "A launch refused before it reached the GPU (an argument, a requirement, the grid), or the driver's error."
);
create_exception!(
    _tilec,
    DeviceError,
    TilecError,
    "No usable GPU: no driver, no device, or a chip tilec does not target."
);

fn jit_error(e: JitError) -> PyErr {
    match e {
        JitError::Compile(text) => CompileError::new_err(text),
        JitError::Launch(RuntimeError::NoDriver(m)) => DeviceError::new_err(RuntimeError::NoDriver(m).to_string()),
        JitError::Launch(e @ RuntimeError::Unsupported(_)) => DeviceError::new_err(e.to_string()),
        JitError::Launch(e) => LaunchError::new_err(e.to_string()),
        e @ JitError::Read { .. } => TilecError::new_err(e.to_string()),
    }
}

/// A JIT shared by Python's threads.
struct SharedJit(Jit);

// SAFETY: `Jit` is not `Send`/`Sync` only because a CUDA graph being recorded (raw driver
// handles) may sit in it; this module never captures or updates a graph, so that slot stays
// empty. Everything else in it is cudarc's `Arc`ed context and stream (`Send + Sync`) and
// `Mutex`es, and the driver's handles may be used from any thread.
unsafe impl Send for SharedJit {}
// SAFETY: as for `Send`.
unsafe impl Sync for SharedJit {}

/// The compilation cache of the compiles without a device (`compile`, `check`), for the
/// life of the process: the folder the command line and the JIT use, and a memory layer.
fn cache() -> &'static Cache {
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    CACHE.get_or_init(Cache::from_env)
}

/// Compiles through [`cache`], as `tilec compile` does; a cache folder that cannot be
/// written is said once on stderr, as the JIT says it.
fn compile_cached(source: &tilec::Source, opts: &CompileOptions) -> PyResult<Arc<tilec_runtime::cache::Entry>> {
    let c = tilec::compile_cached(source, opts, cache()).map_err(|e| CompileError::new_err(e.render()))?;
    if let Some(w) = &c.warning {
        eprintln!("tilec: warning: {w}");
    }
    Ok(c.entry)
}

/// One JIT per device ordinal, for the life of the process (modules stay loaded).
fn jit_for(device: usize) -> PyResult<Arc<SharedJit>> {
    static JITS: Mutex<BTreeMap<usize, Arc<SharedJit>>> = Mutex::new(BTreeMap::new());
    let mut jits = JITS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(j) = jits.get(&device) {
        return Ok(j.clone());
    }
    let dev = Device::open(device).map_err(|e| jit_error(JitError::Launch(e)))?;
    let jit = Arc::new(SharedJit(Jit::with(dev, Cache::from_env())));
    jits.insert(device, jit.clone());
    Ok(jit)
}

/// An argument as the Python half describes it.
enum PyArg {
    Tensor(TensorDesc),
    Int(i64),
    Float(f64),
}

fn parse_args(args: &Bound<'_, pyo3::types::PyList>) -> PyResult<Vec<PyArg>> {
    let mut out = vec![];
    for (i, a) in args.iter().enumerate() {
        if let Ok((kind, addr, shape, strides, dtype, len_bytes)) =
            a.extract::<(String, u64, Vec<i64>, Vec<i64>, String, u64)>()
        {
            if kind != "tensor" {
                return Err(LaunchError::new_err(format!("argument {i}: an unknown description `{kind}`")));
            }
            let dtype = DType::parse(&dtype)
                .ok_or_else(|| LaunchError::new_err(format!("argument {i}: `{dtype}` is not a tilec element type")))?;
            if shape.len() != strides.len() {
                return Err(LaunchError::new_err(format!(
                    "argument {i}: shape {shape:?} and strides {strides:?} differ in rank"
                )));
            }
            out.push(PyArg::Tensor(TensorDesc { dtype, shape, strides, addr, len_bytes }));
        } else if a.is_instance_of::<pyo3::types::PyBool>() {
            out.push(PyArg::Int(i64::from(a.extract::<bool>()?)));
        } else if let Ok(v) = a.extract::<i64>() {
            out.push(PyArg::Int(v));
        } else if let Ok(v) = a.extract::<f64>() {
            out.push(PyArg::Float(v));
        } else {
            let t = a.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
            return Err(LaunchError::new_err(format!(
                "argument {i}: a `{t}` is neither a tensor (a PyTorch CUDA tensor or an object with __cuda_array_interface__) nor a number"
            )));
        }
    }
    Ok(out)
}

/// The launch descriptors of `args` for a kernel with these parameters: a Python number
/// becomes the scalar type its parameter declares (an `i32` out of range is an error naming
/// the argument, never a wrapped value).
fn descs(params: &[ParamSig], args: &[PyArg]) -> PyResult<Vec<ArgDesc>> {
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            let declared = match params.get(i) {
                Some(ParamSig::Scalar { dtype, .. }) => Some(*dtype),
                _ => None,
            };
            let name = params.get(i).map(|p| format!(" (`{}`)", p.name())).unwrap_or_default();
            Ok(match (a, declared) {
                (PyArg::Tensor(t), _) => ArgDesc::Tensor(t.clone()),
                (PyArg::Int(v), Some(DType::I32)) => ArgDesc::I32(i32::try_from(*v).map_err(|_| {
                    LaunchError::new_err(format!("argument {i}{name}: {v} does not fit the parameter's i32"))
                })?),
                (PyArg::Int(v), Some(DType::F32)) => ArgDesc::F32(*v as f32),
                (PyArg::Float(v), Some(DType::F32)) => ArgDesc::F32(*v as f32),
                (PyArg::Float(v), Some(d)) => {
                    return Err(LaunchError::new_err(format!(
                        "argument {i}{name}: {v} is a float; the parameter is {d}"
                    )))
                }
                (PyArg::Int(v), _) => ArgDesc::I64(*v),
                (PyArg::Float(v), None) => ArgDesc::F32(*v as f32),
            })
        })
        .collect()
}

/// A launch argument owned for the length of a launch: the tensors' descriptors, which the
/// JIT's `Arg`s borrow, and the scalars.
enum Slot {
    Tensor(External),
    Scalar(Arg<'static>),
}

/// A kernel of a `.tile` source with its constants and switches, compiled on first use for
/// each device and specialisation (the JIT's cache, shared with the `tilec` command line).
#[pyclass(frozen, module = "tilec._tilec")]
struct Kernel {
    spec: KernelSpec,
    /// Parameters by target (constants may set a tensor's dtype).
    params: Mutex<BTreeMap<String, Vec<ParamSig>>>,
    /// The variant loaded for each device and specialisation (the tensors left unaligned):
    /// a launch of a known variant skips the cache key and lookup, as `Jit::launch_bound`.
    bound: Mutex<BTreeMap<(usize, BTreeSet<String>), BoundKernel>>,
}

impl Kernel {
    fn params(&self, target: &str) -> PyResult<Vec<ParamSig>> {
        let mut memo = self.params.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = memo.get(target) {
            return Ok(p.clone());
        }
        // The frontend alone: the parameters without compiling the kernel.
        let (arch, _) = tilec_core::target::resolve(target).map_err(CompileError::new_err)?;
        let opts = self.spec.compile_options();
        let req = tilec_frontend::Request {
            kernel: opts.kernel.clone(),
            target: arch.name.to_string(),
            consts: opts.consts.clone(),
            unaligned: BTreeSet::new(),
            tcgen05: None,
        };
        let source = self.spec.source();
        let el = tilec_frontend::check(&source.text, &req)
            .map_err(|d| CompileError::new_err(tilec_core::diag::render(&d, source)))?;
        memo.insert(target.to_string(), el.signature.params.clone());
        Ok(el.signature.params)
    }
}

#[pymethods]
impl Kernel {
    /// `Kernel(source, is_path, kernel, constants, fast_math, no_fp_fusion, disable_passes)`:
    /// `source` is a path when `is_path`, else the text; constants as `{name: text}` (`"f16"`,
    /// `"128"`, `"true"`).
    #[new]
    #[pyo3(signature = (source, is_path, kernel=None, constants=None, fast_math=false, no_fp_fusion=false, disable_passes=None))]
    fn new(
        source: &str,
        is_path: bool,
        kernel: Option<String>,
        constants: Option<BTreeMap<String, String>>,
        fast_math: bool,
        no_fp_fusion: bool,
        disable_passes: Option<Vec<String>>,
    ) -> PyResult<Kernel> {
        let mut spec = if is_path {
            KernelSpec::from_file(source).map_err(jit_error)?
        } else {
            KernelSpec::from_source("<string>", source)
        };
        spec = spec.options(CompileOptions {
            fast_math,
            no_fp_fusion,
            disabled_passes: disable_passes.unwrap_or_default().into_iter().collect::<BTreeSet<_>>(),
            ..Default::default()
        });
        if let Some(k) = kernel {
            spec = spec.kernel(&k);
        }
        for (name, text) in constants.unwrap_or_default() {
            let value = ConstArg::parse(&text).ok_or_else(|| {
                CompileError::new_err(format!("constant {name}={text}: not an integer, float, bool or dtype"))
            })?;
            spec = spec.constant(&name, value);
        }
        Ok(Kernel { spec, params: Mutex::new(BTreeMap::new()), bound: Mutex::new(BTreeMap::new()) })
    }

    /// The PTX and the metadata JSON (`docs/abi.md`) for `arch`, compiled here (no GPU) or
    /// found in the cache.
    fn compile(&self, py: Python<'_>, arch: &str) -> PyResult<(String, String)> {
        let source = self.spec.source().clone();
        let opts = CompileOptions { arch: arch.to_string(), ..self.spec.compile_options().clone() };
        let entry = py.detach(move || compile_cached(&source, &opts))?;
        Ok((entry.artifact.ptx.clone(), entry.artifact.metadata_json()))
    }

    /// Validates a launch with `args` against the kernel compiled for `arch` (no GPU), with
    /// the specialisation the JIT would choose for them: the grid, or `LaunchError`.
    fn check(&self, py: Python<'_>, arch: &str, args: &Bound<'_, pyo3::types::PyList>) -> PyResult<(u32, u32, u32)> {
        let parsed = parse_args(args)?;
        let params = self.params(arch)?;
        let descs = descs(&params, &parsed)?;
        let unaligned = tilec::jit::specialisation(&params, &descs);
        let source = self.spec.source().clone();
        let opts = CompileOptions { arch: arch.to_string(), unaligned, ..self.spec.compile_options().clone() };
        let entry = py.detach(move || compile_cached(&source, &opts))?;
        let plan = tilec_runtime::validate(&entry.artifact.signature, &descs, None)
            .map_err(|e| jit_error(JitError::Launch(e)))?;
        Ok((plan.grid[0], plan.grid[1], plan.grid[2]))
    }

    /// Compiles (or finds) the variant for these arguments on GPU `device` and launches it on
    /// `stream` (a `CUstream` as an integer; 0 is the legacy default stream). Returns what the
    /// launch used: `unaligned`, `digest`, `blocks_per_sm`, `occupancy_hint`.
    fn launch<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, pyo3::types::PyList>,
        device: usize,
        stream: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let parsed = parse_args(args)?;
        let jit = jit_for(device)?;
        let target = jit.0.device().target().map_err(|e| jit_error(JitError::Launch(e)))?.name;
        let params = self.params(target)?;
        let descs = descs(&params, &parsed)?;
        let unaligned = tilec::jit::specialisation(&params, &descs);
        let known = self.bound.lock().unwrap_or_else(|p| p.into_inner()).get(&(device, unaligned.clone())).cloned();
        let spec = self.spec.clone();
        let (info, bound) = py
            .detach(move || {
                let slots: Vec<Slot> = descs
                    .iter()
                    .map(|d| match d {
                        // SAFETY: the Python half describes a CUDA tensor of this device from its own
                        // fields (address, extents, strides, the bytes they span); the caller keeps
                        // the tensor alive across the launch, as any PyTorch kernel call does.
                        ArgDesc::Tensor(t) => Slot::Tensor(unsafe { External::new(t.clone()) }),
                        ArgDesc::I32(v) => Slot::Scalar(Arg::I32(*v)),
                        ArgDesc::I64(v) => Slot::Scalar(Arg::I64(*v)),
                        ArgDesc::F32(v) => Slot::Scalar(Arg::F32(*v)),
                    })
                    .collect();
                let args: Vec<Arg<'_>> = slots
                    .iter()
                    .map(|s| match s {
                        Slot::Tensor(e) => Arg::External(e),
                        Slot::Scalar(a) => *a,
                    })
                    .collect();
                let bound = match known {
                    Some(b) => b,
                    None => jit.0.bind(&spec, &args)?,
                };
                // SAFETY: `stream` comes from the caller as a stream of this device's primary
                // context (PyTorch's current stream), alive while the call runs.
                unsafe { jit.0.launch_bound_on_stream(&bound, &args, stream as RawStream)? };
                Ok::<_, JitError>((bound.info.clone(), bound))
            })
            .map_err(jit_error)?;
        self.bound.lock().unwrap_or_else(|p| p.into_inner()).insert((device, unaligned), bound);
        let d = PyDict::new(py);
        d.set_item("unaligned", info.unaligned.into_iter().collect::<Vec<_>>())?;
        d.set_item("digest", info.digest)?;
        d.set_item("blocks_per_sm", info.blocks_per_sm)?;
        d.set_item("occupancy_hint", info.occupancy_hint)?;
        Ok(d)
    }
}

/// The target (`sm_90a`, …) of GPU `device`, or `DeviceError`.
#[pyfunction]
fn device_target(device: usize) -> PyResult<String> {
    let jit = jit_for(device)?;
    let target = jit.0.device().target().map_err(|e| jit_error(JitError::Launch(e)))?;
    Ok(target.name.to_string())
}

/// The compilation cache's folder (`$TILEC_CACHE_DIR`, default `~/.cache/tilec`).
#[pyfunction]
fn cache_dir() -> Option<String> {
    Cache::from_env().dir().map(|d| d.display().to_string())
}

/// The `tilec` command line on `argv` (program name first); its exit status.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(move || tilec_cli::exit_status(tilec_cli::run_args(&[], argv)))
}

/// tilec's JIT and command line for Python (see the package `tilec`).
#[pymodule]
fn _tilec(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Kernel>()?;
    m.add_function(wrap_pyfunction!(device_target, m)?)?;
    m.add_function(wrap_pyfunction!(cache_dir, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    let py = m.py();
    m.add("TilecError", py.get_type::<TilecError>())?;
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add("LaunchError", py.get_type::<LaunchError>())?;
    m.add("DeviceError", py.get_type::<DeviceError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
