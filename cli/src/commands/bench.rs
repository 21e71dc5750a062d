//! `tilec bench [KERNEL…]`: times the bench cases of the selected kernels (each checked
//! first), beside the copy ceiling and, with `--peers`, anchors.py's peers of the same run.

use super::check::{today, write_outputs};
use crate::bench_report::{self, Provenance};
use crate::gpu::{self, BenchRow};
use crate::out;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only these kernels (default: every kernel with bench cases).
    kernels: Vec<String>,
    /// The folder of the kernel library.
    #[arg(long, default_value = "kernels")]
    kernels_dir: PathBuf,
    /// Write the rows (and the peers) as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the markdown table here.
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
    #[command(flatten)]
    variant: super::VariantArgs,
    /// The ablation instead: FMHA (B=4, H=32, S=2048, D=128, causal) through the tutorial's
    /// steps (basic → +exp2 → +load order → +latency hints → +occupancy → +approx division),
    /// then `fmha` with each optimization pass disabled, with `--fast-math` and `--no-tma`;
    /// GEMM 4096³ with TMA and wgmma in flight, without each, without both, with empty
    /// mbarriers, warp-specialized (a producer warpgroup), persistent, and both.
    #[arg(long)]
    ablation: bool,
    /// Print the cases instead of timing them, one JSON object a line: the kernel (name,
    /// file, function), the case (label, dims, dtype), the constants its compile takes (as
    /// `tilec compile --const` reads them), its fewest bytes and, for a compute-bound kernel,
    /// its floating-point operations. Needs no GPU (`bench/estimates.py` reads it).
    #[arg(long)]
    list: bool,
}

/// The experiment files `--ablation` runs (embedded: the binary needs no checkout).
const ABLATION: [(&str, &str); 2] = [
    ("fmha-ablation.toml", include_str!("../../../bench/experiments/fmha-ablation.toml")),
    ("matmul-tma-wgmma.toml", include_str!("../../../bench/experiments/matmul-tma-wgmma.toml")),
];

