//! The JIT: compile on first use, cached, specialised on the arguments, and launch.
//!
//! A [`KernelSpec`] names a kernel (source, kernel name, constants, pipeline switches); a
//! [`Jit`] owns a device, the compilation cache and the modules it loaded. [`Jit::launch`]
//! reads each tensor argument's 16-byte alignment (base address, strides, last extent — as
//! Triton specialises on divisibility), compiles the variant those arguments need for the
//! device (tensors that miss the specialisation read with scalar accesses, the others with
//! 16-byte vectors; the set is part of the cache key), loads it once, and launches it with
//! the grid the kernel's signature computes from the arguments. Every argument is validated
//! against the signature before anything reaches the GPU: a mistake is a
//! [`JitError::Launch`] naming the argument, never a panic and never a launch. A tensor
//! argument may be a view ([`Arg::View`]: a window on a buffer with its own offset, shape and
//! strides). A loop that launches the same kernels many times (a decoder's steps) binds each
//! once ([`Jit::bind`]) and launches the binding ([`Jit::launch_bound`]), which skips the
//! cache lookup but not the validation.
//!
//! Tensors another library allocated (PyTorch's, through the Python package) are passed as
//! [`Arg::External`] — validated like tilec's own — and launched on that library's stream
//! ([`Jit::launch_on_stream`], [`Jit::launch_bound_on_stream`]), so that a kernel is ordered
//! with the work around it without a copy or a synchronisation.
//!
//! Such a loop can also run as a CUDA graph ([`Jit::capture`], [`Jit::update`],
//! [`Graph::replay`]): the launches of one step are captured once — compiled, validated and
//! recorded, not run — and the graph replays them with one driver call. A later step runs the
//! same code under [`Jit::update`]: each launch is compared with the captured one, and only
//! the arguments that changed (a position, a row of a table) are validated again and written
//! into the graph; another kernel, another grid or another number of launches is refused with
//! an error and the graph will not replay until an update succeeds (`tilec_runtime::graph`).
//!
//! ```no_run
//! use tilec::jit::{Arg, Jit, KernelSpec};
//! use tilec::runtime::HostTensor;
//! use tilec::DType;
//!
//! let jit = Jit::new()?; // device 0; an error (not a panic) without a GPU
//! let softmax = KernelSpec::from_file("kernels/softmax.tile")?;
//! let x = jit.device().upload(&HostTensor::from_f64(DType::F32, &[4, 1000], &vec![0.5; 4000]))?;
//! let y = jit.device().upload(&HostTensor::from_f64(DType::F32, &[4, 1000], &vec![0.0; 4000]))?;
//! let softmax = softmax.constant("T", tilec::ConstArg::DType(DType::F32));
//! jit.launch(&softmax, &[Arg::Tensor(&x), Arg::Tensor(&y)])?;
//! let out = jit.device().download(&y)?; // every row sums to 1
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::cache::compile_cached;
use crate::compiler::CompileOptions;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tilec_core::abi::ParamSig;
use tilec_core::Source;
use tilec_frontend::ConstArg;
use tilec_runtime::cache::Cache;
use tilec_runtime::graph::Capture;
pub use tilec_runtime::graph::Graph;
use tilec_runtime::{ArgDesc, Device, DeviceTensor, Kernel, RuntimeError, TensorDesc, TensorView};

/// A JIT failure: the kernel did not compile (rendered diagnostics), or the device or a
/// launch argument said no.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    #[error("{0}")]
    /// The kernel did not compile: the diagnostics, rendered against the source.
    Compile(String),
    #[error(transparent)]
    /// The device, or the validation of a launch argument, said no (the error names the argument).
    Launch(#[from] RuntimeError),
    #[error("cannot read {path}: {reason}")]
    /// The kernel's source file could not be read.
    Read {
        /// The path given.
        path: String,
        /// What the file system said.
        reason: String,
    },
}

