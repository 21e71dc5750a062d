//! `tilec bisect FILE --arg …`: which pass changed a kernel's results. The kernel runs on the
//! interpreter as the frontend made it, then after each tile-level pass of the pipeline
//! `compile` would run (with the same switches: `--fast-math`, `--disable-pass`, …), or of
//! `--passes` — the first stage whose tensors differ from the source's run is named, with its
//! worst element and the pass's IR diff (`tilec::bisect`). Exit status 0 when every stage
//! agrees, 1 when one differs or fails.

use super::{parse_consts, read_input};
use crate::out;
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use tilec::bisect::Verdict;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .tile source file (`-`: standard input).
    file: PathBuf,
    /// Kernel name, when the file has several.
    #[arg(long)]
    kernel: Option<String>,
    /// Target whose pipeline to walk (default sm_90a).
    #[arg(long, default_value = "sm_90a")]
    arch: String,
    /// Compile-time constant override, NAME=VALUE (repeatable, each name once).
    #[arg(long = "const", value_name = "NAME=VALUE")]
    consts: Vec<String>,
    /// One argument per kernel parameter, in order (as `tilec run` takes them).
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    args: Vec<String>,
    /// Seed of the random tensors.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Relative L2 tolerance for float tensors (default: 1e-5 for f32 and f64, 1e-2 for
    /// narrower ones); integers and bools compare exactly.
    #[arg(long)]
    tolerance: Option<f64>,
    /// Walk this pipeline instead of the default one (as `tilec opt --passes` takes it).
    #[arg(long)]
    passes: Option<String>,
    /// Lines of the culprit's IR diff to print (0: none).
    #[arg(long, default_value_t = 200)]
    diff_lines: usize,
    /// The pipeline switches of `compile` for the default pipeline.
    #[command(flatten)]
    pipeline: super::VariantArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let text = read_input(&a.file)?;
    let source = tilec::Source::new(a.file.display().to_string(), text);
    let opts = a.pipeline.apply(tilec::CompileOptions {
        arch: a.arch.clone(),
        kernel: a.kernel.clone(),
        consts: parse_consts(&a.consts)?,
        ..Default::default()
    });
    let (el, default) = match tilec::compiler::frontend_and_pipeline(&source, &opts) {
        Ok(r) => r,
        Err(e) => {
            out::err(e.render().trim_end());
            return Ok(ExitCode::from(1));
        }
    };
    let steps = match &a.passes {
        None => default,
        Some(p) => {
            let mlir = tilec_ir::Mlir::new().map_err(|d| anyhow::anyhow!("{}", d.message))?;
            tilec_passes::driver::parse_pipeline(&mlir, p).map_err(|d| anyhow::anyhow!("--passes: {}", d.message))?
        }
    };
    let params = el.signature.params.len();
    if a.args.len() != params {
        bail!(
            "kernel `{}` takes {params} arguments, {} given with --arg (see `tilec run --help`)",
            el.func.name,
            a.args.len()
        );
    }
    let args = crate::interp_args::parse(&a.args, a.seed)?;
    let b = tilec::bisect::bisect(&el.func, &el.signature, &steps, &args, a.tolerance)
        .map_err(|d| anyhow::anyhow!("{}: {}", d.code, d.message))?;
    let mut s = format!(
        "bisect: `{}` for {}, the source's run on the interpreter against the run after each tile-level pass\n",
        el.func.name, a.arch
    );
    for st in &b.stages {
        let v = match &st.verdict {
            Verdict::Same => "same".to_string(),
            Verdict::Within(e) => format!("within the tolerance (worst rel L2 {e:.2e})"),
            Verdict::Differs(d) => format!(
                "DIFFERS: {}{:?} is {} (the source's run: {}); max abs {:.3e}, rel L2 {:.3e}",
                d.tensor, d.index, d.after, d.before, d.max_abs, d.rel_l2
            ),
            Verdict::Failed(e) => format!("FAILED on the interpreter: {e}"),
        };
        s.push_str(&format!("  after {}: {v}\n", st.pass));
    }
    match &b.culprit {
        Some((i, diff)) => {
            s.push_str(&format!("the first pass that changed the results: {}\n", b.stages[*i].pass));
            let lines: Vec<&str> = diff.lines().collect();
            for l in lines.iter().take(a.diff_lines) {
                s.push_str(l);
                s.push('\n');
            }
            if lines.len() > a.diff_lines {
                s.push_str(&format!("… {} more diff lines (--diff-lines)\n", lines.len() - a.diff_lines));
            }
        }
        None => {
            s.push_str("every tile-level stage agrees with the source's run");
            match &b.stopped_at {
                Some(next) => s.push_str(&format!(
                    "; the interpreter stops before `{next}`: a difference only the GPU shows lies in the \
                     LLVM/PTX part — compare `tilec run --gpu --check` with `--no-fp-fusion`, `--fast-math` off \
                     or the kernel's `opt_level` hint lowered\n"
                )),
                None => s.push('\n'),
            }
        }
    }
    out::print(&s)?;
    Ok(if b.culprit.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
