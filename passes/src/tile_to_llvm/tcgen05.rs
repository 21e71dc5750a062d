//! The `tcgen05` family (sm_100a/sm_103a): an `mma` whose accumulator is
//! `#tilegpu.tcgen05<[4, wn]>` becomes `tcgen05.mma.cta_group::1.kind::f16`, issued by one
//! thread for the whole block — one instruction per 128-row block and K step of 16 — reading
//! A and B from shared memory through descriptors and accumulating in Tensor Memory (TMEM).
//!
//! TMEM ([`TmemPlan`]): a loop-carried accumulator whose only use in the body is the `mma`
//! that yields the next one (a GEMM's K loop) stays in TMEM for the whole loop — the loop
//! carries no registers for it; its initial value is stored before the loop (`tcgen05.st`)
//! and the final one loaded after it (`tcgen05.ld`). Every other product runs in one scratch
//! region the standalone products share, its accumulator stored there first unless it is a
//! splat of zero (then the first K step does not read D), its result loaded at once. The
//! kernel allocates the columns all of them need (a power of two from 32 to 512) at its
//! start — warp 0 allocates and gives up the allocation permit, the address goes through
//! shared memory — and frees them at its end.
//!
//! Two accumulators ([`TmemPlan::double`]): where `tile-epilogue-overlap` made a tile loop carry
//! a chain's result to the next iteration's epilogue (its argument and result read by an
//! `mma_wait` alone), the chain takes two regions of its columns and the tile loop a run-time
//! slot (0, 1, 0, … a block argument flipped by `xor 1`): the product loop of an iteration
//! accumulates in the slot's region and its products are committed, after the loop, to the
//! slot's mbarrier; the carried accumulator is the other region, and its `mma_wait` is every
//! thread's arrival and wait on the other mbarrier, then `tcgen05.ld` (`Value::Tmem`'s `alt`:
//! the column shift and the mbarrier, registers). The tile loop counts as one that loads TMEM,
//! so the next product loop starts after the block-wide TMEM sync: no product overwrites a
//! region before every thread has read it out.
//!
//! A from TMEM: a 16-bit or 8-bit A operand already in registers in the accumulator's layout
//! (`Mma::reads_a_from_tmem`: FlashAttention-4's P, the softmax of the scores one
//! `tcgen05.ld` brought out one row a thread) is not staged through shared memory — the layout
//! pass leaves it in registers and each thread stores its row's elements, two (four) to a
//! 32-bit column, into the region [`TmemPlan::a_region`] with `tcgen05.st.32x32b`; the product
//! reads A there (`tcgen05.mma … [d], [a], b-desc`, 8 columns a K step of 32 bytes). The
//! stores are ordered before the issue as any TMEM access is (below).
//! `a_operand_stores_follow_the_layout` checks the stores against
//! `tilec_core::layout::tmem::a_operand_cell`.
//!
//! Registers: `tcgen05.ld/st.32x32b` — warp `w` reaches TMEM lanes `32 (w % 4) …` only, each
//! thread one lane (one accumulator row) and consecutive columns: the `#tilegpu.tcgen05`
//! register map (`Mma::tcgen05`; `tmem_addresses_follow_the_layout` checks the addresses
//! against `tilec_core::layout::tmem`'s model of the instruction).
//!
//! Descriptors: wgmma's canonical layouts and leading/stride offsets, in tcgen05's format
//! (version 1 in bits 46-48, the swizzle in bits 61-63); the instruction descriptor from the
//! operand formats and majors and the shape (`tilec_core::layout::tmem::InstrDescriptor`).
//!
//! Synchronisation: before a product is issued, TMEM stores and loads of every thread are
//! complete and ordered before it (`tcgen05.wait::st`, `tcgen05.fence::before_thread_sync`,
//! a block barrier, `tcgen05.fence::after_thread_sync`) wherever some happened since the last
//! product; the issuing thread commits the products to the kernel's mbarrier
//! (`tcgen05.commit … mbarrier::arrive::one`), every thread arrives on it too and waits for
//! the phase its own arrival belongs to (so no phase parity is tracked across loops: the
//! phase completes once all threads and the commit have arrived), then
//! `tcgen05.fence::after_thread_sync`. A product is waited for where it is issued (its
//! shared operand reads end there, the barrier analysis stays exact), except a chain product
//! `tile-pipeline` keeps in flight ([`TmemPlan::in_flight`]: its loop's result has an
//! `mma_wait`): nothing waits for it in the loop; each `stage_release` of a ring it reads is
//! a `tcgen05.commit` onto the stage's empty mbarrier (count 1), which arrives once every
//! product issued so far is complete — their reads of the stage with them — and the refill's
//! `stage_acquire` waits for that phase, so the tensor core runs the next stages' products
//! while a refill waits for an older one (CUTLASS's and DeepGEMM's `umma_arrive` on the
//! pipeline's empty barrier). The `mma_wait` after the loop is the commit-and-wait above.
//! A standalone product `tile-mma-overlap` left in flight ([`TmemPlan::deferred`]: an
//! `mma_wait` on its own result) has a region of its own while it runs — first fit among the
//! products whose runs (issue to wait, in program order) meet —, an A region of its own the
//! same way where it reads A from TMEM ([`TmemPlan::deferred_a`]), and an mbarrier of its own
//! the issuing thread commits it to; its `mma_wait` is every thread's arrival and wait on
//! that mbarrier, the fence, and the `tcgen05.ld` (FlashAttention-4's `Q·K_jᵀ` and
//! `P_{j-1}·V_{j-1}` both running while the threads compute the softmax).
//!
//! Carried in TMEM (FlashAttention-4's O and P in OVERLAP's order): a loop-carried
//! accumulator whose product is left in flight, waited for in the body and then multiplied
//! by a row factor that is yielded ([`TmemPlan::acc_carried`], `carried_accumulators`) never
//! enters registers in the loop: stored into its product's region before the loop, accumulated
//! onto in place, its wait leaves it there, the rescale loads, multiplies and stores it in
//! place — in a warp whose factors are all 1.0 (the conditional rescale) not at all — and the
//! product after the loop accumulates onto the same region (or the loop's exit loads it). A
//! 16-bit A operand the loop carries to its in-flight product ([`TmemPlan::a_carried`],
//! `carried_a_operands`) is stored into that product's A region where the body yields it
//! (the product was waited for in the body, so nothing reads the region then) and before the
//! loop, not before the product: the iteration's products are issued back to back after the
//! one TMEM sync at its top. Their regions live from the loop's start to the last read after
//! it. (FMHA on sm_103a: at D = 64, 487 → 420 SASS instructions a warp a key tile and 128
//! registers; at D = 128, 244 → 174 registers.)
//!
//! A CTA pair (`tile-cta-pair`, [`PairPlan`]): where every product is a GEMM chain of 128
//! rows a CTA over TMA rings, the products are `cta_group::2` — every tcgen05 instruction of
//! the kernel then is, as ptxas requires: TMEM allocated and freed by warp 0 of both CTAs
//! together (freed after a cluster barrier), the leader (rank 0) alone issuing M = 256 over
//! both CTAs' A stages and B halves (the copies: `tma::Sharing::Pair`) and committing to the
//! mbarrier at the same offset in both CTAs (`.multicast::cluster`, mask 3), so every wait on
//! a commit is as before in either CTA. Before the leader issues into TMEM after accesses, the
//! peer's threads are done with theirs too ([`Lowering::tmem_issue_sync`]: the peer's first
//! thread arrives on a leader mbarrier that the issuer waits for). Not run: no B300 here.

use super::emit::{Reg, Ty};
use super::ptx_asm::PtxAsm;
use super::regs::{TmemAlt, Value};
use super::{err, Lowering};
use crate::tile_layout::reads_a_from_tmem;
use std::collections::{BTreeMap, BTreeSet};
use tilec_core::layout::tmem::{scale_step, Format, InstrDescriptor, ScaledInstrDescriptor};
use tilec_core::layout::{Layout, Mma, MmaFamily, MMA_K, TCGEN05_M, TMEM_COLUMNS};
use tilec_core::tir::{walk_ops, Func, OpKind, Type, ValueId};
use tilec_core::{DType, Diagnostic};

/// Where each tcgen05 accumulator lives in the kernel's TMEM allocation.
#[derive(Clone, Debug, Default)]
pub(crate) struct TmemPlan {
    /// The column of each value of a loop chain kept in TMEM: the loop's iteration argument,
    /// the product yielding the next one and the loop's result.
    pub kept: BTreeMap<ValueId, i64>,
    /// The column of the region the other products share, and its width.
    pub scratch: i64,
    pub scratch_cols: i64,
    /// The column of the region the A operands read from TMEM share (see
    /// [`reads_a_from_tmem`]), and its width: 16-bit elements, two a column.
    pub a_region: i64,
    pub a_cols: i64,
    /// The column of the region the scale factors of block-scaled products share (A's, then
    /// B's: `tmem::scale_cell`), and its width — one of `scale_slots` such regions, one a
    /// stage of the A ring of a block-scaled product kept in flight (its factors for the
    /// next stages are stored while it runs; a slot is written again only after its stage's
    /// refill, which waited for the product), else one.
    pub scale_region: i64,
    pub scale_cols: i64,
    pub scale_slots: i64,
    /// Columns allocated (0: no tcgen05 product).
    pub columns: i64,
    /// Splats of 0.0: an accumulator that is one is not stored, the product ignores D.
    pub zero: BTreeSet<ValueId>,
    /// The results of chain loops that something uses (the others are never loaded).
    pub used_results: BTreeSet<ValueId>,
    /// Loops (by [`TmemPlan::loop_key`]) whose body issues a product: TMEM accesses before
    /// such a loop are ordered before it, once.
    pub product_loops: BTreeSet<ValueId>,
    /// Loops whose body loads or stores TMEM (a standalone product): the next iteration's
    /// first product must wait for those accesses.
    pub dirty_loops: BTreeSet<ValueId>,
    /// Chain products kept in flight (`tile-pipeline` put an `mma_wait` on their loop's
    /// result): issued without a wait, their reads ended by the commits that release their
    /// rings' stages.
    pub in_flight: BTreeSet<ValueId>,
    /// The rings those products read: each `stage_release` of one is a `tcgen05.commit` onto
    /// the stage's empty mbarrier (one arrival), not the warps' arrivals.
    pub committed_rings: BTreeSet<ValueId>,
    /// Standalone products `tile-mma-overlap` left in flight until their `mma_wait`, and the
    /// column of each one's own region (another product may be issued, and TMEM read, while
    /// it runs); each commits to an mbarrier of its own.
    pub deferred: BTreeMap<ValueId, i64>,
    /// The column of the A region of each of those that reads A from TMEM, its own while it
    /// runs (placed as their accumulators are), so that a product reading A from TMEM may be
    /// issued while another one runs; the shared [`TmemPlan::a_region`] serves the others.
    pub deferred_a: BTreeMap<ValueId, i64>,
    /// Columns of the chains kept in TMEM (the deferred products' regions follow them), and
    /// those the deferred products' regions span.
    pub kept_cols: i64,
    pub deferred_cols: i64,
    /// The buffers (`local_alloc` results) of the A operands of products of fewer than 64
    /// rows, and how many times each holds its rows (`Mma::tcgen05_a_replicas`).
    pub replicated: BTreeMap<ValueId, i64>,
    /// Tile loops carrying a chain's result to the next iteration's epilogue
    /// (`tile-epilogue-overlap`), by [`TmemPlan::loop_key`]: the chain double-buffered.
    pub double: BTreeMap<ValueId, DoubleChain>,
    /// A operands a loop carries in Tensor Memory rather than registers (FlashAttention-4's P
    /// in OVERLAP's order, [`carried_a_operands`]): the iteration argument and the loop's
    /// result, each mapped to the product in the loop that reads it, whose A region
    /// ([`TmemPlan::deferred_a`]) holds it from before the loop to the last read after it.
    pub a_carried: BTreeMap<ValueId, ValueId>,
    /// Accumulators a loop carries in Tensor Memory through a row rescale (FlashAttention-4's
    /// O, [`carried_accumulators`]): the iteration argument, the product in the loop, its
    /// wait, the rescale (the yield) and the loop's result, each mapped to the column of the
    /// product's region, which holds the accumulator from before the loop to the wait of the
    /// product after it (whose region it is too) or the load at the loop's exit.
    pub acc_carried: BTreeMap<ValueId, i64>,
    /// Products whose only use is the accumulator of the product right after them (MLA's
    /// scores: `mma(qr, kr, mma(q, k, 0))`), each mapped to that product: it accumulates
    /// into the next one's region and is neither committed nor waited for — the next one's
    /// commit tracks both, in issue order — so its sum never leaves Tensor Memory
    /// ([`product_chains`]).
    pub chained: BTreeMap<ValueId, ValueId>,
}

/// A chain kept in two TMEM regions that a tile loop's iterations alternate between: each
/// iteration's product loop accumulates in one (its slot) while the epilogue reads the previous
/// tile's accumulator from the other; each region's products commit to an mbarrier of its own.
#[derive(Clone, Debug)]
pub(crate) struct DoubleChain {
    /// The first region's column (the second follows it) and the columns of one.
    pub col: i64,
    pub cols: i64,
    /// The product loop, by [`TmemPlan::loop_key`]: its result is committed to the slot's
    /// mbarrier after it.
    pub product_loop: ValueId,
    /// The tile loop's iteration argument carrying the previous tile's accumulator.
    pub carried: ValueId,
}

fn is_tcgen05(func: &Func, v: ValueId) -> bool {
    func.ty(v).layout().is_some_and(Layout::is_tcgen05)
}

/// Whether `op` is a product of the tcgen05 family.
fn is_tcgen05_product(func: &Func, op: &tilec_core::tir::Op) -> bool {
    matches!((&op.kind, op.result), (OpKind::Mma { .. }, Some(r)) if is_tcgen05(func, r))
}

/// A CTA pair's products as one `tcgen05.mma.cta_group::2` (see [`pair_plan`]): the rings
/// the pair's products read, A's (each CTA its own rows) and B's (each CTA half its columns).
#[derive(Clone, Debug, Default)]
pub(crate) struct PairPlan {
    pub a_rings: BTreeSet<ValueId>,
    pub b_rings: BTreeSet<ValueId>,
}

impl PairPlan {
    pub(crate) fn has(&self, ring: ValueId) -> bool {
        self.a_rings.contains(&ring) || self.b_rings.contains(&ring)
    }
}

