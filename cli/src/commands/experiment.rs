//! `tilec experiment KERNEL --variant NAME=SPEC …`: one kernel of the library under several
//! pipelines, side by side (issue 32, item 1). Each variant is the default pipeline changed
//! by a list of switches — `-PASS` (a pass disabled), `fast-math`, `no-fp-fusion`, `no-tma`,
//! `no-tma-store`, `no-tcgen05`, `wgmma-wait-0`, `empty-barriers`, `warp-specialize`,
//! `no-pingpong`, `persistent`, `emulate=ARCH`, a pass's options as a pipeline writes them
//! (`tile-pipeline{distance=3}`) — and constants (`TILE_N=64`). The default
//! pipeline is always the first variant. For each variant and case:
//!
//! - on the CPU: the PTX facts of the compile for `--arch` (registers and spills by ptxas when
//!   it is installed, shared memory, counts of the tensor-core, copy and barrier
//!   instructions) and the interpreter's verdict on the variant's tile-level stages against
//!   the source's run (`tilec::bisect`, on the spec's first interpreter case with the
//!   variant's constants: a pass that changes the results is named);
//! - with `--gpu`: the case checked against its reference and timed (`tilec bench`'s
//!   harness: L2 flushed, median of `--reps`), every variant in this one process.
//!
//! The table goes to standard output (and `--md`), the rows to `--json`. `--file` reads the
//! kernel, the shapes and the variants from an experiment file (`bench/experiments/`), a
//! TOML subset: `kernel = "fmha"`, `shapes = "…"`, then a `[variants]` table of
//! `name = "SWITCH,…"`; the command line's kernel and shapes win, its variants come after the
//! file's. Not yet: passes inserted into a variant's pipeline, user passes included
//! (`tilec bisect --passes` takes any pipeline meanwhile), plots.

use crate::gpu;
use crate::out;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The kernel: a spec of the library, as `tilec check` names them (or the file's).
    kernel: Option<String>,
    /// An experiment file: kernel, shapes and variants (see the module).
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
}

/// A variant: its name, its pipeline switches and its constants.
#[derive(Debug, Default)]
struct Variant {
    name: String,
    switches: gpu::Variant,
    consts: Vec<(String, i64)>,
}

fn parse_variant(text: &str) -> Result<Variant> {
    let (name, spec) = text.split_once('=').with_context(|| format!("--variant {text}: write NAME=SWITCH,…"))?;
    if name.is_empty() {
        bail!("--variant {text}: the variant needs a name");
    }
    let mut v = Variant { name: name.to_string(), ..Default::default() };
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
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
            _ if item.starts_with('-') => s.disable_pass.push(item[1..].to_string()),
            _ if item.contains('{') => s.pass_option.push(item.to_string()),
            _ if item.starts_with("emulate=") => s.emulate = Some(item["emulate=".len()..].to_string()),
            _ => match item.split_once('=') {
                Some((k, val)) if k.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') => {
                    let n = val
                        .parse::<i64>()
                        .with_context(|| format!("--variant {name}: `{item}` is not NAME=integer"))?;
                    v.consts.push((k.to_string(), n));
                }
                _ => bail!(
                    "--variant {name}: unknown switch `{item}` (-PASS, fast-math, no-fp-fusion, no-tma, no-tma-store, \
                     no-tcgen05, wgmma-wait-0, empty-barriers, warp-specialize, no-pingpong, persistent, emulate=ARCH, \
                     PASS{{OPTION=VALUE}}, CONST=VALUE)"
                ),
            },
        }
    }
    tilec_passes::check_disabled(&v.switches.disable_pass.iter().cloned().collect())
        .map_err(|d| anyhow::anyhow!("--variant {name}: {}", d.message))?;
    Ok(v)
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

/// An experiment file's kernel, shapes and variants (`NAME=SPEC` each).
#[derive(Debug, Default, PartialEq)]
struct File {
    kernel: Option<String>,
    shapes: Option<String>,
    variants: Vec<String>,
}

/// The TOML subset of experiment files: `key = "value"` lines, `#` comments, and one
/// `[variants]` table; anything else is an error naming the line.
fn parse_file(text: &str) -> Result<File> {
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
            (false, _) => bail!("line {}: unknown key `{k}` (kernel, shapes, then [variants])", n + 1),
        }
    }
    Ok(f)
}

