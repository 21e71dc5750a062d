//! `tilec experiment KERNEL --variant NAME=SPEC …`: one kernel of the library under several
//! pipelines, side by side (issue 32, item 1). Each variant is the default pipeline changed
//! by a list of switches — `-PASS` (a pass disabled), `fast-math`, `no-fp-fusion`, `no-tma`,
//! `no-tma-store`, `no-tcgen05`, `wgmma-wait-0`, `empty-barriers`, `warp-specialize`,
//! `no-pingpong`, `persistent`, `emulate=ARCH`, a pass's options as a pipeline writes them
//! (`tile-pipeline{distance=3}`), pipeline edits (`after=tile-layout:canonicalize`,
//! `before=PASS:ITEMS`, `move=tile-licm:after=tile-pipeline`; the items may be upstream MLIR
//! passes, tilec's or a user's registered pass, several in brackets: `after=tile-layout:(canonicalize,cse)`),
//! another kernel of the library with the same arguments (`kernel=fmha_step3_exp2`: the
//! tutorial's steps), the kernel's text from another file (`source=my/softmax.tile`: an
//! edited kernel of the same name and arguments, checked against the library's reference) —
//! and constants (`TILE_N=64`, `WARP_SPECIALIZE=false`). The default pipeline is always the first
//! variant. For each variant and case:
//!
//! - on the CPU: the PTX facts of the compile for `--arch` (registers and spills by ptxas when
//!   it is installed, shared memory, counts of the tensor-core, copy and barrier
//!   instructions) and the interpreter's verdict on the variant's tile-level stages against
//!   the source's run (`tilec::bisect`, on the spec's first interpreter case with the
//!   variant's constants: a pass that changes the results is named);
//! - with `--gpu`: the case checked against its reference and timed (`tilec bench`'s
//!   harness: L2 flushed, median of `--reps`), every variant in this one process.
//!
//! The table goes to standard output (and `--md`), the rows to `--json`, a bar chart to
//! `--svg` (speed-up over the default variant with `--gpu`, registers a thread without;
//! `--replot FILE.json --svg FILE.svg` draws it again from an earlier run's rows).
//! `--file` reads the kernel, the shapes, constants for every variant and the variants from
//! an experiment file (`bench/experiments/`), a TOML subset: `kernel = "fmha"`,
//! `shapes = "…"`, `consts = "CAUSAL=1"`, `source = "FILE"` (every variant of the kernel
//! reads it), then a `[variants]` table of `name = "SWITCH,…"`;
//! the command line's kernel and shapes win, its variants come after the file's.

use crate::gpu;
use crate::out;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The kernel: a spec of the library, as `tilec check` names them (or the file's).
    kernel: Option<String>,
    /// An experiment file: kernel, shapes, constants and variants (see the module).
    #[arg(long)]
    file: Option<PathBuf>,
    /// A variant, `NAME=SWITCH,SWITCH,…` (repeatable; see `tilec experiment --help`).
    #[arg(long = "variant", value_name = "NAME=SPEC")]
    variants: Vec<String>,
    /// The target of the CPU facts (default sm_90a; the GPU runs compile for the device).
    #[arg(long, default_value = "sm_90a")]
    arch: String,
    /// Shapes instead of the spec's bench cases (`tilec bench --shapes`' syntax).
    #[arg(long)]
    shapes: Option<String>,
    /// Also check and time each variant × case on the GPU.
    #[arg(long)]
    gpu: bool,
    /// Timed runs per case (median reported).
    #[arg(long, default_value_t = 100)]
    reps: usize,
    /// The folder of the kernel library.
    #[arg(long, default_value = "kernels")]
    kernels_dir: PathBuf,
    /// Write the rows as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the markdown table here.
    #[arg(long)]
    md: Option<PathBuf>,
    /// Write a bar chart here (SVG): each variant's speed-up over the default per case with
    /// `--gpu`, its registers a thread without.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Draw `--svg` from the rows an earlier run wrote with `--json`, running nothing.
    #[arg(long, value_name = "JSON", requires = "svg")]
    replot: Option<PathBuf>,
}