/// Whether a CTA-pair kernel's tcgen05 products become `cta_group::2` ones — the pair's leader
/// (rank 0) issues each for both CTAs: M = 256 over both CTAs' A rows (each CTA's 128 at the
/// same shared offset), N over both CTAs' halves of B (each CTA loads half B's columns), D
/// split by rows into each CTA's Tensor Memory — and why not. Needs every product of the
/// kernel to be such (`cta_group::1` and `::2` do not mix in a kernel): a chain kept in TMEM
/// and in flight (a GEMM's K loop), 128 rows a CTA, one instruction's N (≤ 256), no block
/// scales, A and B stages of released TMA rings that nothing but products reads, A's copies at
/// the CTA's rows, B's the same in both CTAs and along its contiguous N in an even number of
/// swizzle atoms (each CTA the half it loads), and no product left in flight elsewhere or
/// reading A from TMEM.
pub(crate) fn pair_plan(
    func: &Func,
    tmem: &TmemPlan,
    released: &BTreeSet<ValueId>,
    (per_rank, shared): &super::tma::RingsByRank,
) -> Result<PairPlan, String> {
    if func.cluster != 2 {
        return Err("not a CTA pair".into());
    }
    if !tmem.deferred.is_empty() || tmem.a_cols > 0 || tmem.scale_cols > 0 {
        return Err("a product left in flight by tile-mma-overlap, or reading A or scales from TMEM".into());
    }
    // Stage views and the operands read from them (`local_load` of a stage), by their ring.
    let (mut stages, mut loaded) = (BTreeMap::new(), BTreeMap::new());
    walk_ops(&func.ops, &mut |op| {
        if let (OpKind::Stage { buf, .. }, Some(r)) = (&op.kind, op.result) {
            stages.insert(r, *buf);
        }
    });
    walk_ops(&func.ops, &mut |op| {
        if let (OpKind::LocalLoad { buf, .. }, Some(r)) = (&op.kind, op.result) {
            if let Some(ring) = stages.get(buf) {
                loaded.insert(r, *ring);
            }
        }
    });
    let ring_of = |v: &ValueId| stages.get(v).or_else(|| loaded.get(v)).copied();
    let mut plan = PairPlan::default();
    let mut bad = None;
    let mut products = 0;
    walk_ops(&func.ops, &mut |op| {
        if bad.is_some() || !is_tcgen05_product(func, op) {
            return;
        }
        products += 1;
        let OpKind::Mma { a, b, scales, .. } = &op.kind else { return };
        let r = op.result.unwrap_or(*a);
        let shape = func.ty(r).shape();
        let m64 = matches!(func.ty(r).layout(), Some(Layout::Mma(m)) if m.m64);
        let why = if scales.is_some() {
            Some("a block-scaled product".to_string())
        } else if !tmem.kept.contains_key(&r) || !tmem.in_flight.contains(&r) {
            Some("a product that is not a chain kept in TMEM and in flight".into())
        } else if m64 || shape.first() != Some(&TCGEN05_M) || shape.get(1).is_none_or(|&n| n > 256) {
            Some(format!("an accumulator of {shape:?} (a CTA's 128 rows, N up to 256)"))
        } else {
            let (ra, rb) = (ring_of(a), ring_of(b));
            match (ra, rb) {
                (Some(ra), Some(rb))
                    if per_rank.contains(&ra)
                        && !shared.contains(&ra)
                        && shared.contains(&rb)
                        && !per_rank.contains(&rb)
                        && released.contains(&ra)
                        && released.contains(&rb) =>
                {
                    match func.ty(rb) {
                        Type::Smem { shape, layout, .. }
                            if layout.order.first() == Some(&1)
                                && layout.nvmma_bytes().is_some()
                                && shape.last().is_some_and(|&n| n % (2 * layout.atom) == 0) =>
                        {
                            plan.a_rings.insert(ra);
                            plan.b_rings.insert(rb);
                            None
                        }
                        _ => Some("a B operand not N-major in an even number of swizzle atoms".into()),
                    }
                }
                _ => Some(
                    "operands that are not stages of released TMA rings, A's at the CTA's rows and B's the same in both"
                        .into(),
                ),
            }
        };
        bad = why;
    });
    if let Some(why) = bad {
        return Err(why);
    }
    if products == 0 {
        return Err("no tcgen05 product".into());
    }
    // Nothing but the products reads the rings' stages (the peer's copies are waited for by
    // the leader alone).
    let mut other = false;
    walk_ops(&func.ops, &mut |op| {
        let reads = |v: &ValueId| ring_of(v).is_some_and(|r| plan.has(r));
        other |= match &op.kind {
            OpKind::Mma { .. } | OpKind::AsyncCopy { .. } => false,
            // A stage's operand view: read by the products alone (checked where it is used).
            OpKind::LocalLoad { buf, .. } if stages.contains_key(buf) => false,
            k => k.operands().iter().any(reads),
        };
    });
    if other {
        return Err("a stage of the products' rings read by something else".into());
    }
    Ok(plan)
}

impl TmemPlan {
    pub(crate) fn of(func: &Func) -> Result<TmemPlan, Diagnostic> {
        let mut p = TmemPlan::default();
        let mut any = false;
        func.walk(&mut |op| any |= is_tcgen05_product(func, op));
        if !any {
            return Ok(p);
        }
        let uses = func.use_counts();
        let mut consts: BTreeMap<ValueId, f64> = BTreeMap::new();
        let mut products: Vec<(ValueId, i64)> = vec![];
        let mut next = 0i64;
        let mut a_cols = 0i64;
        // Products reading A from TMEM, and the columns their A takes (16-bit, two a column).
        let mut a_reads: BTreeMap<ValueId, i64> = BTreeMap::new();
        // A chain loop's result → the product yielding it; stage reads → their rings.
        let mut yielded_by: BTreeMap<ValueId, ValueId> = BTreeMap::new();
        let mut ring_of: BTreeMap<ValueId, ValueId> = BTreeMap::new();
        let mut operands: Vec<(ValueId, [ValueId; 2])> = vec![];
        let mut loaded_from: BTreeMap<ValueId, ValueId> = BTreeMap::new();
        let mut scale_cols = 0i64;
        let mut scaled: Vec<(ValueId, ValueId)> = vec![];
        let mut deferred: BTreeSet<ValueId> = BTreeSet::new();
        // A product loop's result a tile loop carries to its next iteration (and out of it):
        // the tile loop, its iteration argument and its result.
        let mut carried_by: BTreeMap<ValueId, (ValueId, ValueId, ValueId)> = BTreeMap::new();
        // (Only what `tile-epilogue-overlap` makes: the argument and the result read by an
        // `mma_wait` alone, not, say, an outer loop passing its accumulator on to an inner one.)
        let mut waited_only: BTreeSet<ValueId> = BTreeSet::new();
        func.walk(&mut |op| {
            if let OpKind::MmaWait { value, .. } = &op.kind {
                waited_only.insert(*value);
            }
        });
        func.walk(&mut |op| {
            let (OpKind::For { iters, yields, results, body, .. }, Some(key)) = (&op.kind, Self::loop_key(&op.kind))
            else {
                return;
            };
            for ((it, y), res) in iters.iter().zip(yields).zip(results) {
                let inner = body.iter().any(|o| matches!(&o.kind, OpKind::For { results: r, .. } if r.contains(y)));
                let waited = |v| match uses.get(v).copied().unwrap_or(0) {
                    0 => true,
                    1 => waited_only.contains(v),
                    _ => false,
                };
                if inner && is_tcgen05(func, *y) && waited(it) && waited(res) {
                    carried_by.insert(*y, (key, *it, *res));
                }
            }
        });
        func.walk(&mut |op| match (&op.kind, op.result) {
            (OpKind::Stage { buf, .. }, Some(r)) => {
                ring_of.insert(r, *buf);
            }
            (OpKind::LocalLoad { buf, .. }, Some(r)) => {
                if let Some(&ring) = ring_of.get(buf) {
                    ring_of.insert(r, ring);
                }
                loaded_from.insert(r, *buf);
            }
            (OpKind::MmaWait { value, .. }, Some(r)) => {
                if let (Some(&col), Some(&y)) = (p.kept.get(value), yielded_by.get(value)) {
                    p.kept.insert(r, col);
                    p.used_results.remove(value);
                    if uses.get(&r).is_some_and(|&n| n > 0) {
                        p.used_results.insert(r);
                    }
                    p.in_flight.insert(y);
                } else if is_tcgen05(func, *value) {
                    deferred.insert(*value);
                }
            }
            (OpKind::ConstFloat(x), Some(r)) => {
                consts.insert(r, *x);
            }
            (OpKind::Splat(s), Some(r)) if consts.get(s) == Some(&0.0) => {
                p.zero.insert(r);
            }
            (OpKind::Mma { a, b, scales, .. }, Some(r)) if is_tcgen05(func, r) => {
                products.push((r, Mma::tmem_columns(func.ty(r).shape())));
                if let Some((sa, _)) = scales {
                    let (s, ks) = (func.ty(r).shape(), func.ty(*sa).shape()[1]);
                    scale_cols = scale_cols.max(scale_columns(s[0], s[1], ks).iter().sum());
                    scaled.push((r, *a));
                }
                let reps = Mma::tcgen05_a_replicas(func.ty(r).shape()[0]);
                if let (true, Some(&buf)) = (reps > 1, loaded_from.get(a)) {
                    p.replicated.insert(buf, reps);
                }
                if let Some(Layout::Mma(m)) = func.ty(r).layout() {
                    if reads_a_from_tmem(func, *a, m) {
                        let per = Mma::a_per_column(func.ty(*a).dtype().bytes());
                        a_reads.insert(r, Mma::tmem_columns(func.ty(*a).shape()) / per);
                    }
                }
                operands.push((r, [*a, *b]));
            }
            (OpKind::For { iters, yields, results, body, .. }, _) => {
                for ((it, y), res) in iters.iter().zip(yields).zip(results) {
                    let chained = body.iter().any(|o| {
                        matches!(&o.kind, OpKind::Mma { acc, .. } if acc == it)
                            && o.result == Some(*y)
                            && is_tcgen05(func, *y)
                    });
                    // (Products of several 256-column blocks take turns in the scratch region.)
                    let whole = Mma::tcgen05_n_blocks(func.ty(*y).shape()) == 1;
                    if chained && whole && uses.get(it) == Some(&1) && uses.get(y) == Some(&1) {
                        for v in [*it, *y, *res] {
                            p.kept.insert(v, next);
                        }
                        yielded_by.insert(*res, *y);
                        if uses.get(res).is_some_and(|&n| n > 0) {
                            p.used_results.insert(*res);
                        }
                        let cols = Mma::tmem_columns(func.ty(*y).shape());
                        // Carried by a tile loop: two regions, and the tile loop's argument
                        // and result are the chain's too (waited for where they are read).
                        let double = carried_by.get(res).zip(Self::loop_key(&op.kind));
                        if let Some((&(tile_loop, t_it, t_res), product_loop)) = double {
                            for v in [t_it, t_res] {
                                p.kept.insert(v, next);
                                yielded_by.insert(v, *y);
                            }
                            p.used_results.remove(res);
                            p.double.insert(tile_loop, DoubleChain { col: next, cols, product_loop, carried: t_it });
                            next += cols;
                        }
                        next += cols;
                    }
                }
            }
            _ => {}
        });
        for (r, ab) in &operands {
            if p.in_flight.contains(r) {
                p.committed_rings.extend(ab.iter().filter_map(|x| ring_of.get(x)));
            }
        }
        // Each product left in flight a region of its own while it runs, after the chains':
        // from its issue to its wait (positions in program order, nested ops inside), first
        // fit among those whose runs do not meet — the post-loop product of a pipelined loop
        // takes the region its in-loop twin had.
        let (mut pos, mut at, mut until) = (0usize, BTreeMap::new(), BTreeMap::new());
        func.walk(&mut |op| {
            pos += 1;
            match (&op.kind, op.result) {
                (OpKind::Mma { .. }, Some(r)) if is_tcgen05(func, r) => {
                    at.insert(r, pos);
                }
                (OpKind::MmaWait { value, .. }, _) if deferred.contains(value) => {
                    until.insert(*value, pos);
                }
                _ => {}
            }
        });
        p.kept_cols = next;
        // An accumulator carried in TMEM: its product's region lives from the loop's start to
        // the wait of the product after the loop, which takes the same region.
        let carried_acc = carried_accumulators(func, &uses, &deferred, &until);
        let acc_span: BTreeMap<ValueId, (usize, usize)> = carried_acc.iter().map(|c| (c.product, c.span)).collect();
        let after_loop: BTreeSet<ValueId> = carried_acc.iter().filter_map(|c| Some(c.after?.1)).collect();
        let runs: Vec<(ValueId, i64, usize, usize)> = products
            .iter()
            .filter(|(r, _)| deferred.contains(r) && !p.kept.contains_key(r))
            .filter_map(|(r, c)| Some((*r, *c, *at.get(r)?, *until.get(r)?)))
            .map(|(r, c, f, t)| match acc_span.get(&r) {
                Some(&(f0, t0)) => (r, c, f.min(f0), t.max(t0)),
                None => (r, c, f, t),
            })
            .collect();
        // A carried in TMEM: its product's A region lives from the loop's start to the end of
        // the last read of it (the loop's end, or the product after the loop that reads the
        // loop's result); that product has no A region of its own.
        let mut a_span: BTreeMap<ValueId, (usize, usize)> = BTreeMap::new();
        for c in carried_a_operands(func, &uses, &deferred, &a_reads, &at, &until) {
            p.a_carried.insert(c.arg, c.product);
            if let Some((res, after)) = c.after {
                p.a_carried.insert(res, c.product);
                a_reads.remove(&after);
            }
            a_span.insert(c.product, c.span);
        }
        let mut placed = vec![];
        let acc_runs: Vec<_> = runs.iter().filter(|r| !after_loop.contains(&r.0)).copied().collect();
        p.deferred = first_fit(&mut placed, &acc_runs, next, 1);
        for c in &carried_acc {
            let col = p.deferred[&c.product];
            for v in [c.arg, c.product, c.wait, c.rescaled, c.result] {
                p.acc_carried.insert(v, col);
            }
            if let Some((_, after)) = c.after {
                p.deferred.insert(after, col);
            }
            if c.loaded {
                p.used_results.insert(c.result);
            }
        }
        p.deferred_cols = placed.iter().map(|&(c, n, ..)| c + n).max().unwrap_or(next) - next;
        // The products waited for at once share one region, live from the first one's issue
        // to the last one's (in program order), placed among the others' as they are: the
        // post-loop products of a loop whose products were left in flight reuse their columns.
        let others: Vec<&(ValueId, i64)> =
            products.iter().filter(|(r, _)| !p.kept.contains_key(r) && !p.deferred.contains_key(r)).collect();
        // The first and last issue of some products.
        let span = |rs: Vec<ValueId>| {
            let pos: Vec<usize> = rs.iter().filter_map(|r| at.get(r).copied()).collect();
            Some((*pos.iter().min()?, *pos.iter().max()?))
        };
        let scratch = others.iter().map(|(_, c)| *c).max().unwrap_or(0);
        p.scratch = next;
        if let (true, Some((from, to))) = (scratch > 0, span(others.iter().map(|(r, _)| *r).collect())) {
            p.scratch = fit(&placed, scratch, from, to, next, 1);
            placed.push((p.scratch, scratch, from, to));
        }
        p.scratch_cols = scratch;
        let mut total = placed.iter().map(|&(c, n, ..)| c + n).max().unwrap_or(next);
        // The A regions in columns of their own after the accumulators, at multiples of 32:
        // each in-flight product's its own while it runs, the shared one while the products
        // waited for at once that read A from TMEM are issued.
        for (r, c) in &a_reads {
            if !p.deferred.contains_key(r) {
                a_cols = a_cols.max(*c);
            }
        }
        let a_start = (total + 31) / 32 * 32;
        let a_runs: Vec<(ValueId, i64, usize, usize)> = runs
            .iter()
            .filter_map(|&(r, _, f, t)| {
                let (f, t) = a_span.get(&r).map_or((f, t), |&(f0, t0)| (f.min(f0), t.max(t0)));
                Some((r, *a_reads.get(&r)?, f, t))
            })
            .collect();
        let mut a_placed = vec![];
        p.deferred_a = first_fit(&mut a_placed, &a_runs, a_start, 32);
        p.a_region = a_start;
        let shared_a = a_reads.keys().filter(|r| !p.deferred.contains_key(r)).copied().collect();
        if let (true, Some((from, to))) = (a_cols > 0, span(shared_a)) {
            p.a_region = fit(&a_placed, a_cols, from, to, a_start, 32);
            a_placed.push((p.a_region, a_cols, from, to));
        }
        p.a_cols = a_cols;
        total = a_placed.iter().map(|&(c, n, ..)| c + n).max().unwrap_or(total).max(total);
        // The scale factors at a multiple of 32 columns after everything else, a region a
        // stage of an in-flight product's A ring.
        p.scale_region = (total + 31) / 32 * 32;
        p.scale_cols = scale_cols;
        p.scale_slots = 1;
        for (r, a) in &scaled {
            if let (true, Some(ring)) = (p.in_flight.contains(r), ring_of.get(a)) {
                p.scale_slots = p.scale_slots.max(func.ty(*ring).shape()[0]);
            }
        }
        let total = if scale_cols > 0 { p.scale_region + scale_cols * p.scale_slots } else { total };
        if total > TMEM_COLUMNS {
            return Err(err(format!(
                "the kernel's tcgen05 accumulators need {total} columns of Tensor Memory; a block has {TMEM_COLUMNS}"
            )));
        }
        p.columns = if total == 0 { 0 } else { (total.max(32) as u64).next_power_of_two() as i64 };
        product_chains(func, &func.ops, &uses, &mut p.chained);
        // (A loop's chain kept in TMEM has its own column: its products stay as they are.)
        p.chained.retain(|f, s| !p.kept.contains_key(f) && !p.kept.contains_key(s));
        // Loops whose body holds a product, and those where one is standalone.
        func.walk(&mut |op| {
            let (OpKind::For { body, .. }, Some(k)) = (&op.kind, Self::loop_key(&op.kind)) else { return };
            let (mut any, mut standalone) = (false, false);
            walk_ops(body, &mut |o| {
                if is_tcgen05_product(func, o) {
                    any = true;
                    standalone |= o.result.is_some_and(|r| !p.kept.contains_key(&r));
                }
            });
            if any {
                p.product_loops.insert(k);
            }
            // (A tile loop reading the previous tile's accumulator: the region it read is the
            // one the next iteration's products write.)
            if standalone || p.double.contains_key(&k) {
                p.dirty_loops.insert(k);
            }
        });
        Ok(p)
    }

