//! tilec: a tile-kernel compiler. `.tile` programs → MLIR (`tile`, `tilegpu`, `llvm`
//! dialects) → LLVM NVPTX → PTX, and a runtime that launches the result.
//!
//! This crate is the public facade that JIT users link. [`compile`] runs the whole pipeline
//! on source text for one target and returns every stage's text, the kernel's ABI
//! ([`abi::Signature`]) and what the passes decided; [`Compiled::artifact`] is the compiled
//! kernel as the CLI writes it and a cache stores it; [`compile_cached`] answers a compile
//! request from the compilation cache (memory, then `$TILEC_CACHE_DIR`) when it can; [`jit`]
//! compiles on first use for the live GPU, specialised on the arguments, and launches;
//! [`parallel`] builds many variants side by side (the tuner, a JIT's warm-up). The runtime ([`tilec_runtime`]) loads
//! and launches compiled kernels without linking MLIR or LLVM. The `tilec` command line is
//! the `tilec-cli` package; the GPU test and benchmark harness lives there and in
//! `tilec-suite`, never here.

#![warn(missing_docs)]

pub mod bisect;
pub mod cache;
pub mod compiler;
pub mod jit;
pub mod parallel;
pub use tilec_interp::reference;

pub use cache::{cache_key, compile_cached, CachedCompile};
pub use compiler::{compile, CompileError, CompileOptions, Compiled, Stage, LOOP_BUDGET};
pub use tilec_core::artifact::{Artifact, Hints};
pub use tilec_core::target::{Arch, Feature, ARCHS};
pub use tilec_core::{abi, diag, npy, DType, Diagnostic, Source};
pub use tilec_frontend::ConstArg;
pub use tilec_runtime as runtime;
