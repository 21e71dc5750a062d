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
}

/// The first GEMM row of `--ablation`: the GEMM variants compare with it.
const GEMM_BASE: &str = "matmul 4096³ (TMA, wgmma in flight)";

/// The rows of `--ablation`: (step, kernel, passes disabled, switches among `fast-math`,
/// `no-tma`, `wgmma-wait-0`, `empty-barriers`, `warp-specialize`, `no-pingpong`). FMHA rows run B=4 H=32 S=2048 D=128 causal; `matmul` rows 4096³.
const ABLATION: &[(&str, &str, &[&str], &[&str])] = &[
    ("basic (mma)", "fmha_step2_mma", &[], &[]),
    ("+ exp2", "fmha_step3_exp2", &[], &[]),
    ("+ load order", "fmha_step4_load_order", &[], &[]),
    ("+ latency hints", "fmha_step5_latency", &[], &[]),
    ("+ occupancy hint", "fmha_step6_occupancy", &[], &[]),
    ("+ approx division", "fmha_step7_approx_div", &[], &[]),
    ("fmha.tile", "fmha", &[], &[]),
    ("fmha.tile without tile-pipeline", "fmha", &["tile-pipeline"], &[]),
    ("fmha.tile without tile-swizzle", "fmha", &["tile-swizzle"], &[]),
    ("fmha.tile without tile-approx-math", "fmha", &["tile-approx-math"], &[]),
    ("fmha.tile with --fast-math", "fmha", &[], &["fast-math"]),
    ("fmha.tile with cp.async rings (--no-tma)", "fmha", &[], &["no-tma"]),
    ("fmha.tile warp-specialized (--warp-specialize)", "fmha", &[], &["warp-specialize"]),
    ("fmha.tile warp-specialized without ping-pong (--no-pingpong)", "fmha", &[], &["warp-specialize", "no-pingpong"]),
    ("step 3 without tile-load-order (a register permute)", "fmha_step3_exp2", &["tile-load-order"], &[]),
    (GEMM_BASE, "matmul", &[], &[]),
    ("matmul with cp.async rings (--no-tma)", "matmul", &[], &["no-tma"]),
    ("matmul with every wgmma waited at once", "matmul", &[], &["wgmma-wait-0"]),
    ("matmul with neither (cp.async, wait 0)", "matmul", &[], &["no-tma", "wgmma-wait-0"]),
    ("matmul with empty mbarriers (--empty-barriers)", "matmul", &[], &["empty-barriers"]),
    ("matmul warp-specialized (--warp-specialize)", "matmul", &[], &["warp-specialize"]),
    ("matmul persistent (--persistent)", "matmul", &[], &["persistent"]),
    ("matmul persistent and warp-specialized", "matmul", &[], &["persistent", "warp-specialize"]),
];

