//! `tile-warp-specialize`: a producer warpgroup issues the TMA copies of the pipelined loop,
//! the kernel's own warps (the consumers) only wait for stages, compute and release them.
//!
//! Needs: `tile-pipeline` with TMA rings released on empty mbarriers (`empty-barriers=true`,
//! which the default pipeline sets wherever this pass runs): every refill of a stage is an
//! `scf.if` without results holding only pure scalar ops, `tilegpu.stage`,
//! `tilegpu.stage_acquire` and `tilegpu.tma_copy_into` (a *fill*), at the top of the kernel
//! (the prologue's fills) or in the body of a top-level loop; every operand a fill reads from
//! outside it is a parameter, the loop's induction variable, or a pure scalar op of those
//! (the *slice*: recomputed by the producer, no memory, no loop-carried value).
//!
//! Does: moves the rings (`stages_alloc`, with their mbarriers' initialisation) to the top of
//! the kernel, where every thread makes them, and marks the kernel
//! `tile.warp_specialize = array<i32: 4, producer regs, consumer regs>`. The lowering then
//! makes the block `num_warps + 4` warps: after the rings, warps `num_warps …` (the producer)
//! run the slice and the fills of the prologue and of a copy of each such loop without its
//! loop-carried values, its first thread issuing every copy after acquiring the stage's
//! empty barrier; warps `0 … num_warps-1` (the consumers) run the kernel without the fills,
//! their barriers named (`bar.sync 1, 32·num_warps`) so that the producer never takes part.
//! The program order of the IR is unchanged, so the interpreter runs it as before: a stage is
//! filled before its wait in either schedule.
//!
//! Registers: the block runs at the occupancy it asks for (`occupancy`, default 1), so ptxas
//! gives each thread `65536 / (threads · occupancy)` registers at entry (in steps of 8, at
//! most 255). Where that is under 232 the producer gives registers back (`setmaxnreg.dec` to
//! 40) and the consumers take them (`setmaxnreg.inc` to what the warpgroup's share allows,
//! at most 240): CUTLASS's 40/232 split for two consumer warpgroups. Where the entry count
//! is already 232 or more, `setmaxnreg` has nothing to give and is left out.
//!
//! Ping-pong (FlashAttention-3's inter-warpgroup schedule; option `pingpong`, default true):
//! where the consumers are two or more warpgroups and one top-level loop's body issues two or
//! more `wgmma` products over every consumer warp at its top level (FMHA's `Q·Kᵀ` and `P·V`),
//! the warpgroups take turns on the tensor cores: a turn (`tilegpu.turn_begin` … `turn_end`)
//! runs from the body's last product to the next iteration's first (`P·V` of iteration `j`,
//! then `Q·Kᵀ` of `j + 1`), the first turn from before the loop to its first product and the
//! last from the last product to after the loop. One warpgroup's softmax then runs while the
//! other's products do, instead of every warpgroup reaching the tensor cores at once. Turns
//! are named barriers (`bar.sync`/`bar.arrive 2 + g, 256`) between neighbouring
//! warpgroups; no consumer-wide barrier may fall inside a turn (the lowering refuses it). A
//! loop whose products are issued back to back (FlashAttention-3's intra-warpgroup order,
//! nothing computed between them) gets no turns: `tile-mma-overlap` overlaps its softmax with
//! the products inside each warpgroup, which measured better alone than with turns.
//!
//! Guarantees: the kernel's results are those of the unspecialized pipelined kernel; the
//! copies of a stage are issued after its previous readers released it and waited for before
//! it is read, on both sides of the partition.
//!
//! Leaves alone, and reports why: targets without TMA or `setmaxnreg` (sm_121a), kernels
//! without a TMA ring, rings not released on empty mbarriers, consumer warp counts that are
//! not whole warpgroups (or more than 28 warps), fills nested deeper than a top-level loop,
//! and fills whose slice reads memory, a tile or a loop-carried value.
//!
//! Options: `arch` (default: the module's target), `occupancy` (blocks per SM the kernel
//! asks for; default 1), `pingpong` (default true).

