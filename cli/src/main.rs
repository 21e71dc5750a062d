//! The `tilec` binary: the command line of `tilec_cli` with tilec's own passes.

use std::process::ExitCode;

fn main() -> ExitCode {
    tilec_cli::run_with(&[])
}
