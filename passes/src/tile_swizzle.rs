//! `tile-swizzle`: the XOR swizzle of every shared buffer, free of bank conflicts for its
//! writer and its reader.
//!
//! Needs: `tilegpu` after `tile-layout`, whose shared buffers (`local_alloc`, `async_copy`)
//! are unswizzled (`perPhase = maxPhase = 1`); before `tile-pipeline`, whose rings copy the
//! swizzle of the buffer they replace.
//!
//! Does: for each buffer, from its element size, its writer (16-byte async copies, or
//! register stores of the source tile's vectors) and its reader (`ldmatrix`, `.trans` when
//! the buffer's contiguous dim is not the operand's K — the same rows of 16 bytes either
//! way), counts on the CPU the extra wavefronts of every swizzle `perPhase, maxPhase` in
//! 1, 2, 4, 8 with 16-byte vectors (`SwizzledShared::least_conflicts`): each `ldmatrix`
//! phase reads one 16-byte column of eight consecutive rows, each writer wavefront eight
//! consecutive 16-byte chunks. It keeps the cheapest, then the fewest phases, then the
//! fewest rows per phase (the least index math).
//! Writers of narrower vectors (an `#mma` tile stored as 4-byte pairs) are counted as
//! 16-byte chunk writers; their own pattern is not modelled yet.
//!
//! A buffer read by a `wgmma` is not read by `ldmatrix` but by the tensor core through a
//! descriptor, which knows only the hardware's swizzles: `tile-layout` gives it the NVMMA
//! layout when it makes it (so the kernel lowers with this pass disabled too), and this pass
//! keeps it, reporting its write wavefronts (none for 16-byte writes: eight consecutive chunks
//! of an atom's rows fall in eight distinct bank groups).
//!
//! On a target with the Tensor Memory Accelerator (`tma_fillable`), a 16-bit buffer written
//! by async copies and read by `ldmatrix` takes the NVMMA layout — 64/32/16-element atoms,
//! the hardware's XOR swizzle — wherever `ldmatrix` reads it without a bank conflict: the
//! layout TMA writes, so that `tile-pipeline` fills its rings with TMA copies and mbarriers
//! instead of `cp.async` (the TMA-fed `mma.sync` of CUTLASS's sm_120 collectives). The
//! `ldmatrix` addresses follow the atoms (`tile-to-llvm`'s swizzled index). That is every
//! `mma.sync` ring of sm_121a and sm_103a's fallback, and on sm_90a those of the products too
//! small for wgmma (the decode kernels' 16-row products): there a `cp.async` ring spent half
//! of a key tile's instructions on per-chunk addresses and bounds (`attention_decode_grouped`
//! 759 → 445 instructions an iteration; B1 L4096 0.0152 → 0.0141 ms on the H100,
//! bench/results/2026-11-27-session22/).
//!
//! Guarantees: every buffer's type carries the chosen swizzle (its readers and writers see
//! it through the value's type); for the buffers of the kernel library the choice has zero
//! extra wavefronts on both sides — `every_chosen_swizzle_is_conflict_free` checks it over
//! every kernel and target.
//!
//! Block-scale factor buffers (`mma_scaled`'s) stay unswizzled: every lane reads its own
//! bytes, no `ldmatrix`.
//!
//! Options: `arch` (every target has the same 32 banks of 4 bytes; the target decides only
//! whether async-copied buffers take TMA's layouts).

use tilec_core::layout::SwizzledShared;
use tilec_core::target::{Arch, Feature};
use tilec_core::tir::{Func, OpKind, Type};

/// Whether `arch` may fill the buffers `ldmatrix` reads with TMA: it has TMA. (The buffers a
/// wgmma or tcgen05 product reads through descriptors are laid out by `tile-layout`.)
pub fn tma_fillable(arch: &Arch) -> bool {
    arch.has(Feature::Tma)
}

/// What the pass decided, one line per buffer (for `--report`).
#[derive(Clone, Debug, Default)]
pub struct SwizzleReport {
    pub lines: Vec<String>,
}

