//! `tilec run FILE --arg …`: a kernel on the CPU interpreter, the reference semantics; with
//! `--gpu`, on the GPU (compiled through the cache for the device, specialised on the actual
//! arguments' alignment), and with `--check` the same inputs on the interpreter too, every
//! tensor compared.

use super::{parse_consts, read_input};
use crate::out;
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use tilec_core::abi::ParamSig;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .tile source file (`-`: standard input).
    file: PathBuf,
    /// Accepted for compatibility: without `--gpu`, `run` executes on the interpreter.
    #[arg(long, hide = true)]
    interp: bool,
    /// Run on the GPU (device 0) instead, compiled for it (`--arch` is the device's).
    #[arg(long)]
    gpu: bool,
    /// With `--gpu`: run the same inputs on the interpreter too and compare every tensor
    /// (max abs and relative L2 error); exit 1 when one is over the tolerance.
    #[arg(long, requires = "gpu")]
    check: bool,
    /// Relative L2 tolerance of `--check` for float tensors (default: 1e-5 for f32 tensors,
    /// 1e-2 for 16-bit). Integer, bool and index tensors are compared exactly, element for
    /// element, whatever it says.
    #[arg(long, requires = "check")]
    tolerance: Option<f64>,
    /// Kernel name, when the file has several.
    #[arg(long)]
    kernel: Option<String>,
    /// Target whose `by_target` values to use (default sm_90a; with `--gpu`, the device's).
    #[arg(long)]
    arch: Option<String>,
    /// Compile-time constant override, NAME=VALUE (repeatable, each name once).
    #[arg(long = "const", value_name = "NAME=VALUE")]
    consts: Vec<String>,
    /// One argument per kernel parameter, in order (see `tilec run --help`).
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    args: Vec<String>,
    /// Write every tensor argument after the run as DIR/<parameter>.npy (the folder is made).
    /// NumPy has no bf16 or fp8: such tensors are written as float32, which holds each of
    /// their values exactly, and read back for a bf16/fp8 parameter (`--arg @DIR/x.npy`)
    /// by converting them, with a note.
    #[arg(long, value_name = "DIR")]
    save_out: Option<PathBuf>,
    /// Seed of the random tensors.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print every element of every tensor after the run (row by row), not only a summary.
    #[arg(long)]
    print_all: bool,
    /// Most work the run may do over the whole grid: elements a tile op produces, 8 a scalar
    /// op, M·N·K an mma, the bytes of a print (the default is about 10 s).
    #[arg(long, value_name = "N", default_value_t = tilec_interp::Limits::default().work)]
    max_work: u64,
    /// The pipeline switches of `compile` (`--fast-math`, `--no-fp-fusion`, `--disable-pass`,
    /// …) for the GPU's compilation; the interpreter always runs the exact semantics, so
    /// `--check` with `--fast-math` may need a looser `--tolerance`.
    #[command(flatten)]
    pipeline: super::VariantArgs,
    /// Most elements one block may hold in live values.
    #[arg(long, value_name = "N", default_value_t = tilec_interp::Limits::default().live_elements)]
    max_memory: u64,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let _ = a.interp;
    let text = read_input(&a.file)?;
    let source = tilec::Source::new(a.file.display().to_string(), text);
    let jit = if a.gpu { Some(open_jit()?) } else { None };
    let arch = match (jit.as_ref().map(tilec::jit::Jit::device), &a.arch) {
        (Some(d), given) => {
            let t = d.target().map_err(|e| anyhow::anyhow!("{e}"))?;
            if let Some(g) = given {
                let (want, _) = tilec_core::target::resolve(g).map_err(anyhow::Error::msg)?;
                if want.name != t.name {
                    bail!("--arch {g} but the GPU is {} ({}): --gpu compiles for the device", d.name, t.name);
                }
            }
            t
        }
        (None, g) => tilec_core::target::resolve(g.as_deref().unwrap_or("sm_90a")).map_err(anyhow::Error::msg)?.0,
    };
    let consts = parse_consts(&a.consts)?;
    let req = tilec_frontend::Request {
        kernel: a.kernel.clone(),
        target: arch.name.to_string(),
        consts: consts.clone(),
        unaligned: Default::default(),
        tcgen05: None,
    };
    let el = match tilec_frontend::check(&source.text, &req) {
        Ok(e) => e,
        Err(d) => {
            out::err(tilec_core::diag::render(&d, &source).trim_end());
            return Ok(ExitCode::from(1));
        }
    };
    let params = &el.signature.params;
    if a.args.len() != params.len() {
        let names: Vec<String> = params
            .iter()
            .map(|p| match p {
                ParamSig::Tensor { name, dtype, rank, .. } => format!("{name}: tensor<{dtype}, {rank}>"),
                ParamSig::Scalar { name, dtype } => format!("{name}: {dtype}"),
            })
            .collect();
        bail!(
            "kernel `{}` takes {} arguments ({}), {} given with --arg",
            el.func.name,
            params.len(),
            names.join(", "),
            a.args.len()
        );
    }
    // The interpreter's size limits hold unless only the GPU runs the arguments.
    let limits = if a.gpu && !a.check { crate::interp_args::GPU_ONLY } else { crate::interp_args::INTERPRETER };
    let mut iargs = crate::interp_args::parse_with(&a.args, a.seed, limits)?;
    for note in narrow_file_floats(params, &a.args, &mut iargs) {
        out::err(&format!("note: {note}"));
    }
    tilec_interp::check_args(&el.func, &iargs).map_err(|e| anyhow::anyhow!("{e}"))?;
    let grid = tilec_interp::grid(&el.signature, &iargs).map_err(anyhow::Error::msg)?;
    if let Some(jit) = &jit {
        let mut spec = tilec::jit::KernelSpec::from_source(&source.name, &source.text)
            .options(a.pipeline.apply(tilec::CompileOptions::default()))
            .kernel(&el.func.name);
        for (k, v) in consts {
            spec = spec.constant(&k, v);
        }
        let dev = jit.device();
        let (gpu, info) = match run_on_gpu(jit, &spec, &iargs)? {
            Ok(t) => t,
            Err(rendered) => {
                out::err(rendered.trim_end());
                return Ok(ExitCode::from(1));
            }
        };
        let mut s = format!("ran {} on {} ({}) over grid {:?}\n", el.func.name, dev.name, arch.name, grid);
        let occ = match (info.blocks_per_sm, info.occupancy_hint) {
            (Some(n), Some(h)) => format!("{n} blocks per SM (the kernel asks for {h})"),
            (Some(n), None) => format!("{n} blocks per SM"),
            (None, _) => "unknown".to_string(),
        };
        let scalar = if info.unaligned.is_empty() {
            "every tensor 16-byte vectorised".to_string()
        } else {
            format!("scalar accesses for {}", info.unaligned.iter().cloned().collect::<Vec<_>>().join(", "))
        };
        s.push_str(&format!("  occupancy: {occ}; {scalar}\n"));
        s.push_str(&summaries(params, &gpu, a.print_all));
        if let Some(dir) = &a.save_out {
            s.push_str(&save(dir, params, &gpu)?);
        }
        if !a.check {
            out::print(&s)?;
            return Ok(ExitCode::SUCCESS);
        }
        let limits =
            tilec_interp::Limits { work: a.max_work, live_elements: a.max_memory, ..tilec_interp::Limits::default() };
        let want = tilec_interp::run_with(&el.func, grid, iargs, tilec_interp::BlockOrder::Forward, limits)
            .map_err(|e| anyhow::anyhow!("the interpreter: {e}"))?;
        let mut ok = true;
        s.push_str("check against the interpreter:\n");
        let tensors = params.iter().filter(|p| matches!(p, ParamSig::Tensor { .. }));
        for ((p, g), w) in tensors.zip(&gpu).zip(&want.tensors) {
            // Integers are exact on both sides (the interpreter holds them as integers):
            // every element must agree, at every width.
            if let (Some(gi), Some(wi)) = (g.to_i64(), w.to_i64()) {
                let bad = gi.iter().zip(&wi).filter(|(x, y)| x != y).count() + gi.len().abs_diff(wi.len());
                ok &= bad == 0;
                s.push_str(&format!(
                    "  {}: {bad} of {} integer elements differ {}\n",
                    p.name(),
                    wi.len(),
                    if bad == 0 { "ok" } else { "MISMATCH" }
                ));
                continue;
            }
            let tol = a.tolerance.unwrap_or(if g.dtype == tilec::DType::F32 { 1e-5 } else { 1e-2 });
            let (max_abs, rel) = tilec_interp::reference::errors(&g.to_f64(), &w.to_f64());
            let pass = rel <= tol || (max_abs == 0.0);
            ok &= pass;
            s.push_str(&format!(
                "  {}: max abs {max_abs:.3e}, rel L2 {rel:.3e} (tolerance {tol:.0e}) {}\n",
                p.name(),
                if pass { "ok" } else { "MISMATCH" }
            ));
        }
        out::print(&s)?;
        return Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    // The interpreter runs what the GPU may not: say so when the lowering for the target
    // rejects the kernel (compiled through the cache, so a second run costs nothing).
    let opts = a.pipeline.apply(tilec::CompileOptions {
        arch: arch.name.to_string(),
        kernel: Some(el.func.name.clone()),
        consts: req.consts.clone(),
        ..Default::default()
    });
    if let Err(e) = tilec::compile_cached(&source, &opts, &tilec::runtime::cache::Cache::from_env()) {
        out::err(&format!(
            "warning: the GPU lowering for {} rejects this kernel (the interpreter runs it anyway):\n{}",
            arch.name,
            e.render().trim_end()
        ));
    }
    let limits =
        tilec_interp::Limits { work: a.max_work, live_elements: a.max_memory, ..tilec_interp::Limits::default() };
    // `print` lines stream out as the kernel prints them: a run stopped by a limit has shown
    // what it printed before.
    let mut sink = |line: String| {
        let _ = out::println(&line);
    };
    let tensors =
        tilec_interp::run_streaming(&el.func, grid, iargs, tilec_interp::BlockOrder::Forward, limits, &mut sink)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut s = String::new();
    s.push_str(&format!("ran {} on the interpreter over grid {:?}\n", el.func.name, grid));
    s.push_str(&summaries(params, &tensors, a.print_all));
    if let Some(dir) = &a.save_out {
        s.push_str(&save(dir, params, &tensors)?);
    }
    out::print(&s)?;
    Ok(ExitCode::SUCCESS)
}