    /// The key [`TmemPlan::dirty_loops`] knows a loop by.
    pub(crate) fn loop_key(op: &OpKind) -> Option<ValueId> {
        match op {
            OpKind::For { iters, body, .. } => iters.first().copied().or(body.iter().find_map(|o| o.result)),
            _ => None,
        }
    }
}

/// The products of `ops` (and of their regions) that accumulate into the product right after
/// them ([`TmemPlan::chained`]): the first's only use is the second's accumulator, both
/// tcgen05 of one 256-column block, of the same layout, without block scales, neither reading
/// A from Tensor Memory (the second's A stores would meet the first's A region while it may
/// still run). Nothing between them to lower: their operands are in place before the first.
fn product_chains(
    func: &Func,
    ops: &[tilec_core::tir::Op],
    uses: &BTreeMap<ValueId, usize>,
    out: &mut BTreeMap<ValueId, ValueId>,
) {
    let plain = |op: &tilec_core::tir::Op| match (&op.kind, op.result) {
        (OpKind::Mma { a, acc, scales: None, .. }, Some(r))
            if is_tcgen05(func, r) && Mma::tcgen05_n_blocks(func.ty(r).shape()) == 1 =>
        {
            let Some(Layout::Mma(m)) = func.ty(r).layout() else { return None };
            (!reads_a_from_tmem(func, *a, m)).then_some((r, *acc))
        }
        _ => None,
    };
    for pair in ops.windows(2) {
        if let (Some((first, _)), Some((second, acc))) = (plain(&pair[0]), plain(&pair[1])) {
            if acc == first && uses.get(&first) == Some(&1) && func.ty(first) == func.ty(second) {
                out.insert(first, second);
            }
        }
    }
    for op in ops {
        match &op.kind {
            OpKind::For { body, .. } => product_chains(func, body, uses, out),
            OpKind::If { then_ops, else_ops, .. } => {
                product_chains(func, then_ops, uses, out);
                product_chains(func, else_ops, uses, out);
            }
            _ => {}
        }
    }
}

/// A 16-bit A operand a loop carries to the product in its body that reads it from Tensor
/// Memory (FlashAttention-4's P in OVERLAP's order: computed by iteration `j`'s softmax, read
/// by iteration `j + 1`'s `P·V`).
struct CarriedA {
    /// The iteration argument, and the product in the body reading it (its only use).
    arg: ValueId,
    product: ValueId,
    /// The loop's result and the product after the loop that reads it (its only use).
    after: Option<(ValueId, ValueId)>,
    /// Program positions from the loop's start to the last read of the region.
    span: (usize, usize),
}

/// The A operands a loop may carry in its product's A region of Tensor Memory instead of
/// registers: the loop stores the yielded registers there where it yields them (its initial
/// value before it), and the product reads them without a store of its own. Where the
/// registers were carried, ptxas moved each one into the consecutive registers `tcgen05.st`
/// takes at the top of the next iteration (36 moves a key tile in FMHA at D = 64), and each
/// product reading A from TMEM had its own stores, so a block barrier of its own before its
/// issue; stored at the yield, the iteration's products are issued back to back after one.
///
/// Sound where, when the loop yields, no product still reads the region: the product in the
/// body is left in flight (its own A region) and waited for in the body itself, at its top
/// level (every iteration, before the yield); the argument has no other use; the result
/// either none or one product after the loop reading A from TMEM in the same layout.
fn carried_a_operands(
    func: &Func,
    uses: &BTreeMap<ValueId, usize>,
    deferred: &BTreeSet<ValueId>,
    a_reads: &BTreeMap<ValueId, i64>,
    at: &BTreeMap<ValueId, usize>,
    until: &BTreeMap<ValueId, usize>,
) -> Vec<CarriedA> {
    // Who reads a value as its A (products reading A from TMEM).
    let mut a_of: BTreeMap<ValueId, ValueId> = BTreeMap::new();
    func.walk(&mut |op| {
        if let (OpKind::Mma { a, .. }, Some(r)) = (&op.kind, op.result) {
            if a_reads.contains_key(&r) {
                a_of.insert(*a, r);
            }
        }
    });
    let mut out = vec![];
    let mut pos = 0usize;
    func.walk(&mut |op| {
        pos += 1;
        let OpKind::For { iters, results, body, .. } = &op.kind else { return };
        let mut end = pos;
        walk_ops(body, &mut |_| end += 1);
        let top_waits: BTreeSet<ValueId> = body
            .iter()
            .filter_map(|o| match &o.kind {
                OpKind::MmaWait { value, .. } => Some(*value),
                _ => None,
            })
            .collect();
        for (it, res) in iters.iter().zip(results) {
            let Some(&product) = a_of.get(it) else { continue };
            let in_body = body.iter().any(|o| o.result == Some(product));
            if !in_body || uses.get(it) != Some(&1) || !deferred.contains(&product) || !top_waits.contains(&product) {
                continue;
            }
            let after = match uses.get(res).copied().unwrap_or(0) {
                0 => None,
                1 => match a_of.get(res) {
                    Some(&m2) if func.ty(m2).layout() == func.ty(product).layout() => Some((*res, m2)),
                    _ => continue,
                },
                _ => continue,
            };
            let last = after.and_then(|(_, m2)| until.get(&m2).or(at.get(&m2)).copied()).unwrap_or(end);
            out.push(CarriedA { arg: *it, product, after, span: (pos, last.max(end)) });
        }
    });
    out
}

/// An accumulator a loop carries through a product and a row rescale (FlashAttention-4's O:
/// `acc = mma(p, v, acc)`, waited for, `acc = acc * alpha`, yielded).
struct CarriedAcc {
    arg: ValueId,
    product: ValueId,
    wait: ValueId,
    rescaled: ValueId,
    result: ValueId,
    /// The loop's result and the product after the loop accumulating onto it (its only use).
    after: Option<(ValueId, ValueId)>,
    /// Whether the result is used otherwise (then loaded into registers at the loop's exit).
    loaded: bool,
    /// Program positions from the loop's start to the wait of the product after it.
    span: (usize, usize),
}

/// The accumulators a loop may keep in its product's Tensor Memory region across iterations
/// instead of registers: stored there before the loop, accumulated onto in place, waited for
/// without a load, rescaled in place (`tcgen05.ld`, the multiply, `tcgen05.st` — skipped by a
/// warp whose factors are all 1.0, FlashAttention-4's conditional rescale), loaded only by the
/// wait of the product after the loop. In registers the accumulator went into TMEM before each
/// product and out after it (a `tcgen05.st` and a block barrier before the issue, a
/// `tcgen05.ld` every iteration, 32 to 64 registers through the softmax).
///
/// The pattern, every op at the loop body's top level: the argument's only use is a tcgen05
/// product left in flight; the product's only use its `mma_wait`; the wait's only use a
/// multiply by a row factor (a broadcast f32 tile) whose only use is the yield; the loop's
/// result unused, the accumulator of one product after the loop (left in flight too: it
/// accumulates in place and its wait loads the region), or loaded at the loop's exit.
fn carried_accumulators(
    func: &Func,
    uses: &BTreeMap<ValueId, usize>,
    deferred: &BTreeSet<ValueId>,
    until: &BTreeMap<ValueId, usize>,
) -> Vec<CarriedAcc> {
    let mut acc_of: BTreeMap<ValueId, ValueId> = BTreeMap::new();
    let mut broadcasts: BTreeSet<ValueId> = BTreeSet::new();
    func.walk(&mut |op| match (&op.kind, op.result) {
        (OpKind::Mma { acc, scales: None, .. }, Some(r)) if is_tcgen05(func, r) && deferred.contains(&r) => {
            acc_of.insert(*acc, r);
        }
        (OpKind::Broadcast(_), Some(r)) => {
            broadcasts.insert(r);
        }
        _ => {}
    });
    let once = |v: &ValueId| uses.get(v) == Some(&1);
    let mut out = vec![];
    let mut pos = 0usize;
    func.walk(&mut |op| {
        pos += 1;
        let OpKind::For { iters, yields, results, body, .. } = &op.kind else { return };
        let mut end = pos;
        walk_ops(body, &mut |_| end += 1);
        let wait_of = |v: ValueId| {
            body.iter().find_map(|o| match (&o.kind, o.result) {
                (OpKind::MmaWait { value, .. }, Some(w)) if *value == v => Some(w),
                _ => None,
            })
        };
        let scaled = |w: ValueId| {
            body.iter().find_map(|o| match (&o.kind, o.result) {
                (OpKind::Binary { op: tilec_core::tir::BinOp::Mul, lhs, rhs, .. }, Some(u)) => {
                    let other = if *lhs == w {
                        *rhs
                    } else if *rhs == w {
                        *lhs
                    } else {
                        return None;
                    };
                    broadcasts.contains(&other).then_some(u)
                }
                _ => None,
            })
        };
        for ((it, y), res) in iters.iter().zip(yields).zip(results) {
            let Some(&product) = acc_of.get(it) else { continue };
            let whole = Mma::tcgen05_n_blocks(func.ty(product).shape()) == 1;
            if !whole || !body.iter().any(|o| o.result == Some(product)) || !once(it) || !once(&product) {
                continue;
            }
            let Some(wait) = wait_of(product).filter(once) else { continue };
            let Some(rescaled) = scaled(wait).filter(|u| u == y && once(u)) else { continue };
            if func.ty(*it).dtype() != DType::F32 {
                continue;
            }
            // (Any other use of the result: loaded from the region where the loop exits.)
            let after = match acc_of.get(res) {
                Some(&m2) if once(res) && until.contains_key(&m2) => Some((*res, m2)),
                _ => None,
            };
            let loaded = after.is_none() && uses.get(res).is_some_and(|&n| n > 0);
            let last = after.and_then(|(_, m2)| until.get(&m2).copied()).unwrap_or(end).max(end);
            out.push(CarriedAcc { arg: *it, product, wait, rescaled, result: *res, after, loaded, span: (pos, last) });
        }
    });
    out
}

/// Columns for regions that live from one program position to another (`(value, columns,
/// from, to)`), from column `start` on, among those already `placed` (`(column, columns,
/// from, to)`, extended with these): each takes the first column (a multiple of `align`)
/// where it shares no column with a region it overlaps in time. Returns each one's column.
fn first_fit(
    placed: &mut Vec<(i64, i64, usize, usize)>,
    runs: &[(ValueId, i64, usize, usize)],
    start: i64,
    align: i64,
) -> BTreeMap<ValueId, i64> {
    let mut cols = BTreeMap::new();
    for &(r, c, from, to) in runs {
        let col = fit(placed, c, from, to, start, align);
        placed.push((col, c, from, to));
        cols.insert(r, col);
    }
    cols
}

/// The first column from `start` (a multiple of `align`) where `c` columns live from `from`
/// to `to` without sharing a column with a `placed` region that overlaps them in time.
fn fit(placed: &[(i64, i64, usize, usize)], c: i64, from: usize, to: usize, start: i64, align: i64) -> i64 {
    let mut col = start;
    while let Some(&(c0, n0, ..)) =
        placed.iter().find(|&&(c0, n0, f, t)| f <= to && from <= t && c0 < col + c && col < c0 + n0)
    {
        col = (c0 + n0 + align - 1) / align * align;
    }
    col
}

/// The 128-row block and the column range of warp `warp`'s registers of block `block` (of
/// those it holds, in register order) of a tcgen05 accumulator laid out as `m`
/// ([`Mma::tcgen05`]: the warp bits past the quarter walk the blocks, then the ranges).
fn warp_block_range(m: Mma, warp: i64, block: i64) -> (i64, i64) {
    let (bw, g) = (m.tcgen05_block_warps(), warp / 4);
    (block * bw + g % bw, g / bw)
}

/// The TMEM address (lane in bits 16-31, column in 0-15) of the first register of the
/// `block`-th 128-row block that warp `warp` loads, for an accumulator of `shape` laid out as
/// `m` at column `base`: its lane quarter, its block and its column range.
pub(crate) fn ld_origin(shape: &[i64], m: Mma, base: i64, warp: i64, block: i64) -> (i64, i64) {
    let cols = shape[1] / m.warps_per_cta[1];
    let (blk, range) = warp_block_range(m, warp, block);
    (32 * (warp % 4), base + blk * shape[1] + range * cols)
}

/// The TMEM address (lane, column) where warp `warp` loads its first register of an
/// accumulator of fewer than 128 rows (`Mma::tcgen05`: M = 64 instruction) of `shape` at
/// column `base`: the first lane of its quarter, and its column range — the warp bits past
/// the `M / 16` row blocks count the ranges.
pub(crate) fn small_origin(shape: &[i64], m: Mma, base: i64, warp: i64) -> (i64, i64) {
    let cols = shape[1] / m.warps_per_cta[1];
    (32 * (warp % 4), base + (warp >> m.warps_per_cta[0].trailing_zeros()) * cols)
}

/// One `tcgen05.mma` to issue: D's TMEM address, A's descriptor (or TMEM address), B's
/// descriptor, whether D is read (a register: 0 or 1), the instruction descriptor, and a
/// block-scaled one's scale addresses (A's, B's).
pub(crate) struct Issue {
    d: Reg,
    a: Reg,
    b: Reg,
    en: Reg,
    id: Reg,
    scales: Option<(Reg, Reg)>,
}