/// A kernel to compile on first use: its source, which kernel, constants and switches.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    source: Source,
    options: CompileOptions,
    tuned: bool,
}

impl KernelSpec {
    /// The kernel of `text` (named `name` in diagnostics); the only kernel of the file unless
    /// [`KernelSpec::kernel`] names one.
    pub fn from_source(name: &str, text: &str) -> KernelSpec {
        KernelSpec { source: Source::new(name, text.to_string()), options: CompileOptions::default(), tuned: false }
    }

    /// A kernel from a `.tile` file (the file's path names it in diagnostics).
    pub fn from_file(path: impl AsRef<Path>) -> Result<KernelSpec, JitError> {
        let p = path.as_ref();
        let text = std::fs::read_to_string(p)
            .map_err(|e| JitError::Read { path: p.display().to_string(), reason: e.to_string() })?;
        Ok(KernelSpec::from_source(&p.display().to_string(), &text))
    }

    /// Which kernel of the file.
    pub fn kernel(mut self, name: &str) -> KernelSpec {
        self.options.kernel = Some(name.to_string());
        self
    }

    /// Use the configuration `tilec tune` filed for this kernel, its constants and the shape
    /// bucket of the arguments on this target (the kernel's own `tune` space), when there is
    /// one; the defaults otherwise. Looked up once per shape bucket.
    pub fn tuned(mut self) -> KernelSpec {
        self.tuned = true;
        self
    }

    /// A compile-time constant (one cache entry per value).
    pub fn constant(mut self, name: &str, value: ConstArg) -> KernelSpec {
        self.options.consts.insert(name.to_string(), value);
        self
    }

    /// Compiles the spec for `arch` here, without a device or the cache: a test that every
    /// kernel a program launches compiles for its targets, or an ahead-of-time check.
    pub fn compile_for(&self, arch: &str) -> Result<crate::Compiled, crate::CompileError> {
        crate::compile(&self.source, &CompileOptions { arch: arch.to_string(), ..self.options.clone() })
    }

    /// The kernel's source.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The options it compiles with (the target and specialisation are the JIT's to set).
    pub fn compile_options(&self) -> &CompileOptions {
        &self.options
    }

    /// The pipeline switches and everything else of [`CompileOptions`] but the target and
    /// the specialisation, which the JIT decides.
    pub fn options(mut self, options: CompileOptions) -> KernelSpec {
        let kernel = self.options.kernel.take();
        let consts = std::mem::take(&mut self.options.consts);
        self.options = CompileOptions { kernel: options.kernel.or(kernel), consts, ..options };
        self
    }
}

/// A launch argument, in parameter order.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// A whole tensor: its buffer, dtype, shape and strides.
    Tensor(&'a DeviceTensor),
    /// A strided window on a tensor's buffer ([`DeviceTensor::view`]).
    View(&'a TensorView<'a>),
    /// A tensor another library owns (a PyTorch tensor): [`External`].
    External(&'a External),
    /// An `i32` scalar parameter.
    I32(i32),
    /// An `i64` scalar parameter.
    I64(i64),
    /// An `f32` scalar parameter.
    F32(f32),
}

/// A tensor that another library allocated on the JIT's device (a PyTorch or CuPy tensor),
/// passed without a copy: its element type, shape, strides, address and the bytes it may
/// address from there. tilec validates a launch against it as against its own tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct External(TensorDesc);

impl External {
    /// Wraps a descriptor.
    ///
    /// # Safety
    /// `desc.addr .. desc.addr + desc.len_bytes` is memory of the JIT's device (its primary
    /// context) that stays allocated until every kernel launched with it has finished: the
    /// launch validation keeps each addressed element inside that range and can check no more.
    pub unsafe fn new(desc: TensorDesc) -> External {
        External(desc)
    }

    /// The descriptor.
    pub fn desc(&self) -> &TensorDesc {
        &self.0
    }
}

/// The tensor parameters whose arguments miss the 16-byte specialisation: the `unaligned`
/// set of the variant to compile for `args` (`params` in the kernel's order).
pub fn specialisation(params: &[ParamSig], args: &[ArgDesc]) -> BTreeSet<String> {
    params
        .iter()
        .zip(args)
        .filter(|(p, a)| matches!((p, a), (ParamSig::Tensor { .. }, ArgDesc::Tensor(t)) if !t.aligned16()))
        .map(|(p, _)| p.name().to_string())
        .collect()
}

/// What one launch used, for callers that report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchInfo {
    /// The tensors compiled with scalar accesses for these arguments.
    pub unaligned: BTreeSet<String>,
    /// The cache entry of the variant that ran.
    pub digest: String,
    /// Blocks that fit one SM at once (the driver's occupancy calculator; `None` when it
    /// could not say), beside the kernel's own `occupancy` hint.
    pub blocks_per_sm: Option<u32>,
    /// The kernel's own `occupancy` hint (`None` when it has none).
    pub occupancy_hint: Option<u32>,
}

