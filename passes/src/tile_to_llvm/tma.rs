//! The Tensor Memory Accelerator: rings whose stages `tile-pipeline` fills with
//! `tilegpu.tma_copy_into`, and the mbarriers that count their bytes.
//!
//! Parameters: each distinct (tensor, box, swizzle) of the kernel's TMA copies is a 128-byte
//! `CUtensorMap` taken by value after the ABI's parameters (`llvm.byval` + `nvvm.grid_constant`,
//! 64-byte aligned: CUTLASS's `__grid_constant__ const CUtensorMap`), listed in the signature's
//! `tma` so that the launcher encodes it from the actual argument ([`tma_params`]).
//!
//! A ring filled by TMA has one mbarrier (8 bytes of shared memory, live as long as the ring)
//! per stage, initialised with an arrival count of 1 by thread 0 where the ring is made,
//! published by `fence.mbarrier_init` and a barrier. A copy into stage `s`: thread 0 arrives
//! on barrier `s` announcing the stage's bytes (`mbarrier.arrive.expect_tx`), then issues one
//! `cp.async.bulk.tensor` per swizzle atom of the stage (the box: an atom's width along the
//! tensor's contiguous dim, the tile's extent along the others), each counting its bytes on
//! barrier `s` on completion; out-of-bounds elements arrive as zeros. A `stage_wait` spins on
//! `mbarrier.try_wait.parity` until the phase completes; no barrier follows (the mbarrier
//! makes the bytes visible to every waiting thread). Before a copy overwrites a stage the
//! barrier analysis puts a barrier after the last reads of the ring (as for any write), so no
//! warpgroup still reads the stage.
//!
//! A ring whose stages `tile-pipeline` releases (`stage_release` after the stage's last
//! reader) has a second set of S mbarriers, the *empty* ones, with an arrival count of one
//! per warp: lane 0 of every warp arrives when its warp is done with the stage, and the copy's
//! issuing thread waits for that phase before the refill (`stage_acquire`; a stage never
//! filled passes at once). The copy then needs no block-wide barrier: the warpgroups are
//! free to drift apart by up to the ring's slack.
//!
//! Shared addresses are 32-bit (`shared::cta` addresses are valid `shared::cluster` ones).

use super::emit::{Emitter, ICmp, Reg, Ty};
use super::ptx_asm::PtxAsm;
use super::regs::Value;
use super::{err, Lowering};
use tilec_core::abi::TmaParam;
use tilec_core::tir::{Func, Op, OpKind, Type, ValueId};
use tilec_core::Diagnostic;

/// The box (innermost tensor dim first) and swizzle of a TMA copy into a buffer of `bty`,
/// and the tile dim along the tensor's contiguous dim.
fn tma_box(kind: &OpKind, bty: &Type) -> Option<(Vec<u32>, u32, usize)> {
    let (OpKind::AsyncCopy { order, tile, .. }, Type::Smem { layout, shape, .. }) = (kind, bty) else { return None };
    let swizzle = layout.nvmma_bytes()?;
    let rank = tile.len();
    // Tile dim t views tensor dim order[t].
    let contiguous = (0..rank).find(|&t| order.get(t).copied() == Some(rank as u32 - 1))?;
    // The stage's contiguous dim must be the tensor's: the atoms are slices of it.
    let cols = shape[shape.len() - 2..][layout.order[0]];
    if tile[contiguous] != cols || cols % layout.atom != 0 {
        return None;
    }
    let mut boxes = vec![0u32; rank];
    for (t, &e) in order.iter().enumerate() {
        let extent = if t == contiguous { layout.atom } else { tile[t] };
        boxes[rank - 1 - e as usize] = u32::try_from(extent).ok()?;
    }
    Some((boxes, u32::try_from(swizzle).ok()?, contiguous))
}

/// How a `store` goes out through TMA: the register tile written into an NVMMA-swizzled
/// shared buffer, then one bulk tensor store per swizzle atom (see [`Lowering::tma_store`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TmaStore {
    /// The registers written: the stored tile, or the tile a reshape that only adds leading
    /// unit dims made it from (that reshape is then not lowered: it would move the tile
    /// through shared memory into a blocked layout only for the store to stage it again).
    pub src: ValueId,
    pub reshape: Option<ValueId>,
    /// The staging buffer: the tile's last two dims, NVMMA-swizzled along the contiguous one.
    pub buf: Type,
    /// The tensor map's box (innermost first: one atom's width, the rows, then 1s) and
    /// swizzle.
    pub map: TmaParam,
}

