//! The `tilec` command line: a thin layer over the `tilec` library (compile), the pass driver
//! (`opt`, `passes`, `bisect`, `experiment`), the interpreter (`run`), the diagnostic registry
//! (`explain`) and the GPU harness over the kernel specs of `tilec-suite` (`check`, `bench`).
//!
//! A library too, so that a crate of one's own gets the whole CLI with its passes known by
//! name — the rustc-driver pattern: `fn main() -> ExitCode { tilec_cli::run_with(&[&MY_PASS]) }`
//! (`examples/custom_pass/`).
//!
//! Output goes through [`out`]: a closed standard output (`tilec … | head -1`) ends the
//! program quietly with status 0, as cargo does, and a failed write (a full disk) is an error
//! message, never a panic.

mod bench_report;
mod commands;
mod fuzz;
mod gpu;
mod interp_args;
mod out;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
    Compile(commands::compile::Args),
    /// Run a kernel on the CPU interpreter (the reference semantics; no GPU needed), or with
    /// `--gpu` on the GPU (`--check`: against the interpreter).
    ///
    /// Arguments, in parameter order: `--arg 16x1024:f16` (a random normal tensor),
    /// `--arg zeros:16x1024:f32`, `--arg full:-inf:1x64:f32`, `--arg arange:64:i32`,
    /// `--arg randint:0:1000:64:i32` (integers in [0, 1000)), `--arg @x.npy` (a NumPy file),
    /// `--arg @x.npz:NAME` (an array of an archive), `--arg @x.bin:16x1024:f16` (raw bytes),
    /// `--arg 3` (an i32), `--arg -0.5` (an f32), `--arg i64:5`, `--arg f32:-1`. `--save-out
    /// DIR` writes every tensor after the run as .npy; `--print-all` prints every element.
    Run(commands::run::Args),
    /// The compilation cache: `ls`, `stats`, `clear`, `explain FILE --arch …` (why a compile
    /// misses). Folder: $TILEC_CACHE_DIR, default ~/.cache/tilec.
    #[command(subcommand)]
    Cache(commands::cache::Cmd),
    /// Print the long explanation of a diagnostic code (e.g. E0010).
    Explain {
        /// The code, e.g. E0010.
        code: String,
    },
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
    Opt(commands::opt::Args),
    /// Run every kernel with a GPU test on the GPU against its reference.
    Check(commands::check::Args),
    /// Time kernels on the GPU (each checked first), beside the copy ceiling and the peers.
    Bench(commands::bench::Args),
    /// Autotune a kernel on the GPU for these arguments: every configuration of its `tune`
    /// space (or --space) timed, checked against the first, failures kept with their reason;
    /// the fastest is filed in the cache folder and reused by the next run.
    Tune(commands::tune::Args),
    /// One kernel of the library under several pipelines side by side: PTX facts and the
    /// interpreter's verdict on each variant (CPU), with `--gpu` checked and timed in one
    /// process. `--variant fast=fast-math --variant no-ws=-tile-warp-specialize,TILE_N=64`.
    Experiment(commands::experiment::Args),
    /// Name the pass that changed a kernel's results: the kernel on the interpreter as the
    /// frontend made it, then after each tile-level pass of its pipeline, on the same `--arg`
    /// inputs; the first stage that differs, its worst element and the pass's IR diff.
    Bisect(commands::bisect::Args),
    /// Fuzz the compiler, `tilec opt`, the `--arg` parser and the launch validator: mutated
    /// inputs in watched worker processes; crashes, hangs and runaway memory are written out.
    Fuzz(fuzz::Args),
}

/// Runs the command line with `passes` known by name besides tilec's own (registered before
/// the arguments are read); exit status 2 when one cannot be registered (its name is taken).
pub fn run_with(passes: &[&'static tilec_passes::PassInfo]) -> ExitCode {
    run_args(passes, std::env::args_os())
}

/// [`run_with`] on the given command line (the program's name first), for a host that is
/// not a `main` (the Python package's `tilec` command). `--help`, `--version` and a command
/// line clap refuses print what they print and return clap's status, instead of exiting.
pub fn run_args<I, T>(passes: &[&'static tilec_passes::PassInfo], args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    for p in passes {
        if let Err(e) = tilec_passes::register(p) {
            out::err(&format!("error: {e}"));
            return ExitCode::from(2);
        }
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = e.exit_code();
            let _ = e.print();
            return ExitCode::from(u8::try_from(code).unwrap_or(2));
        }
    };
    let r = match cli.cmd {
        Cmd::Compile(a) => commands::compile::run(a),
        Cmd::Bisect(a) => commands::bisect::run(a),
        Cmd::Experiment(a) => commands::experiment::run(a),
        Cmd::Run(a) => commands::run::run(a),
        Cmd::Cache(c) => commands::cache::run(c),
        Cmd::Explain { code } => commands::explain(&code),
        Cmd::Passes { upstream } => commands::passes(upstream),
        Cmd::Opt(a) => commands::opt::run(a),
        Cmd::Check(a) => commands::check::run(a),
        Cmd::Bench(a) => commands::bench::run(a),
        Cmd::Tune(a) => commands::tune::run(a),
        Cmd::Fuzz(a) => fuzz::run(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            if out::is_closed_stdout(&e) {
                return ExitCode::SUCCESS;
            }
            out::err(&format!("error: {e:#}"));
            ExitCode::from(2)
        }
    }
}

/// The number an [`ExitCode`] stands for (the standard library keeps it private).
pub fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX).find(|&i| ExitCode::from(i) == code).unwrap_or(1)
}