/// TMEM columns the scale factors of a block-scaled product of `[m, n]` with `ks` K blocks
/// take, A's and B's: a set of `rows / 32` columns per four K blocks (`tmem::scale_cell`).
pub(crate) fn scale_columns(m: i64, n: i64, ks: i64) -> [i64; 2] {
    let sets = (ks + 3) / 4;
    [sets * (m / 32), sets * (n / 32)]
}

/// The `tcgen05.ld/st` shape of an accumulator's registers and the operand that follows the
/// address: `32x32b` (a lane a thread) for 128-row blocks; `16x32bx2` and its half-split
/// offset (lanes 16-31 read the same TMEM lanes that many columns on) below 128 rows.
fn ld_form(m: Mma, shape: &[i64]) -> (&'static str, String) {
    if m.m64 {
        ("16x32bx2", format!(", {}", shape[1] / m.warps_per_cta[1] / 2))
    } else {
        ("32x32b", String::new())
    }
}

/// The TMEM address (lane, column) where warp `warp` stores the first packed register of the
/// `block`-th 128-row block it holds of an A operand of `shape` laid out as `m`, read from
/// TMEM at column `base`: its lane quarter, and its K range `per` elements a column
/// (`tmem::a_operand_cell`).
pub(crate) fn a_origin(shape: &[i64], m: Mma, per: i64, base: i64, warp: i64, block: i64) -> (i64, i64) {
    let (blk, range) = warp_block_range(m, warp, block);
    (32 * (warp % 4), base + (blk * shape[1] + range * (shape[1] / m.warps_per_cta[1])) / per)
}

/// A warp's TMEM address (lane in bits 16-31, column in 0-15) as the lowering computes it,
/// linear in the warp's fields: `first + (w % 4) · per_quarter + b · per_block + r ·
/// per_range`, for `g = w / 4` the warpgroup, `b` its low `block_bits` bits (the block it
/// takes) and `r` the rest (its column range). `tmem_thread_addr` emits it;
/// `warp_addresses_are_their_origins` holds it to the origin functions for every warp.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct WarpAddress {
    first: i64,
    per_quarter: i64,
    block_bits: u32,
    per_block: i64,
    per_range: i64,
}

impl WarpAddress {
    /// The terms of a layout `m`'s placement `origin` (warp → lane, column), read off warps 0,
    /// 1, 4 and `4 · bw`.
    pub(crate) fn of(m: Mma, origin: impl Fn(i64) -> (i64, i64)) -> WarpAddress {
        let (bw, wn) = (m.tcgen05_block_warps(), m.warps_per_cta[1]);
        let (l0, c0) = origin(0);
        let col = |w: i64, on: bool| if on { origin(w).1 - c0 } else { 0 };
        WarpAddress {
            first: (l0 << 16) + c0,
            per_quarter: (origin(1).0 - l0) << 16,
            block_bits: bw.trailing_zeros(),
            per_block: col(4, bw > 1),
            per_range: col(4 * bw, wn > 1),
        }
    }

    /// The address of warp `w`.
    #[cfg(test)]
    pub(crate) fn at(&self, w: i64) -> i64 {
        let g = w / 4;
        let b = g & ((1 << self.block_bits) - 1);
        self.first + (w % 4) * self.per_quarter + b * self.per_block + (g >> self.block_bits) * self.per_range
    }
}

/// The bits of a tcgen05 shared-memory descriptor besides the start address.
pub(crate) fn descriptor_bits(swizzle_bytes: i64, k_major: bool, rows: i64) -> i64 {
    let (lbo, sbo) = if k_major { (16, 8 * swizzle_bytes) } else { (rows * swizzle_bytes, 8 * swizzle_bytes) };
    let layout = match swizzle_bytes {
        128 => 2,
        64 => 4,
        32 => 6,
        _ => 0,
    };
    ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 46) | (layout << 61)
}

/// Columns one `tcgen05.ld`/`st` moves per thread (`.x32`): a chunk of the thread's row.
const CHUNK: i64 = 32;