/// Float tensors read from a file (`@x.npy`, `@x.npz`) for a parameter of a narrower float
/// dtype — NumPy has no bf16 or fp8, and `--save-out` writes them as float32 — are converted
/// to the parameter's dtype (rounded to nearest even; exact for values of that dtype): the
/// notes saying so, with how many values the conversion rounded. Other mismatches are left
/// to the argument check, which names them.
fn narrow_file_floats(params: &[ParamSig], given: &[String], args: &mut [tilec_interp::Arg]) -> Vec<String> {
    use tilec::DType;
    let mut notes = vec![];
    for ((p, text), arg) in params.iter().zip(given).zip(args.iter_mut()) {
        let (ParamSig::Tensor { name, dtype, .. }, tilec_interp::Arg::Tensor(t)) = (p, &*arg) else { continue };
        let narrower = matches!(dtype, DType::BF16 | DType::F16 | DType::F8E4M3 | DType::F8E5M2);
        if !text.starts_with('@') || !narrower || !matches!(t.dtype, DType::F32 | DType::F64) {
            continue;
        }
        let values = t.to_f64();
        let narrowed = tilec_core::host::HostTensor::from_f64(*dtype, &t.shape, &values);
        let rounded = narrowed.to_f64().iter().zip(&values).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        notes.push(format!(
            "--arg {text}: {} values converted to {dtype} for `{name}` ({rounded} of {} rounded)",
            t.dtype,
            values.len()
        ));
        *arg = tilec_interp::Arg::Tensor(narrowed);
    }
    notes
}