/// A variant: its name, the kernel it runs (the experiment's unless `kernel=`), its pipeline
/// switches and its constants.
#[derive(Debug, Default)]
struct Variant {
    name: String,
    kernel: Option<String>,
    switches: gpu::Variant,
    consts: Vec<(String, i64)>,
}

fn parse_variant(text: &str) -> Result<Variant> {
    let (name, spec) = text.split_once('=').with_context(|| format!("--variant {text}: write NAME=SWITCH,…"))?;
    if name.is_empty() {
        bail!("--variant {text}: the variant needs a name");
    }
    let mut v = Variant { name: name.to_string(), ..Default::default() };
    // Brackets keep a pass's options and a list of inserted passes in one item.
    let items =
        tilec_passes::driver::split_items(spec).map_err(|d| anyhow::anyhow!("--variant {name}: {}", d.message))?;
    for item in items.into_iter().filter(|s| !s.is_empty()) {
        let s = &mut v.switches;
        match item {
            "fast-math" => s.fast_math = true,
            "no-fp-fusion" => s.no_fp_fusion = true,
            "no-tma" => s.no_tma = true,
            "no-tma-store" => s.no_tma_store = true,
            "no-tcgen05" => s.no_tcgen05 = true,
            "wgmma-wait-0" => s.wgmma_wait_at_once = true,
            "empty-barriers" => s.empty_barriers = true,
            "warp-specialize" => s.warp_specialize = true,
            "no-pingpong" => s.no_pingpong = true,
            "persistent" => s.persistent = true,
            "llvm-default-pipeline" => s.llvm_default_pipeline = true,
            _ if item.starts_with('-') => s.disable_pass.push(item[1..].to_string()),
            _ if ["after=", "before=", "move="].iter().any(|p| item.starts_with(p)) => {
                s.pipeline_edit.push(item.to_string())
            }
            _ if item.starts_with("kernel=") => v.kernel = Some(item["kernel=".len()..].to_string()),
            _ if item.starts_with("source=") => s.source = Some(PathBuf::from(&item["source=".len()..])),
            _ if item.starts_with("emulate=") => s.emulate = Some(item["emulate=".len()..].to_string()),
            _ if item.contains('{') => s.pass_option.push(item.to_string()),
            _ => match item.split_once('=') {
                Some((k, val)) if is_const_name(k) && (val == "true" || val == "false") => {
                    s.const_overrides.push((k.to_string(), tilec::ConstArg::Bool(val == "true")));
                }
                Some((k, val)) if is_const_name(k) => {
                    let n = val
                        .parse::<i64>()
                        .with_context(|| format!("--variant {name}: `{item}` is not NAME=integer"))?;
                    v.consts.push((k.to_string(), n));
                }
                _ => bail!(
                    "--variant {name}: unknown switch `{item}` (-PASS, fast-math, no-fp-fusion, no-tma, no-tma-store, \
                     no-tcgen05, wgmma-wait-0, empty-barriers, warp-specialize, no-pingpong, persistent, \
                     llvm-default-pipeline, emulate=ARCH, \
                     PASS{{OPTION=VALUE}}, after=PASS:ITEMS, before=PASS:ITEMS, move=PASS:after=PASS, kernel=NAME, \
                     source=FILE, CONST=VALUE)"
                ),
            },
        }
    }
    tilec_passes::check_disabled(&v.switches.disable_pass.iter().cloned().collect())
        .map_err(|d| anyhow::anyhow!("--variant {name}: {}", d.message))?;
    Ok(v)
}

fn is_const_name(k: &str) -> bool {
    !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `CAUSAL=1,TILE_N=64`: constants for every variant of a file.
fn parse_consts(text: &str) -> Result<Vec<(String, i64)>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| match item.split_once('=') {
            Some((k, v)) if is_const_name(k.trim()) => {
                let n = v.trim().parse::<i64>().with_context(|| format!("consts: `{item}` is not NAME=integer"))?;
                Ok((k.trim().to_string(), n))
            }
            _ => bail!("consts: `{item}` is not NAME=integer"),
        })
        .collect()
}