pub fn run(a: Args) -> Result<ExitCode> {
    let file = match &a.file {
        Some(p) => parse_file(&std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?)
            .with_context(|| format!("{}", p.display()))?,
        None => File::default(),
    };
    let kernel = a.kernel.clone().or(file.kernel).context("name a kernel (or give an experiment --file)")?;
    let spec = tilec_suite::find(&kernel).with_context(|| {
        let names: Vec<&str> = tilec_suite::all().iter().map(|s| s.name).collect();
        format!("no kernel spec `{kernel}` (known: {})", names.join(", "))
    })?;
    let mut variants = vec![Variant { name: "default".into(), ..Default::default() }];
    for v in file.variants.iter().chain(&a.variants) {
        variants.push(parse_variant(v)?);
    }
    let shapes = a.shapes.clone().or(file.shapes);
    let (arch, _) = tilec_core::target::resolve(&a.arch).map_err(anyhow::Error::msg)?;
    let cases: Vec<tilec_suite::Case> = match &shapes {
        None => {
            let mut seen = std::collections::BTreeSet::new();
            (spec.bench_cases)(true)
                .into_iter()
                .chain((spec.gpu_cases)())
                .filter(|c| seen.insert(c.label()))
                .take(4)
                .collect()
        }
        Some(s) => super::bench::parse_shapes(s)?
            .into_iter()
            .map(|(dims, dt)| (spec.case_for)(&dims, dt).map_err(anyhow::Error::msg))
            .collect::<Result<_>>()?,
    };
    let path = a.kernels_dir.join(spec.file);
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let source = tilec::Source::new(path.display().to_string(), text);
    let gpu_env = if a.gpu {
        let dev = tilec_runtime::Device::open(0)?;
        let copy = dev.copy_bandwidth(512 << 20)?;
        Some((dev, copy))
    } else {
        None
    };
    let mut table = format!(
        "### tilec experiment — {} for {}{}\n\n| variant | case | tile-level stages vs source | regs | spills | smem B | mma.sync | wgmma | tcgen05.mma | ldmatrix | cp.async | TMA | bar |{}\n|---|---|---|---|---|---|---|---|---|---|---|---|---|{}\n",
        spec.name,
        arch.name,
        gpu_env.as_ref().map(|(d, _)| format!(", timed on {}", d.name)).unwrap_or_default(),
        if a.gpu { " GPU check | median ms | vs default |" } else { "" },
        if a.gpu { "---|---|---|" } else { "" },
    );
    let mut rows = vec![];
    let mut default_ms: Vec<Option<f64>> = vec![None; cases.len()];
    let total = variants.len() * cases.len();
    for (vi, v) in variants.iter().enumerate() {
        // The interpreter's verdict runs the spec's interpreter case, not the timed one: one
        // run a variant, whatever the cases.
        let mut verdict: Option<String> = None;
        for (ci, case) in cases.iter().enumerate() {
            out::err_raw(&format!(
                "\r[{}/{total}] {} {} ...          ",
                vi * cases.len() + ci + 1,
                v.name,
                case.label()
            ));
            let case = v.consts.iter().fold(case.clone(), |c, (k, n)| c.with(k, *n));
            let opts = v.switches.apply(tilec::CompileOptions {
                arch: arch.name.to_string(),
                kernel: Some(spec.kernel.to_string()),
                consts: spec.constants(&case),
                ..Default::default()
            });
            let compiled = tilec::compile(&source, &opts);
            let f = compiled.as_ref().ok().map(|c| facts(c.ptx(), c.signature.shared_bytes, arch));
            let stages = match &compiled {
                Err(e) => format!("does not compile: {}", e.diagnostics.first().map_or("", |d| d.message.as_str())),
                Ok(_) => verdict.get_or_insert_with(|| interp_verdict(spec, &source, &opts, &v.consts)).clone(),
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
                "variant": v.name, "switches": v.switches.label(), "consts": v.consts,
                "case": case.label(), "arch": arch.name, "facts": f, "tile_stages": stages,
            });
            if let Some((dev, copy)) = &gpu_env {
                let timing = gpu::Timing { reps: a.reps.max(1), copy_gbps: *copy, matmul_tflops: None };
                match gpu::bench_case(dev, &a.kernels_dir, spec, &case, &timing, &v.switches) {
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
    out::print(&table)?;
    if let Some(p) = &a.md {
        out::write_file(p, &table)?;
    }
    if let Some(p) = &a.json {
        out::write_file(p, &serde_json::to_string_pretty(&serde_json::json!({ "kernel": spec.name, "rows": rows }))?)?;
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
) -> String {
    use rand::SeedableRng;
    let Some(case) = (spec.interp_cases)().into_iter().next() else { return "no interpreter case".into() };
    let case = consts.iter().fold(case, |c, (k, n)| c.with(k, *n));
    let o = tilec::CompileOptions { consts: spec.constants(&case), ..opts.clone() };
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
        let f = parse_file("# fmha\nkernel = \"fmha\"\nshapes = \"4x8x128x64:f16\"\n\n[variants]\nno-licm = \"-tile-licm\"\n\"fast\" = \"fast-math,TILE_N=64\"\n").unwrap();
        assert_eq!(f.kernel.as_deref(), Some("fmha"));
        assert_eq!(f.shapes.as_deref(), Some("4x8x128x64:f16"));
        assert_eq!(f.variants, ["no-licm=-tile-licm", "fast=fast-math,TILE_N=64"]);
        assert!(parse_file("[other]").unwrap_err().to_string().contains("line 1"));
        assert!(parse_file("kernel = fmha").unwrap_err().to_string().contains("double quotes"));
        assert!(parse_file("speed = \"x\"").unwrap_err().to_string().contains("unknown key `speed`"));
        for v in &f.variants {
            parse_variant(v).unwrap();
        }
    }
}