use std::collections::{BTreeMap, BTreeSet};
use tilec_core::layout::{Layout, MmaFamily};
use tilec_core::target::{Arch, Feature};
use tilec_core::tir::{defined_values, walk_ops, Func, Op, OpKind, ValueId, WarpSpec};

use crate::tile_pipeline::pure_scalar;

/// What the pass did, for `--report`.
#[derive(Clone, Debug, Default)]
pub struct WarpSpecializeReport {
    pub lines: Vec<String>,
}

/// The producer's registers where `setmaxnreg` moves registers (CUTLASS's count: address
/// arithmetic and one copy loop fit).
const PRODUCER_REGS: u32 = 40;

/// Registers of one SM (every target of the table).
const REGS_PER_SM: u32 = 65536;

/// The ops of a warp-specialized kernel by role, as the lowering emits them.
#[derive(Clone, Debug, Default)]
pub struct Partition {
    /// Made by every thread before the roles part: the rings and their mbarriers.
    pub common: Vec<Op>,
    /// The producer: the slice and the fills, the pipelined loops without carried values.
    pub producer: Vec<Op>,
    /// The consumers: every other op, in program order (the slice too, where they use it).
    pub consumer: Vec<Op>,
    /// TMA copies the producer issues (for the report).
    pub copies: usize,
}

/// Whether `op` is a fill: an `scf.if` without results whose ops are pure scalar ops,
/// stages, stage acquisitions and at least one TMA copy.
fn is_fill(func: &Func, op: &Op) -> bool {
    let OpKind::If { then_ops, else_ops, results, .. } = &op.kind else { return false };
    let allowed = |o: &Op| {
        pure_scalar(func, o)
            || matches!(
                o.kind,
                OpKind::Stage { .. } | OpKind::StageAcquire { .. } | OpKind::AsyncCopy { tma: true, .. }
            )
    };
    results.is_empty()
        && else_ops.is_empty()
        && then_ops.iter().all(allowed)
        && then_ops.iter().any(|o| matches!(o.kind, OpKind::AsyncCopy { tma: true, .. }))
}

/// The values the ops of `ops` read from outside them.
fn free_uses(ops: &[Op]) -> BTreeSet<ValueId> {
    let mut used = BTreeSet::new();
    walk_ops(ops, &mut |o| used.extend(o.kind.operands()));
    used.difference(&defined_values(ops)).copied().collect()
}

/// Where an op is: its index in the kernel's ops, then in the body of each loop on the way.
type Path = Vec<usize>;

/// Where a value is made: an op, or a loop's induction variable.
#[derive(Clone, Debug)]
enum Def {
    Op(Path),
    Iv(Path),
}

/// The op at `path` (through loop bodies only).
fn op_at<'f>(ops: &'f [Op], path: &[usize]) -> Option<&'f Op> {
    let (&first, rest) = path.split_first()?;
    let op = ops.get(first)?;
    match (rest.is_empty(), &op.kind) {
        (true, _) => Some(op),
        (false, OpKind::For { body, .. }) => op_at(body, rest),
        _ => None,
    }
}

/// What the partition needs to know of the kernel's ops: where values are made, the fills,
/// and the loops that hold a fill (at any depth, through loop bodies only).
#[derive(Default)]
struct Scan {
    defs: BTreeMap<ValueId, Def>,
    fills: BTreeSet<Path>,
    loops: BTreeSet<Path>,
}

impl Scan {
    fn ops(&mut self, func: &Func, ops: &[Op], prefix: &[usize]) {
        for (j, op) in ops.iter().enumerate() {
            let mut path = prefix.to_vec();
            path.push(j);
            if let Some(r) = op.result {
                self.defs.insert(r, Def::Op(path.clone()));
            }
            if is_fill(func, op) {
                for k in 1..path.len() {
                    self.loops.insert(path[..k].to_vec());
                }
                self.fills.insert(path);
                continue;
            }
            if let OpKind::For { iv, body, .. } = &op.kind {
                self.defs.insert(*iv, Def::Iv(path.clone()));
                self.ops(func, body, &path);
            }
        }
    }
}

