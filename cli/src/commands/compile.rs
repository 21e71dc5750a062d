//! `tilec compile FILE --arch ARCH`: PTX and its metadata JSON, or one stage with `--emit`.

use super::{parse_consts, read_input, ErrorFormat, StageArg};
use crate::out;
use anyhow::{bail, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tilec::{compile, CompileOptions, Source};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .tile source file (`-`: standard input).
    file: PathBuf,
    /// Target: sm_90, sm_90a, sm_103, sm_103a, sm_121, sm_121a (plain names compile for the
    /// `a` variant, and say so).
    #[arg(long)]
    arch: String,
    /// Print one stage instead of writing PTX and metadata.
    #[arg(long, value_enum)]
    emit: Option<StageArg>,
    /// Output file: the PTX (its metadata goes beside it, as .json), or the stage with --emit.
    /// Default: FILE's stem + .ARCH.ptx in the current directory; `-` is standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Kernel name, when the file has several.
    #[arg(long)]
    kernel: Option<String>,
    /// Compile-time constant override, NAME=VALUE (repeatable, each name once).
    #[arg(long = "const", value_name = "NAME=VALUE")]
    consts: Vec<String>,
    /// Tensor parameter not assumed 16-byte aligned (repeatable).
    #[arg(long)]
    unaligned: Vec<String>,
    /// Leave an optional pass out of the default pipeline (repeatable): tile-load-order,
    /// tile-approx-math, tile-swizzle, tile-pipeline.
    #[arg(long = "disable-pass", value_name = "NAME")]
    disable_pass: Vec<String>,
    /// Approximate every float op whose options the source leaves open (`tile-approx-math`):
    /// exp through exp2, div.approx, flush-to-zero.
    #[arg(long)]
    fast_math: bool,
    /// Keep every float product and sum separately rounded: no `fma` contraction of the
    /// source's `a * b + c` (on by default, as in Triton and nvcc).
    #[arg(long)]
    no_fp_fusion: bool,
    /// Print what the passes decided.
    #[arg(long)]
    report: bool,
    /// Also assemble with ptxas and print its resource report.
    #[arg(long)]
    ptxas: bool,
    /// Print the time each stage and pass took.
    #[arg(short = 'T', long)]
    time_passes: bool,
    #[arg(long, value_enum, default_value = "human")]
    error_format: ErrorFormat,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let text = read_input(&a.file)?;
    let source = Source::new(a.file.display().to_string(), text);
    let opts = CompileOptions {
        arch: a.arch,
        kernel: a.kernel,
        consts: parse_consts(&a.consts)?,
        unaligned: a.unaligned.into_iter().collect::<BTreeSet<_>>(),
        opt_level: None,
        until: a.emit.map(|s| s.0),
        disabled_passes: a.disable_pass.into_iter().collect(),
        fast_math: a.fast_math,
        no_fp_fusion: a.no_fp_fusion,
    };
    let compiled = match compile(&source, &opts) {
        Ok(c) => c,
        Err(e) => {
            match a.error_format {
                ErrorFormat::Json => out::println(&e.render_json())?,
                ErrorFormat::Human => out::err(e.render().trim_end()),
            }
            return Ok(ExitCode::from(1));
        }
    };
    if compiled.arch_substituted {
        out::err(&format!("note: compiling for {} (the arch-specific variant of {})", compiled.arch.name, opts.arch));
    }
    if a.report {
        for l in &compiled.report {
            out::err(&format!("report: {l}"));
        }
    }
    if a.time_passes {
        let total: f64 = compiled.timings.iter().map(|(_, d)| d.as_secs_f64()).sum();
        for (what, d) in &compiled.timings {
            out::err(&format!("time: {:>9.3} ms  {what}", d.as_secs_f64() * 1e3));
        }
        out::err(&format!("time: {:>9.3} ms  total", total * 1e3));
    }
    if a.ptxas {
        let r = match tilec_backend::ptxas(compiled.ptx(), compiled.arch) {
            Ok(r) => r,
            Err(d) => {
                out::err(tilec_core::diag::render(&[d], &source).trim_end());
                return Ok(ExitCode::from(1));
            }
        };
        out::err(&format!(
            "ptxas {}: {} registers, {} bytes smem, {} bytes stack, {} bytes spill stores, {} bytes spill loads",
            compiled.arch.name, r.registers, r.shared_bytes, r.stack_bytes, r.spill_stores, r.spill_loads
        ));
    }
    match a.emit {
        Some(s) => match a.output.as_deref() {
            None => out::print(compiled.stage(s.0))?,
            Some(o) if o.as_os_str() == "-" => out::print(compiled.stage(s.0))?,
            Some(o) => {
                refuse_input(o, &a.file)?;
                out::write_file(o, compiled.stage(s.0))?;
            }
        },
        None => {
            let artifact = compiled.artifact();
            match a.output {
                Some(o) if o.as_os_str() == "-" => out::print(&artifact.ptx)?,
                o => {
                    let ptx_path = o.unwrap_or_else(|| {
                        let stem =
                            a.file.file_stem().and_then(|s| s.to_str()).filter(|s| *s != "-").unwrap_or("kernel");
                        PathBuf::from(format!("{stem}.{}.ptx", compiled.arch.name))
                    });
                    refuse_input(&ptx_path, &a.file)?;
                    let meta = metadata_path(&ptx_path)?;
                    out::write_file(&ptx_path, &artifact.ptx)?;
                    match meta {
                        Some(m) => {
                            refuse_input(&m, &a.file)?;
                            out::write_file(&m, &artifact.metadata_json())?;
                            out::err(&format!("wrote {} and {}", ptx_path.display(), m.display()));
                        }
                        None => out::err(&format!(
                            "wrote {} (a device: no metadata file beside it; use --emit or a file path for the metadata)",
                            ptx_path.display()
                        )),
                    }
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The metadata file beside a PTX output: the same path with `.json`; `None` when the output
/// is a device (`/dev/null`), which has no "beside". An output that already ends in `.json`
/// would be overwritten by its own metadata: an error.
fn metadata_path(ptx: &Path) -> Result<Option<PathBuf>> {
    if std::fs::metadata(ptx).is_ok_and(|m| !m.is_file()) {
        return Ok(None);
    }
    if ptx.extension().is_some_and(|e| e == "json") {
        bail!(
            "-o {} ends in .json, the extension of the metadata written beside the PTX; name the PTX file (e.g. {})",
            ptx.display(),
            ptx.with_extension("ptx").display()
        );
    }
    Ok(Some(ptx.with_extension("json")))
}

/// An output that is the input file would destroy the source.
fn refuse_input(output: &Path, input: &Path) -> Result<()> {
    if out::same_file(output, input) {
        bail!("the output {} is the input file; choose another path", output.display());
    }
    Ok(())
}
