//! tilec-passes: the passes of tilec, their registry and the per-target pipelines.
//!
//! Contract: each pass lives in its own file named after its kebab-case CLI name and says in
//! its `//!` what it needs, what it does, what it guarantees and its options. [`PASSES`]
//! lists them; [`pipeline`] gives the default list for a target. Passes work on the Rust
//! form of the dialects (`tilec_core::tir`); after each pass the driver prints the stage and
//! has MLIR verify it, so an ill-formed result is caught at the pass that produced it.

pub mod tile_layout;
pub mod tile_to_llvm;

use tilec_backend::Arch;

/// A registered pass: CLI name, the stage it produces, one-line description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassInfo {
    pub name: &'static str,
    pub produces: &'static str,
    pub doc: &'static str,
}

pub const PASSES: &[PassInfo] = &[
    PassInfo {
        name: "tile-layout",
        produces: "tilegpu",
        doc: "give every tile a #blocked or #slice layout (16-byte vectors, warps along rows first)",
    },
    PassInfo {
        name: "tile-to-llvm",
        produces: "llvm",
        doc: "lower a laid-out kernel to the llvm/nvvm dialects (vector loads, shuffles, shared-memory reductions)",
    },
];

/// The default pipeline of a target. Every target runs the same passes today; the arch
/// table decides inside each pass what the chip offers.
pub fn pipeline(_arch: &Arch) -> Vec<&'static str> {
    vec!["tile-layout", "tile-to-llvm"]
}

/// Passes named like `name`, for "did you mean" errors.
pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}