/// The partition of `func`'s ops (the rings first wherever they are at the top level), or
/// why it has none.
pub fn partition(func: &Func) -> Result<Partition, String> {
    let mut scan = Scan::default();
    scan.ops(func, &func.ops, &[]);
    // Every TMA copy and stage acquisition must be in one of the fills found.
    let mut copies = 0;
    let mut in_fills = 0;
    func.walk(&mut |o| copies += usize::from(matches!(o.kind, OpKind::AsyncCopy { tma: true, .. })));
    for op in scan.fills.iter().filter_map(|at| op_at(&func.ops, at)) {
        walk_ops(std::slice::from_ref(op), &mut |o| {
            in_fills += usize::from(matches!(o.kind, OpKind::AsyncCopy { tma: true, .. }));
        });
    }
    if copies == 0 {
        return Err("no TMA copy to produce".into());
    }
    if in_fills != copies {
        return Err(format!(
            "{} of the kernel's {copies} TMA copies are not in a fill at the top level or in loops",
            copies - in_fills
        ));
    }
    // The slice: what the fills and the loops' bounds read, closed over pure scalar ops. (A
    // value a fill reads is made where the fill can see it, SSA's rule: before it in its
    // loop or a loop around it, or before them all.)
    let mut need: Vec<ValueId> = vec![];
    for at in &scan.fills {
        let Some(op) = op_at(&func.ops, at) else { continue };
        need.extend(free_uses(std::slice::from_ref(op)));
    }
    for at in &scan.loops {
        if let Some(Op { kind: OpKind::For { lb, ub, step, .. }, .. }) = op_at(&func.ops, at) {
            need.extend([*lb, *ub, *step]);
        }
    }
    let params: BTreeSet<ValueId> = func.params.iter().map(|p| p.value).collect();
    let mut slice: BTreeSet<Path> = BTreeSet::new();
    while let Some(v) = need.pop() {
        if params.contains(&v) {
            continue;
        }
        let at = match scan.defs.get(&v) {
            Some(Def::Op(at)) => at.clone(),
            Some(Def::Iv(at)) if scan.loops.contains(at) => continue,
            _ => {
                return Err(format!("a copy reads %{}, which is not a value of its iteration or before its loop", v.0))
            }
        };
        let Some(op) = op_at(&func.ops, &at) else { return Err("a value made nowhere".into()) };
        if matches!(op.kind, OpKind::StagesAlloc) && at.len() == 1 {
            // A ring: made by every thread before the roles part.
            continue;
        }
        if !pure_scalar(func, op) {
            return Err(format!(
                "a copy's coordinates read %{}, which is not a pure scalar (memory, a tile or a loop-carried value)",
                v.0
            ));
        }
        if slice.insert(at) {
            need.extend(op.kind.operands());
        }
    }
    let mut part = Partition { copies, ..Partition::default() };
    let (producer, consumer) = split(&func.ops, &[], &scan, &slice, &mut part.common);
    part.producer = producer;
    part.consumer = consumer;
    Ok(part)
}