/// What the compile of a variant shows without a GPU.
#[derive(Debug, Default, serde::Serialize)]
struct Facts {
    registers: Option<u32>,
    spill_bytes: Option<u32>,
    shared_bytes: u32,
    mma_sync: usize,
    wgmma: usize,
    tcgen05_mma: usize,
    ldmatrix: usize,
    cp_async: usize,
    tma: usize,
    barriers: usize,
}

fn facts(ptx: &str, shared_bytes: u32, arch: &tilec::Arch) -> Facts {
    // Occurrences in the code (an instruction may sit inside a `{ … }` block with its
    // predicate), not in comments.
    let count =
        |needle: &str| ptx.lines().map(|l| l.split("//").next().unwrap_or("").matches(needle).count()).sum::<usize>();
    let r = tilec_backend::find_ptxas().and_then(|_| tilec_backend::ptxas(ptx, arch).ok());
    Facts {
        registers: r.as_ref().map(|r| r.registers),
        spill_bytes: r.as_ref().map(|r| r.spill_stores + r.spill_loads),
        shared_bytes,
        mma_sync: count("mma.sync"),
        wgmma: count("wgmma.mma_async"),
        tcgen05_mma: count("tcgen05.mma"),
        ldmatrix: count("ldmatrix"),
        cp_async: count("cp.async.cg") + count("cp.async.ca"),
        tma: count("cp.async.bulk.tensor"),
        barriers: count("bar.sync") + count("barrier.sync"),
    }
}

/// An experiment file's kernel, shapes, constants and variants (`NAME=SPEC` each).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct File {
    kernel: Option<String>,
    shapes: Option<String>,
    consts: Option<String>,
    source: Option<String>,
    variants: Vec<String>,
}

/// The TOML subset of experiment files: `key = "value"` lines, `#` comments, and one
/// `[variants]` table; anything else is an error naming the line.
pub(crate) fn parse_file(text: &str) -> Result<File> {
    let mut f = File::default();
    let mut in_variants = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            if line != "[variants]" {
                bail!("line {}: unknown table `{line}` (an experiment file has `[variants]`)", n + 1);
            }
            in_variants = true;
            continue;
        }
        let (k, v) = line.split_once('=').with_context(|| format!("line {}: expected `key = \"value\"`", n + 1))?;
        let (k, v) = (k.trim().trim_matches('"'), v.trim());
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .with_context(|| format!("line {}: the value of `{k}` must be a string in double quotes", n + 1))?;
        match (in_variants, k) {
            (true, _) => f.variants.push(format!("{k}={v}")),
            (false, "kernel") => f.kernel = Some(v.to_string()),
            (false, "shapes") => f.shapes = Some(v.to_string()),
            (false, "consts") => f.consts = Some(v.to_string()),
            (false, "source") => f.source = Some(v.to_string()),
            (false, _) => bail!("line {}: unknown key `{k}` (kernel, shapes, consts, source, then [variants])", n + 1),
        }
    }
    Ok(f)
}

/// An experiment ready to run: the kernel's spec, the cases and the variants.
pub(crate) struct Experiment {
    spec: &'static tilec_suite::Spec,
    cases: Vec<tilec_suite::Case>,
    variants: Vec<Variant>,
}

fn find_spec(kernel: &str) -> Result<&'static tilec_suite::Spec> {
    tilec_suite::find(kernel).with_context(|| {
        let names: Vec<&str> = tilec_suite::all().iter().map(|s| s.name).collect();
        format!("no kernel spec `{kernel}` (known: {})", names.join(", "))
    })
}

