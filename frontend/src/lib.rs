//! tilec-frontend: `.tile` text → checked tile IR and kernel ABI.
//!
//! Contract: [`parse`] turns any text into an AST or `E0001` diagnostics; [`elaborate`]
//! resolves names, evaluates every compile-time constant for one target and one set of
//! overrides, checks shapes and dtypes, and emits a [`tilec_core::tir::Func`] (the `tile`
//! dialect in Rust form) plus the [`tilec_core::abi::Signature`] of the kernel. Neither
//! step panics on any input; both report through [`tilec_core::Diagnostic`]. The frontend
//! links no MLIR: the `ir` crate verifies what it emits.

pub mod ast;
pub mod elab;
pub mod parse;

pub use elab::{elaborate, ConstArg, Elaborated, Hints, Request};
pub use parse::canonical_text;
pub use parse::parse_file as parse;

use tilec_core::Diagnostic;

/// The names of the language's builtin functions (methods `astype`/`reshape` aside).
pub fn builtin_names() -> Vec<&'static str> {
    elab::builtin_names()
}

/// Parses and elaborates in one call.
pub fn check(text: &str, req: &Request) -> Result<Elaborated, Vec<Diagnostic>> {
    let file = parse(text)?;
    elaborate(&file, req)
}