/// The producer's and the consumers' ops of `ops` (at `prefix`); rings at the top level go
/// to `common`. The producer gets the fills, the slice, and each loop that holds a fill with
/// its producer ops and without carried values; the consumers every op but the fills.
fn split(
    ops: &[Op],
    prefix: &[usize],
    scan: &Scan,
    slice: &BTreeSet<Path>,
    common: &mut Vec<Op>,
) -> (Vec<Op>, Vec<Op>) {
    let (mut producer, mut consumer) = (vec![], vec![]);
    for (j, op) in ops.iter().enumerate() {
        let mut path = prefix.to_vec();
        path.push(j);
        if prefix.is_empty() && matches!(op.kind, OpKind::StagesAlloc) {
            common.push(op.clone());
            continue;
        }
        let fill = scan.fills.contains(&path);
        if fill || slice.contains(&path) {
            producer.push(op.clone());
        }
        if scan.loops.contains(&path) {
            let OpKind::For { lb, ub, step, iv, body, .. } = &op.kind else { continue };
            let (p, c) = split(body, &path, scan, slice, common);
            producer.push(Op {
                kind: OpKind::For {
                    lb: *lb,
                    ub: *ub,
                    step: *step,
                    iv: *iv,
                    init: vec![],
                    iters: vec![],
                    body: p,
                    yields: vec![],
                    results: vec![],
                },
                result: None,
                span: op.span,
            });
            let mut kept = op.clone();
            if let OpKind::For { body, .. } = &mut kept.kind {
                *body = c;
            }
            consumer.push(kept);
        } else if !fill {
            consumer.push(op.clone());
        }
    }
    (producer, consumer)
}

/// The register split of a block of `consumer_warps + 4` warps at `occupancy` blocks per SM:
/// (producer, consumer) counts for `setmaxnreg`, or (0, 0) where the entry count leaves
/// nothing to move; and the entry count.
pub fn register_split(consumer_warps: u32, occupancy: u32) -> (u32, u32, u32) {
    let threads = (consumer_warps + 4) * 32;
    let entry = (REGS_PER_SM / (threads * occupancy.max(1)) / 8 * 8).min(255);
    if !(PRODUCER_REGS..232).contains(&entry) {
        return (0, 0, entry);
    }
    let per_lane = REGS_PER_SM / occupancy.max(1) / 32;
    let consumer = ((per_lane - 4 * PRODUCER_REGS) / consumer_warps / 8 * 8).min(240);
    (PRODUCER_REGS, consumer, entry)
}

/// Whether a kernel of `func`'s warps, at `occupancy` blocks per SM, may be specialized on
/// `arch` (`tile-pipeline` asks it before releasing TMA rings on empty mbarriers, which only
/// a producer needs): the target has TMA and `setmaxnreg`, the consumers are whole
/// warpgroups, and the producer's threads do not cut the consumers' registers below what
/// they have without it (or CUTLASS's 232).
pub fn fits(func: &Func, arch: &Arch, occupancy: u32) -> Result<(), String> {
    if !arch.has(Feature::Tma) || !arch.has(Feature::Setmaxnreg) {
        return Err(format!("{} has no TMA or no setmaxnreg", arch.name));
    }
    if func.warp_spec.is_some() {
        return Err("the kernel is warp-specialized already".into());
    }
    if !func.num_warps.is_multiple_of(4) || func.num_warps + 4 > 32 {
        return Err(format!(
            "{} consumer warps are not whole warpgroups under 32 warps with the producer",
            func.num_warps
        ));
    }
    let (_, consumer, entry) = register_split(func.num_warps, occupancy);
    let alone = (REGS_PER_SM / (func.num_warps * 32 * occupancy.max(1)) / 8 * 8).min(255);
    let with = if consumer == 0 { entry } else { consumer };
    if with < alone.min(232) {
        return Err(format!(
            "the producer warpgroup would cut the consumers' registers from {alone} to {with} at occupancy {occupancy}"
        ));
    }
    Ok(())
}

