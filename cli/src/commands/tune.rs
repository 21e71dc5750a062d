//! `tilec tune FILE --arg …`: times every configuration of the kernel's `tune` space on the
//! GPU for these arguments, checks each one's outputs against the first configuration's,
//! keeps every failure with its reason, and files the fastest under the kernel, the fixed
//! constants, the target, the tilec build and the shape bucket of the arguments
//! (`tilec_runtime::tune`). A second run with the same key reuses the record without timing;
//! each configuration's own outcome is filed too, so a grown or reordered space times only
//! the configurations no run measured (`tilec::cache::measure_key`). The configurations
//! compile ahead on the other cores (`tilec::parallel::ahead`, `$TILEC_COMPILE_THREADS`)
//! while this thread launches, checks and times them in order.

use super::{parse_consts, read_input};
use crate::out;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use tilec::jit::{Arg, Jit, JitError, KernelSpec};
use tilec::ConstArg;
use tilec_core::host::HostTensor;
use tilec_runtime::cache::Cache;
use tilec_runtime::tune::{self, Config, Outcome, Record};
use tilec_runtime::{Device, RuntimeError};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .tile source file.
    file: PathBuf,
    /// Kernel name, when the file has several.
    #[arg(long)]
    kernel: Option<String>,
    /// A constant fixed for the whole search, NAME=VALUE (repeatable; a tuned name given here
    /// leaves the space).
    #[arg(long = "const", value_name = "NAME=VALUE")]
    consts: Vec<String>,
    /// The space instead of the kernel's `tune` block for this name: NAME=V1,V2,… (repeatable).
    #[arg(long, value_name = "NAME=V1,V2")]
    space: Vec<String>,
    /// One argument per kernel parameter, the `tilec run` grammar.
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    args: Vec<String>,
    /// Timed launches per configuration (after 3 untimed ones).
    #[arg(long, default_value_t = 50)]
    reps: usize,
    /// Most configurations to try.
    #[arg(long, default_value_t = 64)]
    max_configs: usize,
    /// Time again even when a record for this key exists.
    #[arg(long)]
    retune: bool,
    /// Seed of the random tensors.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

fn first_line(s: &str) -> String {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string()
}