impl Experiment {
    /// The experiment `file` and the command line's kernel, shapes and extra variants make.
    pub(crate) fn new(file: File, kernel: Option<&str>, shapes: Option<&str>, extra: &[String]) -> Result<Experiment> {
        let kernel =
            kernel.map(str::to_string).or(file.kernel).context("name a kernel (or give an experiment --file)")?;
        let spec = find_spec(&kernel)?;
        let mut variants = vec![Variant { name: "default".into(), ..Default::default() }];
        for v in file.variants.iter().chain(extra) {
            let v = parse_variant(v)?;
            if let Some(k) = &v.kernel {
                find_spec(k).with_context(|| format!("--variant {}", v.name))?;
            }
            variants.push(v);
        }
        // The file's constants and source hold in every variant (of the experiment's kernel);
        // a variant's own come after them.
        let common = file.consts.as_deref().map(parse_consts).transpose()?.unwrap_or_default();
        for v in &mut variants {
            v.consts = common.iter().cloned().chain(std::mem::take(&mut v.consts)).collect();
            if v.kernel.is_none() && v.switches.source.is_none() {
                v.switches.source = file.source.as_ref().map(PathBuf::from);
            }
        }
        let cases: Vec<tilec_suite::Case> = match shapes.map(str::to_string).or(file.shapes) {
            None => {
                let mut seen = std::collections::BTreeSet::new();
                (spec.bench_cases)(true)
                    .into_iter()
                    .chain((spec.gpu_cases)())
                    .filter(|c| seen.insert(c.label()))
                    .take(4)
                    .collect()
            }
            Some(s) => super::bench::parse_shapes(&s)?
                .into_iter()
                .map(|(dims, dt)| (spec.case_for)(&dims, dt).map_err(anyhow::Error::msg))
                .collect::<Result<_>>()?,
        };
        Ok(Experiment { spec, cases, variants })
    }
}

/// A figure per case for each named series (a variant): what the chart draws.
pub(crate) type Series = Vec<(String, Vec<Option<f64>>)>;

/// What a run of an experiment produced.
pub(crate) struct Outcome {
    pub table: String,
    pub rows: Vec<serde_json::Value>,
    /// Case labels, and per variant its figure per case (speed-up over the default with a
    /// GPU, registers without): the chart's data.
    pub chart: (Vec<String>, Series),
}

