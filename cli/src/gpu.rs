//! The GPU harness over the kernel specs of `tilec-suite`: compile a case specialised on its
//! actual arguments, upload fresh random inputs, launch, compare with the reference
//! (`tilec check`), and time the cases that pass (`tilec bench`; a wrong kernel is never timed).

use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;
use tilec::{compile, CompileOptions, DType, Source};
use tilec_runtime::{ArgDesc, Device, DeviceTensor, HostTensor};
use tilec_suite::{Arg, Case, Spec};

/// The outcome of checking one case.
#[derive(Clone, Debug, Serialize)]
pub struct CheckRow {
    pub kernel: String,
    pub shape: String,
    pub dtype: DType,
    pub max_abs: f64,
    pub rel_l2: f64,
    pub tolerance: f64,
    pub pass: bool,
    pub note: String,
}

/// An argument on the device: a tensor uploaded (a fresh copy), or a scalar.
pub enum DeviceArg {
    Tensor(DeviceTensor),
    I32(i32),
    I64(i64),
    F32(f32),
}

impl std::fmt::Debug for DeviceArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceArg::Tensor(t) => write!(f, "{t:?}"),
            DeviceArg::I32(v) => write!(f, "{v}i32"),
            DeviceArg::I64(v) => write!(f, "{v}i64"),
            DeviceArg::F32(v) => write!(f, "{v}f32"),
        }
    }
}

impl DeviceArg {
    pub fn tensor(&self) -> Option<&DeviceTensor> {
        match self {
            DeviceArg::Tensor(t) => Some(t),
            _ => None,
        }
    }

    /// The argument as the launch validator sees it.
    pub fn desc(&self, dev: &Device) -> ArgDesc {
        match self {
            DeviceArg::Tensor(t) => ArgDesc::Tensor(dev.desc(t)),
            DeviceArg::I32(v) => ArgDesc::I32(*v),
            DeviceArg::I64(v) => ArgDesc::I64(*v),
            DeviceArg::F32(v) => ArgDesc::F32(*v),
        }
    }

    /// The argument as the JIT takes it.
    pub fn jit(&self) -> tilec::jit::Arg<'_> {
        match self {
            DeviceArg::Tensor(t) => tilec::jit::Arg::Tensor(t),
            DeviceArg::I32(v) => tilec::jit::Arg::I32(*v),
            DeviceArg::I64(v) => tilec::jit::Arg::I64(*v),
            DeviceArg::F32(v) => tilec::jit::Arg::F32(*v),
        }
    }
}

/// Host arguments (a suite case's, or `--arg`'s) on the device, in order.
pub fn upload_args(dev: &Device, args: &[Arg]) -> Result<Vec<DeviceArg>, tilec_runtime::RuntimeError> {
    args.iter()
        .map(|a| {
            Ok(match a {
                Arg::Tensor(h) => DeviceArg::Tensor(dev.upload(h)?),
                Arg::I32(v) => DeviceArg::I32(*v),
                Arg::I64(v) => DeviceArg::I64(*v),
                Arg::F32(v) => DeviceArg::F32(*v),
            })
        })
        .collect()
}

/// Every tensor argument after a run, in order.
pub fn download_tensors(dev: &Device, args: &[DeviceArg]) -> Result<Vec<HostTensor>, tilec_runtime::RuntimeError> {
    args.iter().filter_map(DeviceArg::tensor).map(|t| dev.download(t)).collect()
}

/// A kernel compiled, loaded and with its arguments on the device.
#[derive(Debug)]
pub struct Prepared {
    pub kernel: tilec_runtime::Kernel,
    /// The arguments on the device, in parameter order.
    pub on_device: Vec<DeviceArg>,
    pub args: Vec<Arg>,
    pub descs: Vec<ArgDesc>,
    pub report: Vec<String>,
}

/// The pipeline variant a GPU run compiles with: the CLI's switches (`--disable-pass`,
/// `--fast-math`, …), one struct for both.
pub use crate::commands::VariantArgs as Variant;