/// Whether the `store` `kind` at the kernel's top level goes out through TMA, and how: an
/// unmasked store of a whole tile whose registers are an MMA accumulator's (a GEMM's or
/// attention's epilogue: stored directly, each thread writes a few bytes per row, scattered
/// over the rows; staged, the tile leaves in whole 128-byte lines and out-of-bounds rows and
/// columns are clipped by the hardware), into a tensor parameter specialised as 16-byte
/// aligned, the tile's leading dims 1, its rows a multiple of 8 up to 256 (the box), its
/// contiguous dim whole swizzle atoms. Stores under an `if` or in a loop stay direct: the
/// staging needs a block-wide barrier.
/// `src` is the tile whose registers are written (see [`TmaStore::src`]).
pub(crate) fn tma_store_plan(func: &Func, kind: &OpKind, src: ValueId) -> Option<TmaStore> {
    let OpKind::Store { tensor, tile, mask: None, .. } = kind else { return None };
    let param = func.params.iter().position(|p| p.value == *tensor && p.divisibility >= 16)?;
    let (shape, dtype) = match func.ty(src) {
        Type::Tile { shape, dtype, layout: Some(tilec_core::layout::Layout::Mma(_)) } if shape.len() == 2 => {
            (shape, *dtype)
        }
        _ => return None,
    };
    let stored = func.ty(*tile).shape();
    let rank = stored.len();
    let eb = i64::from(dtype.bytes());
    let unit_lead = rank >= 2 && stored[..rank - 2].iter().all(|&d| d == 1) && stored[rank - 2..] == shape[..];
    if !unit_lead || rank > 5 || dtype == tilec_core::DType::I1 {
        return None;
    }
    let (rows, cols) = (shape[0], shape[1]);
    if rows % 8 != 0 || rows > 256 {
        return None;
    }
    let sl = tilec_core::layout::SwizzledShared::nvmma_for(cols, eb, [1, 0])?;
    let swizzle = u32::try_from(sl.nvmma_bytes()?).ok()?;
    let mut box_dims = vec![u32::try_from(sl.atom).ok()?, u32::try_from(rows).ok()?];
    box_dims.resize(rank, 1);
    let buf = Type::Smem { shape: vec![rows, cols], dtype, layout: sl };
    Some(TmaStore { src, reshape: (src != *tile).then_some(*tile), buf, map: TmaParam { param, box_dims, swizzle } })
}

/// The TMA stores of a kernel (`stores`: the target has TMA and it is not switched off):
/// the stores at its top level that [`tma_store_plan`] takes, of tensors it does not read,
/// by their tile value.
pub(crate) fn tma_stores(func: &Func, stores: bool) -> std::collections::BTreeMap<ValueId, TmaStore> {
    let mut out = std::collections::BTreeMap::new();
    if !stores {
        return out;
    }
    // A warp-specialized kernel's top level is its ops; the roles are split at lowering.
    let uses = func.use_counts();
    let reshaped: std::collections::BTreeMap<ValueId, ValueId> = func
        .ops
        .iter()
        .filter_map(|o| match (&o.kind, o.result) {
            (OpKind::Reshape(x), Some(r)) if uses.get(&r) == Some(&1) => Some((r, *x)),
            _ => None,
        })
        .collect();
    // A tensor the kernel also reads is stored directly: a bulk store's global writes are
    // the async proxy's and complete after thread 0 moves on (it waits for the buffer's
    // reads only), so a later read of them would need a wait for the writes and a fence.
    let mut read = std::collections::BTreeSet::new();
    func.walk(&mut |op| match &op.kind {
        OpKind::AsyncCopy { tensor, .. } => {
            read.insert(*tensor);
        }
        k => {
            if let Some((t, true, _)) = k.global_access() {
                read.insert(t);
            }
        }
    });
    for op in &func.ops {
        let OpKind::Store { tile, tensor, .. } = &op.kind else { continue };
        if read.contains(tensor) {
            continue;
        }
        let plan = reshaped
            .get(tile)
            .and_then(|&x| tma_store_plan(func, &op.kind, x))
            .or_else(|| tma_store_plan(func, &op.kind, *tile));
        if let Some(plan) = plan {
            out.insert(*tile, plan);
        }
    }
    out
}

/// Atom `j` of a TMA box whose atoms lie one after the other from shared address `start`
/// (`rows` rows of `atom` elements of `eb` bytes each): its shared address and its element
/// coordinates, innermost first — the tile origin `coord` moved `j` atoms along the
/// contiguous dim.
fn atom_box(
    em: &mut Emitter,
    start: &Reg,
    coord: &[Reg],
    j: i64,
    (rows, atom, eb): (i64, i64, i64),
) -> (Reg, Vec<Reg>) {
    let off = em.ci32(j * rows * atom * eb);
    let addr = em.add(start, &off);
    let mut c = coord.to_vec();
    if j > 0 {
        let o = em.ci32(j * atom);
        c[0] = em.add(&coord[0], &o);
    }
    (addr, c)
}

