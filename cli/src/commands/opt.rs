//! `tilec opt FILE --passes P`: a pipeline of tilec and upstream MLIR passes over a `.mlir`
//! file of any stage, with MLIR's dump banners.

use super::read_input;
use crate::out;
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use tilec::Source;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .mlir file (`-`: standard input).
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
    /// Print, for each pass that changed the IR, the unified diff of its change (to standard
    /// error); passes that left it as it was print nothing.
    #[arg(long)]
    print_changes: bool,
    /// Print the time each pass took (to standard error).
    #[arg(short = 'T', long)]
    time_passes: bool,
    /// Leave this pass out of `--passes` (repeatable; for scripts that vary one pass).
    #[arg(long = "disable-pass", value_name = "NAME")]
    disable_pass: Vec<String>,
    /// Output file (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let text = read_input(&a.file)?;
    let source = Source::new(a.file.display().to_string(), text.clone());
    let fail = |d: tilec_core::Diagnostic| {
        out::err(tilec_core::diag::render(&[d], &source).trim_end());
        Ok(ExitCode::FAILURE)
    };
    let mlir = tilec_ir::Mlir::new().map_err(|d| anyhow::anyhow!("{}", d.message))?;
    let mut steps = match tilec_passes::driver::parse_pipeline(&mlir, &a.passes) {
        Ok(s) => s,
        Err(d) => return fail(d),
    };
    for name in &a.disable_pass {
        if !steps.iter().any(|s| s.name() == name) {
            let names: Vec<&str> = steps.iter().map(|s| s.name()).collect();
            bail!("--disable-pass {name}: no pass of that name in the pipeline; it runs {}", names.join(", "));
        }
    }
    steps.retain(|s| !a.disable_pass.iter().any(|n| n == s.name()));
    for name in &a.print_after {
        if !steps.iter().any(|s| s.name() == name) {
            let names: Vec<&str> = steps.iter().map(|s| s.name()).collect();
            let close = tilec_core::diag::close_matches(name, names.iter().copied());
            let hint = if close.is_empty() { String::new() } else { format!(" (did you mean {}?)", close.join(", ")) };
            bail!("--print-after {name}: no pass of that name in the pipeline{hint}; it runs {}", names.join(", "));
        }
    }
    if let Some(o) = &a.output {
        if crate::out::same_file(o, &a.file) {
            bail!("the output {} is the input file; choose another path", o.display());
        }
    }
    if let Err(d) = mlir.parse(&text, "input") {
        return fail(d);
    }
    let mut driver = tilec_passes::driver::Driver::new(&mlir, tilec_passes::driver::Ir::Text(text.clone()));
    // As a tilec pass reads and prints it (arguments renamed `%argN`), so that the first
    // diff shows the pass's change, not the renaming.
    let mut before = mlir.read(&text, "input", None).map(|f| f.to_mlir()).unwrap_or_else(|_| text.clone());
    for step in &steps {
        let t0 = std::time::Instant::now();
        if let Err(d) = driver.run(step) {
            return fail(d.with_note(format!("while running `{}`", step.text())));
        }
        if a.time_passes {
            out::err(&format!("time: {:>9.3} ms  {}", t0.elapsed().as_secs_f64() * 1e3, step.text()));
        }
        if a.print_after_all || a.print_after.iter().any(|n| n == step.name()) {
            let text = match driver.text() {
                Ok(t) => t,
                Err(d) => return fail(d.with_note(format!("after `{}`", step.text()))),
            };
            out::err(&format!("// -----// IR Dump After {} //----- //\n{text}", step.text()));
        }
        if a.print_changes {
            let after = match driver.text() {
                Ok(t) => t,
                Err(d) => return fail(d.with_note(format!("after `{}`", step.text()))),
            };
            if let Some(diff) = tilec::bisect::ir_diff(&before, &after, &step.text()) {
                out::err(diff.trim_end());
            }
            before = after;
        }
    }
    let result = match driver.text() {
        Ok(t) => t,
        Err(d) => return fail(d),
    };
    match a.output {
        Some(p) if p.as_os_str() != "-" => out::write_file(&p, &result)?,
        _ => out::print(&result)?,
    }
    Ok(ExitCode::SUCCESS)
}