/// Runs the pass over a laid-out kernel; `tma` (see [`tma_fillable`]): async-copied buffers
/// take the NVMMA layout where `ldmatrix` reads it without conflicts.
pub fn run(func: &mut Func, tma: bool) -> SwizzleReport {
    // Which descriptor reader `tile-layout` laid the NVMMA buffers out for.
    let arch_tcgen05 = func.values.iter().any(|t| matches!(t, Type::Tile { layout: Some(l), .. } if l.is_tcgen05()));
    let mut bufs = vec![];
    func.walk(&mut |op| {
        if let (OpKind::LocalAlloc { .. } | OpKind::AsyncCopy { dst: None, .. }, Some(r)) = (&op.kind, op.result) {
            let writer = match &op.kind {
                OpKind::AsyncCopy { .. } => "16-byte cp.async".to_string(),
                OpKind::LocalAlloc { value } => match func.ty(*value).layout() {
                    Some(l) => format!("register stores from {}", l.to_mlir()),
                    None => "register stores".into(),
                },
                _ => String::new(),
            };
            bufs.push((r, writer));
        }
    });
    let mut report = SwizzleReport::default();
    for (b, writer) in bufs {
        let Type::Smem { shape, dtype, layout } = func.ty(b).clone() else { continue };
        let bytes = i64::from(dtype.bytes());
        if dtype.is_scale() {
            // Block-scale factors: each lane reads its few bytes itself, not by ldmatrix.
            report.lines.push(format!(
                "buffer {shape:?} {dtype}, written by {writer}, read byte by byte by mma_scaled: unswizzled"
            ));
            continue;
        }
        if let Some(sb) = layout.nvmma_bytes() {
            // Chosen by `tile-layout` for a wgmma or tcgen05 product, which reads it through a
            // descriptor.
            let (_, w) = layout.conflicts(&shape, bytes);
            report.lines.push(format!(
                "buffer {shape:?} {dtype} (contiguous dim {}), written by {writer}, read by {}: NVMMA {sb}-byte swizzle kept; extra write wavefronts {w}",
                layout.order[0],
                if arch_tcgen05 { "tcgen05" } else { "wgmma" }
            ));
            continue;
        }
        let before = layout.conflicts(&shape, bytes);
        let async_copied = writer.starts_with("16-byte cp.async");
        let nvmma = SwizzledShared::nvmma_for(shape[layout.order[0]], bytes, layout.order)
            // 16-bit operands, and 8-bit ones (fp8, packed fp4), whose fragments are read as
            // 16-bit pairs of the same rows.
            // A TMA box spans one atom of the contiguous dim and at most 256 rows.
            .filter(|_| tma && async_copied && (bytes == 2 || bytes == 1) && shape[layout.order[1]] <= 256)
            .filter(|n| n.conflicts(&shape, bytes) == (0, 0));
        if let Some(n) = nvmma {
            report.lines.push(format!(
                "buffer {shape:?} {dtype} (contiguous dim {}), written by {writer}: NVMMA {}-byte swizzle, which TMA can fill; extra wavefronts ldmatrix 0, writes 0 (unswizzled: {}, {})",
                n.order[0],
                n.nvmma_bytes().unwrap_or(0),
                before.0,
                before.1
            ));
            func.values[b.0 as usize] = Type::Smem { shape, dtype, layout: n };
            continue;
        }
        let s = SwizzledShared::least_conflicts(&shape, bytes, layout.order);
        let (r, w) = s.conflicts(&shape, bytes);
        report.lines.push(format!(
            "buffer {shape:?} {dtype} (contiguous dim {}), written by {writer}: perPhase {} maxPhase {} (vec {}): extra wavefronts ldmatrix {r}, writes {w} (unswizzled: {}, {})",
            s.order[0], s.per_phase, s.max_phase, s.vec, before.0, before.1
        ));
        func.values[b.0 as usize] = Type::Smem { shape, dtype, layout: s };
    }
    report
}