/// The tensor maps a kernel takes, in order: one per distinct (tensor parameter, box,
/// swizzle) of its TMA copies, then of its TMA stores.
pub(crate) fn tma_params(
    func: &Func,
    stores: &std::collections::BTreeMap<ValueId, TmaStore>,
) -> Result<Vec<TmaParam>, Diagnostic> {
    let mut out: Vec<TmaParam> = vec![];
    let mut bad = None;
    func.walk(&mut |op| {
        if let OpKind::AsyncCopy { dst: Some(d), tensor, tma: true, .. } = &op.kind {
            let Some(param) = func.params.iter().position(|p| p.value == *tensor) else {
                bad = Some("a TMA copy of a value that is not a tensor parameter");
                return;
            };
            match tma_box(&op.kind, func.ty(*d)) {
                Some((box_dims, swizzle, _)) => {
                    let p = TmaParam { param, box_dims, swizzle };
                    if !out.contains(&p) {
                        out.push(p);
                    }
                }
                None => bad = Some("a TMA copy whose stage is not the NVMMA layout of the tensor's contiguous dim"),
            }
        }
    });
    if let Some(m) = bad {
        return Err(err(m));
    }
    for s in stores.values() {
        if !out.contains(&s.map) {
            out.push(s.map.clone());
        }
    }
    Ok(out)
}

/// The rings some TMA copy fills.
pub(crate) fn tma_rings(func: &Func) -> std::collections::BTreeSet<ValueId> {
    let mut stages = std::collections::BTreeMap::new();
    func.walk(&mut |op| {
        if let (OpKind::Stage { buf, .. }, Some(r)) = (&op.kind, op.result) {
            stages.insert(r, *buf);
        }
    });
    let mut rings = std::collections::BTreeSet::new();
    func.walk(&mut |op| {
        if let OpKind::AsyncCopy { dst: Some(d), tma: true, .. } = &op.kind {
            if let Some(r) = stages.get(d) {
                rings.insert(*r);
            }
        }
    });
    rings
}

/// The rings of a CTA-pair kernel (`tile-cta-pair`) whose TMA copies load the same tile in
/// both CTAs — every copy `shared` and none `per_rank` by [`rings_by_rank`] — and whose stages
/// are released on empty mbarriers (`released`): their copies are multicast.
pub(crate) fn multicast_rings(
    (per_rank, shared): &RingsByRank,
    released: &std::collections::BTreeSet<ValueId>,
) -> std::collections::BTreeSet<ValueId> {
    shared.iter().filter(|r| !per_rank.contains(r) && released.contains(r)).copied().collect()
}

/// [`rings_by_rank`]'s answer: the rings with a copy at rank-dependent coordinates, and those
/// with a copy that is not.
pub(crate) type RingsByRank = (std::collections::BTreeSet<ValueId>, std::collections::BTreeSet<ValueId>);

/// The TMA rings of a CTA-pair kernel whose copies' coordinates depend on the CTA's rank (a
/// CTA's own rows), and those with a copy that does not (the same tile in both CTAs).
pub(crate) fn rings_by_rank(func: &Func) -> RingsByRank {
    let dep = crate::tile_cta_pair::rank_dependent(func);
    let mut stages = std::collections::BTreeMap::new();
    func.walk(&mut |op| {
        if let (OpKind::Stage { buf, .. }, Some(r)) = (&op.kind, op.result) {
            stages.insert(r, *buf);
        }
    });
    let (mut per_rank, mut shared) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    func.walk(&mut |op| {
        if let OpKind::AsyncCopy { dst: Some(d), tma: true, tensor, index, .. } = &op.kind {
            if let Some(r) = stages.get(d) {
                if std::iter::once(tensor).chain(index).any(|v| dep.contains(v)) {
                    per_rank.insert(*r);
                } else {
                    shared.insert(*r);
                }
            }
        }
    });
    (per_rank, shared)
}

/// How a TMA ring of a CTA pair is filled (`Own`: by its CTA alone, as in any kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sharing {
    Own,
    /// The same tile in both CTAs: each CTA issues half the atoms into both (`multicast_rings`).
    Multicast,
    /// Read by `cta_group::2` products (`tcgen05::PairPlan`): each CTA fills its own stage —
    /// A's rows of its rank, or (`split`) the half of B's columns of its rank, into the
    /// stage's first half — counting its bytes on the *leader's* full mbarrier, which the
    /// leader alone expects and waits for.
    Pair {
        split: bool,
    },
}

/// The column shift a rank's copy of a split B ring adds (times the rank): its `half` swizzle
/// atoms of `atom` columns each come after the other rank's (the copy's local atom `j` is the
/// tile's atom `rank · half + j`, `cta_group::2`'s `tmem::pair_b_column`).
pub(crate) fn pair_split_shift(half: i64, atom: i64) -> i64 {
    half * atom
}

/// The cluster's two CTAs meet (`barrier.cluster`, every thread of both; the release/acquire
/// forms order each CTA's shared-memory work before the other's next step). Not `.aligned`:
/// a warp-specialized kernel's roles reach it from their own branches.
pub(super) fn cluster_sync(em: &mut Emitter) {
    let mut asm = PtxAsm::new();
    asm.push("barrier.cluster.arrive.release; barrier.cluster.wait.acquire;");
    asm.emit(em);
}