/// Writes each tensor parameter's value as DIR/<name>.npy; the lines saying so.
fn save(dir: &std::path::Path, params: &[ParamSig], tensors: &[tilec_core::host::HostTensor]) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("--save-out {}: {e}", dir.display()))?;
    let mut s = String::new();
    for (p, t) in params.iter().filter(|p| matches!(p, ParamSig::Tensor { .. })).zip(tensors) {
        let path = dir.join(format!("{}.npy", p.name()));
        out::write_bytes(&path, &tilec_core::npy::write(t))?;
        s.push_str(&format!("  wrote {}\n", path.display()));
    }
    Ok(s)
}

/// One line per tensor parameter: dtype, shape, sum of the finite values, how many are not
/// finite, the first few; with `all`, then every element, one line per last-dim row.
fn summaries(params: &[ParamSig], tensors: &[tilec_core::host::HostTensor], all: bool) -> String {
    let mut s = String::new();
    for (p, t) in params.iter().filter(|p| matches!(p, ParamSig::Tensor { .. })).zip(tensors) {
        let v = t.to_f64();
        if all {
            s.push_str(&format!("  {} {} {:?}:\n", p.name(), t.dtype, t.shape));
            let row = t.shape.last().copied().unwrap_or(1).max(1) as usize;
            for (i, chunk) in v.chunks(row).enumerate() {
                let lead = tilec_core::host::unravel(i as i64, &t.shape[..t.shape.len().saturating_sub(1)]);
                let items: Vec<String> = chunk.iter().map(|x| format!("{x}")).collect();
                s.push_str(&format!("    {lead:?}: [{}]\n", items.join(", ")));
            }
            continue;
        }
        let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let sum: f64 = finite.iter().sum();
        let head: Vec<String> = v.iter().take(6).map(|x| format!("{x:.4}")).collect();
        s.push_str(&format!(
            "  {} {} {:?}: sum {:.6}, {} non-finite, first [{}]\n",
            p.name(),
            t.dtype,
            t.shape,
            sum,
            v.len() - finite.len(),
            head.join(", ")
        ));
    }
    s
}

