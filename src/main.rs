//! The `tilec` command line.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tilec::suite::{self, BenchRow, CheckRow};
use tilec::{compile, CompileOptions, ConstArg, Source, Stage};

#[derive(Parser, Debug)]
#[command(
    name = "tilec",
    version,
    about = "A tile-kernel compiler: .tile programs to PTX for sm_90a, sm_103a and sm_121a"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Compile a .tile file: PTX + metadata JSON, or one stage with --emit.
    Compile {
        file: PathBuf,
        /// sm_90, sm_90a, sm_103, sm_103a, sm_121, sm_121a.
        #[arg(long)]
        arch: String,
        /// Print one stage: tile, tilegpu, llvm, llvm-ir, ptx.
        #[arg(long)]
        emit: Option<String>,
        /// Output file (default: FILE's stem + .ptx in the current directory).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Kernel name, when the file has several.
        #[arg(long)]
        kernel: Option<String>,
        /// Compile-time constant override, NAME=VALUE (repeatable).
        #[arg(long = "const", value_name = "NAME=VALUE")]
        consts: Vec<String>,
        /// Tensor parameter not assumed 16-byte aligned (repeatable).
        #[arg(long)]
        unaligned: Vec<String>,
        /// Print what the passes decided.
        #[arg(long)]
        report: bool,
        /// Also assemble with ptxas and print its resource report.
        #[arg(long)]
        ptxas: bool,
        /// human or json.
        #[arg(long, default_value = "human")]
        error_format: String,
    },
    /// Run a kernel on the CPU interpreter (the reference semantics; no GPU needed).
    ///
    /// Arguments, in parameter order: `--arg 16x1024:f16` (a random normal tensor),
    /// `--arg zeros:16x1024:f32`, `--arg 3` (an i32), `--arg 0.5` (an f32).
    Run {
        file: PathBuf,
        /// Use the interpreter (the only executor of `run` today).
        #[arg(long)]
        interp: bool,
        #[arg(long)]
        kernel: Option<String>,
        /// Target whose `by_target` values to use.
        #[arg(long, default_value = "sm_90a")]
        arch: String,
        #[arg(long = "const", value_name = "NAME=VALUE")]
        consts: Vec<String>,
        #[arg(long = "arg", value_name = "ARG")]
        args: Vec<String>,
        /// Seed of the random tensors.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Print the long explanation of a diagnostic code (e.g. E0010).
    Explain { code: String },
    /// List tilec's passes with their options, and the default pipeline of each target.
    Passes {
        /// List the upstream MLIR passes `tilec opt` also accepts.
        #[arg(long)]
        upstream: bool,
    },
    /// Run a pass pipeline over an MLIR file (any stage), mixing tilec and upstream passes.
    ///
    /// Example: `tilec opt k.mlir --passes tile-layout{num-warps=8},canonicalize,cse,tile-to-llvm
    /// --print-after-all`. FILE `-` reads standard input.
    Opt {
        file: PathBuf,
        /// Comma-separated pipeline: tilec passes (`tilec passes`) and upstream MLIR ones.
        #[arg(long)]
        passes: String,
        /// Print the IR after every pass (to standard error).
        #[arg(long)]
        print_after_all: bool,
        /// Print the IR after each pass with this name (repeatable).
        #[arg(long, value_name = "NAME")]
        print_after: Vec<String>,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Run every kernel with a GPU test on the GPU against its reference.
    Check {
        /// Only these kernels.
        kernels: Vec<String>,
        #[arg(long, default_value = "kernels")]
        kernels_dir: PathBuf,
        #[arg(long)]
        json: Option<PathBuf>,
        #[arg(long)]
        md: Option<PathBuf>,
    },
    /// Time kernels on the GPU (each checked first), beside the copy ceiling and the peers.
    Bench {
        kernels: Vec<String>,
        #[arg(long, default_value = "kernels")]
        kernels_dir: PathBuf,
        #[arg(long)]
        json: Option<PathBuf>,
        #[arg(long)]
        md: Option<PathBuf>,
        /// Write one SVG plot per kernel class into this folder.
        #[arg(long)]
        plot: Option<PathBuf>,
        /// anchors.py JSON of the same GPU run: adds the peers and the ratios.
        #[arg(long)]
        peers: Option<PathBuf>,
        /// Shapes instead of the default bench set: `16384x4096:f16,4096x1024:f32`.
        #[arg(long)]
        shapes: Option<String>,
        /// A fast subset.
        #[arg(long)]
        quick: bool,
        /// Timed runs per configuration (median reported; at least 100 unless --quick).
        #[arg(long, default_value_t = 100)]
        reps: usize,
        /// tilec commit the binary was built from (recorded in the results).
        #[arg(long, default_value = "")]
        commit: String,
        /// Integer constant override for every case, NAME=VALUE (repeatable; tuning
        /// experiments: `--const BLOCK_N=4096`). Shown in the case labels.
        #[arg(long = "const", value_name = "NAME=VALUE")]
        consts: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn parse_consts(items: &[String]) -> Result<BTreeMap<String, ConstArg>> {
    let mut out = BTreeMap::new();
    for it in items {
        let Some((k, v)) = it.split_once('=') else { bail!("--const takes NAME=VALUE, got `{it}`") };
        let val =
            ConstArg::parse(v).with_context(|| format!("cannot read `{v}` as an integer, bool, float or dtype"))?;
        out.insert(k.trim().to_string(), val);
    }
    Ok(out)
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.cmd {
        Cmd::Compile { file, arch, emit, output, kernel, consts, unaligned, report, ptxas, error_format } => {
            let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let source = Source::new(file.display().to_string(), text);
            let stage = match &emit {
                None => None,
                Some(s) => Some(Stage::parse(s).with_context(|| {
                    let names: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
                    format!("unknown stage `{s}`; stages: {}", names.join(", "))
                })?),
            };
            let opts = CompileOptions {
                arch,
                kernel,
                consts: parse_consts(&consts)?,
                unaligned: unaligned.into_iter().collect::<BTreeSet<_>>(),
                opt_level: None,
                until: stage,
            };
            let compiled = match compile(&source, &opts) {
                Ok(c) => c,
                Err(e) => {
                    if error_format == "json" {
                        println!("{}", e.render_json());
                    } else {
                        eprint!("{}", e.render());
                    }
                    return Ok(ExitCode::from(1));
                }
            };
            if compiled.arch_substituted {
                eprintln!("note: compiling for {} (the arch-specific variant of {})", compiled.arch.name, opts.arch);
            }
            if report {
                for l in &compiled.report {
                    eprintln!("report: {l}");
                }
            }
            if ptxas {
                let r = tilec_backend::ptxas(compiled.ptx(), compiled.arch)
                    .map_err(|d| anyhow::anyhow!("{}", tilec_core::Diagnostics(vec![d])))?;
                eprintln!(
                    "ptxas {}: {} registers, {} bytes smem, {} bytes stack, {} bytes spill stores, {} bytes spill loads",
                    compiled.arch.name, r.registers, r.shared_bytes, r.stack_bytes, r.spill_stores, r.spill_loads
                );
            }
            match stage {
                Some(s) => match output {
                    Some(o) => std::fs::write(&o, compiled.stage(s))
                        .with_context(|| format!("cannot write {}", o.display()))?,
                    None => print!("{}", compiled.stage(s)),
                },
                None => {
                    let out = output.unwrap_or_else(|| {
                        PathBuf::from(format!(
                            "{}.{}.ptx",
                            file.file_stem().and_then(|s| s.to_str()).unwrap_or("kernel"),
                            compiled.arch.name
                        ))
                    });
                    std::fs::write(&out, compiled.ptx()).with_context(|| format!("cannot write {}", out.display()))?;
                    let meta = out.with_extension("json");
                    std::fs::write(&meta, compiled.artifact().metadata_json())
                        .with_context(|| format!("cannot write {}", meta.display()))?;
                    eprintln!("wrote {} and {}", out.display(), meta.display());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run { file, interp, kernel, arch, consts, args, seed } => {
            if !interp {
                bail!("`tilec run` executes on the CPU interpreter: pass --interp (GPU runs go through `tilec check`/`bench` or the runtime API)");
            }
            let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let source = Source::new(file.display().to_string(), text);
            let (a, _) = tilec_core::target::resolve(&arch).map_err(anyhow::Error::msg)?;
            let req = tilec_frontend::Request {
                kernel,
                target: a.name.to_string(),
                consts: parse_consts(&consts)?,
                unaligned: Default::default(),
            };
            let el = match tilec_frontend::check(&source.text, &req) {
                Ok(e) => e,
                Err(d) => {
                    eprint!("{}", tilec_core::diag::render(&d, &source));
                    return Ok(ExitCode::from(1));
                }
            };
            let iargs = interp_args(&args, seed)?;
            let grid = tilec_interp::grid(&el.signature, &iargs).map_err(anyhow::Error::msg)?;
            let out = tilec_interp::run(&el.func, grid, iargs).map_err(|e| anyhow::anyhow!("{e}"))?;
            for p in &out.prints {
                println!("{p}");
            }
            println!("ran {} on the interpreter over grid {:?}", el.func.name, grid);
            for (p, t) in el
                .signature
                .params
                .iter()
                .filter(|p| matches!(p, tilec_core::abi::ParamSig::Tensor { .. }))
                .zip(&out.tensors)
            {
                let v = t.to_f64();
                let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
                let sum: f64 = finite.iter().sum();
                let head: Vec<String> = v.iter().take(6).map(|x| format!("{x:.4}")).collect();
                println!(
                    "  {} {} {:?}: sum {:.6}, {} non-finite, first [{}]",
                    p.name(),
                    t.dtype,
                    t.shape,
                    sum,
                    v.len() - finite.len(),
                    head.join(", ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Opt { file, passes, print_after_all, print_after, output } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading standard input")?
            } else {
                std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?
            };
            let source = Source::new(file.display().to_string(), text.clone());
            let fail = |d: tilec_core::Diagnostic| {
                eprint!("{}", tilec_core::diag::render(&[d], &source));
                Ok(ExitCode::FAILURE)
            };
            let mlir = tilec_ir::Mlir::new().map_err(|d| anyhow::anyhow!("{}", d.message))?;
            let steps = match tilec_passes::driver::parse_pipeline(&mlir, &passes) {
                Ok(s) => s,
                Err(d) => return fail(d),
            };
            for name in &print_after {
                if !steps.iter().any(|s| s.name() == name) {
                    let names: Vec<&str> = steps.iter().map(|s| s.name()).collect();
                    let close = tilec_core::diag::close_matches(name, names.iter().copied());
                    let hint =
                        if close.is_empty() { String::new() } else { format!(" (did you mean {}?)", close.join(", ")) };
                    bail!(
                        "--print-after {name}: no pass of that name in the pipeline{hint}; it runs {}",
                        names.join(", ")
                    );
                }
            }
            if let Err(d) = mlir.parse(&text, "input") {
                return fail(d);
            }
            let mut driver = tilec_passes::driver::Driver::new(&mlir, tilec_passes::driver::Ir::Text(text.clone()));
            for step in &steps {
                if let Err(d) = driver.run(step) {
                    return fail(d.with_note(format!("while running `{}`", step.text())));
                }
                if print_after_all || print_after.iter().any(|n| n == step.name()) {
                    eprintln!("// -----// IR Dump After {} //----- //\n{}", step.text(), driver.text());
                }
            }
            let out = driver.text();
            match output {
                Some(p) => std::fs::write(&p, &out).with_context(|| format!("writing {}", p.display()))?,
                None => print!("{out}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Explain { code } => match tilec_core::diag::lookup(&code) {
            Some((c, title, long)) => {
                println!("{c}: {title}\n\n{long}");
                Ok(ExitCode::SUCCESS)
            }
            None => bail!("no diagnostic code `{code}`; codes run from E0001 (see `tilec explain E0001`)"),
        },
        Cmd::Passes { upstream } => {
            if upstream {
                for u in tilec_passes::driver::upstream_passes() {
                    let nest =
                        if u.anchor == "builtin.module" { String::new() } else { format!(" [in {}(…)]", u.anchor) };
                    println!("{:42} {}{nest}", u.name, u.doc);
                }
                return Ok(ExitCode::SUCCESS);
            }
            for p in tilec_passes::PASSES {
                println!("{:14} → {:8} {}", p.name, p.produces, p.doc);
                for o in p.options {
                    let default =
                        if o.default.is_empty() { String::new() } else { format!(" (default {})", o.default) };
                    println!("    {:12} {}{default}", o.name, o.doc);
                }
            }
            println!("\n`tilec opt --passes` also takes upstream MLIR passes (`tilec passes --upstream`).");
            println!();
            for a in tilec_core::target::ARCHS {
                println!("pipeline {}: {}", a.name, tilec_passes::pipeline(a).join(","));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Check { kernels, kernels_dir, json, md } => {
            let dev = tilec_runtime::Device::open(0)?;
            eprintln!("device: {} (sm_{}{})", dev.name, dev.cc.0, dev.cc.1);
            let mut rows: Vec<CheckRow> = vec![];
            for k in selected(&kernels)? {
                for (i, case) in k.cases().iter().enumerate() {
                    eprint!("\rchecking {} {} ...            ", k.name(), case.label());
                    rows.push(suite::check_case(&dev, &kernels_dir, k.as_ref(), case, 1000 + i as u64));
                }
            }
            eprintln!();
            let table = check_table(&rows, &dev.name);
            println!("{table}");
            write_outputs(
                json.as_deref(),
                md.as_deref(),
                &serde_json::json!({ "device": dev.name, "date": today(), "rows": rows }),
                &table,
            )?;
            let failed = rows.iter().filter(|r| !r.pass).count();
            println!("{} passed, {} failed", rows.len() - failed, failed);
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Cmd::Bench { kernels, kernels_dir, json, md, plot, peers, shapes, quick, reps, commit, consts } => {
            let overrides = consts
                .iter()
                .map(|c| {
                    let (k, v) = c.split_once('=').with_context(|| format!("--const {c}: expected NAME=VALUE"))?;
                    let v: i64 =
                        v.trim().parse().with_context(|| format!("--const {c}: bench takes integer values"))?;
                    Ok((k.trim().to_string(), v))
                })
                .collect::<Result<Vec<_>>>()?;
            let peer_rows = match &peers {
                Some(p) => tilec::report::load_peers(p).map_err(anyhow::Error::msg)?,
                None => vec![],
            };
            let shapes = shapes.as_deref().map(parse_shapes).transpose()?;
            let reps = if quick { reps.max(1) } else { reps.max(100) };
            let dev = tilec_runtime::Device::open(0)?;
            eprintln!("device: {} (sm_{}{})", dev.name, dev.cc.0, dev.cc.1);
            let copy = dev.copy_bandwidth(512 << 20)?;
            eprintln!("copy bandwidth (512 MiB, read+write): {copy:.0} GB/s");
            let mut jobs = vec![];
            for k in selected(&kernels)? {
                let cases = match &shapes {
                    None => k.bench_cases(quick),
                    Some(list) => list
                        .iter()
                        .map(|(d, t)| k.case_for(d, *t))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(anyhow::Error::msg)?,
                };
                for mut c in cases {
                    c.consts.retain(|(n, _)| !overrides.iter().any(|(o, _)| o == n));
                    c.consts.extend(overrides.iter().cloned());
                    jobs.push((k.name(), c));
                }
            }
            let all = suite::all();
            // The measured matrix rate for compute floors: the best cuBLAS figure of the run.
            let matmul_rate =
                peer_rows.iter().filter(|p| p.provider == "cublas").filter_map(|p| p.tflops).reduce(f64::max);
            let mut rows: Vec<BenchRow> = vec![];
            let mut errors = vec![];
            for (i, (name, case)) in jobs.iter().enumerate() {
                let Some(k) = all.iter().find(|k| k.name() == *name) else { continue };
                eprint!("\r[{}/{}] bench {} {} {} ...          ", i + 1, jobs.len(), name, case.label(), case.dtype);
                match suite::bench_case(&dev, &kernels_dir, k.as_ref(), case, reps, copy, matmul_rate) {
                    Ok(r) => rows.push(r),
                    Err(e) => errors.push(e),
                }
            }
            eprintln!();
            let prov =
                tilec::report::Provenance { device: dev.name.clone(), driver: driver_version(), date: today(), commit };
            let table = tilec::report::table(&rows, &peer_rows, copy, &prov);
            println!("{table}");
            for e in &errors {
                println!("FAILED: {e}");
            }
            if let Some(dir) = &plot {
                for f in tilec::report::plots(&rows, &peer_rows, copy, &prov, dir).map_err(anyhow::Error::msg)? {
                    eprintln!("wrote {f}");
                }
            }
            write_outputs(
                json.as_deref(),
                md.as_deref(),
                &serde_json::json!({
                    "device": prov.device, "driver": prov.driver, "date": prov.date, "commit": prov.commit,
                    "copy_gbps": copy, "reps": reps, "rows": rows, "peers": peer_rows, "errors": errors,
                }),
                &table,
            )?;
            Ok(if errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

fn selected(names: &[String]) -> Result<Vec<Box<dyn suite::GpuKernel>>> {
    let all = suite::all();
    let known: Vec<&str> = all.iter().map(|k| k.name()).collect();
    for n in names {
        if !known.contains(&n.as_str()) {
            bail!("no GPU test for kernel `{n}`; kernels with one: {}", known.join(", "));
        }
    }
    Ok(all.into_iter().filter(|k| names.is_empty() || names.iter().any(|n| n == k.name())).collect())
}

/// Interpreter arguments: `16x1024:f16` (random normal), `zeros:16x1024:f32`, `3` (i32),
/// `0.5` (f32).
fn interp_args(args: &[String], seed: u64) -> Result<Vec<tilec_interp::Arg>> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut out = vec![];
    for a in args {
        if let Ok(v) = a.parse::<i32>() {
            out.push(tilec_interp::Arg::I32(v));
            continue;
        }
        if let Ok(v) = a.parse::<f32>() {
            out.push(tilec_interp::Arg::F32(v));
            continue;
        }
        let (zeros, rest) = match a.strip_prefix("zeros:") {
            Some(r) => (true, r),
            None => (false, a.as_str()),
        };
        let (dims, dt) = rest.split_once(':').unwrap_or((rest, "f32"));
        let dtype = tilec::DType::parse(dt).with_context(|| format!("unknown dtype `{dt}` in --arg {a}"))?;
        let shape = dims
            .split('x')
            .map(|d| {
                d.parse::<i64>().ok().filter(|d| *d >= 0).with_context(|| format!("bad extent `{d}` in --arg {a}"))
            })
            .collect::<Result<Vec<_>>>()?;
        let n = shape.iter().product::<i64>() as usize;
        if n > 1 << 26 {
            bail!("--arg {a}: {n} elements is too many for the interpreter");
        }
        let vals: Vec<f64> = (0..n)
            .map(|_| {
                if zeros {
                    0.0
                } else {
                    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
                    let v: f64 = rng.gen_range(0.0..1.0);
                    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
                }
            })
            .collect();
        out.push(tilec_interp::Arg::Tensor(tilec::runtime::HostTensor::from_f64(dtype, &shape, &vals)));
    }
    Ok(out)
}

/// `16384x4096:f16,4096x1024` → dims and dtype (f16 when omitted).
fn parse_shapes(spec: &str) -> Result<Vec<(Vec<i64>, tilec::DType)>> {
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let (dims, dt) = item.trim().split_once(':').unwrap_or((item.trim(), "f16"));
            let d = tilec::DType::parse(dt).with_context(|| format!("unknown dtype `{dt}` in --shapes"))?;
            let dims = dims
                .split('x')
                .map(|x| x.trim().parse::<i64>().with_context(|| format!("bad extent `{x}` in --shapes item `{item}`")))
                .collect::<Result<Vec<_>>>()?;
            Ok((dims, d))
        })
        .collect()
}

/// The NVIDIA driver version, from nvidia-smi when it is there.
fn driver_version() -> String {
    std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=driver_version", "--format=csv,noheader"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").trim().to_string())
        .unwrap_or_default()
}

fn today() -> String {
    std::process::Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn write_outputs(json: Option<&Path>, md: Option<&Path>, value: &serde_json::Value, table: &str) -> Result<()> {
    if let Some(j) = json {
        std::fs::write(j, serde_json::to_string_pretty(value)?)
            .with_context(|| format!("cannot write {}", j.display()))?;
    }
    if let Some(m) = md {
        std::fs::write(m, table).with_context(|| format!("cannot write {}", m.display()))?;
    }
    Ok(())
}

fn check_table(rows: &[CheckRow], device: &str) -> String {
    let mut s = format!("### tilec check on {device}\n\n| kernel | shape | dtype | max abs err | rel L2 err | tolerance | result |\n|---|---|---|---|---|---|---|\n");
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {:.3e} | {:.3e} | {:.0e} | {}{} |\n",
            r.kernel,
            r.shape,
            r.dtype,
            r.max_abs,
            r.rel_l2,
            r.tolerance,
            if r.pass { "pass" } else { "FAIL" },
            if r.note.is_empty() { String::new() } else { format!(" ({})", r.note.lines().next().unwrap_or("")) }
        ));
    }
    s
}