/// Compiles `spec` for `case` (specialised on the alignment of the actual tensors), uploads
/// fresh random inputs and returns everything needed to launch.
pub fn prepare(
    dev: &Device,
    kernels_dir: &Path,
    spec: &Spec,
    case: &Case,
    seed: u64,
    variant: &Variant,
) -> Result<Prepared, String> {
    use rand::SeedableRng;
    let path = variant.kernel_path(kernels_dir, spec);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let source = Source::new(path.display().to_string(), text);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let args = (spec.inputs)(case, &mut rng);
    let on_device = upload_args(dev, &args).map_err(|e| e.to_string())?;
    let descs: Vec<ArgDesc> = on_device.iter().map(|a| a.desc(dev)).collect();
    let file = tilec_frontend::parse(&source.text).map_err(|d| tilec_core::diag::render(&d, &source))?;
    let kdecl = file
        .kernels
        .iter()
        .find(|d| d.name.name == spec.kernel)
        .ok_or_else(|| format!("no kernel `{}` in {}", spec.kernel, path.display()))?;
    let runtime_params: Vec<String> =
        kdecl.params.iter().filter(|p| !p.is_const).map(|p| p.name.name.clone()).collect();
    let unaligned: BTreeSet<String> = descs
        .iter()
        .zip(&runtime_params)
        .filter(|(a, _)| matches!(a, ArgDesc::Tensor(t) if !t.aligned16()))
        .map(|(_, n)| n.clone())
        .collect();
    let target = dev.target().map_err(|e| e.to_string())?;
    let opts = variant.apply(CompileOptions {
        arch: target.name.to_string(),
        kernel: Some(spec.kernel.to_string()),
        consts: spec.constants(case),
        unaligned,
        ptx_only: true,
        ..Default::default()
    });
    let compiled = compile(&source, &opts).map_err(|e| e.render())?;
    let kernel = dev.load(compiled.ptx(), compiled.signature.clone()).map_err(|e| e.to_string())?;
    Ok(Prepared { kernel, on_device, args, descs, report: compiled.report })
}

/// Why `spec`'s kernel does not lower for this device (with `variant`) at all — every error
/// E0900, an instruction the target lacks (sm_121a's block-scaled products on an H100 without
/// `--emulate sm_121a`) — or `None` when it lowers (or fails otherwise: the check says so).
pub fn not_lowered_here(
    dev: &Device,
    kernels_dir: &Path,
    spec: &Spec,
    case: &Case,
    variant: &Variant,
) -> Option<String> {
    let path = variant.kernel_path(kernels_dir, spec);
    let text = std::fs::read_to_string(&path).ok()?;
    let source = Source::new(path.display().to_string(), text);
    let target = dev.target().ok()?;
    let opts = variant.apply(CompileOptions {
        arch: target.name.to_string(),
        kernel: Some(spec.kernel.to_string()),
        consts: spec.constants(case),
        until: Some(tilec::Stage::Tilegpu),
        ..Default::default()
    });
    match compile(&source, &opts) {
        Err(e) if !e.diagnostics.is_empty() && e.diagnostics.iter().all(|d| d.code == "E0900") => {
            Some(e.diagnostics[0].message.clone())
        }
        _ => None,
    }
}

/// The row of a case not run (yet): no errors measured, not passed.
fn check_case_unrun(spec: &Spec, case: &Case) -> CheckRow {
    CheckRow {
        kernel: spec.name.to_string(),
        shape: case.label(),
        dtype: case.dtype,
        max_abs: f64::NAN,
        rel_l2: f64::NAN,
        tolerance: spec.tolerance_of(case),
        pass: false,
        note: String::new(),
    }
}

/// Every argument after a run: its tensor downloaded, a placeholder for a scalar.
fn download_all(dev: &Device, args: &[DeviceArg]) -> Result<Vec<HostTensor>, String> {
    args.iter()
        .map(|a| match a.tensor() {
            Some(t) => dev.download(t).map_err(|e| e.to_string()),
            None => Ok(HostTensor::from_f64(DType::F32, &[0], &[])),
        })
        .collect()
}

/// A case run on the GPU, before its comparison: the arguments as launched and every
/// argument after the run, or why it did not run (see [`launch_case`], [`Launched::finish`]).
pub struct Launched {
    spec: &'static Spec,
    case: Case,
    run: Result<(Vec<Arg>, Vec<HostTensor>), String>,
}

