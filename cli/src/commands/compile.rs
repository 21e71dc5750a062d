//! `tilec compile FILE --arch ARCH`: PTX and its metadata JSON, or one stage with `--emit`.

use super::{read_input, ErrorFormat, StageArg};
use crate::out;
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tilec::{compile, Source};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .tile source file (`-`: standard input).
    file: PathBuf,
    /// Print one stage instead of writing PTX and metadata.
    #[arg(long, value_enum)]
    emit: Option<StageArg>,
    /// Output file: the PTX (its metadata goes beside it, as .json), or the stage with --emit.
    /// Default: FILE's stem + .ARCH.ptx in the current directory; `-` is standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    request: super::RequestArgs,
    /// Print what the passes decided.
    #[arg(long)]
    report: bool,
    /// Also assemble with ptxas and print its resource report.
    #[arg(long)]
    ptxas: bool,
    /// Fail (exit 1) when ptxas spills registers of the kernel, instead of the warning that
    /// names the kernel, the bytes and the tiles holding the most registers (ptxas runs for
    /// it; without ptxas installed, spills cannot be known and nothing is said).
    #[arg(long)]
    deny_spills: bool,
    /// Print the time each stage and pass took (compiles in full, without the cache).
    #[arg(short = 'T', long)]
    time_passes: bool,
    /// Compile without the compilation cache (neither read nor written). The cache is
    /// `$TILEC_CACHE_DIR` (default ~/.cache/tilec); `tilec cache` lists and clears it.
    #[arg(long)]
    no_cache: bool,
    #[arg(long, value_enum, default_value = "human")]
    error_format: ErrorFormat,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let text = match read_input(&a.file) {
        Ok(t) => t,
        // Tools asking for JSON get JSON for every error, an unreadable input too.
        Err(e) if a.error_format == ErrorFormat::Json => {
            let d = tilec::Diagnostic::error("E0023", format!("{e:#}"));
            out::println(&tilec::diag::render_json(&[d], &Source::new(a.file.display().to_string(), String::new())))?;
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e),
    };
    let source = Source::new(a.file.display().to_string(), text);
    let mut opts = a.request.options()?;
    // A stage before the PTX stops the compile there (`-T` times what ran), unless ptxas is
    // asked to check the PTX too.
    if let Some(StageArg(s)) = a.emit {
        if !a.ptxas && !a.deny_spills && !matches!(s, tilec::Stage::LlvmIr | tilec::Stage::Ptx) {
            opts.until = Some(s);
        }
    }
    // Without --emit only the PTX is written: the `llvm` and `llvm-ir` texts are not made.
    opts.ptx_only = a.emit.is_none();
    // The cache answers PTX requests; a stage dump or per-pass timings compile in full.
    let use_cache = a.emit.is_none() && !a.time_passes && !a.no_cache;
    let result = if use_cache {
        let cache = tilec::runtime::cache::Cache::from_env();
        tilec::compile_cached(&source, &opts, &cache).map(|c| {
            if let Some(w) = &c.warning {
                out::err(&format!("warning: {w}"));
            }
            (None, c.entry.artifact.clone(), c.entry.resources.clone())
        })
    } else {
        compile(&source, &opts).map(|c| {
            let art = c.artifact();
            (Some(c), art, None)
        })
    };
    let (compiled, artifact, resources) = match result {
        Ok(r) => r,
        Err(e) => {
            match a.error_format {
                ErrorFormat::Json => out::println(&e.render_json())?,
                ErrorFormat::Human => out::err(e.render().trim_end()),
            }
            return Ok(ExitCode::from(1));
        }
    };
    // The request parsed its arch already (a bad one is an error above).
    let (arch, substituted) = tilec_core::target::resolve(&opts.arch).map_err(anyhow::Error::msg)?;
    if substituted {
        out::err(&format!("note: compiling for {} (the arch-specific variant of {})", arch.name, opts.arch));
    }
    if a.report {
        for l in &artifact.report {
            out::err(&format!("report: {l}"));
        }
    }
    if let (true, Some(c)) = (a.time_passes, &compiled) {
        let total: f64 = c.timings.iter().map(|(_, d)| d.as_secs_f64()).sum();
        for (what, d) in &c.timings {
            out::err(&format!("time: {:>9.3} ms  {what}", d.as_secs_f64() * 1e3));
        }
        out::err(&format!("time: {:>9.3} ms  total", total * 1e3));
    }
    // ptxas's report: from the cache entry, or assembled now where asked for.
    let resources = match resources {
        Some(r) => Some(r),
        None if a.ptxas || (a.deny_spills && tilec_backend::find_ptxas().is_some()) => {
            match tilec_backend::ptxas(&artifact.ptx, arch) {
                Ok(r) => Some(tilec::cache::resources(&r)),
                Err(d) => {
                    out::err(tilec_core::diag::render(&[d], &source).trim_end());
                    return Ok(ExitCode::from(1));
                }
            }
        }
        None => None,
    };
    if let (true, Some(r)) = (a.ptxas, &resources) {
        out::err(&format!(
            "ptxas {}: {} registers, {} bytes smem, {} bytes stack, {} bytes spill stores, {} bytes spill loads",
            arch.name, r.registers, r.shared_bytes, r.stack_bytes, r.spill_stores, r.spill_loads
        ));
    }
    if let Some(w) = resources.as_ref().and_then(|r| tilec::cache::spill_warning(&artifact, r)) {
        if a.deny_spills {
            out::err(&format!("error: {w} (--deny-spills)"));
            return Ok(ExitCode::from(1));
        }
        out::err(&format!("warning: {w}"));
    }
    match a.emit {
        Some(s) => {
            let stage = compiled.as_ref().map(|c| c.stage(s.0)).unwrap_or("");
            match a.output.as_deref() {
                None => out::print(stage)?,
                Some(o) if o.as_os_str() == "-" => out::print(stage)?,
                Some(o) => {
                    refuse_input(o, &a.file)?;
                    out::write_file(o, stage)?;
                }
            }
        }
        None => match a.output {
            Some(o) if o.as_os_str() == "-" => out::print(&artifact.ptx)?,
            o => {
                let ptx_path = o.unwrap_or_else(|| {
                    let stem = a.file.file_stem().and_then(|s| s.to_str()).filter(|s| *s != "-").unwrap_or("kernel");
                    PathBuf::from(format!("{stem}.{}.ptx", arch.name))
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
        },
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
