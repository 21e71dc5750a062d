//! `tilec check [KERNEL…]`: every GPU case of the selected kernels against its reference.

use crate::gpu::{self, CheckRow};
use crate::out;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only these kernels (default: every kernel with a GPU test).
    kernels: Vec<String>,
    /// The folder of the kernel library.
    #[arg(long, default_value = "kernels")]
    kernels_dir: PathBuf,
    /// Write the rows as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the markdown table here.
    #[arg(long)]
    md: Option<PathBuf>,
    /// Skip cases whose CPU reference needs more multiply-adds than this (the reference is
    /// single-threaded Rust: 4096³ takes minutes). Skipped cases are listed, never passed.
    #[arg(long)]
    max_ref_work: Option<f64>,
    /// Run each case as a CUDA graph: captured on one copy of the inputs, updated to a
    /// second copy (every address changes), replayed; the second copy's outputs are checked
    /// and the first copy must come out untouched.
    #[arg(long)]
    graph: bool,
    /// Integer constant override for every case, NAME=VALUE (repeatable, as `bench` takes it:
    /// `--const AHEAD=1` checks a configuration the target's defaults do not pick). Shown in
    /// the case labels.
    #[arg(long = "const", value_name = "NAME=VALUE")]
    consts: Vec<String>,
    #[command(flatten)]
    variant: super::VariantArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let overrides = super::bench::const_overrides(&a.consts)?;
    let specs = gpu::selected(&a.kernels).map_err(anyhow::Error::msg)?;
    let dev = tilec_runtime::Device::open(0)?;
    out::err(&format!("device: {} (sm_{}{})", dev.name, dev.cc.0, dev.cc.1));
    // The GPU runs the cases one after the other on this thread; each case's CPU reference
    // and comparison — seconds apiece for the large ones, most of a whole check's time — runs
    // on the other cores meanwhile (`tilec::parallel::behind`), and the rows keep their order.
    let threads = tilec::parallel::threads().saturating_sub(1);
    let rows: Vec<CheckRow> = tilec::parallel::behind(
        threads,
        |emit| -> Result<()> {
            for spec in specs {
                let cases: Vec<_> = (spec.gpu_cases)()
                    .into_iter()
                    .map(|c| overrides.iter().fold(c, |c, (n, v)| c.with(n, *v)))
                    .collect();
                if let Some(why) =
                    cases.first().and_then(|c| gpu::not_lowered_here(&dev, &a.kernels_dir, spec, c, &a.variant))
                {
                    out::err(&format!("skipped {}: not lowered for this device: {why}", spec.name));
                    continue;
                }
                for (i, case) in cases.iter().enumerate() {
                    if a.max_ref_work.is_some_and(|m| gpu::ref_work(spec, case) > m) {
                        out::err(&format!(
                            "skipped {} {} {}: the CPU reference is over --max-ref-work",
                            spec.name,
                            case.label(),
                            case.dtype
                        ));
                        continue;
                    }
                    let seed = 1000 + i as u64;
                    emit(gpu::launch_case(&dev, &a.kernels_dir, spec, case, seed, &a.variant, a.graph));
                }
            }
            Ok(())
        },
        |launched| {
            let row = launched.finish();
            out::err(&format!(
                "{} {} {}: {} (max abs {:.3e}, rel L2 {:.3e}) {}",
                row.kernel,
                row.shape,
                row.dtype,
                if row.pass { "pass" } else { "FAIL" },
                row.max_abs,
                row.rel_l2,
                row.note.lines().next().unwrap_or("")
            ));
            row
        },
    )?;
    out::err("");
    let table = table(&rows, &dev.name);
    out::println(&table)?;
    let json = serde_json::json!({ "device": dev.name, "date": today(), "rows": rows });
    write_outputs(a.json.as_deref(), a.md.as_deref(), &json, &table)?;
    let failed = rows.iter().filter(|r| !r.pass).count();
    out::println(&format!("{} passed, {} failed", rows.len() - failed, failed))?;
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn table(rows: &[CheckRow], device: &str) -> String {
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

/// Today's date (UTC), from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    date_of_day((secs / 86_400) as i64)
}

/// The civil date of a day number since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn date_of_day(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

pub fn write_outputs(json: Option<&Path>, md: Option<&Path>, value: &serde_json::Value, table: &str) -> Result<()> {
    if let Some(j) = json {
        out::write_file(j, &serde_json::to_string_pretty(value)?)?;
    }
    if let Some(m) = md {
        out::write_file(m, table)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_from_day_numbers() {
        assert_eq!(super::date_of_day(0), "1970-01-01");
        assert_eq!(super::date_of_day(20415), "2025-11-23");
        assert_eq!(super::date_of_day(11016), "2000-02-29");
        assert_eq!(super::date_of_day(20780), "2026-11-23");
    }
}