pub(crate) fn open_jit() -> Result<tilec::jit::Jit> {
    let dev = tilec_runtime::Device::open(0).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(tilec::jit::Jit::with(dev, tilec_runtime::cache::Cache::from_env()))
}

/// Uploads the arguments, launches through the JIT (compiled for the device, specialised
/// on the arguments) and downloads every tensor. `Ok(Err(text))`: the kernel did not
/// compile (the rendered diagnostics).
pub(crate) fn run_on_gpu(
    jit: &tilec::jit::Jit,
    spec: &tilec::jit::KernelSpec,
    args: &[tilec_interp::Arg],
) -> Result<std::result::Result<(Vec<tilec_core::host::HostTensor>, tilec::jit::LaunchInfo), String>> {
    use tilec::jit::JitError;
    let dev = jit.device();
    let e = |e: tilec_runtime::RuntimeError| anyhow::anyhow!("{e}");
    let on_device = crate::gpu::upload_args(dev, args).map_err(e)?;
    let jargs: Vec<tilec::jit::Arg> = on_device.iter().map(crate::gpu::DeviceArg::jit).collect();
    let info = match jit.launch(spec, &jargs) {
        Ok(i) => i,
        Err(JitError::Compile(text)) => return Ok(Err(text)),
        Err(other) => return Err(anyhow::anyhow!("{other}")),
    };
    dev.synchronize().map_err(e)?;
    Ok(Ok((crate::gpu::download_tensors(dev, &on_device).map_err(e)?, info)))
}