fn show(c: &Config) -> String {
    let v: Vec<String> = c.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if v.is_empty() {
        "(defaults)".into()
    } else {
        v.join(" ")
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let text = read_input(&a.file)?;
    let source = tilec::Source::new(a.file.display().to_string(), text);
    let fixed = parse_consts(&a.consts)?;
    let dev = Device::open(0).map_err(|e| anyhow::anyhow!("{e}"))?;
    let target = dev.target().map_err(|e| anyhow::anyhow!("{e}"))?;
    let elaborate = |consts: &BTreeMap<String, ConstArg>| {
        tilec_frontend::check(
            &source.text,
            &tilec_frontend::Request {
                kernel: a.kernel.clone(),
                target: target.name.to_string(),
                consts: consts.clone(),
                unaligned: Default::default(),
                tcgen05: None,
            },
        )
    };
    let el = match elaborate(&fixed) {
        Ok(e) => e,
        Err(d) => {
            out::err(tilec_core::diag::render(&d, &source).trim_end());
            return Ok(ExitCode::from(1));
        }
    };
    // The space: the tune block, overridden per name by --space, without fixed names.
    let mut space = tilec::cache::tune_space(&el.tune, &fixed);
    for s in &a.space {
        let Some((name, vals)) = s.split_once('=') else { bail!("--space {s}: write NAME=V1,V2") };
        let vals: Vec<String> = vals.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
        if vals.is_empty() {
            bail!("--space {s}: no values");
        }
        match space.iter_mut().find(|(n, _)| n == name) {
            Some(e) => e.1 = vals,
            None => space.push((name.to_string(), vals)),
        }
    }
    space.retain(|(n, _)| !fixed.contains_key(n));
    if space.is_empty() {
        bail!("nothing to tune: the kernel has no `tune` block (or every name is fixed); give --space NAME=V1,V2");
    }
    // Only the GPU runs these: the interpreter's size limits do not apply.
    let iargs = crate::interp_args::parse_with(&a.args, a.seed, crate::interp_args::GPU_ONLY)?;
    tilec_interp::check_args(&el.func, &iargs).map_err(|e| anyhow::anyhow!("{e}"))?;
    let shapes: Vec<Vec<i64>> = iargs
        .iter()
        .filter_map(|x| match x {
            tilec_interp::Arg::Tensor(t) => Some(t.shape.clone()),
            _ => None,
        })
        .collect();
    let bucket = tune::shape_bucket(&shapes);
    let key = tilec::cache::tune_key(&source, &el.func.name, &fixed, &space, target, &shapes);
    let cache = Cache::from_env();
    let dir = cache.dir().map(PathBuf::from);
    if let (false, Some(d)) = (a.retune, &dir) {
        if let Some(r) = tune::load(d, &key) {
            out::println(&format!(
                "reusing the tuned configuration of {} for {bucket} on {}: {} ({:.4} ms; tuned on {} at unix time {}; --retune times again)",
                el.func.name,
                target.name,
                show(&r.best),
                r.best_ms,
                r.device,
                r.unix_time
            ))?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    let configs = tune::configs(&space, a.max_configs);
    let jit = Jit::with(dev, cache);
    let dev = jit.device();
    let bar = indicatif::ProgressBar::new(configs.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} configurations {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut reference: Option<Vec<HostTensor>> = None;
    let mut results: Vec<(Config, Outcome)> = vec![];
    // Configurations that failed the compiler's resource checks: every configuration that
    // dominates one is pruned without compiling (`tune::dominates`). Shared with the compile
    // threads; a configuration compiling before the failure of one it dominates is known
    // gets its own feasibility failure instead of a pruning (the same verdict).
    let infeasible: Mutex<Vec<Config>> = Mutex::new(vec![]);
    // Each configuration's outcome is filed under its own key: a grown or reordered space, or
    // a run stopped halfway, times only what it has not measured (--retune: everything).
    let mut todo = vec![];
    for c in configs {
        let mut consts = fixed.clone();
        for (k, v) in &c {
            match ConstArg::parse(v) {
                Some(x) => consts.insert(k.clone(), x),
                None => bail!("--space value `{v}` of {k} is not a constant"),
            };
        }
        let key =
            tilec::cache::measure_key(&source, &el.func.name, &fixed, &c, target, &shapes, &dev.name, a.reps.max(1));
        let before = if a.retune { None } else { dir.as_ref().and_then(|d| tune::load_measurement(d, &key)) };
        if matches!(&before, Some(Outcome::Failed { stage, .. }) if stage == "feasibility") {
            lock(&infeasible).push(c.clone());
        }
        todo.push((c, consts, key, before));
    }
    let mut reused = std::collections::BTreeSet::new();
    // The constants of a configuration measured before whose outputs would be the reference.
    let mut first_timed: Option<BTreeMap<String, ConstArg>> = None;
    // The compiles run ahead on other threads (all but one of the cores: this one launches
    // and times) while this thread times the configurations in order (`tilec::parallel`).
    let preparer = jit.preparer().map_err(|e| anyhow::anyhow!("{e}"))?;
    let threads = tilec::parallel::threads().saturating_sub(1).max(1);
    // A configuration's outcome when something stops it before a launch, else None.
    let compile = |i: usize| -> Option<Outcome> {
        let (c, consts, _, before) = &todo[i];
        if before.is_some() {
            return None;
        }
        match elaborate(consts) {
            Err(d) => {
                let msg = d.first().map(|d| d.message.clone()).unwrap_or_default();
                return Some(Outcome::Failed { stage: "frontend".into(), reason: msg });
            }
            Ok(e) if !e.tune_ok => {
                return Some(Outcome::Failed {
                    stage: "require".into(),
                    reason: "a `require` of the tune block".into(),
                })
            }
            Ok(_) => {}
        }
        if let Some(f) = lock(&infeasible).iter().find(|f| tune::dominates(c, f)) {
            return Some(Outcome::Failed {
                stage: "pruned".into(),
                reason: format!("needs at least what {} needs, which does not fit {}", show(f), target.name),
            });
        }
        // The feasibility check: the lowering knows the shared memory and threads a block
        // needs; LLVM and ptxas, the slow part, only run for a configuration that fits.
        let check = tilec::CompileOptions {
            arch: target.name.to_string(),
            kernel: Some(el.func.name.clone()),
            consts: consts.clone(),
            until: Some(tilec::Stage::Nvgpu),
            ..Default::default()
        };
        if let Err(e) = tilec::compile(&source, &check) {
            if let Some(d) = e.diagnostics.iter().find(|d| tune::RESOURCE_ERRORS.contains(&d.code)) {
                lock(&infeasible).push(c.clone());
                let why = d.notes.first().map(|n| format!(" ({n})")).unwrap_or_default();
                return Some(Outcome::Failed {
                    stage: "feasibility".into(),
                    reason: format!("error[{}]: {}{why}", d.code, d.message),
                });
            }
        }
        // Into the JIT's cache: the launch below finds it there.
        match preparer.prepare(&spec_of(&source, &el.func.name, consts)) {
            Err(JitError::Compile(t)) => Some(Outcome::Failed { stage: "compile".into(), reason: first_line(&t) }),
            // Anything else, the launch meets and reports.
            _ => None,
        }
    };
    tilec::parallel::ahead(todo.len(), threads, compile, |i, stopped| -> Result<()> {
        let (c, consts, key, before) = &todo[i];
        bar.set_message(show(c));
        if let Some(o) = before {
            let timed_before = results.iter().any(|(_, o)| matches!(o, Outcome::Timed { .. }));
            if matches!(o, Outcome::Timed { .. }) && !timed_before {
                first_timed = Some(consts.clone());
            }
            reused.insert(results.len());
            results.push((c.clone(), o.clone()));
            bar.inc(1);
            return Ok(());
        }
        let outcome = match stopped {
            Some(o) => o,
            None => (|| -> Result<Outcome> {
                let spec = spec_of(&source, &el.func.name, consts);
                // The first configuration's outputs are the reference: measured in an earlier
                // run, it is launched once now so that this one is checked against it.
                if let (None, Some(fc)) = (&reference, first_timed.take()) {
                    match launch_once(&jit, dev, &spec_of(&source, &el.func.name, &fc), &iargs)? {
                        Ok((_, outs)) => reference = Some(outs),
                        Err(o) => {
                            return Ok(Outcome::Failed {
                                stage: "launch".into(),
                                reason: format!(
                                    "the reference configuration, measured before, did not run again: {o:?}"
                                ),
                            })
                        }
                    }
                }
                let (on_device, outs) = match launch_once(&jit, dev, &spec, &iargs)? {
                    Ok(x) => x,
                    Err(o) => return Ok(o),
                };
                let args: Vec<Arg> = on_device.iter().map(crate::gpu::DeviceArg::jit).collect();
                match &reference {
                    None => reference = Some(outs),
                    Some(r) => {
                        let mut worst: f64 = 0.0;
                        for (g, w) in outs.iter().zip(r) {
                            let (_, rel) = tilec_interp::reference::errors(&g.to_f64(), &w.to_f64());
                            worst = worst.max(if rel.is_nan() { f64::INFINITY } else { rel });
                        }
                        let tol = if outs.iter().all(|t| t.dtype == tilec::DType::F32) { 1e-4 } else { 2e-2 };
                        if worst > tol {
                            return Ok(Outcome::Mismatch { rel_l2: worst });
                        }
                    }
                }
                let samples = dev.time(
                    3,
                    a.reps.max(1),
                    || Ok(()),
                    || jit.launch(&spec, &args).map(|_| ()).map_err(|e| RuntimeError::Driver(e.to_string())),
                );
                Ok(match samples {
                    Ok(s) => Outcome::Timed { median_ms: tune::robust_median(&s), samples: s.len() },
                    Err(e) => Outcome::Failed { stage: "launch".into(), reason: e.to_string() },
                })
            })()?,
        };
        if let Some(Err(e)) = dir.as_ref().and_then(|d| tune::save_measurement(d, key, &outcome)) {
            bar.println(format!("warning: the measurement of {} was not filed: {e}", show(c)));
        }
        results.push((c.clone(), outcome));
        bar.inc(1);
        Ok(())
    })?;
    bar.finish_and_clear();
    let first_ms = results.iter().find_map(|(_, o)| match o {
        Outcome::Timed { median_ms, .. } => Some(*median_ms),
        _ => None,
    });
    let mut s = format!("tune {} on {} ({}), shapes {bucket}:\n", el.func.name, dev.name, target.name);
    if !reused.is_empty() {
        s.push_str(&format!(
            "  ({} of {} configurations measured by an earlier run, not timed again; --retune times them)\n",
            reused.len(),
            results.len()
        ));
    }
    for (i, (c, o)) in results.iter().enumerate() {
        let before = if reused.contains(&i) { " [measured before]" } else { "" };
        let what = match o {
            Outcome::Timed { median_ms, samples } => format!(
                "{median_ms:.4} ms (median of {samples}){}",
                first_ms.map(|f| format!(", {:.2}x the first", f / median_ms)).unwrap_or_default()
            ),
            Outcome::Failed { stage, reason } => format!("failed at {stage}: {reason}"),
            Outcome::Mismatch { rel_l2 } => {
                format!("outputs differ from the first configuration's (rel L2 {rel_l2:.2e})")
            }
        };
        s.push_str(&format!("  {:<40} {what}{before}\n", show(c)));
    }
    let Some(best) = tune::select(&results) else {
        s.push_str("no configuration ran and agreed: nothing filed\n");
        out::print(&s)?;
        return Ok(ExitCode::from(1));
    };
    let (best_cfg, best_ms) = match &results[best] {
        (c, Outcome::Timed { median_ms, .. }) => (c.clone(), *median_ms),
        _ => bail!("internal error: the selected configuration was not timed"),
    };
    s.push_str(&format!("best: {} at {best_ms:.4} ms\n", show(&best_cfg)));
    let record = Record {
        key,
        best: best_cfg,
        best_ms,
        results,
        device: dev.name.clone(),
        tilec_version: env!("CARGO_PKG_VERSION").to_string(),
        unix_time: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        shapes: bucket,
    };
    match &dir {
        Some(d) => match tune::save(d, &record) {
            Ok(p) => s.push_str(&format!("filed in {}\n", p.display())),
            Err(e) => s.push_str(&format!("could not file the result ({e}); it holds for this run only\n")),
        },
        None => s.push_str("no cache folder (TILEC_CACHE_DIR or HOME): the result is not filed\n"),
    }
    out::print(&s)?;
    Ok(ExitCode::SUCCESS)
}

/// The list behind a lock, even if a thread panicked holding it (the panic is re-raised).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The kernel of `source` with `consts`.
fn spec_of(source: &tilec::Source, kernel: &str, consts: &BTreeMap<String, ConstArg>) -> KernelSpec {
    let mut spec = KernelSpec::from_source(&source.name, &source.text).kernel(kernel);
    for (k, v) in consts {
        spec = spec.constant(k, v.clone());
    }
    spec
}

/// A launch's argument copies on the device and its tensors read back after it.
type Launched = (Vec<crate::gpu::DeviceArg>, Vec<HostTensor>);

/// One launch of `spec` on fresh copies of the arguments (a kernel may write its inputs):
/// those copies and the tensors after it, or the outcome that stopped it.
fn launch_once(
    jit: &Jit,
    dev: &Device,
    spec: &KernelSpec,
    iargs: &[tilec_interp::Arg],
) -> Result<std::result::Result<Launched, Outcome>> {
    let on_device = crate::gpu::upload_args(dev, iargs).map_err(|e| anyhow::anyhow!("{e}"))?;
    let args: Vec<Arg> = on_device.iter().map(crate::gpu::DeviceArg::jit).collect();
    let failed = |stage: &str, reason: String| Ok(Err(Outcome::Failed { stage: stage.into(), reason }));
    match jit.launch(spec, &args) {
        Ok(_) => {}
        Err(JitError::Compile(t)) => return failed("compile", first_line(&t)),
        Err(JitError::Launch(RuntimeError::Unsupported(m))) => return failed("resources", m),
        Err(e) => return failed("launch", e.to_string()),
    }
    if let Err(e) = dev.synchronize() {
        return failed("launch", e.to_string());
    }
    let outs = crate::gpu::download_tensors(dev, &on_device).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Ok((on_device, outs)))
}