/// The shared buffers written from registers that only their own warpgroups read: a
/// `local_alloc` of a wgmma accumulator's layout over every consumer warp (each warpgroup
/// holds its own 64-row blocks — FlashAttention's P, cast), whose every read is the A operand
/// of a wgmma product of that layout (warpgroup `g` reads the rows it wrote). Publishing such a
/// buffer takes a barrier of the warpgroup only (`WARPGROUP_BARRIER + g`, `tile-to-llvm`), not
/// of every consumer, so it may sit inside a warpgroup's turn.
pub(crate) fn warpgroup_local_buffers(func: &Func) -> BTreeSet<ValueId> {
    let wide = |l: Option<&Layout>| match l {
        Some(Layout::Mma(m)) => {
            m.family == MmaFamily::Wgmma && m.warps_per_cta[0] * m.warps_per_cta[1] == i64::from(func.num_warps)
        }
        _ => false,
    };
    let mut allocs = BTreeMap::new();
    func.walk(&mut |o| {
        if let (OpKind::LocalAlloc { value }, Some(r)) = (&o.kind, o.result) {
            if let Some(Layout::Mma(m)) = func.ty(*value).layout().filter(|l| wide(Some(l))) {
                allocs.insert(r, *m);
            }
        }
    });
    if allocs.is_empty() {
        return BTreeSet::new();
    }
    // The buffer's reads: each `local_load` of it must be only an A operand of a product of
    // the same layout.
    let mut loads: BTreeMap<ValueId, ValueId> = BTreeMap::new();
    let mut bad = BTreeSet::new();
    func.walk(&mut |o| {
        if let (OpKind::LocalLoad { buf, trans }, Some(r)) = (&o.kind, o.result) {
            if *trans {
                bad.insert(*buf);
            }
            loads.insert(r, *buf);
        }
    });
    func.walk(&mut |o| {
        for v in o.kind.operands() {
            let Some(buf) = loads.get(&v) else { continue };
            let ok = match (&o.kind, o.result) {
                (OpKind::Mma { a, b, acc, scales: None }, Some(r)) => {
                    *a == v
                        && *b != v
                        && *acc != v
                        && allocs.get(buf).is_some_and(|m| func.ty(r).layout() == Some(&Layout::Mma(*m)))
                }
                _ => false,
            };
            if !ok {
                bad.insert(*buf);
            }
        }
    });
    allocs.into_keys().filter(|b| !bad.contains(b)).collect()
}

/// The first named barrier of each warpgroup's own barrier (after the turns').
pub(crate) const WARPGROUP_BARRIER: i64 = TURN_BARRIER + 4;

/// The first named barrier of the consumer warpgroups' turns (0 is the block's, 1 the
/// consumers'): warpgroup `g` waits for its turn on `TURN_BARRIER + g` (`tile-to-llvm`).
pub(crate) const TURN_BARRIER: i64 = 2;

/// Whether `op` is a `wgmma` product over every consumer warp (each warpgroup its own 64-row
/// blocks).
/// A `wgmma` product over every warp of the kernel.
pub(crate) fn is_wide_wgmma(func: &Func, op: &Op) -> bool {
    let (OpKind::Mma { .. }, Some(r)) = (&op.kind, op.result) else { return false };
    matches!(func.ty(r).layout(), Some(Layout::Mma(m))
        if m.family == MmaFamily::Wgmma && m.warps_per_cta[0] * m.warps_per_cta[1] == i64::from(func.num_warps))
}