impl Launched {
    /// The row: every output compared with the CPU reference (the slow part for the large
    /// cases — `tilec check` runs it on other threads while the GPU runs the next cases).
    pub fn finish(self) -> CheckRow {
        let mut row = check_case_unrun(self.spec, &self.case);
        match self.run {
            Ok((args, after)) => {
                let c = self.spec.compare(&self.case, &args, &after);
                row.max_abs = c.max_abs;
                row.rel_l2 = c.rel_l2;
                row.pass = c.pass;
                row.note = c.note;
            }
            Err(e) => row.note = e,
        }
        row
    }
}

/// Runs a case once on the GPU and downloads every argument. With `graph`, the launch is
/// captured into a CUDA graph on the inputs' first copy, the graph is updated to a second
/// copy (other buffers, the same values: every tensor address changes), replayed, and the
/// second copy is what is downloaded — while the first copy must come out untouched.
pub fn launch_case(
    dev: &Device,
    kernels_dir: &Path,
    spec: &'static Spec,
    case: &Case,
    seed: u64,
    variant: &Variant,
    graph: bool,
) -> Launched {
    let run = || -> Result<(Vec<Arg>, Vec<HostTensor>), String> {
        let p = prepare(dev, kernels_dir, spec, case, seed, variant)?;
        if !graph {
            dev.launch(&p.kernel, &p.descs).map_err(|e| e.to_string())?;
            dev.synchronize().map_err(|e| e.to_string())?;
            let after = download_all(dev, &p.on_device)?;
            return Ok((p.args, after));
        }
        let kernel = std::sync::Arc::new(p.kernel);
        let mut capture = dev.begin_capture().map_err(|e| e.to_string())?;
        capture.launch(&kernel, &p.descs).map_err(|e| e.to_string())?;
        let mut g = capture.finish().map_err(|e| e.to_string())?;
        let second = upload_args(dev, &p.args).map_err(|e| e.to_string())?;
        let descs: Vec<ArgDesc> = second.iter().map(|a| a.desc(dev)).collect();
        g.begin_update();
        g.update(&kernel, &descs).map_err(|e| e.to_string())?;
        g.end_update().map_err(|e| e.to_string())?;
        g.replay().map_err(|e| e.to_string())?;
        dev.synchronize().map_err(|e| e.to_string())?;
        let first = download_all(dev, &p.on_device)?;
        let before: Vec<HostTensor> = p
            .args
            .iter()
            .map(|a| if let Arg::Tensor(h) = a { h.clone() } else { HostTensor::from_f64(DType::F32, &[0], &[]) })
            .collect();
        // (An empty tensor's buffer is 16 bytes of zeros: compare what the host had.)
        if let Some(i) = first.iter().zip(&before).position(|(a, b)| a.data.get(..b.data.len()) != Some(&b.data[..])) {
            return Err(format!("the graph, updated to other buffers, still wrote argument {i}'s first buffer"));
        }
        // An update that launches nothing does not match the graph: refused, and the graph
        // then refuses to replay.
        g.begin_update();
        if g.end_update().is_ok() || g.replay().is_ok() {
            return Err("an update without the graph's launch was accepted".into());
        }
        let after = download_all(dev, &second)?;
        Ok((p.args, after))
    };
    Launched { spec, case: case.clone(), run: run() }
}

/// One timed configuration.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub kernel: String,
    pub class: String,
    pub shape: String,
    pub dtype: DType,
    /// The anchors.py kernel and config of the same problem, if the peers run it.
    pub peer_kernel: String,
    pub peer_config: Option<String>,
    pub median_ms: f64,
    pub min_ms: f64,
    pub gbps: f64,
    pub tflops: Option<f64>,
    /// The floor time: bytes over the measured copy bandwidth, or FLOPs over the measured
    /// matrix rate (cuBLAS of the same run) when that is larger and known.
    pub floor_ms: f64,
    pub copy_gbps: f64,
    pub rel_l2: f64,
    pub runs: usize,
    pub report: Vec<String>,
}

