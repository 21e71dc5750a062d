//! tilec-core: the vocabulary every stage of tilec shares, with no heavy dependencies.
//!
//! This crate owns what must mean the same thing in the frontend, the MLIR passes, the
//! backend and the runtime: the one diagnostic type ([`diag`]), element types ([`dtype`]),
//! the Rust form of the `tile`/`tilegpu` dialects and its printer ([`tir`]), distributed
//! layouts with their exact element ↔ (warp, lane, register) maps ([`layout`]), the
//! targets and what each chip has ([`target`]), the calling convention of compiled kernels
//! ([`abi`]), and the compiled artifact the CLI writes and the cache stores ([`artifact`]).
//! It links neither MLIR nor LLVM nor the CUDA driver, so the parser, the fuzz tests and the
//! runtime build without them.

pub mod abi;
pub mod artifact;
pub mod diag;
pub mod dtype;
pub mod host;
pub mod layout;
pub mod npy;
pub mod target;
pub mod tir;

pub use diag::{Diagnostic, Diagnostics, Source, Span};
pub use dtype::DType;