/// Puts the consumer warpgroups' turns around the products of the one loop that issues two or
/// more (see the module doc): where it applies, the report line.
fn ping_pong(func: &mut Func) -> Result<String, String> {
    if func.num_warps < 8 {
        return Err("one consumer warpgroup".into());
    }
    let local = warpgroup_local_buffers(func);
    let mut found = vec![];
    for (i, op) in func.ops.iter().enumerate() {
        let OpKind::For { body, .. } = &op.kind else { continue };
        let products: Vec<usize> =
            body.iter().enumerate().filter(|(_, o)| is_wide_wgmma(func, o)).map(|(j, _)| j).collect();
        let mut nested = 0;
        let mut waits = false;
        // A buffer the body writes from registers (fp8 attention's P) is published by a
        // barrier of every consumer, which a warpgroup inside its turn would never meet.
        let mut register_writes = false;
        for o in body {
            walk_ops(std::slice::from_ref(o), &mut |n| {
                nested += usize::from(!std::ptr::eq(n, o) && matches!(n.kind, OpKind::Mma { .. }));
                waits |= matches!(n.kind, OpKind::MmaWait { .. });
                register_writes |=
                    matches!(n.kind, OpKind::LocalAlloc { .. }) && !n.result.is_some_and(|r| local.contains(&r));
            });
        }
        if products.len() >= 2 && nested == 0 && !waits && register_writes {
            return Err(
                "the loop writes a shared buffer from registers between its products (a consumer-wide barrier inside a turn)".into(),
            );
        }
        if products.len() >= 2 && nested == 0 && !waits {
            found.push((i, products[0], products[products.len() - 1]));
        }
    }
    let [(i, first, last)] = found[..] else {
        return Err(if found.is_empty() {
            "no loop issues two warpgroup products at its top level (products kept in flight are left alone)".into()
        } else {
            "more than one loop issues two warpgroup products".into()
        });
    };
    let turn = |begin, last| Op { kind: OpKind::Turn { begin, last }, result: None, span: None };
    // Products issued back to back (FlashAttention-3's overlapped order: `Q·K_jᵀ` then
    // `P_{j-1}·V_{j-1}`, only their operands' waits and reads between) overlap the softmax
    // with the second product within the warpgroup (`tile-mma-overlap`); turns around them
    // ran FMHA D128 at 0.86x of that order without turns on the H100
    // (bench/results/2026-11-27-h100-fmha-overlap/).
    if let OpKind::For { body, .. } = &func.ops[i].kind {
        if body[first + 1..last].iter().all(|o| !computes_tiles(func, o)) {
            return Err("the loop's products are issued back to back: tile-mma-overlap overlaps the softmax with them within each warpgroup".into());
        }
    }
    if let OpKind::For { body, .. } = &mut func.ops[i].kind {
        body.insert(last, turn(true, false));
        body.insert(first + 1, turn(false, false));
    }
    func.ops.insert(i + 1, turn(false, true));
    func.ops.insert(i, turn(true, false));
    Ok(format!(
        "ping-pong: {} consumer warpgroups take turns on the tensor cores (named barriers {}-{}): a turn from the loop body's last product to the next iteration's first",
        func.num_warps / 4,
        TURN_BARRIER,
        TURN_BARRIER - 1 + i64::from(func.num_warps / 4)
    ))
}

/// Whether `op` (or an op of its regions) computes a tile in registers: anything but the
/// reads of shared operands, products, scalars and the stage bookkeeping.
fn computes_tiles(func: &Func, op: &Op) -> bool {
    let mut any = false;
    walk_ops(std::slice::from_ref(op), &mut |o| {
        any |= o.result.is_some_and(|r| matches!(func.ty(r), tilec_core::tir::Type::Tile { .. }))
            && !matches!(o.kind, OpKind::LocalLoad { .. } | OpKind::Mma { .. });
    });
    any
}