impl Lowering<'_> {
    /// The kernel's TMEM: allocated by warp 0, the mbarrier products commit to initialised,
    /// both published; the base address read by every thread. Before the kernel's ops.
    pub(crate) fn tmem_begin(&mut self) -> Result<(), Diagnostic> {
        let cols = self.facts.tmem.columns;
        if cols == 0 {
            return Ok(());
        }
        // The address slot (4 bytes) and the mbarrier (8), then one mbarrier for each product
        // left in flight, live for the whole kernel.
        let deferred: Vec<ValueId> = self.facts.tmem.deferred.keys().copied().collect();
        // Then two for each double-buffered chain, one a region.
        let double: Vec<ValueId> = self.facts.tmem.double.keys().copied().collect();
        // A CTA pair's products (`cta_group::2`): one more, the leader's, on which the peer
        // says its threads are done with TMEM before the leader issues into it again.
        let pair = self.facts.pair.is_some();
        let n_bars = deferred.len() + 2 * double.len() + usize::from(pair);
        let off = self.smem_alloc(16 + 8 * n_bars as i64, u32::MAX, 16)?;
        let base = self.smem_address();
        let o = self.em.ci32(off);
        let slot = self.em.add(&base, &o);
        let c8 = self.em.ci32(8);
        let bar = self.em.add(&slot, &c8);
        let cg = self.cta_group();
        // cta_group::2: warp 0 of each CTA of the pair, together; the same columns in both.
        self.on_warp0(|lw| {
            let mut asm = PtxAsm::new();
            let s = asm.input(&slot);
            asm.push(&format!(
                "tcgen05.alloc.cta_group::{cg}.sync.aligned.shared::cta.b32 [{s}], {cols}; tcgen05.relinquish_alloc_permit.cta_group::{cg}.sync.aligned;"
            ));
            asm.emit(&mut lw.em);
        })?;
        let mut bars = vec![bar.clone()];
        for (k, r) in deferred.iter().enumerate() {
            let c = self.em.ci32(16 + 8 * k as i64);
            let b = self.em.add(&slot, &c);
            self.tmem_bars.insert(*r, b.clone());
            bars.push(b);
        }
        for (k, t) in double.iter().enumerate() {
            let at = 16 + 8 * (deferred.len() + 2 * k) as i64;
            let (c0, c1) = (self.em.ci32(at), self.em.ci32(at + 8));
            let b0 = self.em.add(&slot, &c0);
            bars.push(b0.clone());
            bars.push(self.em.add(&slot, &c1));
            self.tmem_double_bars.insert(*t, b0);
        }
        let pair_bar = if pair {
            let at = self.em.ci32(16 + 8 * (n_bars as i64 - 1));
            let b = self.em.add(&slot, &at);
            self.tmem_pair_bar = Some(b.clone());
            Some(b)
        } else {
            None
        };
        let arrivals = i64::from(self.func.num_warps) * 32 + 1;
        self.on_issuer(|lw| {
            for bar in &bars {
                let mut asm = PtxAsm::new();
                let b = asm.input(bar);
                asm.push(&format!("mbarrier.init.shared::cta.b64 [{b}], {arrivals};"));
                asm.emit(&mut lw.em);
            }
            if let Some(pb) = &pair_bar {
                // The leader's issuer and the peer's one remote arrival.
                let mut asm = PtxAsm::new();
                let b = asm.input(pb);
                asm.push(&format!("mbarrier.init.shared::cta.b64 [{b}], 2; fence.mbarrier_init.release.cluster;"));
                asm.emit(&mut lw.em);
            }
            Ok(())
        })?;
        self.tmem_thread_sync();
        let mut asm = PtxAsm::new();
        let out = asm.output(Ty::I32);
        let s = asm.input(&slot);
        asm.push(&format!("ld.shared.b32 {out}, [{s}];"));
        let addr = asm.emit(&mut self.em).pop().ok_or_else(|| err("the TMEM address load has no result"))?;
        self.tmem = Some((addr, bar));
        let t = &self.facts.tmem;
        let mut a = if t.a_cols > 0 {
            format!(", {} for A operands read from TMEM at column {}", t.a_cols, t.a_region)
        } else {
            String::new()
        };
        if t.scale_cols > 0 {
            a += &format!(
                ", {} x {} for block scales at column {} (a region a stage of an in-flight product's A ring)",
                t.scale_slots, t.scale_cols, t.scale_region
            );
        }
        let d = if t.deferred.is_empty() {
            String::new()
        } else {
            format!(
                ", {} for the {} product(s) left in flight until their mma_wait (a region each while it runs{})",
                t.deferred_cols,
                t.deferred.len(),
                if t.deferred_a.is_empty() {
                    String::new()
                } else {
                    format!(", and an A region of its own for each of the {} reading A from TMEM", t.deferred_a.len())
                }
            )
        };
        let d2 = if t.double.is_empty() {
            String::new()
        } else {
            format!(
                ", {} chain(s) of them double-buffered across the tile loop (two regions, an mbarrier each)",
                t.double.len()
            )
        };
        self.report.push(format!(
            "tmem: {cols} columns allocated ({} for accumulators kept across loops{d2}{d}, {} shared by the other products{a}); its address and the products' mbarrier(s) at shared {off}",
            t.kept_cols, t.scratch_cols
        ));
        Ok(())
    }

    /// Frees the kernel's TMEM once every thread is done with it. After the kernel's ops.
    pub(crate) fn tmem_end(&mut self) -> Result<(), Diagnostic> {
        let Some((addr, _)) = self.tmem.clone() else { return Ok(()) };
        let cols = self.facts.tmem.columns;
        self.tmem_thread_sync();
        let cg = self.cta_group();
        if cg == 2 {
            // Neither CTA frees the pair's columns while the other may still use them (the
            // PTX ISA's example: a cluster barrier, then the dealloc, then exit).
            super::tma::cluster_sync(&mut self.em);
        }
        self.on_warp0(|lw| {
            let mut asm = PtxAsm::new();
            let a = asm.input(&addr);
            asm.push(&format!("tcgen05.dealloc.cta_group::{cg}.sync.aligned.b32 {a}, {cols};"));
            asm.emit(&mut lw.em);
        })
    }

    /// 2 where a CTA pair's products are `cta_group::2` ones (every tcgen05 instruction of
    /// the kernel then says so), else 1.
    pub(crate) fn cta_group(&self) -> u32 {
        if self.facts.pair.is_some() {
            2
        } else {
            1
        }
    }

    /// `f` in the thread that issues products: the TMA issuer — of the pair's leader only,
    /// where the products are `cta_group::2` (one instruction for both CTAs).
    fn on_mma_issuer(&mut self, f: impl FnOnce(&mut Self) -> Result<(), Diagnostic>) -> Result<(), Diagnostic> {
        if self.facts.pair.is_none() {
            return self.on_issuer(f);
        }
        self.on_leader(|lw| lw.on_issuer(f))
    }

    /// Before products are issued after TMEM was read or written: every thread's accesses
    /// ordered before them (`tmem_thread_sync`) — in both CTAs where the products are the
    /// pair's: the peer's first thread, after its CTA's sync, arrives on the leader's pair
    /// mbarrier (release at cluster scope), and the leader's issuer arrives there too and
    /// waits for the phase of its own arrival (the peer cannot arrive twice before it: its
    /// next arrival follows a product the leader issues after this one).
    fn tmem_issue_sync(&mut self) -> Result<(), Diagnostic> {
        let Some(pb) = self.tmem_pair_bar.clone() else {
            self.tmem_thread_sync();
            return Ok(());
        };
        let mut handshake = Ok(());
        self.tmem_fenced(|lw| {
            let r = lw.cluster_rank();
            handshake = lw.on_issuer(|lw| {
                let mut asm = PtxAsm::new();
                let (b, rk) = (asm.input(&pb), asm.input(&r));
                asm.push(&format!(
                    "{{ .reg .pred L, P1; .reg .b32 rb; .reg .b64 st; setp.eq.u32 L, {rk}, 0; @!L mapa.shared::cluster.u32 rb, {b}, 0; @!L mbarrier.arrive.release.cluster.shared::cluster.b64 _, [rb]; @L mbarrier.arrive.shared::cta.b64 st, [{b}]; @!L bra PAIR_DONE; PAIR_WAIT: mbarrier.try_wait.acquire.cluster.shared::cta.b64 P1, [{b}], st; @!P1 bra PAIR_WAIT; PAIR_DONE: }}"
                ));
                asm.emit(&mut lw.em);
                Ok(())
            });
        });
        handshake
    }

    /// `f` in warp 0 only (the `.sync.aligned` allocation instructions take a whole warp).
    fn on_warp0(&mut self, f: impl FnOnce(&mut Self)) -> Result<(), Diagnostic> {
        let z = self.em.ci32(0);
        let warp = self.warp.clone();
        let is0 = self.em.icmp(super::emit::ICmp::Eq, &warp, &z);
        self.when(&is0, |lw| {
            f(lw);
            Ok(())
        })
    }

    /// Orders every thread's TMEM accesses so far before what any thread does next.
    fn tmem_thread_sync(&mut self) {
        self.tmem_fenced(|_| {});
    }

    /// A block-wide barrier between the tcgen05 fences (`before`, the barrier, `between`,
    /// `after`): what one thread's tcgen05 operations did is ordered before what any
    /// thread's do next.
    fn tmem_fenced(&mut self, between: impl FnOnce(&mut Self)) {
        self.em.line("nvvm.tcgen05.fence #nvvm.tcgen05_fence<before>");
        self.full_barrier();
        between(self);
        self.em.line("nvvm.tcgen05.fence #nvvm.tcgen05_fence<after>");
        self.tmem_dirty = false;
    }

    fn tmem_base(&self) -> Result<(Reg, Reg), Diagnostic> {
        self.tmem.clone().ok_or_else(|| err("a tcgen05 product in a kernel without TMEM"))
    }

    /// This thread's TMEM address for block `block` of a tile of `shape` at `col`, placed by
    /// `origin` (warp → its first register's lane and column: [`ld_origin`] for an
    /// accumulator, [`a_origin`] for an A operand), as [`WarpAddress`] computes it.
    fn tmem_thread_addr(&mut self, m: Mma, origin: impl Fn(i64) -> (i64, i64)) -> Result<Reg, Diagnostic> {
        let (addr, _) = self.tmem_base()?;
        let w = WarpAddress::of(m, origin);
        let warp = self.warp.clone();
        let (c3, c2) = (self.em.ci32(3), self.em.ci32(2));
        let q = self.em.and(&warp, &c3);
        let per_q = self.em.ci32(w.per_quarter);
        let qo = self.em.mul(&q, &per_q);
        let g = self.em.lshr(&warp, &c2);
        let go = if w.block_bits == 0 {
            let per_g = self.em.ci32(w.per_range);
            self.em.mul(&g, &per_g)
        } else {
            // The warpgroup's low bits pick its block, the rest its column range.
            let per_b = self.em.ci32(w.per_block);
            let (mask, lg) = (self.em.ci32((1 << w.block_bits) - 1), self.em.ci32(i64::from(w.block_bits)));
            let gb = self.em.and(&g, &mask);
            let bo = self.em.mul(&gb, &per_b);
            let gr = self.em.lshr(&g, &lg);
            let per_r = self.em.ci32(w.per_range);
            let ro = self.em.mul(&gr, &per_r);
            self.em.add(&bo, &ro)
        };
        let k = self.em.ci32(w.first);
        let t = self.em.add(&addr, &k);
        let t = self.em.add(&t, &qo);
        Ok(self.em.add(&t, &go))
    }

    /// This thread's TMEM address at column `col` of the first lane of its warp's quarter
    /// (warp `w` reaches lanes `32 (w % 4) …` only).
    fn tmem_quarter_addr(&mut self, col: i64) -> Result<Reg, Diagnostic> {
        let (tbase, _) = self.tmem_base()?;
        let warp = self.warp.clone();
        let c3 = self.em.ci32(3);
        let q = self.em.and(&warp, &c3);
        let per_q = self.em.ci32(32 << 16);
        let qo = self.em.mul(&q, &per_q);
        let c = self.em.ci32(col);
        let at = self.em.add(&tbase, &c);
        Ok(self.em.add(&at, &qo))
    }

    /// `tcgen05.st.32x32b` of 32-bit `words` into this thread's lane from TMEM address `at` on,
    /// one column each, in the widest power-of-two pieces `.xN` takes.
    fn tmem_store_words(&mut self, at: &Reg, words: &[Reg]) {
        let mut c0 = 0usize;
        while c0 < words.len() {
            let n = 1usize << (words.len() - c0).min(CHUNK as usize).ilog2();
            let a = if c0 == 0 {
                at.clone()
            } else {
                let o = self.em.ci32(c0 as i64);
                self.em.add(at, &o)
            };
            let mut asm = PtxAsm::new();
            let ai = asm.input(&a);
            let ins: Vec<String> = words[c0..c0 + n].iter().map(|r| asm.input(r)).collect();
            asm.push(&format!("tcgen05.st.sync.aligned.32x32b.x{n}.b32 [{ai}], {{{}}};", ins.join(", ")));
            asm.emit(&mut self.em);
            c0 += n;
        }
    }

    /// Calls `f` with each `tcgen05.ld/st` chunk of this thread's registers of an accumulator
    /// of `shape` at `col`, in register order: (TMEM address, first register, registers).
    fn each_tmem_chunk(
        &mut self,
        m: Mma,
        shape: &[i64],
        col: i64,
        mut f: impl FnMut(&mut Self, Reg, usize, i64),
    ) -> Result<(), Diagnostic> {
        let cols = shape[1] / m.warps_per_cta[1];
        if m.m64 {
            // 16x32bx2: the thread's half of its warp's column range, from the warp's quarter.
            let (l0, c0) = small_origin(shape, m, col, 0);
            let warp = self.warp.clone();
            let lg = self.em.ci32(i64::from(m.warps_per_cta[0].trailing_zeros()));
            let range = self.em.lshr(&warp, &lg);
            let per_range = self.em.ci32(cols);
            let ro = self.em.mul(&range, &per_range);
            let at = self.tmem_quarter_addr((l0 << 16) + c0)?;
            let at = self.em.add(&at, &ro);
            let half = cols / 2;
            for c0 in (0..half).step_by(CHUNK as usize) {
                let a = if c0 == 0 {
                    at.clone()
                } else {
                    let o = self.em.ci32(c0);
                    self.em.add(&at, &o)
                };
                f(self, a, c0 as usize, CHUNK.min(half));
            }
            return Ok(());
        }
        for blk in 0..(shape[0] / TCGEN05_M / m.tcgen05_block_warps()) {
            let at = self.tmem_thread_addr(m, |w| ld_origin(shape, m, col, w, blk))?;
            for c0 in (0..cols).step_by(CHUNK as usize) {
                let a = if c0 == 0 {
                    at.clone()
                } else {
                    let o = self.em.ci32(c0);
                    self.em.add(&at, &o)
                };
                f(self, a, (blk * cols + c0) as usize, CHUNK.min(cols));
            }
        }
        Ok(())
    }

    /// `tcgen05.ld` of this thread's registers of an accumulator of `shape` at `col`.
    pub(crate) fn tmem_load(&mut self, m: Mma, shape: &[i64], col: i64) -> Result<Vec<Reg>, Diagnostic> {
        let mut regs = vec![];
        self.each_tmem_chunk(m, shape, col, |lw, a, _, n| {
            let mut asm = PtxAsm::new();
            let outs: Vec<String> = (0..n).map(|_| asm.output(Ty::I32)).collect();
            let ai = asm.input(&a);
            let (form, half) = ld_form(m, shape);
            asm.push(&format!("tcgen05.ld.sync.aligned.{form}.x{n}.b32 {{{}}}, [{ai}]{half};", outs.join(", ")));
            regs.extend(asm.emit(&mut lw.em));
        })?;
        // The registers pass through the wait, so no use moves above it.
        let mut asm = PtxAsm::new();
        for r in &regs {
            asm.inout(r, "r");
        }
        asm.push("tcgen05.wait::ld.sync.aligned;");
        let regs = asm.emit(&mut self.em);
        self.tmem_dirty = true;
        Ok(regs.iter().map(|r| self.em.bitcast(r, Ty::F32)).collect())
    }

    /// `tcgen05.st` of this thread's registers `regs` of an accumulator of `shape` at `col`.
    fn tmem_store(&mut self, m: Mma, shape: &[i64], col: i64, regs: &[Reg]) -> Result<(), Diagnostic> {
        let cols = shape[1] / m.warps_per_cta[1];
        let per_thread = if m.m64 { cols / 2 } else { cols * (shape[0] / TCGEN05_M / m.tcgen05_block_warps()) };
        if regs.len() as i64 != per_thread {
            return Err(err("tcgen05 accumulator registers do not match its layout"));
        }
        let bits: Vec<Reg> = regs.iter().map(|r| self.em.bitcast(r, Ty::I32)).collect();
        let (form, half) = ld_form(m, shape);
        self.each_tmem_chunk(m, shape, col, |lw, a, first, n| {
            let mut asm = PtxAsm::new();
            let ai = asm.input(&a);
            let ins: Vec<String> = bits[first..first + n as usize].iter().map(|r| asm.input(r)).collect();
            asm.push(&format!("tcgen05.st.sync.aligned.{form}.x{n}.b32 [{ai}]{half}, {{{}}};", ins.join(", ")));
            asm.emit(&mut lw.em);
        })?;
        self.em.line("nvvm.tcgen05.wait #nvvm.tcgen05_wait<store>");
        self.tmem_dirty = true;
        Ok(())
    }

    /// `tcgen05.st` of this thread's registers `regs` of a 16-bit or 8-bit A operand of
    /// `shape` (`dtype`) where the product reads it from TMEM, at column `col`: each two (four)
    /// consecutive K elements of the thread's row packed into one 32-bit column.
    fn tmem_store_a(&mut self, m: Mma, shape: &[i64], col: i64, regs: &[Reg], dtype: DType) -> Result<(), Diagnostic> {
        let cols = shape[1] / m.warps_per_cta[1];
        let blocks = shape[0] / TCGEN05_M / m.tcgen05_block_warps();
        let per = Mma::a_per_column(dtype.bytes());
        if regs.len() as i64 != cols * blocks || cols % per != 0 {
            return Err(err("the registers of an A operand read from TMEM do not match its layout"));
        }
        let elem = Ty::of(dtype);
        for blk in 0..blocks {
            let at = self.tmem_thread_addr(m, |w| a_origin(shape, m, per, col, w, blk))?;
            let mut words = vec![];
            for j in 0..cols / per {
                let r = (blk * cols + per * j) as usize;
                if per == 4 {
                    words.push(super::mma::bytes_to_word(&mut self.em, &regs[r..r + 4]));
                    continue;
                }
                let mut v = self.em.undef(Ty::Vector(per as u32, Box::new(elem.clone())));
                for e in 0..per {
                    v = self.em.insertelement(&v, &regs[r + e as usize], e);
                }
                words.push(self.em.bitcast(&v, Ty::I32));
            }
            self.tmem_store_words(&at, &words);
        }
        self.em.line("nvvm.tcgen05.wait #nvvm.tcgen05_wait<store>");
        self.tmem_dirty = true;
        Ok(())
    }

    /// Stores `v`'s registers into the A region of the product that reads the A operand
    /// `carried` (an iteration argument in [`TmemPlan::a_carried`]) from Tensor Memory — before
    /// the loop, or where the body yields the next one (the product waited for in the body
    /// already) — and returns the value the loop carries instead: the region.
    pub(crate) fn tmem_store_carried_a(&mut self, carried: ValueId, v: ValueId) -> Result<Value, Diagnostic> {
        let product = self.facts.tmem.a_carried[&carried];
        let (Some(&col), Some(Layout::Mma(m))) =
            (self.facts.tmem.deferred_a.get(&product), self.func.ty(product).layout().cloned())
        else {
            return Err(err("an A operand carried in Tensor Memory without a region"));
        };
        let regs = self.tile(v)?;
        let ty = self.func.ty(carried);
        self.tmem_store_a(m, ty.shape(), col, &regs, ty.dtype())?;
        Ok(Value::Tmem { col, alt: None })
    }

    /// `tcgen05.st` of a block-scaled product's scale tile `v` — A's `[rows, Ks]` or B's
    /// `[Ks, rows]`, laid out as `tile-layout` wants it (each thread the factors of rows
    /// `lane + 32 c`, all K blocks, `c` then the block in register order) — at TMEM column
    /// `col`: each thread writes its lane of its warp's quarter, one 32-bit word per row group
    /// and set of four K blocks (`tmem::scale_cell`; a set past the tile's blocks is padded
    /// with zero bytes), `slot` columns further on if given. Every quarter gets the whole tile.
    fn tmem_store_scales(&mut self, v: ValueId, rows: i64, col: i64, slot: Option<&Reg>) -> Result<(), Diagnostic> {
        let t = self.func.ty(v).clone();
        let ks = if t.shape()[0] == rows { t.shape()[1] } else { t.shape()[0] };
        let regs = self.tile(v)?;
        let groups = rows / 32;
        if regs.len() as i64 != groups * ks {
            return Err(err("the registers of a scale tile do not match the layout tcgen05 stores it from"));
        }
        let zero = self.em.cint(0, Ty::I8);
        let mut words = vec![];
        for set in 0..(ks + 3) / 4 {
            for g in 0..groups {
                let mut w = self.em.undef(Ty::Vector(4, Box::new(Ty::I8)));
                for byte in 0..4 {
                    let kb = 4 * set + byte;
                    let r = if kb < ks { &regs[(g * ks + kb) as usize] } else { &zero };
                    w = self.em.insertelement(&w, r, byte);
                }
                words.push(self.em.bitcast(&w, Ty::I32));
            }
        }
        let mut at = self.tmem_quarter_addr(col)?;
        if let Some(s) = slot {
            at = self.em.add(&at, s);
        }
        self.tmem_store_words(&at, &words);
        self.em.line("nvvm.tcgen05.wait #nvvm.tcgen05_wait<store>");
        self.tmem_dirty = true;
        Ok(())
    }

    /// The tcgen05 layout and the shape of the accumulator `v` (`what` names it in the error
    /// a value without that layout gets).
    fn accumulator_layout(&self, v: ValueId, what: &str) -> Result<(Mma, Vec<i64>), Diagnostic> {
        match self.func.ty(v) {
            Type::Tile { shape, layout: Some(Layout::Mma(m)), .. } => Ok((*m, shape.clone())),
            _ => Err(err(format!("{what} without a tcgen05 layout"))),
        }
    }

    /// The TMEM accumulator a loop chain starts from: `init`'s registers stored at `col`.
    pub(crate) fn tmem_chain_init(
        &mut self,
        init: ValueId,
        col: i64,
        alt: Option<&TmemAlt>,
    ) -> Result<Value, Diagnostic> {
        let (m, shape) = self.accumulator_layout(init, "a TMEM-carried accumulator")?;
        let regs = self.tile(init)?;
        self.with_tmem_shift(alt, |lw| lw.tmem_store(m, &shape, col, &regs))?;
        Ok(Value::Tmem { col, alt: alt.cloned() })
    }

    /// A chain's final accumulator, out of TMEM into registers.
    pub(crate) fn tmem_chain_result(
        &mut self,
        result: ValueId,
        col: i64,
        alt: Option<&TmemAlt>,
    ) -> Result<Value, Diagnostic> {
        let (m, shape) = self.accumulator_layout(result, "a TMEM-carried accumulator")?;
        Ok(Value::Tile(self.with_tmem_shift(alt, |lw| lw.tmem_load(m, &shape, col))?))
    }

    /// `f` with the kernel's TMEM address moved to a double-buffered chain's region at run
    /// time (`alt`'s shift, in columns: the address's low half).
    fn with_tmem_shift<T>(&mut self, alt: Option<&TmemAlt>, f: impl FnOnce(&mut Self) -> T) -> T {
        let (Some(a), Some((addr, bar))) = (alt, self.tmem.clone()) else { return f(self) };
        let moved = self.em.add(&addr, &a.shift);
        let saved = self.tmem.replace((moved, bar));
        let out = f(self);
        self.tmem = saved;
        out
    }

    /// The region of a double-buffered chain of `tile_loop` that slot `slot` (0 or 1, a
    /// register) names: its column shift and its mbarrier.
    pub(crate) fn tmem_region(
        &mut self,
        tile_loop: ValueId,
        d: &DoubleChain,
        slot: &Reg,
    ) -> Result<TmemAlt, Diagnostic> {
        let bar0 = self
            .tmem_double_bars
            .get(&tile_loop)
            .cloned()
            .ok_or_else(|| err("a double-buffered tcgen05 chain without its mbarriers"))?;
        let (cols, c8) = (self.em.ci32(d.cols), self.em.ci32(8));
        let shift = self.em.mul(slot, &cols);
        let o = self.em.mul(slot, &c8);
        Ok(TmemAlt { shift, bar: self.em.add(&bar0, &o) })
    }

    /// `mma` on the tcgen05 family: `acc + a · b`.
    pub(crate) fn tcgen05_mma(
        &mut self,
        [a, b, acc]: [ValueId; 3],
        scales: Option<(ValueId, ValueId)>,
        ty: &Type,
        m: Mma,
        result: Option<ValueId>,
    ) -> Result<Value, Diagnostic> {
        let shape = ty.shape().to_vec();
        let (ms, ns) = (shape[0], shape[1]);
        let ks = self.func.ty(a).shape()[1];
        let (dt, dtb) = (self.func.ty(a).dtype(), self.func.ty(b).dtype());
        let format = |d: DType| match d {
            DType::F16 => Some(Format::F16),
            DType::BF16 => Some(Format::BF16),
            DType::F8E4M3 => Some(Format::E4M3),
            DType::F8E5M2 => Some(Format::E5M2),
            _ => None,
        };
        // A block-scaled product: its form (`blockscale::ScaledForm`) and scale tiles; its
        // operands are 8-bit (fp8, or packed fp4 two a byte) as kind::f8f6f4's.
        let scaled = match scales {
            Some((sa, sb)) => {
                let t = |v: ValueId| self.func.ty(v);
                let shapes = [t(a).shape(), t(sa).shape(), t(b).shape(), t(sb).shape(), ty.shape()];
                let types = [dt, t(sa).dtype(), dtb, t(sb).dtype(), ty.dtype()];
                let f = tilec_core::layout::blockscale::scaled_mma_form(shapes, types).map_err(err)?;
                Some((f, sa, sb))
            }
            None => None,
        };
        let (fa, fb) = match (format(dt), format(dtb), &scaled) {
            (Some(fa), Some(fb), None) if fa.kind() == fb.kind() && (fa.kind() != "f16" || fa == fb) => (fa, fb),
            // (Unused by the block-scaled descriptor, which has its own formats.)
            (_, _, Some(_)) => (Format::E4M3, Format::E4M3),
            _ => return Err(err(format!("tcgen05 of {dt} and {dtb} operands"))),
        };
        let fp8 = fa.kind() == "f8f6f4";
        if m.family != MmaFamily::Tcgen05 {
            return Err(err("a tcgen05 product without a tcgen05 accumulator"));
        }
        // A from TMEM (FlashAttention-4's P) or through a descriptor of its shared buffer (of
        // its rows held several times over, for fewer than 64).
        let aop = if reads_a_from_tmem(self.func, a, &m) {
            None
        } else if m.m64 {
            Some(self.replicated_a(a, Mma::tcgen05_m(ms))?)
        } else {
            Some(self.shared_operand(a, 0, true)?)
        };
        let bop = self.shared_operand(b, 1, true)?;
        let kept = result.and_then(|r| self.facts.tmem.kept.get(&r).copied());
        let in_flight = result.is_some_and(|r| self.facts.tmem.in_flight.contains(&r));
        // Left in flight until its mma_wait (`tile-mma-overlap`): its own region and mbarrier.
        let deferred =
            result.and_then(|r| Some((self.facts.tmem.deferred.get(&r).copied()?, self.tmem_bars.get(&r)?.clone())));
        let a_k_major = aop.as_ref().is_none_or(|o| o.k_major);
        if fp8 && !(a_k_major && bop.k_major) {
            return Err(err("tcgen05's fp8 form reads both operands K-major here"));
        }
        // Below 128 rows one M = 64 instruction, A's buffer 64 rows (its rows repeated).
        let im = Mma::tcgen05_m(ms);
        if let Some(o) = aop.as_ref().filter(|o| m.m64 && o.shape[0] != im) {
            return Err(err(format!(
                "the A operand of a tcgen05 product of {ms} rows is a buffer of {} rows: the M = {im} instruction reads {im} (a copy from global memory fills one copy of its rows; registers write every one)",
                o.shape[0]
            )));
        }
        // (N past 256: one instruction a block of 256 columns.)
        let n_blocks = Mma::tcgen05_n_blocks(&shape);
        let idesc = InstrDescriptor {
            d_f32: true,
            a: fa,
            b: fb,
            a_mn_major: !a_k_major,
            b_mn_major: !bop.k_major,
            n: ns / n_blocks,
            // A pair's product: both CTAs' 128 rows.
            m: im * i64::from(self.cta_group()),
        };
        // A K step is 32 bytes of each operand row: 16 16-bit elements, 32 fp8 ones.
        let kstep = if fp8 { 2 * MMA_K } else { MMA_K };
        if n_blocks > 1 {
            let (Some(aop), None) = (aop, kept) else {
                return Err(err("a tcgen05 product of several 256-column blocks kept in TMEM or reading A from it"));
            };
            return self.tcgen05_mma_n_blocks([&aop, &bop], acc, m, &shape, [ks, kstep], idesc);
        }
        // Where D is, and whether the first K step reads it.
        let acc_alt = match self.get(acc)? {
            Value::Tmem { alt, .. } => alt,
            _ => None,
        };
        // A product the next one accumulates onto: in that one's region (its own, or the
        // shared one), neither committed nor waited for.
        let chained_into = result.and_then(|r| self.facts.tmem.chained.get(&r).copied());
        let chain_col =
            chained_into.map(|n| self.facts.tmem.deferred.get(&n).copied().unwrap_or(self.facts.tmem.scratch));
        let chained_onto = self.facts.tmem.chained.get(&acc).is_some_and(|n| Some(*n) == result);
        let (col, read_d, how) = match (self.get(acc)?, kept) {
            (Value::Tmem { col, alt: None }, None) if chained_onto => {
                (col, true, "onto the product before it, in its region (a chain in TMEM: no wait, no load between)")
            }
            (Value::Tmem { col, alt: Some(_) }, Some(k)) if col == k => {
                (col, true, "in place (kept in TMEM across the loop, in the region of the tile's slot)")
            }
            (Value::Tmem { col, .. }, Some(k)) if col == k => (col, true, "in place (kept in TMEM across the loop)"),
            (Value::Tmem { col, alt: None }, None) if deferred.as_ref().is_some_and(|d| d.0 == col) => {
                (col, true, "in place (carried in TMEM by the loop, rescaled there)")
            }
            (Value::Tmem { .. }, _) => return Err(err("a TMEM accumulator used by a product outside its chain")),
            (_, Some(k)) => {
                let regs = self.tile(acc)?;
                self.tmem_store(m, &shape, k, &regs)?;
                (k, true, "stored from registers")
            }
            (_, None) => {
                let region = chain_col.unwrap_or(deferred.as_ref().map_or(self.facts.tmem.scratch, |d| d.0));
                if self.facts.tmem.zero.contains(&acc) {
                    (region, false, "zero (D not read)")
                } else {
                    let regs = self.tile(acc)?;
                    self.tmem_store(m, &shape, region, &regs)?;
                    (region, true, "stored from registers")
                }
            }
        };
        let blocks = (ms / TCGEN05_M).max(1);
        let k_steps = ks / kstep;
        let cg = self.cta_group();
        let major = |o: &super::wgmma::SharedOperand, mn: &str| {
            format!(
                "{}-major {}B-swizzled descriptor",
                if o.k_major { "K" } else { mn },
                o.layout.nvmma_bytes().unwrap_or(0)
            )
        };
        // (A carried in TMEM by a loop is where the loop stored it.)
        let a_stored = match self.get(a)? {
            Value::Tmem { col, .. } if aop.is_none() => Some(col),
            _ => None,
        };
        let a_col = a_stored.unwrap_or(
            result.and_then(|r| self.facts.tmem.deferred_a.get(&r).copied()).unwrap_or(self.facts.tmem.a_region),
        );
        let per = match Mma::a_per_column(dt.bytes()) {
            2 => "two",
            _ => "four",
        };
        let a_how = match (&aop, a_stored) {
            (Some(o), _) => major(o, "M"),
            (None, Some(_)) => format!(
                "from TMEM column {a_col} (carried there by the loop: stored by tcgen05.st 32x32b where it is yielded, {per} elements a column; no shared buffer)"
            ),
            (None, None) => format!(
                "from TMEM column {a_col} (its registers stored by tcgen05.st 32x32b, {per} elements a column; no shared buffer)"
            ),
        };
        let kind = match &scaled {
            Some((f, ..)) => format!("{}.block_scale.scale_vec::{}X", f.kind_name(), f.vec),
            None => fa.kind().to_string(),
        };
        self.report.push(format!(
            "mma [{ms}, {ns}, {ks}] {dt}: tcgen05.mma.cta_group::{cg}.kind::{kind} m{}n{ns}k{} issued by {}, {blocks} block(s) of {im} rows x {k_steps} K steps; A {}, B {}; D at TMEM column {col}, {how}; {}{}",
            idesc.m,
            kstep * scaled.as_ref().map_or(1, |(f, ..)| f.pack),
            if cg == 2 {
                "the pair's leader for both CTAs (A: each CTA's 128 rows at the same shared offset; B: each CTA's half of the columns; D: each CTA's rows in its own TMEM)"
            } else {
                "one thread"
            },
            a_how,
            major(&bop, "N"),
            match (kept.is_some(), in_flight) {
                (true, true) => "kept in TMEM, in flight across iterations (each stage released by tcgen05.commit)",
                (true, false) => "kept in TMEM, waited for at once",
                _ if chained_into.is_some() => "not committed: the next product accumulates onto it in TMEM, and its commit covers both",
                _ if deferred.is_some() && result.is_some_and(|r| self.facts.tmem.acc_carried.contains_key(&r)) => {
                    "committed to its own mbarrier and left in flight: its mma_wait waits for that mbarrier and leaves it in TMEM"
                }
                _ if deferred.is_some() => "committed to its own mbarrier and left in flight: its mma_wait waits for that mbarrier, then loads it into registers",
                _ if m.m64 => "loaded into registers (tcgen05.ld 16x32bx2, each warp its columns from its quarter)",
                _ => "loaded into registers (tcgen05.ld 32x32b)",
            },
            match &scaled {
                Some((f, ..)) => format!(
                    "; {} scales every {} elements of K stored into TMEM at column {} (tcgen05.st 32x32b, every quarter a copy), each step's descriptor naming its bytes",
                    f.scale, f.block, self.facts.tmem.scale_region
                ),
                None => String::new(),
            }
        ));
        if aop.is_none() && a_stored.is_none() {
            let regs = self.tile(a)?;
            self.tmem_store_a(m, self.func.ty(a).shape(), a_col, &regs, dt)?;
        }
        // The scales into their TMEM region (A's, then B's), before the sync below; a product
        // kept in flight uses the region of its A stage's slot.
        let scale_cols = match &scaled {
            Some((f, sa, sb)) => {
                let [ca, _] = scale_columns(ms, ns, self.func.ty(*sa).shape()[1]);
                let (col_a, col_b) = (self.facts.tmem.scale_region, self.facts.tmem.scale_region + ca);
                let slot = match (in_flight, self.get(a)?) {
                    (true, Value::SmemBuf { ring: Some(r), .. }) => {
                        let w = self.em.ci32(self.facts.tmem.scale_cols);
                        Some(self.em.mul(&r.slot, &w))
                    }
                    (true, _) => {
                        return Err(err("a block-scaled tcgen05 product kept in flight whose A is not a ring"))
                    }
                    _ => None,
                };
                self.tmem_store_scales(*sa, ms, col_a, slot.as_ref())?;
                self.tmem_store_scales(*sb, ns, col_b, slot.as_ref())?;
                Some((*f, col_a, col_b, slot))
            }
            None => None,
        };
        if self.tmem_dirty {
            self.tmem_issue_sync()?;
        }
        let (tbase, bar) = self.tmem_base()?;
        // D in the slot's region of a double-buffered chain (A and the scales are not).
        let dbase = match &acc_alt {
            Some(a) => self.em.add(&tbase, &a.shift),
            None => tbase.clone(),
        };
        let dense_id = self.em.ci32(i64::from(idesc.encode()));
        let mut issues = vec![];
        for blk in 0..blocks {
            for kk in 0..k_steps {
                // A block-scaled step: its descriptor names the bytes of its scales' column
                // set (`tmem::scale_step_cells`), the addresses the set of its rows.
                let (id, scale_at) = match &scale_cols {
                    Some((f, col_a, col_b, slot)) => {
                        let (set, sf) = scale_step(kk, f.vec);
                        let sf = sf as u32;
                        let fmt = |d: DType| match d {
                            DType::F8E5M2 | DType::F4E2M1X2 => 1,
                            _ => 0,
                        };
                        let d = ScaledInstrDescriptor {
                            a_format: fmt(dt),
                            b_format: fmt(dtb),
                            a_mn_major: false,
                            b_mn_major: false,
                            n: ns,
                            m: TCGEN05_M,
                            ue8m0: f.scale == DType::UE8M0,
                            a_sf_id: sf,
                            b_sf_id: sf,
                        };
                        let id = self.em.ci32(i64::from(d.encode()));
                        let sa_c = self.em.ci32(col_a + set * (ms / 32) + blk * (TCGEN05_M / 32));
                        let sb_c = self.em.ci32(col_b + set * (ns / 32));
                        let (mut sa_at, mut sb_at) = (self.em.add(&tbase, &sa_c), self.em.add(&tbase, &sb_c));
                        if let Some(s) = slot {
                            sa_at = self.em.add(&sa_at, s);
                            sb_at = self.em.add(&sb_at, s);
                        }
                        (id, Some((sa_at, sb_at)))
                    }
                    None => (dense_id.clone(), None),
                };
                let ad = match &aop {
                    Some(o) => self.descriptor_at(o, [blk * TCGEN05_M, kk * kstep]),
                    // Elements two (8-bit: four) a column: a K step of 32 bytes is 8 columns.
                    None => {
                        let per = Mma::a_per_column(dt.bytes());
                        let c = self.em.ci32(a_col + blk * (ks / per) + kk * kstep / per);
                        self.em.add(&tbase, &c)
                    }
                };
                let bd = self.descriptor_at(&bop, [kk * kstep, 0]);
                let c = self.em.ci32(col + blk * ns);
                let d = self.em.add(&dbase, &c);
                let en = self.em.ci32(i64::from(read_d || kk > 0));
                issues.push(Issue { d, a: ad, b: bd, en, id, scales: scale_at });
            }
        }
        if in_flight {
            // A stage it reads is free again only at the commit onto its empty mbarrier,
            // which the refill waits for; a buffer made before the loop is not written
            // before the wait after it.
            for x in [a, b] {
                if let Value::SmemBuf { offset, ring: Some(_), .. } = self.get(x)? {
                    if !self.tma_bars.get(&offset).is_some_and(|r| r.2) {
                        return Err(err(
                            "a tcgen05 product kept in flight reads a ring that is not a released TMA ring",
                        ));
                    }
                }
            }
        }
        let commit = match (&deferred, in_flight) {
            _ if chained_into.is_some() => None,
            (Some((_, own)), _) => Some(own),
            (None, false) => Some(&bar),
            (None, true) => None,
        };
        self.issue_products(&issues, &kind, aop.is_none(), commit)?;
        for (off, bytes) in aop.iter().map(|o| o.span).chain([bop.span]) {
            self.smem_read_done(off, bytes);
        }
        if in_flight || deferred.is_some() || chained_into.is_some() {
            return Ok(Value::Tmem { col, alt: acc_alt });
        }
        self.tmem_arrive_wait(&bar);
        if kept.is_some() {
            return Ok(Value::Tmem { col, alt: acc_alt });
        }
        Ok(Value::Tile(self.tmem_load(m, &shape, col)?))
    }

    /// The A operand of a product of the M = 64 instruction: its buffer as it is when it holds
    /// `rows` rows (64 rows, or registers wrote every copy: `local_alloc`); else a copy from
    /// global memory filled one copy of its M rows (a stage of a ring, or an async buffer),
    /// and every thread copies its whole 8-row atoms `rows / M` times into a buffer — for a
    /// ring, a ring of as many stages, the same stage's slot — published to the async proxy
    /// by a fence and a barrier. A K-major NVMMA buffer is its K atom columns one after the
    /// other, each the rows' atoms in order, the swizzle a function of the address within an
    /// atom: the copies' atoms are the source's bytes (`tile-layout` makes copies only of
    /// K-major A operands). A slot is written again only after its ring's stage was refilled,
    /// which waited for the products that read the stage, so in-flight products need nothing
    /// more.
    fn replicated_a(&mut self, a: ValueId, rows: i64) -> Result<super::wgmma::SharedOperand, Diagnostic> {
        let buf = self.get(a)?;
        let Value::SmemBuf { offset, ty: Type::Smem { shape, dtype, layout }, ring } = buf.clone() else {
            return Err(err("a tcgen05 A operand that is not a shared buffer"));
        };
        let m = shape[shape.len() - 2];
        if m == rows {
            return self.shared_operand_of(buf, 0, true);
        }
        let (Some(sb), 1) = (layout.nvmma_bytes(), layout.order[0]) else {
            return Err(err("a copied tcgen05 A operand of fewer than 64 rows that is not a K-major NVMMA buffer"));
        };
        let k = shape[shape.len() - 1];
        let elem = i64::from(dtype.bytes());
        let (reps, atom, groups) = (rows / m, 8 * sb, m / 8);
        let stage_bytes = m * k * elem;
        let stages = ring.as_ref().map_or(1, |r| r.ty.shape()[0]);
        let total = stages * stage_bytes * reps;
        let region = match self.a_replicas.get(&offset) {
            Some(&r) => r,
            None => {
                let r = self.smem_alloc(total, u32::MAX, atom)?;
                self.a_replicas.insert(offset, r);
                self.report.push(format!(
                    "buffer [{rows}, {k}] {dtype} x {stages} stage(s): {total} B at {region_at}, the rows of the A operand copied at {offset} held {reps} times for the M = {rows} tcgen05.mma (whole 8-row atoms copied after each fill)",
                    region_at = r
                ));
                r
            }
        };
        // This stage's byte offsets in the copied buffer and in the replicas.
        let (mut src, mut dst) = (self.em.ci32(offset), self.em.ci32(region));
        if let Some(r) = &ring {
            let (eb, er) = (self.em.ci32(elem), self.em.ci32(elem * reps));
            let (s, d) = (self.em.mul(&r.first, &eb), self.em.mul(&r.first, &er));
            src = self.em.add(&src, &s);
            dst = self.em.add(&dst, &d);
        }
        self.smem_write_begin(region, total);
        let base = self.smem_base();
        let threads = i64::from(self.func.num_warps) * 32;
        let chunks = stage_bytes / 16;
        let lg = |x: i64| x.max(1).trailing_zeros();
        let tid = self.tid.clone();
        let mut it = 0;
        while it * threads < chunks {
            let guarded = (it + 1) * threads > chunks;
            let c = self.em.ci32(it * threads);
            let ch = self.em.add(&tid, &c);
            // The last round's threads past the stage's chunks skip it.
            let skip = guarded.then(|| {
                let n = self.em.ci32(chunks);
                let inside = self.em.icmp(super::emit::ICmp::Slt, &ch, &n);
                let (body, skip) = (self.em.new_block(), self.em.new_block());
                self.em.cond_br(&inside, &body, &skip);
                self.em.label(&body, &[]);
                skip
            });
            // Byte b of the stage: atom b / atom (column kc, row group g), byte b % atom.
            let c4 = self.em.ci32(4);
            let b = self.em.shl(&ch, &c4);
            let (sa, sg) = (self.em.ci32(i64::from(lg(atom))), self.em.ci32(i64::from(lg(groups))));
            let at = self.em.lshr(&b, &sa);
            let within_mask = self.em.ci32(atom - 1);
            let within = self.em.and(&b, &within_mask);
            let kc = self.em.lshr(&at, &sg);
            let gmask = self.em.ci32(groups - 1);
            let g = self.em.and(&at, &gmask);
            let so = self.em.add(&src, &b);
            let sp = self.em.gep(&base, &so, &Ty::I8);
            let v = self.em.load(&sp, Ty::Vector(4, Box::new(Ty::I32)), 16);
            // Destination atom kc · (rows / 8) + copy · (M / 8) + g.
            let per_col = self.em.ci32(rows / 8);
            let col0 = self.em.mul(&kc, &per_col);
            let a0 = self.em.add(&col0, &g);
            for copy in 0..reps {
                let o = self.em.ci32(copy * groups);
                let da = self.em.add(&a0, &o);
                let db = self.em.shl(&da, &sa);
                let db = self.em.add(&db, &within);
                let dof = self.em.add(&dst, &db);
                let dp = self.em.gep(&base, &dof, &Ty::I8);
                self.em.store(&v, &dp, 16);
            }
            if let Some(skip) = skip {
                self.em.br(&skip, &[]);
                self.em.label(&skip, &[]);
            }
            it += 1;
        }
        self.fence_async_proxy();
        self.smem_written();
        let ring = ring.map(|r| {
            let er = self.em.ci32(reps);
            let first = self.em.mul(&r.first, &er);
            let Type::Smem { shape: rs, dtype, layout } = &r.ty else { return r };
            let mut rs = rs.clone();
            rs[1] *= reps;
            Box::new(super::regs::Ring {
                ty: Type::Smem { shape: rs, dtype: *dtype, layout: layout.clone() },
                first,
                slot: r.slot,
            })
        });
        let mut rshape = shape.clone();
        let n = rshape.len();
        rshape[n - 2] = rows;
        self.shared_operand_of(
            Value::SmemBuf { offset: region, ty: Type::Smem { shape: rshape, dtype, layout }, ring },
            0,
            true,
        )
    }

    /// A product of fewer than 128 rows and N past 256 (`Mma::tcgen05_n_blocks`): one block
    /// of 256 columns after the other in the scratch region — each warp stores its columns of
    /// the block's accumulator, the issuing thread runs the block's K steps (B's descriptor
    /// `256 · block` columns on), the block is waited for and each warp loads its columns back;
    /// the registers come out block after block, as the layout orders them. `idesc` is a
    /// block's instruction (N = 256), checked by [`Lowering::tcgen05_mma`].
    fn tcgen05_mma_n_blocks(
        &mut self,
        [aop, bop]: [&super::wgmma::SharedOperand; 2],
        acc: ValueId,
        m: Mma,
        shape: &[i64],
        [ks, kstep]: [i64; 2],
        idesc: InstrDescriptor,
    ) -> Result<Value, Diagnostic> {
        let (ms, ns) = (shape[0], shape[1]);
        let blocks = Mma::tcgen05_n_blocks(shape);
        let (bn, im) = (idesc.n, idesc.m);
        let bshape = [ms, bn];
        let kind = idesc.a.kind();
        let zero = self.facts.tmem.zero.contains(&acc);
        let regs = if zero { vec![] } else { self.tile(acc)? };
        let per = regs.len() / blocks as usize;
        let col = self.facts.tmem.scratch;
        let (tbase, bar) = self.tmem_base()?;
        let id = self.em.ci32(i64::from(idesc.encode()));
        self.report.push(format!(
            "mma [{ms}, {ns}, {ks}]: tcgen05.mma.cta_group::1.kind::{kind} m{im}n{bn}k{kstep} issued by one thread, {blocks} blocks of {bn} columns one after the other at TMEM column {col} x {} K steps; A {}-major, B {}-major descriptors; D {}",
            ks / kstep,
            if aop.k_major { "K" } else { "M" },
            if bop.k_major { "K" } else { "N" },
            if zero { "zero (not read)" } else { "stored from registers block by block" }
        ));
        let mut out = vec![];
        for nb in 0..blocks {
            if !zero {
                self.tmem_store(m, &bshape, col, &regs[nb as usize * per..(nb as usize + 1) * per])?;
            }
            if self.tmem_dirty {
                self.tmem_thread_sync();
            }
            let mut issues = vec![];
            for kk in 0..ks / kstep {
                let ad = self.descriptor_at(aop, [0, kk * kstep]);
                let bd = self.descriptor_at(bop, [kk * kstep, nb * bn]);
                let c = self.em.ci32(col);
                let d = self.em.add(&tbase, &c);
                let en = self.em.ci32(i64::from(!zero || kk > 0));
                issues.push(Issue { d, a: ad, b: bd, en, id: id.clone(), scales: None });
            }
            self.issue_products(&issues, kind, false, Some(&bar))?;
            self.tmem_arrive_wait(&bar);
            out.extend(self.tmem_load(m, &bshape, col)?);
        }
        for (off, bytes) in [aop.span, bop.span] {
            self.smem_read_done(off, bytes);
        }
        Ok(Value::Tile(out))
    }

    /// In the issuing thread: `tcgen05.mma` of `kind` for each [`Issue`] (A's TMEM address
    /// rather than its descriptor when `a_in_tmem`), then the commit onto `commit` if one is
    /// given.
    fn issue_products(
        &mut self,
        issues: &[Issue],
        kind: &str,
        a_in_tmem: bool,
        commit: Option<&Reg>,
    ) -> Result<(), Diagnostic> {
        let cg = self.cta_group();
        self.on_mma_issuer(|lw| {
            for i in issues {
                let mut asm = PtxAsm::new();
                let (di, ai, bi, ei, ii) =
                    (asm.input(&i.d), asm.input(&i.a), asm.input(&i.b), asm.input(&i.en), asm.input(&i.id));
                let ai = if a_in_tmem { format!("[{ai}]") } else { ai };
                let sc = match &i.scales {
                    Some((sa, sb)) => format!(", [{}], [{}]", asm.input(sa), asm.input(sb)),
                    None => String::new(),
                };
                asm.push(&format!(
                    "{{ .reg .pred p; setp.ne.b32 p, {ei}, 0; tcgen05.mma.cta_group::{cg}.kind::{kind} [{di}], {ai}, {bi}, {ii}{sc}, p; }}"
                ));
                asm.emit(&mut lw.em);
            }
            if let Some(bar) = commit {
                lw.tmem_commit(bar);
            }
            Ok(())
        })
    }

    /// In the issuing thread: the products it issued so far arrive on the mbarrier `bar`
    /// once they are complete.
    /// A pair's leader commits to the mbarrier at `bar`'s offset in both CTAs.
    fn tmem_commit(&mut self, bar: &Reg) {
        let mut asm = PtxAsm::new();
        let b = asm.input(bar);
        if self.facts.pair.is_some() {
            asm.push(&format!(
                "{{ .reg .b16 mask; mov.b16 mask, 3; tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [{b}], mask; }}"
            ));
        } else {
            asm.push(&format!("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [{b}];"));
        }
        asm.emit(&mut self.em);
    }

    /// After the issuing thread's commit to the kernel's mbarrier `bar`: every thread arrives
    /// on it too and waits for the phase of its own arrival, complete once the commit
    /// arrived — the committed products are done.
    fn tmem_arrive_wait(&mut self, bar: &Reg) {
        let mut asm = PtxAsm::new();
        let b = asm.input(bar);
        asm.push(&format!(
            "{{ .reg .pred P1; .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [{b}]; TC_WAIT: mbarrier.try_wait.shared::cta.b64 P1, [{b}], st; @P1 bra TC_DONE; bra TC_WAIT; TC_DONE: }}"
        ));
        asm.emit(&mut self.em);
        self.em.line("nvvm.tcgen05.fence #nvvm.tcgen05_fence<after>");
    }

    /// `mma_wait` on a chain kept in flight: its products complete, then its accumulator is
    /// loaded if something uses it. A double-buffered chain's (`alt`: the previous tile's)
    /// products were committed to its region's mbarrier after their loop; the others are
    /// committed to the kernel's here.
    pub(crate) fn tmem_chain_wait(
        &mut self,
        result: Option<ValueId>,
        col: i64,
        alt: Option<&TmemAlt>,
    ) -> Result<Value, Diagnostic> {
        let bar = match alt {
            Some(a) => a.bar.clone(),
            None => {
                let (_, bar) = self.tmem_base()?;
                self.commit_on_issuer(&bar, false)?;
                bar
            }
        };
        self.tmem_arrive_wait(&bar);
        match result {
            Some(r) if self.facts.tmem.used_results.contains(&r) => self.tmem_chain_result(r, col, alt),
            _ => Ok(Value::Tmem { col, alt: alt.cloned() }),
        }
    }

    /// `mma_wait` on a product left in flight by `tile-mma-overlap`: every thread arrives on
    /// its mbarrier and waits for the phase its arrival belongs to (complete once the commit
    /// after the product arrived — every thread passes only after all arrived, so the next
    /// commit onto it starts the next phase), then loads the accumulator from its region.
    pub(crate) fn tmem_deferred_wait(&mut self, value: ValueId) -> Result<Value, Diagnostic> {
        let (Some(&col), Some(bar)) = (self.facts.tmem.deferred.get(&value), self.tmem_bars.get(&value).cloned())
        else {
            return Err(err(format!("mma_wait on %{}, which is no tcgen05 product left in flight", value.0)));
        };
        let (m, shape) = self.accumulator_layout(value, "a tcgen05 product left in flight")?;
        self.tmem_arrive_wait(&bar);
        // (An accumulator the loop carries in TMEM stays there: its rescale reads it.)
        if self.facts.tmem.acc_carried.contains_key(&value) {
            return Ok(Value::Tmem { col, alt: None });
        }
        Ok(Value::Tile(self.tmem_load(m, &shape, col)?))
    }

    /// `acc * f` for an accumulator a loop carries in Tensor Memory ([`TmemPlan::acc_carried`])
    /// and `f` a broadcast row factor: in place — `tcgen05.ld`, the multiply, `tcgen05.st` —
    /// and only in a warp where some factor is not 1.0 when `f` is a conditional rescale's
    /// (`vote.any`, as `scaled_by_row_factor` does for registers: `x * 1.0 == x` exactly).
    /// The next product is issued after the thread sync that orders the stores before it.
    pub(crate) fn tmem_rescale(&mut self, acc: ValueId, f: ValueId, result: ValueId) -> Result<Value, Diagnostic> {
        let (Some(&col), Value::Tmem { col: at, alt: None }) =
            (self.facts.tmem.acc_carried.get(&result), self.get(acc)?)
        else {
            return Err(err("a rescale of an accumulator carried in Tensor Memory that is not there"));
        };
        if col != at {
            return Err(err("a carried accumulator rescaled outside its region"));
        }
        let (m, shape) = self.accumulator_layout(result, "a carried accumulator")?;
        let fs = self.tile(f)?;
        let factors = self.row_factors.get(&f).cloned().filter(|_| !self.loop_writes.is_empty());
        let join = match factors.and_then(|fs| self.warp_any_not_one(&fs)) {
            Some(warp_any) => {
                let (then, join) = (self.em.new_block(), self.em.new_block());
                self.em.cond_br(&warp_any, &then, &join);
                self.em.label(&then, &[]);
                Some(join)
            }
            _ => None,
        };
        let xs = self.tmem_load(m, &shape, col)?;
        if xs.len() != fs.len() {
            return Err(err("a row factor that does not match its accumulator's registers"));
        }
        let prod: Vec<Reg> = xs.iter().zip(&fs).map(|(x, f)| self.em.fmul(x, f)).collect();
        self.tmem_store(m, &shape, col, &prod)?;
        if let Some(join) = join {
            self.em.br(&join, &[]);
            self.em.label(&join, &[]);
        }
        // (Either way: the next product's issue orders whatever was stored before it.)
        self.tmem_dirty = true;
        Ok(Value::Tmem { col, alt: None })
    }

    /// The issuing thread commits the products issued so far onto the mbarrier `bar`: the
    /// chain's final wait, and the `stage_release` of a ring tcgen05 products read (the
    /// stage's empty mbarrier, which they arrive on once they complete, their reads of the
    /// stage with them).
    /// `multicast`: the commit arrives on the mbarrier at `bar`'s offset in both CTAs of the
    /// pair (a ring whose copies fill both CTAs' stages, see `tma_copy_into`).
    pub(crate) fn commit_on_issuer(&mut self, bar: &Reg, multicast: bool) -> Result<(), Diagnostic> {
        self.on_mma_issuer(|lw| {
            if multicast && lw.facts.pair.is_none() {
                let mut asm = PtxAsm::new();
                let b = asm.input(bar);
                asm.push(&format!(
                    "{{ .reg .b16 mask; mov.b16 mask, 3; tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [{b}], mask; }}"
                ));
                asm.emit(&mut lw.em);
            } else {
                lw.tmem_commit(bar);
            }
            Ok(())
        })
    }

    /// Before a loop whose body issues a product: the TMEM accesses so far are ordered
    /// before it here rather than in the body.
    pub(crate) fn tmem_before_loop(&mut self, op: &OpKind) -> Result<(), Diagnostic> {
        if TmemPlan::loop_key(op).is_some_and(|k| self.facts.tmem.product_loops.contains(&k)) {
            self.tmem_issue_sync()?;
        }
        Ok(())
    }

    /// At the top of a loop body: whether the previous iteration left TMEM accesses the
    /// body's first product must wait for.
    pub(crate) fn tmem_loop_top(&mut self, op: &OpKind) {
        if TmemPlan::loop_key(op).is_some_and(|k| self.facts.tmem.dirty_loops.contains(&k)) {
            self.tmem_dirty = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_core::layout::tmem;
    use tilec_core::layout::MatrixDescriptor;

    /// For every accumulator shape and warp count the family takes, each register of each
    /// thread — the element the `#tilegpu.tcgen05` map says it holds — is what
    /// `tcgen05.ld.32x32b` returns from the address the lowering computes (`ld_origin` plus
    /// the register's column), and that TMEM cell is where the product put the element.
    #[test]
    fn tmem_addresses_follow_the_layout() {
        let mut checked = 0;
        for m in [128i64, 256] {
            for n in [16i64, 32, 64, 128, 256] {
                for warps in [4i64, 8, 16] {
                    let Some(mma) = Mma::tcgen05(&[m, n], 64, warps) else { continue };
                    let shape = [m, n];
                    let l = Layout::Mma(mma).to_linear(&shape);
                    let cols = n / mma.warps_per_cta[1];
                    let base = 64;
                    for warp in 0..warps {
                        for lane in 0..32 {
                            for reg in 0..l.num_regs() {
                                let c = l.coord(warp, lane, reg);
                                let (blk, r) = (reg / cols, reg % cols);
                                let (al, ac) = ld_origin(&shape, mma, base, warp, blk);
                                let got = tmem::ld_32x32b(warp, lane, al, ac, r).unwrap();
                                assert_eq!(got, tmem::accumulator_cell(base, n, c[0], c[1]), "{shape:?} {warps} warps");
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 100_000, "{checked}");
    }

    /// The address `tmem_thread_addr` computes from a warp's fields is the one the origin
    /// functions give that warp, for every layout of 128-row blocks the family takes (a
    /// warpgroup a block, column ranges, both) and every block a warp holds, accumulators and
    /// A operands of both widths.
    #[test]
    fn warp_addresses_are_their_origins() {
        let mut checked = 0;
        for m in [128i64, 256, 512] {
            for n in [32i64, 64, 128, 256] {
                for warps in [4i64, 8, 16] {
                    let Some(mma) = Mma::tcgen05(&[m, n], 64, warps) else { continue };
                    let shape = [m, n];
                    for blk in 0..m / TCGEN05_M / mma.tcgen05_block_warps() {
                        let ld = |w| ld_origin(&shape, mma, 64, w, blk);
                        let terms = WarpAddress::of(mma, ld);
                        for per in [2, 4] {
                            let a = |w| a_origin(&shape, mma, per, 96, w, blk);
                            let a_terms = WarpAddress::of(mma, a);
                            for w in 0..warps {
                                let (l, c) = ld(w);
                                assert_eq!(terms.at(w), (l << 16) + c, "{shape:?} {warps} w{w} b{blk}");
                                let (l, c) = a(w);
                                assert_eq!(a_terms.at(w), (l << 16) + c, "{shape:?} {warps} w{w} b{blk} A/{per}");
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 500, "{checked}");
    }

    /// The same for accumulators of 16, 32 and 64 rows: each register is what
    /// `tcgen05.ld.16x32bx2` returns from the address the lowering computes (`small_origin`,
    /// the register's chunk of 32 and the half-split offset `ld_form` writes), and that TMEM
    /// cell is one where the M = 64 product over the replicated A put the element.
    #[test]
    fn small_tmem_addresses_follow_the_layout() {
        let mut checked = 0;
        for m in [16i64, 32, 64] {
            for n in [16i64, 32, 64, 128, 256, 512, 1024] {
                for warps in [4i64, 8, 16] {
                    let Some(mma) = Mma::tcgen05(&[m, n], 64, warps) else { continue };
                    let shape = [m, n];
                    let l = Layout::Mma(mma).to_linear(&shape);
                    // Blocks of 256 columns take turns in the same TMEM columns, the block the
                    // highest register bits (`tcgen05_mma_n_blocks` loads them in order).
                    let bn = n / Mma::tcgen05_n_blocks(&shape);
                    let bshape = [m, bn];
                    let per = l.num_regs() / Mma::tcgen05_n_blocks(&shape);
                    let (_, half) = ld_form(mma, &bshape);
                    let half: i64 = half.trim_start_matches(", ").parse().unwrap();
                    let base = 32;
                    for warp in 0..warps {
                        for lane in 0..32 {
                            for reg in 0..l.num_regs() {
                                let c = l.coord(warp, lane, reg);
                                let (nb, r) = (reg / per, reg % per);
                                let (al, ac) = small_origin(&bshape, mma, base, warp);
                                let chunk = r / CHUNK * CHUNK;
                                let got = tmem::ld_16x32bx2(warp, lane, al, ac + chunk, half, r - chunk).unwrap();
                                let cells = tmem::small_accumulator_cells(base, m, c[0], c[1] - nb * bn);
                                assert!(
                                    cells.contains(&got),
                                    "{shape:?} {warps} w{warp} l{lane} r{reg}: {got:?} {cells:?}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 100_000, "{checked}");
    }

    /// The block-scaled products' scales: for every tile of 128 or 256 rows, K blocks and
    /// `scale_vec` width, the factor each thread holds in register `g · Ks + kb` (the layout
    /// `tile-layout` wants: row `32 g + lane`, K block `kb`, every warp a copy) is the one
    /// `tmem_store_scales` writes to word `set · rows/32 + g`, byte `kb % 4` of its lane —
    /// `tmem::scale_cell` of that row and block — and each K step's descriptor id and scale
    /// address (the lowering's `set`, `sf`) read exactly the blocks of that step's K
    /// elements (`tmem::scale_step_cells`).
    #[test]
    fn block_scaled_scales_are_where_each_step_reads_them() {
        let mut checked = 0;
        for rows in [128i64, 256] {
            for ks in [1i64, 2, 4, 8, 16] {
                for warps in [4i64, 8] {
                    // A's layout; B's is its transpose.
                    let [sa, sb] = Mma::tcgen05_scale_layouts(ks, warps);
                    let lb = Layout::Blocked(sb).to_linear(&[ks, rows]);
                    let l = Layout::Blocked(sa).to_linear(&[rows, ks]);
                    for (w, ln, r) in [(0, 0, 1), (3, 17, 2), (warps - 1, 31, l.num_regs() - 1)] {
                        let (x, y) = (l.coord(w, ln, r), lb.coord(w, ln, r));
                        assert_eq!(x, vec![y[1], y[0]]);
                    }
                    assert_eq!(l.num_regs(), rows / 32 * ks);
                    let base = 160;
                    for warp in 0..warps {
                        for lane in 0..32 {
                            for reg in 0..l.num_regs() {
                                let c = l.coord(warp, lane, reg);
                                let (g, kb) = (reg / ks, reg % ks);
                                assert_eq!(c, vec![32 * g + lane, kb], "{rows} {ks} {warps}");
                                let word = (kb / 4) * (rows / 32) + g;
                                assert_eq!(tmem::scale_cell(base, rows, c[0], c[1]), (lane, base + word, kb % 4));
                                checked += 1;
                            }
                        }
                    }
                    for vec in [1i64, 2, 4].into_iter().filter(|v| ks % v == 0) {
                        for step in 0..ks / vec {
                            let (set, sf) = tmem::scale_step(step, vec);
                            for row in 0..rows {
                                let read = tmem::scale_step_cells(base, rows, row, step, vec);
                                let want: Vec<_> =
                                    (0..vec).map(|t| tmem::scale_cell(base, rows, row, step * vec + t)).collect();
                                assert_eq!(read, want);
                                assert_eq!(read[0], (row % 32, base + set * (rows / 32) + row / 32, sf));
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    /// `replicated_a`'s atom copies: for every K-major NVMMA buffer of 16 or 32 rows (16-bit
    /// and 8-bit elements, each swizzle), the byte the copy loop moves for element (r, k) —
    /// source atom `kc · M/8 + g` to destination atom `kc · 8 + copy · M/8 + g`, same byte in
    /// the atom — is where the 64-row buffer the descriptor reads holds element
    /// (r + copy · M, k).
    #[test]
    fn copied_a_atoms_hold_every_row_copy() {
        use tilec_core::layout::SwizzledShared;
        let mut checked = 0;
        for elem in [1i64, 2] {
            for sb in [32i64, 64, 128] {
                for m in [16i64, 32] {
                    for k in [16i64, 32, 64, 128, 256, 512].into_iter().filter(|k| (k * elem) % sb == 0) {
                        let l = SwizzledShared::nvmma(sb, elem, [1, 0]);
                        let (atom, groups) = (8 * sb, m / 8);
                        for r in 0..m {
                            for kk in 0..k {
                                let b = l.offset(&[m, k], &[r, kk]) * elem;
                                let (a, within) = (b / atom, b % atom);
                                let (kc, g) = (a / groups, a % groups);
                                for copy in 0..64 / m {
                                    let dst = (kc * 8 + copy * groups + g) * atom + within;
                                    assert_eq!(
                                        dst,
                                        l.offset(&[64, k], &[r + copy * m, kk]) * elem,
                                        "{elem} {sb} {m} {k}"
                                    );
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 100_000, "{checked}");
    }

    /// For every A operand shape, element width (16 and 8 bits) and warp count the family
    /// reads from Tensor Memory, each packed register a thread stores (`tcgen05.st.32x32b` at
    /// the address `a_origin` gives, plus the register's index) holds two (four) elements its
    /// register layout says are consecutive along K of one row — the first in the low bits —
    /// and lands in the TMEM cells where the instruction reads them (`tmem::a_operand_cell`);
    /// each K step's address (the lowering's `a_region + block · K/per + step · 8`) is the
    /// column of the step's first element of the block's first row.
    #[test]
    fn a_operand_stores_follow_the_layout() {
        let mut checked = 0;
        for bytes in [2u32, 1] {
            let per = Mma::a_per_column(bytes);
            for m in [128i64, 256] {
                for k in (16i64..=256).step_by(16) {
                    for warps in [4i64, 8, 16] {
                        let Some(mma) = Mma::tcgen05(&[m, 128], k, warps) else { continue };
                        let shape = [m, k];
                        let a = Layout::Mma(mma);
                        if !mma.reads_a_from_tmem(Some(&a), &shape, bytes) {
                            continue;
                        }
                        let l = a.to_linear(&shape);
                        let cols = k / mma.warps_per_cta[1];
                        let base = 96;
                        for warp in 0..warps {
                            for lane in 0..32 {
                                for j in 0..l.num_regs() / per {
                                    // A word's elements: one row, consecutive K from a multiple of `per`.
                                    let first = l.coord(warp, lane, per * j);
                                    let (blk, r) = ((per * j) / cols, ((per * j) % cols) / per);
                                    let (al, ac) = a_origin(&shape, mma, per, base, warp, blk);
                                    let (lane_at, col_at) = tmem::ld_32x32b(warp, lane, al, ac, r).unwrap();
                                    for e in 0..per {
                                        let c = l.coord(warp, lane, per * j + e);
                                        assert_eq!((c[0], c[1]), (first[0], first[1] + e), "{shape:?}");
                                        assert_eq!(
                                            (lane_at, col_at, e),
                                            tmem::a_operand_cell(base, k, per, c[0], c[1]),
                                            "{shape:?} {bytes} B {warps} w{warp} l{lane} j{j} {c:?}"
                                        );
                                    }
                                    checked += 1;
                                }
                            }
                        }
                        // A K step is 32 bytes of a row: 8 columns from the block's first.
                        let kstep = MMA_K * 2 / i64::from(bytes);
                        for blk in 0..m / TCGEN05_M {
                            for step in 0..k / kstep {
                                let at = base + blk * (k / per) + step * kstep / per;
                                assert_eq!(
                                    tmem::a_operand_cell(base, k, per, blk * TCGEN05_M, step * kstep),
                                    (0, at, 0)
                                );
                                assert_eq!(step * kstep / per, 8 * step);
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 100_000, "{checked}");
    }

    /// A CTA pair's `cta_group::2` product, against the PTX ISA's split of its operands and
    /// accumulator (`tmem::pair_cell`, `tmem::pair_b_column`): the B columns each rank's copy
    /// writes into its stage (local atom `j` ← the tile's atom `rank · half + j`) are the
    /// columns the instruction reads from that CTA, at the same local column (so the
    /// descriptor of the stage's start — checked against the layout by the test below — reads
    /// them); and the accumulator rows each CTA's TMEM gets are the rows `tile-cta-pair` gives
    /// that rank (the block's tile `i` of 256 rows is rank r's half-tile `2·i + r`), at the
    /// lanes its epilogue's `tcgen05.ld` reads (lane = the CTA's own row). With the ISA's
    /// `cta_group::2` shapes decoded (M = 256).
    #[test]
    fn pair_products_split_operands_and_rows_as_the_pass_assigns_them() {
        let atom = 64;
        for n in [128i64, 256] {
            let half = n / atom / 2;
            for rank in 0..2 {
                for j in 0..half {
                    for x in 0..atom {
                        let global = rank * super::super::tma::pair_split_shift(half, atom) + j * atom + x;
                        assert_eq!(tmem::pair_b_column(n, global), (rank, j * atom + x), "N {n} rank {rank}");
                    }
                }
            }
        }
        for i in 0..3 {
            for rank in 0..2 {
                for r in 0..TCGEN05_M {
                    // The row of the tensor rank `rank` holds (tile-cta-pair's addressing)…
                    let tensor_row = (2 * i + rank) * TCGEN05_M + r;
                    // …is row `tensor_row - 256 i` of the block's pair product.
                    let pair_row = tensor_row - i * 2 * TCGEN05_M;
                    assert_eq!(tmem::pair_cell(0, pair_row, 7), (rank, r, 7));
                }
            }
        }
        for n in (16..=256).step_by(16) {
            let d = InstrDescriptor {
                d_f32: true,
                a: Format::BF16,
                b: Format::BF16,
                a_mn_major: false,
                b_mn_major: true,
                n,
                m: 256,
            };
            assert_eq!(InstrDescriptor::decode(d.encode(), "f16"), Ok(d));
        }
    }

    /// Every descriptor the lowering builds for tcgen05 decodes (tcgen05's format) to one that
    /// reads each operand element from where the buffer's layout put it, and the instruction
    /// descriptors of the library's shapes are valid.
    #[test]
    fn tcgen05_descriptors_address_the_bytes_the_layout_holds() {
        // A: 128-row blocks; B: the whole N of the tile.
        // (The 64-row A buffers are the M = 64 instruction's: a decode's replicated rows.)
        let cases = [
            (0u32, [256i64, 128i64], TCGEN05_M),
            (1, [128, 256], 256),
            (1, [64, 64], 64),
            (0, [128, 128], TCGEN05_M),
            (0, [64, 128], 64),
            (0, [64, 512], 64),
        ];
        let decode = |b: u64| MatrixDescriptor::decode_tcgen05(b).unwrap();
        let checked = super::super::wgmma::check_descriptor_addresses(&cases, descriptor_bits, decode);
        assert!(checked > 100_000, "{checked}");
        for n in (16..=256).step_by(16) {
            for (a, am, bm) in [(Format::BF16, false, false), (Format::F16, false, true), (Format::E4M3, false, false)]
            {
                for m in [TCGEN05_M, Mma::tcgen05_m(16)] {
                    let d = InstrDescriptor { d_f32: true, a, b: a, a_mn_major: am, b_mn_major: bm, n, m };
                    assert_eq!(InstrDescriptor::decode(d.encode(), a.kind()), Ok(d));
                }
            }
        }
    }
}
