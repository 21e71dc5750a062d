//! `tilec run FILE --arg …`: a kernel on the CPU interpreter, the reference semantics.

use super::{parse_consts, read_input};
use crate::out;
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use tilec_core::abi::ParamSig;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .tile source file (`-`: standard input).
    file: PathBuf,
    /// Accepted for compatibility: `run` executes on the interpreter.
    #[arg(long, hide = true)]
    interp: bool,
    /// Kernel name, when the file has several.
    #[arg(long)]
    kernel: Option<String>,
    /// Target whose `by_target` values to use.
    #[arg(long, default_value = "sm_90a")]
    arch: String,
    /// Compile-time constant override, NAME=VALUE (repeatable, each name once).
    #[arg(long = "const", value_name = "NAME=VALUE")]
    consts: Vec<String>,
    /// One argument per kernel parameter, in order (see `tilec run --help`).
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    args: Vec<String>,
    /// Seed of the random tensors.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Most element operations the run may do (over the whole grid).
    #[arg(long, value_name = "N", default_value_t = tilec_interp::Limits::default().work)]
    max_work: u64,
    /// Most elements one block may hold in live values.
    #[arg(long, value_name = "N", default_value_t = tilec_interp::Limits::default().live_elements)]
    max_memory: u64,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let _ = a.interp;
    let text = read_input(&a.file)?;
    let source = tilec::Source::new(a.file.display().to_string(), text);
    let (arch, _) = tilec_core::target::resolve(&a.arch).map_err(anyhow::Error::msg)?;
    let req = tilec_frontend::Request {
        kernel: a.kernel,
        target: arch.name.to_string(),
        consts: parse_consts(&a.consts)?,
        unaligned: Default::default(),
    };
    let el = match tilec_frontend::check(&source.text, &req) {
        Ok(e) => e,
        Err(d) => {
            out::err(tilec_core::diag::render(&d, &source).trim_end());
            return Ok(ExitCode::from(1));
        }
    };
    let params = &el.signature.params;
    if a.args.len() != params.len() {
        let names: Vec<String> = params
            .iter()
            .map(|p| match p {
                ParamSig::Tensor { name, dtype, rank, .. } => format!("{name}: tensor<{dtype}, {rank}>"),
                ParamSig::Scalar { name, dtype } => format!("{name}: {dtype}"),
            })
            .collect();
        bail!(
            "kernel `{}` takes {} arguments ({}), {} given with --arg",
            el.func.name,
            params.len(),
            names.join(", "),
            a.args.len()
        );
    }
    let iargs = crate::interp_args::parse(&a.args, a.seed)?;
    tilec_interp::check_args(&el.func, &iargs).map_err(|e| anyhow::anyhow!("{e}"))?;
    let grid = tilec_interp::grid(&el.signature, &iargs).map_err(anyhow::Error::msg)?;
    let limits =
        tilec_interp::Limits { work: a.max_work, live_elements: a.max_memory, ..tilec_interp::Limits::default() };
    let result = tilec_interp::run_with(&el.func, grid, iargs, tilec_interp::BlockOrder::Forward, limits)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut s = String::new();
    for p in &result.prints {
        s.push_str(p);
        s.push('\n');
    }
    s.push_str(&format!("ran {} on the interpreter over grid {:?}\n", el.func.name, grid));
    for (p, t) in params.iter().filter(|p| matches!(p, ParamSig::Tensor { .. })).zip(&result.tensors) {
        let v = t.to_f64();
        let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let sum: f64 = finite.iter().sum();
        let head: Vec<String> = v.iter().take(6).map(|x| format!("{x:.4}")).collect();
        s.push_str(&format!(
            "  {} {} {:?}: sum {:.6}, {} non-finite, first [{}]\n",
            p.name(),
            t.dtype,
            t.shape,
            sum,
            v.len() - finite.len(),
            head.join(", ")
        ));
    }
    out::print(&s)?;
    Ok(ExitCode::SUCCESS)
}