/// A kernel variant compiled and loaded for a set of arguments ([`Jit::bind`]).
#[derive(Clone, Debug)]
pub struct Bound {
    kernel: Arc<Kernel>,
    /// What the launches of this binding use.
    pub info: LaunchInfo,
}

/// A variant loaded on the device, with the blocks of it that fit an SM (the driver's
/// occupancy calculator; `None` when it could not say).
type Loaded = (Arc<Kernel>, Option<u32>);

/// A device, the compilation cache and the modules loaded on the device.
pub struct Jit {
    device: Device,
    cache: Cache,
    /// Loaded variants by cache digest, with their blocks per SM.
    modules: Mutex<BTreeMap<String, Loaded>>,
    /// Filed tune choices by (spec, shape bucket): the constants to add, if any.
    tuned: Mutex<BTreeMap<String, Option<BTreeMap<String, ConstArg>>>>,
    /// Where launches go while a graph is captured or updated; `None`: to the device.
    recording: Mutex<Option<Recording>>,
}

/// A graph the launches are going into instead of the device.
enum Recording {
    Capture(Capture),
    Update(Graph),
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Jit({:?})", self.device)
    }
}

impl Jit {
    /// A JIT on device 0 with the cache the environment names (`TILEC_CACHE_DIR`, …; see
    /// [`Cache::from_env`]).
    pub fn new() -> Result<Jit, JitError> {
        Ok(Jit::with(Device::open(0)?, Cache::from_env()))
    }

    /// A JIT on this device with this cache.
    pub fn with(device: Device, cache: Cache) -> Jit {
        Jit {
            device,
            cache,
            modules: Mutex::new(BTreeMap::new()),
            tuned: Mutex::new(BTreeMap::new()),
            recording: Mutex::new(None),
        }
    }

    /// The device this JIT launches on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The compilation cache this JIT compiles through.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Compiles, side by side on up to [`crate::parallel::threads`] threads, the variant of
    /// each spec that a launch with 16-byte aligned tensors runs (the one [`Jit::bind`]
    /// compiles first), into this JIT's cache: the launches after it find them there instead
    /// of compiling one after the other. A model's warm-up calls it with every kernel it
    /// launches. A spec marked [`KernelSpec::tuned`] is left to its first launch (its
    /// constants depend on the shapes, known then); so is a variant for unaligned tensors.
    /// Nothing is loaded onto the device here. One result a spec, in their order; the
    /// outer error: the device's target is unknown.
    pub fn prepare(&self, specs: &[&KernelSpec]) -> Result<Vec<Result<(), JitError>>, JitError> {
        let p = self.preparer()?;
        Ok(crate::parallel::map(specs, crate::parallel::threads(), |spec| p.prepare(spec)))
    }