/// Runs the pass.
pub fn run(func: &mut Func, arch: &Arch, occupancy: u32, pingpong: bool) -> WarpSpecializeReport {
    let mut lines = vec![];
    let why_not = (|| {
        fits(func, arch, occupancy)?;
        // Every TMA ring must be released on empty mbarriers: the producer learns from them
        // that the consumers are done with a stage.
        let mut stage_of = BTreeMap::new();
        let (mut filled, mut released) = (BTreeSet::new(), BTreeSet::new());
        func.walk(&mut |o| match &o.kind {
            OpKind::Stage { buf, .. } => {
                stage_of.extend(o.result.map(|r| (r, *buf)));
            }
            OpKind::AsyncCopy { dst: Some(d), tma: true, .. } => {
                filled.extend(stage_of.get(d).copied());
            }
            OpKind::StageRelease { ring, .. } => {
                released.insert(*ring);
            }
            _ => {}
        });
        if let Some(r) = filled.difference(&released).next() {
            return Err(format!(
                "ring %{} is not released on empty mbarriers (tile-pipeline{{empty-barriers=true}})",
                r.0
            ));
        }
        let mut nested_rings = false;
        for op in &func.ops {
            walk_ops(std::slice::from_ref(op), &mut |o| {
                nested_rings |= !std::ptr::eq(o, op) && matches!(o.kind, OpKind::StagesAlloc);
            });
        }
        if nested_rings {
            return Err("a ring is made inside a region".into());
        }
        partition(func)
    })();
    let part = match why_not {
        Ok(p) => p,
        Err(why) => {
            lines.push(format!("not applied: {why}"));
            return WarpSpecializeReport { lines };
        }
    };
    // The rings first, in their order.
    let (rings, rest): (Vec<Op>, Vec<Op>) =
        std::mem::take(&mut func.ops).into_iter().partition(|o| matches!(o.kind, OpKind::StagesAlloc));
    func.ops = rings.into_iter().chain(rest).collect();
    let (producer_regs, consumer_regs, entry) = register_split(func.num_warps, occupancy);
    func.warp_spec = Some(WarpSpec { producer_warps: 4, producer_regs, consumer_regs });
    let c = func.num_warps;
    lines.push(format!(
        "producer: warps {c}-{} (one warpgroup), its first thread issues the kernel's {} TMA copies (the prologue's and a copy of the pipelined loop without its carried values: {} ops); consumers: warps 0-{} ({} ops, barriers named `bar.sync 1, {}`)",
        c + 3,
        part.copies,
        count_ops(&part.producer),
        c - 1,
        count_ops(&part.consumer),
        c * 32
    ));
    lines.push(if producer_regs == 0 {
        format!("registers: {entry} per thread at entry already; no setmaxnreg")
    } else {
        format!(
            "registers: {entry} per thread at entry (occupancy {occupancy}); setmaxnreg.dec {producer_regs} in the producer, setmaxnreg.inc {consumer_regs} in the consumers"
        )
    });
    lines.push(
        "schedule: the producer runs ahead by the rings' slack, gated by the empty mbarriers the consumers release"
            .into(),
    );
    if pingpong {
        lines.push(ping_pong(func).unwrap_or_else(|why| format!("no ping-pong: {why}")));
    }
    WarpSpecializeReport { lines }
}

fn count_ops(ops: &[Op]) -> usize {
    let mut n = 0;
    walk_ops(ops, &mut |_| n += 1);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_move_only_where_the_entry_count_leaves_room() {
        // Two consumer warpgroups at one block per SM: 384 threads enter with 168 registers;
        // CUTLASS's 40/232 split.
        assert_eq!(register_split(8, 1), (40, 232, 168));
        // One consumer warpgroup: 256 threads enter with 255 already.
        assert_eq!(register_split(4, 1), (0, 0, 255));
        // One warpgroup at two blocks per SM: 128 at entry, the consumers get 216.
        assert_eq!(register_split(4, 2), (40, 216, 128));
        let arch = tilec_core::target::by_name("sm_90a").unwrap();
        let mut f = Func::new("k", "sm_90a", 8);
        assert!(fits(&f, arch, 1).is_ok());
        // bmm's 8 warps at two blocks per SM: 128 registers alone, 104 beside a producer.
        assert!(fits(&f, arch, 2).unwrap_err().contains("from 128 to 104"));
        f.num_warps = 2;
        assert!(fits(&f, arch, 1).unwrap_err().contains("whole warpgroups"));
        // sm_121a has TMA and setmaxnreg: its 8 warps at one block per SM fit, at two they
        // would lose registers as on sm_90a.
        let spark = tilec_core::target::by_name("sm_121a").unwrap();
        assert!(fits(&Func::new("k", "sm_121a", 8), spark, 1).is_ok());
        assert!(fits(&Func::new("k", "sm_121a", 8), spark, 2).unwrap_err().contains("from 128 to 104"));
    }
}
