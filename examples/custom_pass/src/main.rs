//! `my-tilec`: tilec's whole command line with one pass of this crate's own, known by name to
//! `my-tilec opt --passes`, `my-tilec bisect --passes` and `my-tilec passes` — without a line of
//! tilec changed (the rustc-driver pattern: `tilec_cli::run_with`).
//!
//! The pass, `tile-dce`, removes the ops of the `tile` stage whose results nothing reads and
//! that have no effect: arithmetic, constants, reads of memory (a load, a gather, an element
//! read), products, reductions, scans, reshapes and the like — repeatedly, so that a chain of
//! dead ops goes whole, in loop and branch bodies too. Ops that write (stores, scatters,
//! atomics), print, or hold regions (`for`, `if`: their results are their yields) stay. Run
//! before `tile-layout`, it spares the dead tiles their layouts, conversions and registers.
//! Needs: the `tile` stage. Guarantees: the same results from every run (what it removes
//! computed values nothing used); it reports how many ops it removed.

use std::process::ExitCode;
use tilec_core::tir::verify::Level;
use tilec_core::tir::{Op, OpKind, ValueId};
use tilec_core::Diagnostic;
use tilec_passes::driver::{Driver, Step};
use tilec_passes::{PassInfo, Stage};

/// The pass, as the CLI knows it.
pub static TILE_DCE: PassInfo = PassInfo {
    name: "tile-dce",
    produces: Stage::Tile,
    doc: "remove the ops of the tile stage whose results nothing reads and that have no effect (my-tilec's own pass)",
    options: &[],
    run,
};

fn main() -> ExitCode {
    tilec_cli::run_with(&[&TILE_DCE])
}

fn run(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    let mut f = d.take_func(step.name(), Level::Tile)?;
    let mut removed = 0;
    loop {
        let uses = f.use_counts();
        let n = remove_dead(&mut f.ops, &|v| uses.get(&v).copied().unwrap_or(0) == 0);
        if n == 0 {
            break;
        }
        removed += n;
    }
    d.facts.report.push(format!("tile-dce: {removed} dead op(s) removed"));
    d.set_func(f, step.name(), Level::Tile)
}

/// Ops without effects: what they compute is all they do.
fn pure(k: &OpKind) -> bool {
    matches!(
        k,
        OpKind::Bid { .. }
            | OpKind::Dim { .. }
            | OpKind::ConstInt(..)
            | OpKind::ConstFloat(..)
            | OpKind::Splat(..)
            | OpKind::Binary { .. }
            | OpKind::Unary { .. }
            | OpKind::Fma { .. }
            | OpKind::Cast(..)
            | OpKind::Reduce { .. }
            | OpKind::Scan { .. }
            | OpKind::Broadcast(..)
            | OpKind::Load { .. }
            | OpKind::Gather { .. }
            | OpKind::Mma { .. }
            | OpKind::Arange
            | OpKind::Element { .. }
            | OpKind::NumBlocks { .. }
            | OpKind::NumTiles { .. }
            | OpKind::ClusterRank
            | OpKind::Cmp(..)
            | OpKind::Logic(..)
            | OpKind::Select { .. }
            | OpKind::Reshape(..)
            | OpKind::Item(..)
            | OpKind::Permute { .. }
            | OpKind::Sort { .. }
            | OpKind::Slice { .. }
            | OpKind::Concat { .. }
            | OpKind::Rand { .. }
    )
}

/// Removes the pure ops of `ops` (and of their regions) whose result `dead` says nothing
/// reads; the count removed.
fn remove_dead(ops: &mut Vec<Op>, dead: &dyn Fn(ValueId) -> bool) -> usize {
    let mut n = 0;
    for op in ops.iter_mut() {
        match &mut op.kind {
            OpKind::For { body, .. } => n += remove_dead(body, dead),
            OpKind::If { then_ops, else_ops, .. } => n += remove_dead(then_ops, dead) + remove_dead(else_ops, dead),
            _ => {}
        }
    }
    let before = ops.len();
    ops.retain(|op| !(pure(&op.kind) && op.result.is_some_and(dead)));
    n + before - ops.len()
}