fn ablation(a: &Args) -> Result<ExitCode> {
    let dev = tilec_runtime::Device::open(0)?;
    out::err(&format!("device: {} (sm_{}{})", dev.name, dev.cc.0, dev.cc.1));
    let copy = dev.copy_bandwidth(512 << 20)?;
    let reps = if a.quick { a.reps.max(1) } else { a.reps.max(100) };
    let case = tilec_suite::Case::new(tilec::DType::F16, &[4, 32, 2048, 128]).with("CAUSAL", 1);
    let mut table = format!(
        "### Ablation — {}, FMHA B=4 H=32 S=2048 D=128 causal f16, GEMM 4096³ f16, {}\n\n| step | kernel | pipeline | median ms | TFLOP/s | vs previous step | vs basic | correct (rel L2) |\n|---|---|---|---|---|---|---|---|\n",
        dev.name,
        today()
    );
    let (mut rows, mut errors) = (vec![], vec![]);
    let (mut basic, mut prev): (Option<f64>, Option<f64>) = (None, None);
    let gemm = tilec_suite::Case::new(tilec::DType::F16, &[4096, 4096, 4096]);
    for (i, (step, kernel, disabled, switches)) in ABLATION.iter().enumerate() {
        out::err_raw(&format!("\r[{}/{}] {step} ...          ", i + 1, ABLATION.len()));
        let Some(spec) = tilec_suite::find(kernel) else { continue };
        let variant = gpu::Variant {
            disable_pass: disabled.iter().map(|d| d.to_string()).collect(),
            fast_math: switches.contains(&"fast-math"),
            no_fp_fusion: false,
            no_tma: switches.contains(&"no-tma"),
            no_tcgen05: false,
            no_tma_store: false,
            wgmma_wait_at_once: switches.contains(&"wgmma-wait-0"),
            empty_barriers: switches.contains(&"empty-barriers"),
            warp_specialize: switches.contains(&"warp-specialize"),
            no_pingpong: switches.contains(&"no-pingpong"),
            persistent: switches.contains(&"persistent"),
            emulate: None,
            pass_option: vec![],
        };
        let case = if *kernel == "matmul" { &gemm } else { &case };
        let timing = gpu::Timing { reps, copy_gbps: copy, matmul_tflops: None };
        match gpu::bench_case(&dev, &a.kernels_dir, spec, case, &timing, &variant) {
            Ok(r) => {
                let ms = r.median_ms;
                // The GEMM rows compare with the default matmul, not with the FMHA steps.
                if *step == GEMM_BASE {
                    (prev, basic) = (None, None);
                }
                let ratio = |b: Option<f64>| b.map(|b| format!("{:.2}x", b / ms)).unwrap_or_else(|| "—".into());
                table.push_str(&format!(
                    "| {step} | {kernel} | {} | {ms:.4} | {:.1} | {} | {} | {} |\n",
                    if variant.label().is_empty() { "default".to_string() } else { variant.label() },
                    r.tflops.unwrap_or(f64::NAN),
                    ratio(prev),
                    ratio(basic),
                    if r.rel_l2.is_nan() { "unchecked".to_string() } else { format!("yes ({:.1e})", r.rel_l2) },
                ));
                // The steps compare with the step before; the variants of fmha.tile with fmha.tile,
                // those of matmul with matmul.
                if i <= 6 || *step == GEMM_BASE {
                    prev = Some(ms);
                }
                basic.get_or_insert(ms);
                rows.push(serde_json::json!({ "step": step, "variant": variant.label(), "row": r }));
            }
            Err(e) => {
                table.push_str(&format!("| {step} | {kernel} | {} | — | — | — | — | FAILED |\n", variant.label()));
                errors.push(e);
            }
        }
    }
    out::err("");
    out::println(&table)?;
    for e in &errors {
        out::println(&format!("FAILED: {e}"))?;
    }
    let json = serde_json::json!({
        "device": dev.name, "driver": driver_version(), "date": today(), "commit": a.commit,
        "copy_gbps": copy, "reps": reps, "rows": rows, "errors": errors,
    });
    write_outputs(a.json.as_deref(), a.md.as_deref(), &json, &table)?;
    Ok(if errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

pub fn run(a: Args) -> Result<ExitCode> {
    if a.ablation {
        return ablation(&a);
    }
    let mut overrides: Vec<(String, i64)> = vec![];
    for c in &a.consts {
        let (k, v) = c.split_once('=').with_context(|| format!("--const {c}: expected NAME=VALUE"))?;
        let v: i64 = v.trim().parse().with_context(|| format!("--const {c}: bench takes integer values"))?;
        if overrides.iter().any(|(n, _)| n == k.trim()) {
            anyhow::bail!("--const {} is given twice", k.trim());
        }
        overrides.push((k.trim().to_string(), v));
    }
    let peer_rows = match &a.peers {
        Some(p) => bench_report::load_peers(p).map_err(anyhow::Error::msg)?,
        None => vec![],
    };
    let shapes = a.shapes.as_deref().map(parse_shapes).transpose()?;
    let reps = if a.quick { a.reps.max(1) } else { a.reps.max(100) };
    let specs = gpu::selected(&a.kernels).map_err(anyhow::Error::msg)?;
    let dev = tilec_runtime::Device::open(0)?;
    out::err(&format!("device: {} (sm_{}{})", dev.name, dev.cc.0, dev.cc.1));
    let copy = dev.copy_bandwidth(512 << 20)?;
    out::err(&format!("copy bandwidth (512 MiB, read+write): {copy:.0} GB/s"));
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