/// `--ablation`: the experiment files of `bench/experiments/` for FMHA's steps and passes and
/// for GEMM's TMA and wgmma, on the GPU (`tilec experiment --file … --gpu`, both tables).
fn ablation(a: &Args) -> Result<ExitCode> {
    let dev = tilec_runtime::Device::open(0)?;
    out::err(&format!("device: {} (sm_{}{})", dev.name, dev.cc.0, dev.cc.1));
    let copy = dev.copy_bandwidth(512 << 20)?;
    let reps = if a.quick { a.reps.max(1) } else { a.reps.max(100) };
    let arch = dev.target()?;
    let env = (dev, copy);
    let mut table = String::new();
    let mut experiments = vec![];
    for (name, text) in ABLATION {
        let file = super::experiment::parse_file(text).with_context(|| name.to_string())?;
        let exp = super::experiment::Experiment::new(file, None, None, &[])?;
        let o = super::experiment::execute(&exp, arch, Some(&env), reps, &a.kernels_dir)?;
        table.push_str(&o.table);
        table.push('\n');
        experiments.push(serde_json::json!({ "file": name, "rows": o.rows }));
    }
    out::println(&table)?;
    let failed = experiments
        .iter()
        .flat_map(|e| e["rows"].as_array().cloned().unwrap_or_default())
        .any(|r| r.get("gpu_error").is_some());
    let json = serde_json::json!({
        "device": env.0.name, "driver": driver_version(), "date": today(), "commit": a.commit,
        "copy_gbps": copy, "reps": reps, "experiments": experiments,
    });
    write_outputs(a.json.as_deref(), a.md.as_deref(), &json, &table)?;
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `--const NAME=VALUE` overrides of every case (`bench`, `check`): integers, each name once.
pub(crate) fn const_overrides(consts: &[String]) -> Result<Vec<(String, i64)>> {
    let mut overrides: Vec<(String, i64)> = vec![];
    for c in consts {
        let (k, v) = c.split_once('=').with_context(|| format!("--const {c}: expected NAME=VALUE"))?;
        let v: i64 = v.trim().parse().with_context(|| format!("--const {c}: the cases take integer values"))?;
        if overrides.iter().any(|(n, _)| n == k.trim()) {
            anyhow::bail!("--const {} is given twice", k.trim());
        }
        overrides.push((k.trim().to_string(), v));
    }
    Ok(overrides)
}

pub fn run(a: Args) -> Result<ExitCode> {
    if a.ablation {
        return ablation(&a);
    }
    let overrides = const_overrides(&a.consts)?;
    let peer_rows = match &a.peers {
        Some(p) => bench_report::load_peers(p).map_err(anyhow::Error::msg)?,
        None => vec![],
    };
    let shapes = a.shapes.as_deref().map(parse_shapes).transpose()?;
    let reps = if a.quick { a.reps.max(1) } else { a.reps.max(100) };
    let specs = gpu::selected(&a.kernels).map_err(anyhow::Error::msg)?;
    let mut jobs = vec![];
    for spec in specs {
        let cases = match &shapes {
            None => (spec.bench_cases)(a.quick),
            Some(list) => list
                .iter()
                .map(|(d, t)| (spec.case_for)(d, *t))
                .collect::<Result<Vec<_>, _>>()
                .map_err(anyhow::Error::msg)?,
        };
        for mut c in cases {
            for (n, v) in &overrides {
                c = c.with(n, *v);
            }
            jobs.push((spec, c));
        }
    }
    if a.list {
        for (spec, c) in &jobs {
            let consts: serde_json::Map<String, serde_json::Value> =
                spec.constants(c).into_iter().map(|(k, v)| (k, v.text().into())).collect();
            let line = serde_json::json!({
                "name": spec.name, "file": spec.file, "kernel": spec.kernel, "label": c.label(),
                "dims": c.dims, "dtype": c.dtype.to_string(), "consts": consts,
                "bytes": (spec.bytes)(c), "flops": spec.flops.map(|f| f(c)),
            });
            out::println(&line.to_string())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let dev = tilec_runtime::Device::open(0)?;
    out::err(&format!("device: {} (sm_{}{})", dev.name, dev.cc.0, dev.cc.1));
    let copy = dev.copy_bandwidth(512 << 20)?;
    out::err(&format!("copy bandwidth (512 MiB, read+write): {copy:.0} GB/s"));
    // The measured matrix rate for compute floors: the best cuBLAS figure of the run.
    let matmul_rate = peer_rows.iter().filter(|p| p.provider == "cublas").filter_map(|p| p.tflops).reduce(f64::max);
    let mut rows: Vec<BenchRow> = vec![];
    let mut errors = vec![];
    for (i, (spec, case)) in jobs.iter().enumerate() {
        out::err_raw(&format!(
            "\r[{}/{}] bench {} {} {} ...          ",
            i + 1,
            jobs.len(),
            spec.name,
            case.label(),
            case.dtype
        ));
        let timing = gpu::Timing { reps, copy_gbps: copy, matmul_tflops: matmul_rate };
        match gpu::bench_case(&dev, &a.kernels_dir, spec, case, &timing, &a.variant) {
            Ok(r) => rows.push(r),
            Err(e) => errors.push(e),
        }
    }
    out::err("");
    let prov = Provenance { device: dev.name.clone(), driver: driver_version(), date: today(), commit: a.commit };
    let table = bench_report::table(&rows, &peer_rows, copy, &prov);
    out::println(&table)?;
    for e in &errors {
        out::println(&format!("FAILED: {e}"))?;
    }
    if let Some(dir) = &a.plot {
        for f in bench_report::plots(&rows, &peer_rows, copy, &prov, dir).map_err(anyhow::Error::msg)? {
            out::err(&format!("wrote {f}"));
        }
    }
    let json = serde_json::json!({
        "device": prov.device, "driver": prov.driver, "date": prov.date, "commit": prov.commit,
        "copy_gbps": copy, "reps": reps, "rows": rows, "peers": peer_rows, "errors": errors,
    });
    write_outputs(a.json.as_deref(), a.md.as_deref(), &json, &table)?;
    Ok(if errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `16384x4096:f16,4096x1024` → dims and dtype (f16 when omitted).
pub fn parse_shapes(spec: &str) -> Result<Vec<(Vec<i64>, tilec::DType)>> {
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