/// Multiply-adds of a case's CPU reference, roughly: the product of the dims, times the
/// sequence length for attention (S² · D per head; MLA's S² · (2D + DR)).
pub fn ref_work(spec: &Spec, case: &Case) -> f64 {
    let p: f64 = case.dims.iter().map(|&d| d as f64).product();
    match (spec.class, &case.dims[..]) {
        // MLA, [B, H, S, D, DR]: every query row against every key over D + DR, and P·V over D.
        (tilec_suite::Class::Fmha, &[b, h, s, d, dr]) => (b * h * s * s * (2 * d + dr)) as f64,
        (tilec_suite::Class::Fmha, _) => p * case.dims.get(2).copied().unwrap_or(1) as f64,
        _ => p,
    }
}

/// Largest reference `tilec bench` runs before timing a case (a few seconds of one core).
pub const BENCH_MAX_REF_WORK: f64 = 3e9;

/// How a run times its cases: timed runs, and the measured ceilings the floors come from.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub reps: usize,
    pub copy_gbps: f64,
    pub matmul_tflops: Option<f64>,
}

/// Checks then times one case: 10 warm-up runs, `reps` timed runs with L2 flushed before
/// each (outside the timed region), median reported. `matmul_tflops` is the measured matrix
/// rate (cuBLAS in the same run), for the floor of compute-bound kernels.
pub fn bench_case(
    dev: &Device,
    kernels_dir: &Path,
    spec: &'static Spec,
    case: &Case,
    timing: &Timing,
    variant: &Variant,
) -> Result<BenchRow, String> {
    let Timing { reps, copy_gbps, matmul_tflops } = *timing;
    // A case whose CPU reference is too large to run (4096³, S = 16384) is timed unchecked:
    // rel L2 NaN in the row; `tilec check` covers the kernel at checkable sizes.
    let check = if ref_work(spec, case) <= BENCH_MAX_REF_WORK {
        launch_case(dev, kernels_dir, spec, case, 7, variant, false).finish()
    } else {
        CheckRow { pass: true, rel_l2: f64::NAN, ..check_case_unrun(spec, case) }
    };
    if !check.pass {
        return Err(format!(
            "{} {} fails its check (rel L2 {:.3e}) {}: not timed",
            spec.name,
            case.label(),
            check.rel_l2,
            check.note
        ));
    }
    let p = prepare(dev, kernels_dir, spec, case, 11, variant)?;
    let plan = tilec_runtime::validate(&p.kernel.signature, &p.descs, None).map_err(|e| e.to_string())?;
    let mut scratch = dev.l2_flusher(256 << 20).map_err(|e| e.to_string())?;
    let times = dev
        .time(10, reps, || dev.flush(&mut scratch), || dev.launch_plan(&p.kernel, &plan))
        .map_err(|e| e.to_string())?;
    let med = tilec_runtime::median(&times);
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let bytes = (spec.bytes)(case);
    let flops = spec.flops.map(|f| f(case));
    Ok(BenchRow {
        kernel: spec.name.to_string(),
        class: spec.class.name().to_string(),
        shape: case.label(),
        dtype: case.dtype,
        peer_kernel: spec.peer_kernel.to_string(),
        peer_config: (spec.peer_config)(case),
        median_ms: med,
        min_ms: min,
        gbps: bytes / (med * 1e-3) / 1e9,
        tflops: flops.map(|f| f / (med * 1e-3) / 1e12),
        floor_ms: {
            let mem = bytes / (copy_gbps * 1e9) * 1e3;
            match (flops, matmul_tflops) {
                (Some(f), Some(t)) => mem.max(f / (t * 1e12) * 1e3),
                _ => mem,
            }
        },
        copy_gbps,
        rel_l2: check.rel_l2,
        runs: times.len(),
        report: p.report,
    })
}

/// The specs `names` selects (every spec when empty); an unknown name is an error listing
/// the known ones.
pub fn selected(names: &[String]) -> Result<Vec<&'static Spec>, String> {
    let all = tilec_suite::all();
    for n in names {
        if tilec_suite::find(n).is_none() {
            let known: Vec<&str> = all.iter().map(|s| s.name).collect();
            return Err(format!("no GPU test for kernel `{n}`; kernels with one: {}", known.join(", ")));
        }
    }
    Ok(all.into_iter().filter(|s| names.is_empty() || names.iter().any(|n| n == s.name)).collect())
}
