//! `tilec bisect FILE --arg …`: which pass changed a kernel's results. The kernel runs on the
//! interpreter as the frontend made it, then after each tile-level pass of the pipeline
//! `compile` would run (with the same switches: `--fast-math`, `--disable-pass`, …), or of
//! `--passes` — the first stage whose tensors differ from the source's run is named, with its
//! worst element and the pass's IR diff (`tilec::bisect`). Exit status 0 when every stage
//! agrees, 1 when one differs or fails.
//!
//! Past the tile-level stages the interpreter cannot follow (LLVM IR, PTX). With `--gpu`,
//! when every tile-level stage agrees, the whole compile runs on the GPU on the same inputs
//! and is compared with the source's run; if it differs, the parts of the LLVM/PTX side that
//! can be switched are toggled one at a time — LLVM's optimization level (O2, O1, O0), the
//! contraction of `a * b + c` into `fma`, both — each run again, and the first toggle under
//! which the GPU agrees is named. The lowering (`tile-to-llvm`), MLIR's conversions and
//! ptxas cannot be switched off; when no toggle helps, that is where the difference lies.

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
    /// Past the tile-level stages: run the whole compile on the GPU against the source's run,
    /// toggling LLVM's optimization level and fp contraction when it differs (see the module).
    #[arg(long)]
    gpu: bool,
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
                     LLVM/PTX part{}\n",
                    if a.gpu {
                        ""
                    } else {
                        " — `--gpu` runs the whole compile there and toggles that part's switches"
                    }
                )),
                None => s.push('\n'),
            }
        }
    }
    let mut failed = b.culprit.is_some();
    if a.gpu && b.culprit.is_none() {
        let want = tilec_interp::run(
            &el.func,
            tilec_interp::grid(&el.signature, &args).map_err(anyhow::Error::msg)?,
            args.clone(),
        )
        .map_err(|e| anyhow::anyhow!("the source on the interpreter: {e}"))?
        .tensors;
        let (text, agrees) = gpu_part(&source, &el, &opts, &args, &want, a.tolerance)?;
        s.push_str(&text);
        failed |= !agrees;
    }
    out::print(&s)?;
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The LLVM/PTX side's switches `--gpu` tries, one at a time, after the compile as asked.
const TOGGLES: [(&str, Option<u32>, bool); 5] = [
    ("LLVM at O2", Some(2), false),
    ("LLVM at O1", Some(1), false),
    ("LLVM at O0", Some(0), false),
    ("no fp contraction (--no-fp-fusion)", None, true),
    ("LLVM at O0 and no fp contraction", Some(0), true),
];

/// The whole compile on the GPU against the source's run (`want`), then [`TOGGLES`] where it
/// differs: the report lines, and whether the compile as asked agrees.
fn gpu_part(
    source: &tilec::Source,
    el: &tilec_frontend::Elaborated,
    opts: &tilec::CompileOptions,
    args: &[tilec_interp::Arg],
    want: &[tilec_core::host::HostTensor],
    tolerance: Option<f64>,
) -> Result<(String, bool)> {
    let jit = super::run::open_jit()?;
    let run = |o: tilec::CompileOptions| -> Result<Verdict> {
        let mut spec =
            tilec::jit::KernelSpec::from_source(&source.name, &source.text).options(o.clone()).kernel(&el.func.name);
        for (k, v) in &o.consts {
            spec = spec.constant(k, v.clone());
        }
        Ok(match super::run::run_on_gpu(&jit, &spec, args)? {
            Err(rendered) => Verdict::Failed(format!("does not compile: {}", rendered.lines().next().unwrap_or(""))),
            Ok((got, _)) => tilec::bisect::compare_outputs(&el.signature, want, &got, tolerance),
        })
    };
    let line = |what: &str, v: &Verdict| match v {
        Verdict::Same => format!("  GPU, {what}: same as the source's run\n"),
        Verdict::Within(e) => format!("  GPU, {what}: within the tolerance (worst rel L2 {e:.2e})\n"),
        Verdict::Differs(d) => format!(
            "  GPU, {what}: DIFFERS: {}{:?} is {} (the source's run: {}); max abs {:.3e}, rel L2 {:.3e}\n",
            d.tensor, d.index, d.after, d.before, d.max_abs, d.rel_l2
        ),
        Verdict::Failed(e) => format!("  GPU, {what}: FAILED: {e}\n"),
    };
    let ok = |v: &Verdict| matches!(v, Verdict::Same | Verdict::Within(_));
    let dev = jit.device();
    let mut s = format!("the whole compile on {} against the source's run:\n", dev.name);
    let asked = run(opts.clone())?;
    s.push_str(&line("as compiled", &asked));
    if ok(&asked) {
        s.push_str("the GPU agrees with the source's run\n");
        return Ok((s, true));
    }
    let mut fixed = None;
    for toggle @ (what, level, no_fusion) in TOGGLES {
        let o = tilec::CompileOptions {
            opt_level: level.or(opts.opt_level),
            no_fp_fusion: opts.no_fp_fusion || no_fusion,
            ..opts.clone()
        };
        let v = run(o)?;
        s.push_str(&line(what, &v));
        if ok(&v) {
            fixed = Some(toggle);
            break;
        }
    }
    s.push_str(&match fixed {
        Some((what, None, true)) => format!(
            "the difference lies in the LLVM/PTX part and goes away with {what}: the lowering contracts \
             `a * b + c` into one `fma` (rounded once), the source's semantics round the product and the sum \
             each — `--no-fp-fusion` where that matters\n"
        ),
        Some((what, Some(level), _)) => format!(
            "the difference lies in the LLVM/PTX part and goes away with {what}: LLVM's optimizations above \
             O{level} change the results — a miscompile in LLVM, or lowered code that relies on undefined \
             behaviour (compare `--emit llvm-ir` at both levels)\n"
        ),
        _ => "the difference lies in the LLVM/PTX part and no switch of it removes it: the lowering \
              (tile-to-llvm), MLIR's conversions or ptxas — `tilec compile --emit llvm` / `--emit ptx` to read them\n"
            .to_string(),
    });
    Ok((s, false))
}