impl Lowering<'_> {
    /// `cluster.ctarank`: this CTA's rank in a CTA pair (read once, in the entry block).
    pub(super) fn cluster_rank(&mut self) -> Reg {
        if let Some(r) = &self.cluster_rank {
            return r.clone();
        }
        self.em.enter_prologue();
        let r = self.em.sreg("cluster.ctarank");
        self.em.leave_prologue();
        self.cluster_rank = Some(r.clone());
        r
    }

    /// Runs `f` in the thread that issues TMA copies only (a branch around it): thread 0, or
    /// the producer's first thread in a warp-specialized kernel.
    pub(super) fn on_issuer(&mut self, f: impl FnOnce(&mut Self) -> Result<(), Diagnostic>) -> Result<(), Diagnostic> {
        self.on_thread(self.issuer, f)
    }

    /// The kernel parameter holding tensor map `want` (`what` names the op for the error).
    fn tensor_map(&self, want: &TmaParam, what: &str) -> Result<Reg, Diagnostic> {
        let k = self
            .facts
            .tma
            .iter()
            .position(|t| t == want)
            .ok_or_else(|| err(format!("{what} without its tensor map")))?;
        Ok(Reg::new(format!("%tmap{k}"), Ty::Ptr(0)))
    }

    /// Element coordinates of a tile's origin, innermost tensor dim first: tile dim `t`, at
    /// tile index `index[t]` of extent `tile[t]`, views tensor dim `order[t]`.
    fn tile_origin(&mut self, index: &[ValueId], tile: &[i64], order: &[u32]) -> Result<Vec<Reg>, Diagnostic> {
        let rank = tile.len();
        let mut coord: Vec<Reg> = vec![self.em.ci32(0); rank];
        for (t, &e) in order.iter().enumerate() {
            let i = self.scalar(index[t])?;
            let ext = self.em.ci32(tile[t]);
            coord[rank - 1 - e as usize] = self.em.mul(&i, &ext);
        }
        Ok(coord)
    }

    /// Runs `f` in thread `t` of the block only (the first lane of a warp).
    fn on_thread(&mut self, t: i64, f: impl FnOnce(&mut Self) -> Result<(), Diagnostic>) -> Result<(), Diagnostic> {
        let is_t = self.elected(t)?;
        self.when(&is_t, f)
    }

    /// `f`'s code in a block only the threads where `cond` holds run, joining after it.
    pub(super) fn when(
        &mut self,
        cond: &Reg,
        f: impl FnOnce(&mut Self) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let (then, join) = (self.em.new_block(), self.em.new_block());
        self.em.cond_br(cond, &then, &join);
        self.em.label(&then, &[]);
        f(self)?;
        self.em.br(&join, &[]);
        self.em.label(&join, &[]);
        Ok(())
    }

    /// `f` in the CTA pair's leader (rank 0) only.
    pub(super) fn on_leader(&mut self, f: impl FnOnce(&mut Self) -> Result<(), Diagnostic>) -> Result<(), Diagnostic> {
        let r = self.cluster_rank();
        let z = self.em.ci32(0);
        let leader = self.em.icmp(ICmp::Eq, &r, &z);
        self.when(&leader, f)
    }

    /// The predicate "this is thread `t`", made once in the kernel's entry block: `t`'s warp
    /// (a comparison of the warp index) and the lane `elect.sync` picks there, where every
    /// lane is active (so lane 0, the same thread as `tid == t`). Why not `tid == t`: ptxas
    /// only knows a region is single-threaded from `elect.sync`; under a per-thread compare
    /// it wraps each uniform-datapath instruction in it (`tcgen05.mma`, `cp.async.bulk.tensor`,
    /// `tcgen05.commit`) in a loop over the active lanes (ELECT, R2UR, BRA.U.ANY): on sm_103a's
    /// FMHA 148 of a key tile's 866 instructions and 17 registers.
    fn elected(&mut self, t: i64) -> Result<Reg, Diagnostic> {
        if t % 32 != 0 {
            return Err(err(format!("thread {t} issues asynchronous copies: not the first lane of a warp")));
        }
        if let Some(r) = self.elected.get(&t) {
            return Ok(r.clone());
        }
        self.em.enter_prologue();
        let lane = match &self.elect_lane {
            Some(r) => r.clone(),
            None => {
                let all = self.em.ci32(-1);
                let ret = Ty::Struct(vec![Ty::I32, Ty::I1]);
                let e = self.em.call_intrinsic("llvm.nvvm.elect.sync", &[&all], ret);
                let r = self.em.extractvalue(&e, 1);
                self.elect_lane = Some(r.clone());
                r
            }
        };
        let w = self.em.ci32(t / 32);
        let warp = self.warp.clone();
        let in_warp = self.em.icmp(ICmp::Eq, &warp, &w);
        let r = self.em.and(&in_warp, &lane);
        self.em.leave_prologue();
        self.elected.insert(t, r.clone());
        Ok(r)
    }

    /// The mbarriers of a TMA ring at byte `ring_off`: `stages` full ones (count 1) and, for a
    /// ring released with `empty_arrivals` (the block's warps, or one commit), `stages` empty
    /// ones, initialised by thread 0 and published. Called where the ring is made.
    /// A ring whose copies are multicast to a CTA pair (`Sharing::Multicast`) counts both CTAs'
    /// releases on each CTA's empty mbarriers (`empty_arrivals` is per CTA); a ring of
    /// `cta_group::2` products (`Sharing::Pair`) is released in both CTAs by the leader's one
    /// commit. Either keeps its mbarriers to the kernel's end (the peer's arrivals and bytes
    /// may come after this CTA's last use of the ring) and meets the peer once they are
    /// initialised: no copy or arrival reaches an mbarrier the peer has not made yet.
    pub(crate) fn tma_barriers(
        &mut self,
        op: &Op,
        ring_off: i64,
        stages: i64,
        empty_arrivals: Option<i64>,
        sharing: Sharing,
    ) -> Result<(), Diagnostic> {
        let released = empty_arrivals.is_some();
        let shared = sharing != Sharing::Own;
        let multicast = sharing == Sharing::Multicast;
        let end = if shared {
            u32::MAX
        } else {
            op.result.and_then(|r| self.facts.live_end.get(&r).copied()).unwrap_or(self.pos)
        };
        let empty_arrivals = empty_arrivals.map(|n| if multicast { 2 * n } else { n });
        let count = if released { 2 * stages } else { stages };
        let bars = self.smem_alloc(8 * count, end, 8)?;
        self.tma_bars.insert(ring_off, (bars, stages, released));
        self.smem_write_begin(bars, 8 * count);
        let base = self.smem_address();
        let empty = empty_arrivals.unwrap_or(0);
        self.on_issuer(|lw| {
            for s in 0..count {
                let o = lw.em.ci32(bars + 8 * s);
                let a = lw.em.add(&base, &o);
                let mut asm = PtxAsm::new();
                let x = asm.input(&a);
                let arrivals = if s < stages { 1 } else { empty };
                asm.push(&format!("mbarrier.init.shared::cta.b64 [{x}], {arrivals};"));
                asm.emit(&mut lw.em);
            }
            let mut asm = PtxAsm::new();
            asm.push("fence.mbarrier_init.release.cluster;");
            asm.emit(&mut lw.em);
            Ok(())
        })?;
        self.smem_written();
        if shared {
            self.ring_sharing.insert(ring_off, sharing);
            cluster_sync(&mut self.em);
        }
        self.report.push(format!(
            "ring at {ring_off}: {stages} full mbarriers at {bars}{} (TMA-filled{})",
            match (empty_arrivals, multicast) {
                (Some(1), _) if shared => {
                    format!(", {stages} empty ones after them (one arrival: the pair leader's commit, to both CTAs)")
                }
                (Some(1), _) => format!(", {stages} empty ones after them (one arrival: the tcgen05 commit)"),
                (Some(2), true) => {
                    format!(", {stages} empty ones after them (two arrivals: the commits of both CTAs of the pair)")
                }
                (Some(_), true) => format!(", {stages} empty ones after them (one arrival a warp of either CTA)"),
                (Some(_), false) => format!(", {stages} empty ones after them (one arrival a warp)"),
                (None, _) => String::new(),
            },
            match sharing {
                Sharing::Multicast => "; each copy multicast to both CTAs of the pair, each CTA issuing half its atoms; the mbarriers kept to the kernel's end",
                Sharing::Pair { split: false } => "; each CTA's copy (its rows) counted on the pair leader's full mbarrier (cta_group::2), which the leader alone waits for; the mbarriers kept to the kernel's end",
                Sharing::Pair { split: true } => "; each CTA copies the half of the columns of its rank into its stage's first half, counted on the pair leader's full mbarrier (cta_group::2), which the leader alone waits for; the mbarriers kept to the kernel's end",
                Sharing::Own => "",
            }
        ));
        Ok(())
    }

    /// The 32-bit shared address of the full (or `empty`) mbarrier of the stage `slot` of the
    /// ring at `ring_off`.
    fn stage_barrier(&mut self, ring_off: i64, slot: &Reg, empty: bool) -> Result<Reg, Diagnostic> {
        let (bars, stages, released) =
            *self.tma_bars.get(&ring_off).ok_or_else(|| err("a TMA stage of a ring without mbarriers"))?;
        if empty && !released {
            return Err(err("a stage release or acquire of a ring without empty mbarriers"));
        }
        let base = self.smem_address();
        let o = self.em.ci32(if empty { bars + 8 * stages } else { bars });
        let a = self.em.add(&base, &o);
        let c8 = self.em.ci32(8);
        let so = self.em.mul(slot, &c8);
        Ok(self.em.add(&a, &so))
    }

    /// `tma_copy_into`: thread 0 announces the stage's bytes on its mbarrier and issues one
    /// bulk tensor copy per swizzle atom.
    pub(crate) fn tma_copy_into(&mut self, op: &Op, buf: &Value) -> Result<(), Diagnostic> {
        let OpKind::AsyncCopy { tensor, index, order, tile, .. } = &op.kind else {
            return Err(err("not an async copy"));
        };
        let Value::SmemBuf { offset: region, ty, ring: Some(ring) } = buf else {
            return Err(err("a TMA copy into something that is not a stage of a ring"));
        };
        let Type::Smem { shape, dtype, layout } = ty else { return Err(err("a TMA copy into a non-buffer")) };
        let (box_dims, swizzle, contiguous) = tma_box(&op.kind, ty)
            .ok_or_else(|| err("a TMA copy into a stage that is not NVMMA along the contiguous dim"))?;
        let param = self
            .func
            .params
            .iter()
            .position(|p| p.value == *tensor)
            .ok_or_else(|| err("a TMA copy of a value that is not a tensor parameter"))?;
        let tmap = self.tensor_map(&TmaParam { param, box_dims, swizzle }, "a TMA copy")?;
        let eb = i64::from(dtype.bytes());
        let stage_elems: i64 = shape.iter().product();
        let ring_bytes = super::mma::smem_bytes(&ring.ty);
        // No thread may still read the ring's stage this copy overwrites: the stage's empty
        // mbarrier says so for a released ring (its `stage_acquire` precedes), a block-wide
        // barrier otherwise.
        let released = self.tma_bars.get(region).is_some_and(|b| b.2);
        if !released {
            self.smem_write_begin(*region, ring_bytes);
        }
        let rank = tile.len();
        let coord = self.tile_origin(index, tile, order)?;
        let rows = shape[layout.order[1]];
        let atoms = tile[contiguous] / layout.atom;
        let bar = self.stage_barrier(*region, &ring.slot, false)?;
        let base = self.smem_address();
        let stage_off = {
            let r = self.em.ci32(*region);
            let ebr = self.em.ci32(eb);
            let f = self.em.mul(&ring.first, &ebr);
            let a = self.em.add(&base, &r);
            self.em.add(&a, &f)
        };
        let sharing = self.ring_sharing.get(region).copied().unwrap_or(Sharing::Own);
        // A multicast ring: CTA r of the pair issues atoms r, r + 2, …, each landing in both
        // CTAs' stages and counted on both CTAs' full mbarriers (the same offsets); each CTA
        // expects the whole stage. A peer's bytes may arrive before this CTA's expect: the
        // phase stays open on the arrival still owed.
        let cta = if sharing != Sharing::Own { Some(self.cluster_rank()) } else { None };
        // A pair's ring: the leader expects both CTAs' bytes (each CTA's share: A's stage, or
        // half of B's), each CTA's copies complete on the leader's mbarrier.
        let split = sharing == Sharing::Pair { split: true };
        // (The leader's mbarrier's cluster address is made before the issuer's branch: inside
        // it, sm_103a's 40-register producer spilled.)
        let (bytes, atoms, coord, bar) = match (&cta, sharing) {
            (Some(r), Sharing::Pair { .. }) => {
                let share = if split { stage_elems * eb / 2 } else { stage_elems * eb };
                let half = if split { atoms / 2 } else { atoms };
                let mut coord = coord;
                if split {
                    // This CTA's half of the columns: atoms `r · half …` of the tile.
                    let w = self.em.ci32(pair_split_shift(half, layout.atom));
                    let o = self.em.mul(r, &w);
                    coord[0] = self.em.add(&coord[0], &o);
                }
                let mut asm = PtxAsm::new();
                let out = asm.output(Ty::I32);
                let b = asm.input(&bar);
                asm.push(&format!("mapa.shared::cluster.u32 {out}, {b}, 0;"));
                let leader = asm.emit(&mut self.em).pop().ok_or_else(|| err("mapa without a result"))?;
                (self.em.ci32(2 * share), half, coord, leader)
            }
            _ => (self.em.ci32(stage_elems * eb), atoms, coord, bar),
        };
        self.on_issuer(|lw| {
            let mut asm = PtxAsm::new();
            let (b, n) = (asm.input(&bar), asm.input(&bytes));
            // The arrival's state in a scoped register, not the sink `_`: ptxas for sm_121a
            // stores a sunk state to the stack (an `STL.64` a copy).
            match (&cta, sharing) {
                (Some(r), Sharing::Pair { .. }) => {
                    let r = asm.input(r);
                    // `bar` is a cluster address (the leader's own mbarrier, through `mapa`).
                    asm.push(&format!(
                        "{{ .reg .pred P1; setp.eq.u32 P1, {r}, 0; @P1 mbarrier.arrive.expect_tx.shared::cluster.b64 _, [{b}], {n}; }}"
                    ));
                }
                _ => asm.push(&format!(
                    "{{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [{b}], {n}; }}"
                )),
            }
            asm.emit(&mut lw.em);
            for j in 0..atoms {
                let (dst, c) = atom_box(&mut lw.em, &stage_off, &coord, j, (rows, layout.atom, eb));
                let mut asm = PtxAsm::new();
                let d = asm.input(&dst);
                let m = asm.input(&tmap);
                let cs: Vec<String> = c.iter().map(|x| asm.input(x)).collect();
                let b = asm.input(&bar);
                match (&cta, sharing) {
                    (Some(_), Sharing::Pair { .. }) => asm.push(&format!(
                        "cp.async.bulk.tensor.{rank}d.cta_group::2.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{}}}], [{b}];",
                        cs.join(", ")
                    )),
                    (Some(r), _) => {
                        let r = asm.input(r);
                        asm.push(&format!(
                            "{{ .reg .pred P1; .reg .b16 mask; mov.b16 mask, 3; setp.eq.u32 P1, {r}, {}; @P1 cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{}}}], [{b}], mask; }}",
                            j % 2,
                            cs.join(", ")
                        ));
                    }
                    (None, _) => asm.push(&format!(
                        "cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{}}}], [{b}];",
                        cs.join(", ")
                    )),
                }
                asm.emit(&mut lw.em);
            }
            Ok(())
        })?;
        Ok(())
    }

    /// A store [`tma_store_plan`] takes: the tile written into its staging buffer (a region
    /// live only here), the writes fenced for the async proxy and published by a barrier,
    /// then thread 0 — a consumer in a warp-specialized kernel, where the tile is — issues one
    /// `cp.async.bulk.tensor … .global.shared::cta` per swizzle atom (elements out of the
    /// tensor's bounds are not written), commits them as one bulk group and waits until the
    /// buffer has been read (`wait_group.read`: the global writes complete on their own).
    /// The barrier analysis counts those reads, so the next writer of the region waits for
    /// a barrier after them.
    pub(crate) fn tma_store(&mut self, kind: &OpKind) -> Result<(), Diagnostic> {
        let OpKind::Store { tensor, index, tile, .. } = kind else { return Err(err("a TMA store of a non-store")) };
        let plan = self.facts.tma_stores.get(tile).cloned().ok_or_else(|| err("a TMA store without its plan"))?;
        let Type::Smem { shape, dtype, layout } = &plan.buf else { return Err(err("a TMA store without a buffer")) };
        let tmap = self.tensor_map(&plan.map, "a TMA store")?;
        let total = super::mma::smem_bytes(&plan.buf);
        let swizzle = i64::from(plan.map.swizzle);
        let region = self.smem_alloc(total, self.pos, 8 * swizzle)?;
        self.smem_write_begin(region, total);
        self.write_tile_to_smem(plan.src, &plan.buf, region, true)?;
        self.async_proxy_fence();
        self.smem_written();
        let tshape = self.func.ty(*tile).shape().to_vec();
        let rank = tshape.len();
        let identity: Vec<u32> = (0..rank as u32).collect();
        let coord = self.tile_origin(index, &tshape, &identity)?;
        let (rows, cols) = (shape[0], shape[1]);
        let atoms = cols / layout.atom;
        let eb = i64::from(dtype.bytes());
        let base = self.smem_address();
        let r = self.em.ci32(region);
        let src0 = self.em.add(&base, &r);
        self.on_thread(0, |lw| {
            for j in 0..atoms {
                let (src, c) = atom_box(&mut lw.em, &src0, &coord, j, (rows, layout.atom, eb));
                let mut asm = PtxAsm::new();
                let (s, m) = (asm.input(&src), asm.input(&tmap));
                let cs: Vec<String> = c.iter().map(|x| asm.input(x)).collect();
                asm.push(&format!(
                    "cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group [{m}, {{{}}}], [{s}];",
                    cs.join(", ")
                ));
                asm.emit(&mut lw.em);
            }
            let mut asm = PtxAsm::new();
            asm.push("cp.async.bulk.commit_group; cp.async.bulk.wait_group.read 0;");
            asm.emit(&mut lw.em);
            Ok(())
        })?;
        self.smem_read_done(region, total);
        let name = self.func.params.iter().find(|p| p.value == *tensor).map_or("?", |p| p.name.as_str()).to_string();
        self.report.push(format!(
            "store of {name}: TMA — the tile written into a {}-byte-swizzled buffer {:?} {dtype} ({total} B at {region}), {atoms} bulk tensor store(s) of {}x{rows} by thread 0",
            plan.map.swizzle,
            [rows, cols],
            layout.atom
        ));
        Ok(())
    }

    /// `stage_wait`: spins until the stage's mbarrier completes phase `phase`.
    pub(crate) fn stage_wait(&mut self, ring: ValueId, slot: ValueId, phase: ValueId) -> Result<(), Diagnostic> {
        let (offset, s) = self.ring_slot(ring, slot, "wait")?;
        let p = self.scalar(phase)?;
        let bar = self.stage_barrier(offset, &s, false)?;
        if matches!(self.ring_sharing.get(&offset), Some(Sharing::Pair { .. })) {
            // The leader's mbarrier counts both CTAs' bytes and only the leader's products read
            // them: the peer has nothing to wait for (its own mbarrier never fills).
            return self.on_leader(|lw| {
                lw.spin_wait(&bar, &p);
                Ok(())
            });
        }
        self.spin_wait(&bar, &p);
        Ok(())
    }

    /// The shared offset of `ring` and the register of `slot`, for a stage `what` op.
    fn ring_slot(&mut self, ring: ValueId, slot: ValueId, what: &str) -> Result<(i64, Reg), Diagnostic> {
        let Value::SmemBuf { offset, ring: None, .. } = self.get(ring)? else {
            return Err(err(format!("a stage {what} of something that is not a ring")));
        };
        Ok((offset, self.scalar(slot)?))
    }

    /// Spins until the mbarrier at `bar` completes the phase of parity `phase`.
    fn spin_wait(&mut self, bar: &Reg, p: &Reg) {
        let mut asm = PtxAsm::new();
        let (b, ph) = (asm.input(bar), asm.input(p));
        asm.push(&format!(
            "{{ .reg .pred P1; TMA_WAIT: mbarrier.try_wait.parity.shared::cta.b64 P1, [{b}], {ph}; @P1 bra TMA_DONE; bra TMA_WAIT; TMA_DONE: }}"
        ));
        asm.emit(&mut self.em);
    }

    /// `stage_release`: lane 0 of every warp arrives on the stage's empty mbarrier (a ring
    /// tcgen05 products read: the products' commit does).
    pub(crate) fn stage_release(&mut self, ring: ValueId, slot: ValueId) -> Result<(), Diagnostic> {
        let (offset, s) = self.ring_slot(ring, slot, "release")?;
        let bar = self.stage_barrier(offset, &s, true)?;
        let sharing = self.ring_sharing.get(&offset).copied().unwrap_or(Sharing::Own);
        let multicast = sharing == Sharing::Multicast;
        if self.facts.tmem.committed_rings.contains(&ring) {
            // (A pair's ring: the leader's cta_group::2 commit, to both CTAs.)
            return self.commit_on_issuer(&bar, multicast);
        }
        if matches!(sharing, Sharing::Pair { .. }) {
            return Err(err("a ring of cta_group::2 products released by something other than their commit"));
        }
        let lane = self.lane.clone();
        let mut asm = PtxAsm::new();
        let (b, l) = (asm.input(&bar), asm.input(&lane));
        if multicast {
            // The peer's refill writes this CTA's stage too: its empty mbarrier hears from
            // this warp as well (the same offset in the peer's shared memory, through `mapa`).
            // The arrival's default semantics (release at CTA scope), as CUTLASS's
            // `ClusterBarrier::arrive(cta_id)`: the stage's readers are the products, complete
            // before the release; `.release.cluster` would put a `MEMBAR.ALL.GPU` before each
            // arrival (ncu on the H200: 10.4 cycles of membar stall an instruction, the pair
            // 0.63x the default's 4096³ GEMM).
            let r = self.cluster_rank();
            let r = asm.input(&r);
            asm.push(&format!(
                "{{ .reg .pred P1; .reg .b32 peer, remote; .reg .b64 st; setp.eq.u32 P1, {l}, 0; xor.b32 peer, {r}, 1; mapa.shared::cluster.u32 remote, {b}, peer; @P1 mbarrier.arrive.shared::cta.b64 st, [{b}]; @P1 mbarrier.arrive.shared::cluster.b64 _, [remote]; }}"
            ));
        } else {
            asm.push(&format!(
                "{{ .reg .pred P1; .reg .b64 st; setp.eq.u32 P1, {l}, 0; @P1 mbarrier.arrive.shared::cta.b64 st, [{b}]; }}"
            ));
        }
        asm.emit(&mut self.em);
        Ok(())
    }

    /// `stage_acquire`: the copy's issuing thread (thread 0) waits for the stage's empty
    /// mbarrier.
    pub(crate) fn stage_acquire(&mut self, ring: ValueId, slot: ValueId, phase: ValueId) -> Result<(), Diagnostic> {
        let (offset, s) = self.ring_slot(ring, slot, "acquire")?;
        let p = self.scalar(phase)?;
        let bar = self.stage_barrier(offset, &s, true)?;
        self.on_issuer(|lw| {
            lw.spin_wait(&bar, &p);
            Ok(())
        })
    }
}