    /// What [`Jit::prepare`] compiles with, to hand to threads of one's own (the tuner
    /// compiles configurations ahead while it times earlier ones): the Jit itself stays on
    /// its thread (a graph it records is not to be shared).
    pub fn preparer(&self) -> Result<Preparer<'_>, JitError> {
        Ok(Preparer { cache: &self.cache, arch: self.device.target()?.name })
    }

    fn compile(&self, spec: &KernelSpec, unaligned: BTreeSet<String>) -> Result<crate::CachedCompile, JitError> {
        compile_variant(&self.cache, self.device.target()?.name, spec, unaligned)
    }

    /// The constants `tilec tune` filed for `spec` and these tensor shapes (see
    /// [`KernelSpec::tuned`]).
    fn tuned_constants(
        &self,
        spec: &KernelSpec,
        shapes: &[Vec<i64>],
    ) -> Result<Option<BTreeMap<String, ConstArg>>, JitError> {
        let memo =
            format!("{}\u{0}{:?}\u{0}{}", spec.source.text, spec.options, tilec_runtime::tune::shape_bucket(shapes));
        if let Some(found) = self.tuned.lock().unwrap_or_else(|p| p.into_inner()).get(&memo) {
            return Ok(found.clone());
        }
        let target = self.device.target()?;
        let req = tilec_frontend::Request {
            kernel: spec.options.kernel.clone(),
            target: target.name.to_string(),
            consts: spec.options.consts.clone(),
            unaligned: Default::default(),
            tcgen05: None,
        };
        let el = tilec_frontend::check(&spec.source.text, &req)
            .map_err(|d| JitError::Compile(tilec_core::diag::render(&d, &spec.source)))?;
        let space = crate::cache::tune_space(&el.tune, &spec.options.consts);
        let key = crate::cache::tune_key(&spec.source, &el.func.name, &spec.options.consts, &space, target, shapes);
        let found = self.cache.dir().and_then(|d| tilec_runtime::tune::load(d, &key)).map(|r| {
            r.best.iter().filter_map(|(k, v)| ConstArg::parse(v).map(|c| (k.clone(), c))).collect::<BTreeMap<_, _>>()
        });
        self.tuned.lock().unwrap_or_else(|p| p.into_inner()).insert(memo, found.clone());
        Ok(found)
    }

    fn descs(&self, args: &[Arg<'_>]) -> Vec<ArgDesc> {
        args.iter()
            .map(|a| match a {
                Arg::Tensor(t) => ArgDesc::Tensor(self.device.desc(t)),
                Arg::View(v) => ArgDesc::Tensor(self.device.view_desc(v)),
                Arg::External(e) => ArgDesc::Tensor(e.0.clone()),
                Arg::I32(v) => ArgDesc::I32(*v),
                Arg::I64(v) => ArgDesc::I64(*v),
                Arg::F32(v) => ArgDesc::F32(*v),
            })
            .collect()
    }

    /// Compiles (or finds) the variant of `spec` for these arguments, validates them and
    /// launches on the device's stream (asynchronously: [`Device::synchronize`] waits).
    pub fn launch(&self, spec: &KernelSpec, args: &[Arg<'_>]) -> Result<LaunchInfo, JitError> {
        let descs = self.descs(args);
        let bound = self.bind_descs(spec, args, &descs)?;
        self.issue(&bound.kernel, &descs)?;
        Ok(bound.info)
    }

    /// [`Jit::launch`] on a stream another library made (a PyTorch stream), so that the
    /// kernel runs in order with that library's work; refused while a graph is recorded.
    ///
    /// # Safety
    /// `stream` is null (the legacy default stream) or a live stream of the device's primary
    /// context, alive until the call returns.
    pub unsafe fn launch_on_stream(
        &self,
        spec: &KernelSpec,
        args: &[Arg<'_>],
        stream: tilec_runtime::RawStream,
    ) -> Result<LaunchInfo, JitError> {
        let descs = self.descs(args);
        let bound = self.bind_descs(spec, args, &descs)?;
        // SAFETY: the caller's contract.
        unsafe { self.issue_on_stream(&bound.kernel, &descs, stream)? };
        Ok(bound.info)
    }

    /// [`Jit::launch_bound`] on a stream another library made (see [`Jit::launch_on_stream`]):
    /// a binding launched many times from a host language skips the cache lookup too.
    ///
    /// # Safety
    /// As [`Jit::launch_on_stream`].
    pub unsafe fn launch_bound_on_stream(
        &self,
        bound: &Bound,
        args: &[Arg<'_>],
        stream: tilec_runtime::RawStream,
    ) -> Result<(), JitError> {
        let descs = self.descs(args);
        self.check_binding(bound, &descs)?;
        // SAFETY: the caller's contract.
        unsafe { self.issue_on_stream(&bound.kernel, &descs, stream) }
    }

    /// [`Jit::issue`] for another library's stream: launches there, or refuses while a graph
    /// is being recorded (the launch would escape it).
    ///
    /// # Safety
    /// As [`Jit::launch_on_stream`].
    unsafe fn issue_on_stream(
        &self,
        kernel: &Kernel,
        descs: &[ArgDesc],
        stream: tilec_runtime::RawStream,
    ) -> Result<(), JitError> {
        if self.recording().is_some() {
            return Err(JitError::Launch(RuntimeError::Graph(
                "a launch on another stream while a graph is recorded on the device's".into(),
            )));
        }
        // SAFETY: the caller's contract.
        unsafe { self.device.launch_on_stream(kernel, descs, stream)? };
        Ok(())
    }

    /// That `descs` want the variant `bound` compiled (the same tensors 16-byte aligned).
    fn check_binding(&self, bound: &Bound, descs: &[ArgDesc]) -> Result<(), JitError> {
        let unaligned = specialisation(&bound.kernel.signature.params, descs);
        if unaligned != bound.info.unaligned {
            return Err(JitError::Launch(RuntimeError::Unsupported(format!(
                "`{}` was bound for arguments leaving {:?} unaligned; these leave {:?}: bind it for them",
                bound.kernel.signature.name, bound.info.unaligned, unaligned
            ))));
        }
        Ok(())
    }

    /// Where launches go now (see `recording`).
    fn recording(&self) -> std::sync::MutexGuard<'_, Option<Recording>> {
        self.recording.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Launches on the device, or records the launch in the graph being captured or updated.
    fn issue(&self, kernel: &Arc<Kernel>, descs: &[ArgDesc]) -> Result<(), JitError> {
        let mut recording = self.recording();
        match recording.as_mut() {
            None => self.device.launch(kernel, descs)?,
            Some(Recording::Capture(c)) => {
                c.launch(kernel, descs)?;
            }
            Some(Recording::Update(g)) => g.update(kernel, descs)?,
        }
        Ok(())
    }

    /// Runs `launches` with every launch through this Jit captured into a CUDA graph instead
    /// of run (see the module docs): compiled and validated now, run by [`Graph::replay`].
    /// Nothing else may be queued on the device while it runs (a copy or a synchronisation
    /// is an error of the capture). Bind or launch the kernels once before (a warm-up step,
    /// as `examples/qwen2` does): a kernel compiled and loaded during the capture is only
    /// as good as what the driver allows a capturing thread, and its compile time lands in
    /// the capture.
    pub fn capture<E: From<JitError>>(&self, launches: impl FnOnce() -> Result<(), E>) -> Result<Graph, E> {
        {
            let mut recording = self.recording();
            if recording.is_some() {
                return Err(JitError::Launch(RuntimeError::Graph("a graph is already being recorded".into())).into());
            }
            *recording = Some(Recording::Capture(self.device.begin_capture().map_err(JitError::Launch)?));
        }
        let result = launches();
        let taken = self.recording().take();
        result?;
        match taken {
            Some(Recording::Capture(c)) => Ok(c.finish().map_err(JitError::Launch)?),
            _ => Err(JitError::Launch(RuntimeError::Graph("the capture was lost".into())).into()),
        }
    }

    /// Runs `launches` — the same launches `graph` was captured from, with arguments that may
    /// differ — as an update of `graph` (see the module docs). On an error the graph refuses
    /// to replay until an update succeeds.
    pub fn update<E: From<JitError>>(
        &self,
        graph: &mut Graph,
        launches: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        {
            let mut recording = self.recording();
            if recording.is_some() {
                return Err(JitError::Launch(RuntimeError::Graph("a graph is already being recorded".into())).into());
            }
            let mut g = std::mem::replace(graph, Graph::placeholder());
            g.begin_update();
            *recording = Some(Recording::Update(g));
        }
        let result = launches();
        let taken = self.recording().take();
        let Some(Recording::Update(mut g)) = taken else {
            return Err(JitError::Launch(RuntimeError::Graph("the graph was lost during its update".into())).into());
        };
        let ended = match result {
            // A launch that failed leaves the graph stale; one that was never made is the
            // count's error.
            Ok(()) => g.end_update(),
            Err(_) => Ok(()),
        };
        *graph = g;
        result?;
        ended.map_err(|e| JitError::Launch(e).into())
    }

    /// Launches a kernel [`Jit::bind`] resolved, without looking it up again: what a loop
    /// that launches the same kernels on the same buffers many times (a decoder's steps)
    /// calls. The arguments are validated as by [`Jit::launch`], and must want the variant
    /// the binding compiled (the same tensors aligned to 16 bytes), or it is an error.
    pub fn launch_bound(&self, bound: &Bound, args: &[Arg<'_>]) -> Result<(), JitError> {
        let descs = self.descs(args);
        self.check_binding(bound, &descs)?;
        self.issue(&bound.kernel, &descs)
    }

    /// Compiles (or finds) and loads the variant of `spec` that these arguments need,
    /// without launching it (see [`Jit::launch_bound`]).
    pub fn bind(&self, spec: &KernelSpec, args: &[Arg<'_>]) -> Result<Bound, JitError> {
        self.bind_descs(spec, args, &self.descs(args))
    }

    /// [`Jit::bind`] with the arguments' descriptors already made.
    fn bind_descs(&self, spec: &KernelSpec, args: &[Arg<'_>], descs: &[ArgDesc]) -> Result<Bound, JitError> {
        let applied;
        let spec = if spec.tuned {
            let shapes: Vec<Vec<i64>> = args
                .iter()
                .filter_map(|a| match a {
                    Arg::Tensor(t) => Some(t.shape.clone()),
                    Arg::View(v) => Some(v.shape.clone()),
                    Arg::External(e) => Some(e.0.shape.clone()),
                    _ => None,
                })
                .collect();
            match self.tuned_constants(spec, &shapes)? {
                Some(consts) => {
                    let mut s = spec.clone();
                    s.options.consts.extend(consts);
                    applied = s;
                    &applied
                }
                None => spec,
            }
        } else {
            spec
        };
        // The fully specialised variant names the parameters; the arguments then pick the
        // variant to run (often the same one: a memory hit).
        let first = self.compile(spec, BTreeSet::new())?;
        let unaligned = specialisation(&first.entry.artifact.signature.params, descs);
        let chosen = if unaligned.is_empty() { first } else { self.compile(spec, unaligned.clone())? };
        let digest = chosen.entry.key.digest();
        let (kernel, blocks_per_sm) = {
            let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            match modules.get(&digest) {
                Some(k) => k.clone(),
                None => {
                    let art = &chosen.entry.artifact;
                    let cubin = chosen.entry.cubin.as_deref();
                    let k = Arc::new(self.device.load_assembled(&art.ptx, cubin, art.signature.clone())?);
                    let occ = self.device.occupancy(&k).ok();
                    modules.insert(digest.clone(), (k.clone(), occ));
                    (k, occ)
                }
            }
        };
        if blocks_per_sm == Some(0) {
            let sig = &kernel.signature;
            return Err(JitError::Launch(RuntimeError::Unsupported(format!(
                "`{}` cannot run on this device: not one block of {} threads with {} bytes of shared memory fits an SM (the driver's occupancy calculator)",
                sig.name, sig.block_threads, sig.shared_bytes
            ))));
        }
        let occupancy_hint = chosen.entry.artifact.hints.occupancy;
        Ok(Bound { kernel, info: LaunchInfo { unaligned, digest, blocks_per_sm, occupancy_hint } })
    }
}

/// Compiles variants of a [`Jit`] into its cache from any thread (see [`Jit::preparer`]).
#[derive(Clone, Copy, Debug)]
pub struct Preparer<'j> {
    cache: &'j Cache,
    arch: &'static str,
}

impl Preparer<'_> {
    /// [`Jit::prepare`] of one spec, on the calling thread.
    pub fn prepare(&self, spec: &KernelSpec) -> Result<(), JitError> {
        if spec.tuned {
            return Ok(());
        }
        compile_variant(self.cache, self.arch, spec, BTreeSet::new()).map(|_| ())
    }
}

/// The variant of `spec` for `arch` leaving `unaligned` unaligned, through `cache`; the
/// cache's warnings and a spilling variant's are said on stderr.
fn compile_variant(
    cache: &Cache,
    arch: &str,
    spec: &KernelSpec,
    unaligned: BTreeSet<String>,
) -> Result<crate::CachedCompile, JitError> {
    let opts = CompileOptions { arch: arch.to_string(), unaligned, ..spec.options.clone() };
    let c = compile_cached(&spec.source, &opts, cache).map_err(|e| JitError::Compile(e.render()))?;
    if let Some(w) = &c.warning {
        // The cache says this once per Jit; compiling carries on.
        eprintln!("tilec: warning: {w}");
    }
    if let (Some(w), None) = (c.spills(), c.hit) {
        // Said when the variant is compiled, not at every answer from the cache.
        eprintln!("tilec: warning: {w}");
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_core::DType;
    use tilec_runtime::TensorDesc;

    fn tensor(name: &str) -> ParamSig {
        ParamSig::Tensor {
            name: name.into(),
            dtype: DType::F16,
            rank: 2,
            aligned16: true,
            access: Default::default(),
            extents: vec![],
            independent: false,
        }
    }

    #[test]
    fn the_specialisation_names_the_tensors_the_arguments_leave_unaligned() {
        let params = [tensor("x"), ParamSig::Scalar { name: "eps".into(), dtype: DType::F32 }, tensor("y")];
        let t = |n: i64, addr: u64| {
            ArgDesc::Tensor(TensorDesc {
                dtype: DType::F16,
                shape: vec![4, n],
                strides: vec![n, 1],
                addr,
                len_bytes: (8 * n) as u64,
            })
        };
        assert!(specialisation(&params, &[t(1024, 256), ArgDesc::F32(1.0), t(1024, 512)]).is_empty());
        // A ragged row (1000 f16 = 2000 bytes is a multiple of 16; 999 is not) and an odd base.
        let s = specialisation(&params, &[t(999, 256), ArgDesc::F32(1.0), t(1024, 514)]);
        assert_eq!(s, ["x".to_string(), "y".to_string()].into_iter().collect());
    }

    #[test]
    fn without_a_driver_the_jit_is_an_error_not_a_panic() {
        if tilec_runtime::driver_available().is_ok() {
            return; // a GPU machine: nothing to show here
        }
        let e = Jit::new().unwrap_err();
        assert!(e.to_string().contains("no NVIDIA driver"), "{e}");
        assert!(matches!(KernelSpec::from_file("no/such.tile"), Err(JitError::Read { .. })));
    }
}
