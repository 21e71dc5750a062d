//! tilec: a tile-kernel compiler. `.tile` programs → MLIR (`tile`, `tilegpu`, `llvm`
//! dialects) → LLVM NVPTX → PTX, and a runtime that launches the result.
//!
//! This crate is the public facade. [`compile`] runs the whole pipeline on source text for
//! one target and returns every stage's text, the kernel's ABI ([`abi::Signature`]) and
//! what the passes decided. The runtime ([`tilec_runtime`]) loads and launches compiled
//! kernels without linking MLIR or LLVM. The `tilec` binary (src/main.rs) is a thin CLI
//! over both; `tilec check` and `tilec bench` use the kernel tests in [`suite`].

pub mod compiler;
pub use tilec_interp::reference;
pub mod report;
pub mod suite;

pub use compiler::{compile, CompileError, CompileOptions, Compiled, Stage};
pub use tilec_core::{abi, diag, DType, Diagnostic, Source};
pub use tilec_frontend::ConstArg;
pub use tilec_runtime as runtime;