/// Runs every variant × case of `exp` (see the module): facts for `arch`, interpreter
/// verdicts, and with `gpu` the checks and timings. A progress line goes to standard error.
pub(crate) fn execute(
    exp: &Experiment,
    arch: &'static tilec::Arch,
    gpu_env: Option<&(tilec_runtime::Device, f64)>,
    reps: usize,
    kernels_dir: &Path,
) -> Result<Outcome> {
    let spec = exp.spec;
    let mut sources: BTreeMap<PathBuf, tilec::Source> = BTreeMap::new();
    let mut table = format!(
        "### tilec experiment — {} for {}{}\n\n| variant | case | tile-level stages vs source | regs | spills | smem B | mma.sync | wgmma | tcgen05.mma | ldmatrix | cp.async | TMA | bar |{}\n|---|---|---|---|---|---|---|---|---|---|---|---|---|{}\n",
        spec.name,
        arch.name,
        gpu_env.map(|(d, _)| format!(", timed on {}", d.name)).unwrap_or_default(),
        if gpu_env.is_some() { " GPU check | median ms | vs default |" } else { "" },
        if gpu_env.is_some() { "---|---|---|" } else { "" },
    );
    let mut rows = vec![];
    let mut default_ms: Vec<Option<f64>> = vec![None; exp.cases.len()];
    let total = exp.variants.len() * exp.cases.len();
    for (vi, v) in exp.variants.iter().enumerate() {
        let vspec = match &v.kernel {
            Some(k) => find_spec(k)?,
            None => spec,
        };
        let path = v.switches.kernel_path(kernels_dir, vspec);
        if !sources.contains_key(&path) {
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            sources.insert(path.clone(), tilec::Source::new(path.display().to_string(), text));
        }
        let source = &sources[&path];
        // The interpreter's verdict runs the spec's interpreter case, not the timed one: one
        // run a variant, whatever the cases.
        let mut verdict: Option<String> = None;
        for (ci, case) in exp.cases.iter().enumerate() {
            out::err_raw(&format!(
                "\r[{}/{total}] {} {} ...          ",
                vi * exp.cases.len() + ci + 1,
                v.name,
                case.label()
            ));
            // Another kernel takes the shape as its own spec makes a case of it.
            let base = match &v.kernel {
                None => case.clone(),
                Some(_) => match (vspec.case_for)(&case.dims, case.dtype) {
                    Ok(c) => c,
                    Err(e) => {
                        table.push_str(&format!("| {} | {} | no case: {e} |\n", v.name, case.label()));
                        rows.push(serde_json::json!({ "variant": v.name, "kernel": vspec.name, "case": case.label(), "error": e }));
                        continue;
                    }
                },
            };
            let case = v.consts.iter().fold(base, |c, (k, n)| c.with(k, *n));
            let opts = v.switches.apply(tilec::CompileOptions {
                arch: arch.name.to_string(),
                kernel: Some(vspec.kernel.to_string()),
                consts: vspec.constants(&case),
                ptx_only: true,
                ..Default::default()
            });
            let compiled = tilec::compile(source, &opts);
            let f = compiled.as_ref().ok().map(|c| facts(c.ptx(), c.signature.shared_bytes, arch));
            let stages = match &compiled {
                Err(e) => format!("does not compile: {}", e.diagnostics.first().map_or("", |d| d.message.as_str())),
                Ok(_) => verdict
                    .get_or_insert_with(|| interp_verdict(vspec, source, &opts, &v.consts, &v.switches.const_overrides))
                    .clone(),
            };
            let opt = |x: Option<u32>| x.map_or("—".to_string(), |n| n.to_string());
            let ff = f.as_ref();
            let mut line = format!(
                "| {} | {} | {stages} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                v.name,
                case.label(),
                opt(ff.and_then(|f| f.registers)),
                opt(ff.and_then(|f| f.spill_bytes)),
                ff.map_or(0, |f| f.shared_bytes),
                ff.map_or(0, |f| f.mma_sync),
                ff.map_or(0, |f| f.wgmma),
                ff.map_or(0, |f| f.tcgen05_mma),
                ff.map_or(0, |f| f.ldmatrix),
                ff.map_or(0, |f| f.cp_async),
                ff.map_or(0, |f| f.tma),
                ff.map_or(0, |f| f.barriers),
            );
            let mut row = serde_json::json!({
                "variant": v.name, "kernel": vspec.name, "switches": v.switches.label(), "consts": v.consts,
                "case": case.label(), "arch": arch.name, "facts": f, "tile_stages": stages,
            });
            if let Some((dev, copy)) = gpu_env {
                let timing = gpu::Timing { reps: reps.max(1), copy_gbps: *copy, matmul_tflops: None };
                match gpu::bench_case(dev, kernels_dir, vspec, &case, &timing, &v.switches) {
                    Ok(r) => {
                        let base = *default_ms[ci].get_or_insert(r.median_ms);
                        let check =
                            if r.rel_l2.is_nan() { "unchecked".into() } else { format!("ok ({:.1e})", r.rel_l2) };
                        line.push_str(&format!(" {check} | {:.4} | {:.2}x |", r.median_ms, base / r.median_ms));
                        row["gpu"] = serde_json::json!(r);
                    }
                    Err(e) => {
                        line.push_str(" FAILED | — | — |");
                        row["gpu_error"] = serde_json::json!(e);
                    }
                }
            }
            table.push_str(&line);
            table.push('\n');
            rows.push(row);
        }
    }
    out::err_raw("\r");
    // The chart labels the cases as the experiment names them (without a variant's constants).
    let labels = exp.cases.iter().map(tilec_suite::Case::label).collect();
    let (_, series) = chart_of_rows(&rows, gpu_env.is_some());
    Ok(Outcome { table, rows, chart: (labels, series) })
}

/// Writes the bar chart of an outcome: a group of bars per variant, one bar per case (an
/// experiment has many variants and few cases: the legend stays short).
pub(crate) fn write_chart(path: &Path, title: &str, outcome: &Outcome, gpu: bool) -> Result<()> {
    let (cases, by_variant) = &outcome.chart;
    let variants: Vec<String> = by_variant.iter().map(|(v, _)| v.clone()).collect();
    let series: Series = cases
        .iter()
        .enumerate()
        .map(|(ci, c)| (c.clone(), by_variant.iter().map(|(_, f)| f.get(ci).copied().flatten()).collect()))
        .collect();
    let (unit, line) = if gpu {
        ("speed-up over the default", Some((1.0, "the default".to_string())))
    } else {
        ("registers a thread", None)
    };
    crate::bench_report::grouped_bars(path, &format!("{title}: {unit}"), unit, &variants, &series, line)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The chart's data from an experiment's rows (this run's, or an earlier run's `--json`):
/// cases and variants in the order the run met them; with `gpu` each variant's speed-up over
/// the first variant timed on that case (the default unless it failed), as the table's
/// "vs default", else its registers a thread.
fn chart_of_rows(rows: &[serde_json::Value], gpu: bool) -> (Vec<String>, Series) {
    let text = |r: &serde_json::Value, k: &str| r[k].as_str().unwrap_or("").to_string();
    let mut cases: Vec<String> = vec![];
    let mut variants: Vec<String> = vec![];
    for r in rows {
        if !variants.contains(&text(r, "variant")) {
            variants.push(text(r, "variant"));
        }
    }
    let mut series = vec![];
    let mut base_ms: Vec<Option<f64>> = vec![];
    for v in &variants {
        let mine: Vec<&serde_json::Value> = rows.iter().filter(|r| &text(r, "variant") == v).collect();
        // Cases by position: a variant's constants show in its own case labels.
        if cases.is_empty() {
            cases = mine.iter().map(|r| text(r, "case")).collect();
        }
        base_ms.resize(base_ms.len().max(mine.len()), None);
        let figures = mine
            .iter()
            .zip(base_ms.iter_mut())
            .map(|(r, base)| match gpu {
                true => r["gpu"]["median_ms"].as_f64().map(|ms| *base.get_or_insert(ms) / ms),
                false => r["facts"]["registers"].as_f64(),
            })
            .collect();
        series.push((v.clone(), figures));
    }
    (cases, series)
}

pub fn run(a: Args) -> Result<ExitCode> {
    if let (Some(json), Some(svg)) = (&a.replot, &a.svg) {
        let j: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(json).with_context(|| format!("cannot read {}", json.display()))?,
        )
        .with_context(|| format!("{} is not JSON", json.display()))?;
        let rows = j["rows"].as_array().with_context(|| format!("{} has no `rows`", json.display()))?;
        let gpu = rows.iter().any(|r| r.get("gpu").is_some());
        let (cases, series) = chart_of_rows(rows, gpu);
        let outcome = Outcome { table: String::new(), rows: vec![], chart: (cases, series) };
        let kernel = j["kernel"].as_str().unwrap_or("experiment");
        let device = j["device"].as_str().unwrap_or(if gpu { "the GPU of the run" } else { "the CPU" });
        write_chart(svg, &format!("{kernel} on {device}"), &outcome, gpu)?;
        return Ok(ExitCode::SUCCESS);
    }
    let file = match &a.file {
        Some(p) => parse_file(&std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?)
            .with_context(|| format!("{}", p.display()))?,
        None => File::default(),
    };
    let exp = Experiment::new(file, a.kernel.as_deref(), a.shapes.as_deref(), &a.variants)?;
    let (arch, _) = tilec_core::target::resolve(&a.arch).map_err(anyhow::Error::msg)?;
    let gpu_env = if a.gpu {
        let dev = tilec_runtime::Device::open(0)?;
        let copy = dev.copy_bandwidth(512 << 20)?;
        Some((dev, copy))
    } else {
        None
    };
    let outcome = execute(&exp, arch, gpu_env.as_ref(), a.reps, &a.kernels_dir)?;
    out::print(&outcome.table)?;
    let device = gpu_env.as_ref().map(|(d, _)| d.name.as_str());
    let json =
        serde_json::json!({ "kernel": exp.spec.name, "arch": arch.name, "device": device, "rows": &outcome.rows });
    super::check::write_outputs(a.json.as_deref(), a.md.as_deref(), &json, &outcome.table)?;
    if let Some(p) = &a.svg {
        write_chart(p, &format!("{} on {}", exp.spec.name, device.unwrap_or(arch.name)), &outcome, a.gpu)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The interpreter's verdict on the variant's tile-level stages against the source's run, on
/// the spec's first interpreter case (with the variant's constants).
fn interp_verdict(
    spec: &tilec_suite::Spec,
    source: &tilec::Source,
    opts: &tilec::CompileOptions,
    consts: &[(String, i64)],
    overrides: &[(String, tilec::ConstArg)],
) -> String {
    use rand::SeedableRng;
    let Some(case) = (spec.interp_cases)().into_iter().next() else { return "no interpreter case".into() };
    let case = consts.iter().fold(case, |c, (k, n)| c.with(k, *n));
    // The interpreter case's constants, then the variant's overrides over them (`NAME=true`).
    let mut consts = spec.constants(&case);
    consts.extend(overrides.iter().cloned());
    let o = tilec::CompileOptions { consts, ..opts.clone() };
    let (el, steps) = match tilec::compiler::frontend_and_pipeline(source, &o) {
        Ok(r) => r,
        Err(e) => return format!("not run: {}", e.diagnostics.first().map_or("", |d| d.message.as_str())),
    };
    let args = (spec.inputs)(&case, &mut rand::rngs::StdRng::seed_from_u64(1));
    match tilec::bisect::bisect(&el.func, &el.signature, &steps, &args, None) {
        Err(d) => format!("not run: {}", d.message),
        Ok(b) => match b.culprit {
            Some((i, _)) => format!("DIFFER after {}", b.stages[i].pass),
            None => format!("agree ({} passes, {})", b.stages.len(), case.label()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiment_files_are_a_toml_subset() {
        let f = parse_file("# fmha\nkernel = \"fmha\"\nshapes = \"4x8x128x64:f16\"\nconsts = \"CAUSAL=1\"\n\n[variants]\nno-licm = \"-tile-licm\"\n\"fast\" = \"fast-math,TILE_N=64\"\n").unwrap();
        assert_eq!(f.kernel.as_deref(), Some("fmha"));
        assert_eq!(f.shapes.as_deref(), Some("4x8x128x64:f16"));
        assert_eq!(f.consts.as_deref(), Some("CAUSAL=1"));
        assert_eq!(f.variants, ["no-licm=-tile-licm", "fast=fast-math,TILE_N=64"]);
        assert!(parse_file("[other]").unwrap_err().to_string().contains("line 1"));
        assert!(parse_file("kernel = fmha").unwrap_err().to_string().contains("double quotes"));
        assert!(parse_file("speed = \"x\"").unwrap_err().to_string().contains("unknown key `speed`"));
        for v in &f.variants {
            parse_variant(v).unwrap();
        }
    }

    #[test]
    fn variants_take_edits_kernels_and_bracketed_lists() {
        let v = parse_variant(
            "x=after=tile-layout:(canonicalize,cse),move=tile-licm:after=tile-pipeline,kernel=fmha_step3_exp2,tile-pipeline{distance=3},TILE_N=64",
        )
        .unwrap();
        assert_eq!(
            v.switches.pipeline_edit,
            ["after=tile-layout:(canonicalize,cse)", "move=tile-licm:after=tile-pipeline"]
        );
        assert_eq!(v.kernel.as_deref(), Some("fmha_step3_exp2"));
        assert_eq!(v.switches.pass_option, ["tile-pipeline{distance=3}"]);
        assert_eq!(v.consts, [("TILE_N".to_string(), 64)]);
        let b = parse_variant("b=WARP_SPECIALIZE=false,CAUSAL=1").unwrap();
        assert_eq!(b.switches.const_overrides, [("WARP_SPECIALIZE".to_string(), tilec::ConstArg::Bool(false))]);
        assert_eq!(b.consts, [("CAUSAL".to_string(), 1)]);
        assert!(parse_variant("x=after=tile-layout:(cse").is_err());
        assert!(parse_consts("CAUSAL=1, TILE_N=64").unwrap().len() == 2);
        assert!(parse_consts("causal=1").is_err());
    }
}
