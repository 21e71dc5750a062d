//! `tile-pipeline`: software pipelining of the loads a loop streams into shared memory.
//!
//! Needs: `tilegpu` after `tile-layout` (and `tile-swizzle`, whose swizzle the rings copy):
//! an `mma` operand loaded in a loop is a `tilegpu.async_copy` directly followed by
//! `tilegpu.async_wait {pending = 0}`, and its buffer is read by `local_load`.
//!
//! Does: in every `scf.for` (innermost loops first), each such copy whose tensor and indices
//! are computed from the induction variable and values defined before the loop, by pure
//! scalar ops of the body, is issued `d` iterations ahead through a ring of `d + 1` shared
//! stages (`tilegpu.stages_alloc`): `d` is the load's `latency=` hint exactly, or the
//! target's default distance (`Arch::pipeline_distance`) for a load without one.
//! - Prologue, before the loop: the copies of iterations `0 … d-1`, in the order of virtual
//!   iterations `-D … -1` (`D` the loop's largest distance), into stages `0 … d-1`.
//! - Body: at the old copy, `async_wait {pending = P}`, the read of stage `i mod (d + 1)`,
//!   then the copy of iteration `i + d` into stage `(i + d) mod (d + 1)`. That stage was
//!   read last in iteration `i - 1`, before the barrier that the wait lowers to, so the
//!   refill needs no barrier of its own and the loop body none at its end (FlashAttention-2
//!   and Triton issue the next tile's copy the same way). `P` is the largest number of
//!   newer groups that still leaves this iteration's copy landed, found by replaying the
//!   groups of the prologue and the first `D + 1` iterations (the minimum over them: exact
//!   in the steady state for a single distance, conservative by the groups the prologue
//!   lacks when distances differ). Copies the pass leaves alone only add groups, which
//!   makes every wait stricter, never weaker.
//! - Epilogue: `async_wait {pending = 0}` after the loop, so that the copies issued for
//!   iterations past the end have landed before the ring's memory is reused. Those copies
//!   are not masked: out of the tensor they read nothing (zero fill); inside it (causal
//!   FMHA's key tiles past the diagonal) they read `d` tiles that are never used.
//!
//! Loop-carried values (the `mma` accumulators) stay in registers. A `wgmma` (an `mma`
//! whose result is `#tilegpu.wgmma`) that only accumulates — its accumulator is a loop-carried
//! value read by nothing else in the body, its result only yielded — and reads shared memory
//! only from this loop's rings or from buffers made before the loop is kept in flight across
//! iterations: `tilegpu.mma_wait {pending = 1}` after it (the previous iteration's products
//! complete while this iteration's run), `tilegpu.mma_wait {pending = 0}` on the loop's
//! result. Its rings get `d + 2` stages: the refill of iteration `i` writes the stage read
//! by iteration `i - 2`, whose products completed at the wait of iteration `i - 1`, before
//! the barrier of this iteration's copy wait. A `tcgen05` product (sm_100a/sm_103a: its
//! accumulator kept in Tensor Memory) that only accumulates, every buffer it reads a TMA
//! ring of this loop or made before it, is kept in flight without a wait in the loop: its
//! rings' stages are released (`stage_release` right after it, lowered to a `tcgen05.commit`
//! onto the stage's empty mbarrier) and acquired before each refill, whatever
//! `empty-barriers` says; `mma_wait {pending = 0}` on the loop's result; `d + 2` stages, so
//! a refill waits for the products of two iterations back while the last ones run. A
//! block-scaled one (`mma_scaled`) too: the lowering stores its scale factors into a Tensor
//! Memory region a stage of its A ring, so a stage's factors are rewritten only after the
//! stage's refill, which waited for the products that read them.
//!
//! Guarantees: every ring and the kernel's other shared buffers fit the target's shared
//! memory per block (counted without reuse, so an upper bound of what the lowering
//! allocates), else E0022 with the numbers and the largest stage count that fits; the
//! program's results are those of the unpipelined loop.
//!
//! A copy's indices may read memory that the kernel never writes (paged attention's block
//! table: `block_tables[b, j]`): the element read is repeated for iteration `i + d` with the
//! copy (read early, it reads what iteration `i + d` would; past the tensor it reads 0).
//!
//! Leaves alone, and reports why: a copy whose indices read a loop-carried value, a tensor
//! the kernel writes, or a value of a nested region; loads kept in registers
//! (`local_alloc`: tensors not known to be 16-byte aligned, integer 8-bit dtypes).
//!
//! Rings a wgmma reads (NVMMA buffers) of 16-byte aligned tensors are filled by TMA where the
//! target has it: `tilegpu.tma_copy_into` (issued only for iterations the loop runs, so that
//! no copy lands after the loop) and `tilegpu.stage_wait` on the stage's mbarrier phase
//! `(n / S) % 2` instead of a group count.
//!
//! Options: `arch` (the distance table and the budget; default: the module's target),
//! `distance` (the distance of loads without a hint; default: the target's), `tma` (default
//! true: TMA where the target has it), `wgmma-in-flight` (default true), `empty-barriers`
//! (default false: a TMA ring's stages released on empty mbarriers after their last reader
//! and acquired by the refill's issuing thread, instead of a block-wide barrier; see
//! [`Options::empty_barriers`] for why it is not the default).

use std::collections::BTreeMap;
use tilec_core::target::Arch;
use tilec_core::tir::{walk_ops, BinOp, CmpPred, Func, MathFlags, Op, OpKind, Padding, Type, ValueId};
use tilec_core::Diagnostic;

/// What the pass decided, one line per load (for `--report`).
#[derive(Clone, Debug, Default)]
pub struct PipelineReport {
    pub lines: Vec<String>,
}

/// The pass's settings.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Shared memory one block may use.
    pub smem_limit: u32,
    /// Distance of a load without a latency hint.
    pub default_distance: u32,
    /// Whether rings a wgmma reads are filled by the Tensor Memory Accelerator (the target
    /// has it) rather than `cp.async`.
    pub tma: bool,
    /// Whether a wgmma that only accumulates may stay in flight across iterations.
    pub in_flight: bool,
    /// Whether TMA rings release their stages on empty mbarriers (`stage_release` /
    /// `stage_acquire`) instead of a block-wide barrier before each refill. Off by default:
    /// on the H100 it was level on GEMM 4096³, 3% faster at 8192³, 5% slower on bmm and 17%
    /// slower on FMHA (bench/results/2026-11-24-h100-wgmma/bench-run7-empty-barriers.md); it is
    /// what a warp-specialized producer will need.
    pub empty_barriers: bool,
}

impl Options {
    pub fn for_arch(arch: &Arch) -> Options {
        Options {
            smem_limit: arch.smem_per_block,
            default_distance: arch.pipeline_distance,
            tma: arch.has(tilec_core::target::Feature::Tma),
            in_flight: true,
            empty_barriers: false,
        }
    }
}

/// Whether a copy into a buffer of type `bty` can be a TMA copy: an NVMMA buffer (a wgmma
/// reads it; its atoms are the TMA boxes), 16-bit, fp8 or packed fp4 elements (bytes to the
/// copy engine), zero padding (TMA's out-of-bounds
/// fill), a tensor of rank at most 5 specialised as 16-byte aligned (the tensor map's base
/// and strides), boxes of at most 256 along every dim (the contiguous dim is copied one
/// swizzle atom a box, so the tile may be wider there).
fn tma_copy(func: &Func, kind: &OpKind, bty: &Type) -> bool {
    let (OpKind::AsyncCopy { tensor, padding: Padding::Zero, tile, order, .. }, Type::Smem { layout, dtype, .. }) =
        (kind, bty)
    else {
        return false;
    };
    let aligned = func.params.iter().any(|p| p.value == *tensor && p.divisibility >= 16);
    layout.nvmma_bytes().is_some()
        && (dtype.bytes() == 2 || dtype.is_fp8() || *dtype == tilec_core::DType::F4E2M1X2)
        && aligned
        && (1..=5).contains(&tile.len())
        && tile.iter().zip(order).all(|(&d, &o)| d >= 1 && (d <= 256 || o as usize == tile.len() - 1))
}

/// A `wgmma` or `tcgen05` product of a loop body that may stay in flight across iterations
/// (see the module doc).
struct InFlight {
    /// The `mma`'s result, yielded as loop-carried value `iter`.
    result: ValueId,
    iter: usize,
    /// The shared buffers its operands read.
    bufs: Vec<ValueId>,
    /// A tcgen05 product (its accumulator in Tensor Memory): its rings are released by
    /// `tcgen05.commit` onto their empty mbarriers instead of a wait in the loop.
    tcgen05: bool,
}

/// The body's `wgmma` that only accumulates and reads buffers that no later iteration
/// overwrites except through a ring (the module doc's conditions), if there is one.
fn in_flight_mma(func: &Func, body: &[Op], iters: &[ValueId], yields: &[ValueId]) -> Option<InFlight> {
    let mut uses: BTreeMap<ValueId, usize> = BTreeMap::new();
    let mut defs: BTreeMap<ValueId, &OpKind> = BTreeMap::new();
    walk_ops(body, &mut |op| {
        for v in op.kind.operands() {
            *uses.entry(v).or_default() += 1;
        }
        if let Some(r) = op.result {
            defs.insert(r, &op.kind);
        }
    });
    for y in yields {
        *uses.entry(*y).or_default() += 1;
    }
    body.iter().find_map(|op| {
        let (OpKind::Mma { a, b, acc, scales }, Some(r)) = (&op.kind, op.result) else { return None };
        let layout = func.ty(r).layout();
        let tcgen05 = layout.is_some_and(tilec_core::layout::Layout::is_tcgen05);
        // A block-scaled tcgen05 product's scales go to Tensor Memory before it is issued,
        // one region a stage of its A ring (`tcgen05::TmemPlan::scale_slots`).
        if scales.is_some() && !tcgen05 {
            return None;
        }
        let wgmma = layout.is_some_and(tilec_core::layout::Layout::is_wgmma);
        let iter = iters.iter().position(|i| i == acc)?;
        let only =
            (wgmma || tcgen05) && yields.get(iter) == Some(&r) && uses.get(acc) == Some(&1) && uses.get(&r) == Some(&1);
        if !only {
            return None;
        }
        let mut bufs = vec![];
        for x in [a, b] {
            // A register operand is read when the product runs, not when it is issued.
            let OpKind::LocalLoad { buf, .. } = defs.get(x)? else { return None };
            match defs.get(buf) {
                None => {}
                // A copy this pass turns into a ring (it is followed by its wait).
                Some(OpKind::AsyncCopy { dst: None, .. }) => {}
                Some(_) => return None,
            }
            bufs.push(*buf);
        }
        Some(InFlight { result: r, iter, bufs, tcgen05 })
    })
}

/// The result of the body's last op that reads the stage buffer `buf` (through its
/// `local_load`), when every reader is an op of the body itself (none in a nested region):
/// after it the stage may be released.
fn last_reader(body: &[Op], buf: ValueId) -> Option<ValueId> {
    // Every read of the buffer (a shared operand buffer is read both ways, see `LocalLoad`).
    let loads: Vec<ValueId> = body
        .iter()
        .filter_map(|o| match (&o.kind, o.result) {
            (OpKind::LocalLoad { buf: b, .. }, Some(r)) if *b == buf => Some(r),
            _ => None,
        })
        .collect();
    if loads.is_empty() {
        return None;
    }
    let reads = |o: &Op| o.kind.operands().iter().filter(|v| loads.contains(v)).count();
    // Readers in nested regions: their uses outnumber the body's own.
    let mut all = 0;
    walk_ops(body, &mut |o| all += reads(o));
    let top: usize = body.iter().map(reads).sum();
    if all != top {
        return None;
    }
    body.iter().rev().find(|o| reads(o) > 0).and_then(|o| o.result)
}

/// The iteration a copy fills: known in the prologue, a value in the body (made only where a
/// stage acquire needs it).
#[derive(Clone, Copy)]
enum Fill {
    Const(i64),
    Value(ValueId),
}

/// A copy of a loop that will be pipelined.
struct Candidate {
    /// Position of the copy in the body (its wait follows).
    pos: usize,
    /// The copy's buffer (the stage read replaces it).
    buf: ValueId,
    kind: OpKind,
    span: Option<tilec_core::Span>,
    distance: u32,
    hinted: bool,
    /// Body ops (positions, in order) the indices are computed by.
    slice: Vec<usize>,
    ring: ValueId,
    stages: u32,
    /// Filled by TMA (mbarrier per stage, `stage_wait`) rather than `cp.async` (groups).
    tma: bool,
    /// For a TMA ring: the result of the stage's last reader, after which the block releases
    /// the stage (`stage_release`) and before whose refill the copy acquires it; `None`: the
    /// refill waits behind a block-wide barrier instead.
    released: Option<ValueId>,
}

/// Builds ops into a list, making their result values.
struct Emit<'f> {
    func: &'f mut Func,
    ops: Vec<Op>,
}

impl Emit<'_> {
    fn push(&mut self, kind: OpKind, ty: Type) -> ValueId {
        let v = self.func.new_value(ty);
        self.ops.push(Op { kind, result: Some(v), span: None });
        v
    }
    fn int(&mut self, n: i64, ty: &Type) -> ValueId {
        self.push(OpKind::ConstInt(n), ty.clone())
    }
    fn bin(&mut self, op: BinOp, lhs: ValueId, rhs: ValueId, ty: &Type) -> ValueId {
        self.push(OpKind::Binary { op, lhs, rhs, flags: MathFlags::default() }, ty.clone())
    }
    /// `if lhs pred rhs { ops }`, with no results.
    fn when(&mut self, pred: CmpPred, lhs: ValueId, rhs: ValueId, ops: Vec<Op>, span: Option<tilec_core::Span>) {
        let cond = self.push(OpKind::Cmp(pred, lhs, rhs), Type::Scalar(tilec_core::DType::I1));
        let kind = OpKind::If {
            cond,
            then_ops: ops,
            then_yields: vec![],
            else_ops: vec![],
            else_yields: vec![],
            results: vec![],
        };
        self.ops.push(Op { kind, result: None, span });
    }
}

/// The loop's shape, as far as the pass needs it.
struct LoopInfo {
    lb: ValueId,
    step: ValueId,
    iv: ValueId,
    /// `lb` and `step` when they are constants.
    lb_c: Option<i64>,
    step_c: Option<i64>,
    ty: Type,
}

impl LoopInfo {
    /// `lb + k·step` (iteration k's induction value), before the loop.
    fn iv_at(&self, e: &mut Emit, k: i64) -> ValueId {
        match (self.lb_c, self.step_c) {
            (Some(0), Some(s)) => e.int(k * s, &self.ty),
            (_, Some(s)) => {
                let o = e.int(k * s, &self.ty);
                e.bin(BinOp::Add, self.lb, o, &self.ty)
            }
            _ => {
                let kk = e.int(k, &self.ty);
                let o = e.bin(BinOp::Mul, kk, self.step, &self.ty);
                e.bin(BinOp::Add, self.lb, o, &self.ty)
            }
        }
    }

    /// `iv + k·step` inside the body.
    fn iv_ahead(&self, e: &mut Emit, k: i64) -> ValueId {
        let o = match self.step_c {
            Some(s) => e.int(k * s, &self.ty),
            None => {
                let kk = e.int(k, &self.ty);
                e.bin(BinOp::Mul, kk, self.step, &self.ty)
            }
        };
        e.bin(BinOp::Add, self.iv, o, &self.ty)
    }

    /// The iteration number `(iv - lb) / step` inside the body.
    fn iteration(&self, e: &mut Emit) -> ValueId {
        let rel = match self.lb_c {
            Some(0) => self.iv,
            _ => e.bin(BinOp::Sub, self.iv, self.lb, &self.ty),
        };
        match self.step_c {
            Some(1) => rel,
            _ => e.bin(BinOp::Div, rel, self.step, &self.ty),
        }
    }
}

/// The tensors the kernel writes anywhere (stores, atomics, scatters).
fn written_tensors(func: &Func) -> std::collections::BTreeSet<ValueId> {
    let mut w = std::collections::BTreeSet::new();
    walk_ops(&func.ops, &mut |o| {
        if let Some((tensor, _, true)) = o.kind.global_access() {
            w.insert(tensor);
        }
    });
    w
}

/// Whether an op is a scalar element read of a tensor the kernel never writes (paged
/// attention's block table): reading it for a later iteration reads what that iteration will
/// (an index past the tensor reads 0, which the copy it feeds reads as any other in-bounds or
/// zero-filled tile, and the pipeline's extra tiles are never used).
fn read_only_element(func: &Func, op: &Op, written: &std::collections::BTreeSet<ValueId>) -> bool {
    let scalar = op.result.is_some_and(|r| matches!(func.ty(r), Type::Scalar(_)));
    matches!(&op.kind, OpKind::Element { tensor, .. } if scalar && !written.contains(tensor))
}

/// Whether an op may be recomputed for another iteration: pure, scalar, no memory read.
pub(crate) fn pure_scalar(func: &Func, op: &Op) -> bool {
    let scalar = op.result.is_some_and(|r| matches!(func.ty(r), Type::Scalar(_)));
    scalar
        && matches!(
            op.kind,
            OpKind::ConstInt(_)
                | OpKind::ConstFloat(_)
                | OpKind::Binary { .. }
                | OpKind::Unary { .. }
                | OpKind::Cast(_)
                | OpKind::Cmp(..)
                | OpKind::Logic(..)
                | OpKind::Select { .. }
                | OpKind::Dim { .. }
                | OpKind::Bid { .. }
                | OpKind::NumBlocks { .. }
                | OpKind::NumTiles { .. }
                | OpKind::ClusterRank
        )
}

/// `kind` with its operands renamed through `map` (the pure scalar kinds and copies).
fn renamed(kind: &OpKind, map: &BTreeMap<ValueId, ValueId>) -> OpKind {
    let m = |v: &ValueId| *map.get(v).unwrap_or(v);
    match kind {
        OpKind::Binary { op, lhs, rhs, flags } => OpKind::Binary { op: *op, lhs: m(lhs), rhs: m(rhs), flags: *flags },
        OpKind::Unary { op, value, flags } => OpKind::Unary { op: *op, value: m(value), flags: *flags },
        OpKind::Cast(x) => OpKind::Cast(m(x)),
        OpKind::Cmp(p, a, b) => OpKind::Cmp(*p, m(a), m(b)),
        OpKind::Logic(l, a, b) => OpKind::Logic(*l, m(a), m(b)),
        OpKind::Select { cond, a, b } => OpKind::Select { cond: m(cond), a: m(a), b: m(b) },
        OpKind::Element { tensor, index } => {
            OpKind::Element { tensor: m(tensor), index: index.iter().map(m).collect() }
        }
        OpKind::AsyncCopy { dst, tensor, index, padding, order, tile, latency, tma } => OpKind::AsyncCopy {
            dst: dst.as_ref().map(m),
            tensor: m(tensor),
            index: index.iter().map(m).collect(),
            padding: *padding,
            order: order.clone(),
            tile: tile.clone(),
            latency: *latency,
            tma: *tma,
        },
        k => k.clone(),
    }
}

/// The body ops (positions, in order) that compute `roots` from the induction variable and
/// values defined before the loop — pure scalar ops, and element reads of tensors the kernel
/// never writes — or why they cannot be recomputed ahead.
fn index_slice(
    func: &Func,
    body: &[Op],
    upto: usize,
    roots: &[ValueId],
    iters: &[ValueId],
    written: &std::collections::BTreeSet<ValueId>,
) -> Result<Vec<usize>, String> {
    let mut def: BTreeMap<ValueId, usize> = BTreeMap::new();
    for (i, op) in body[..upto].iter().enumerate() {
        if let Some(r) = op.result {
            def.insert(r, i);
        }
    }
    let mut nested: Vec<ValueId> = vec![];
    for op in &body[..upto] {
        match &op.kind {
            OpKind::For { results, .. } => nested.extend(results),
            OpKind::If { results, .. } => nested.extend(results),
            _ => {}
        }
    }
    let mut need: Vec<ValueId> = roots.to_vec();
    let mut taken: std::collections::BTreeSet<usize> = Default::default();
    while let Some(v) = need.pop() {
        if iters.contains(&v) {
            return Err("its indices depend on a loop-carried value".into());
        }
        if nested.contains(&v) {
            return Err("its indices are computed in a nested loop or if".into());
        }
        let Some(&p) = def.get(&v) else { continue };
        if !pure_scalar(func, &body[p]) && !read_only_element(func, &body[p], written) {
            return Err(
                "its indices are read from a tensor the kernel writes (or computed by an op that cannot be repeated ahead)"
                    .into(),
            );
        }
        if taken.insert(p) {
            need.extend(body[p].kind.operands());
        }
    }
    Ok(taken.into_iter().collect())
}

/// Recomputes the slice with the induction variable replaced by `iv`; returns the copy's
/// new indices.
fn clone_slice(
    e: &mut Emit,
    body: &[Op],
    slice: &[usize],
    old_iv: ValueId,
    iv: ValueId,
    index: &[ValueId],
) -> Vec<ValueId> {
    let mut map = BTreeMap::from([(old_iv, iv)]);
    for &p in slice {
        let op = &body[p];
        let Some(r) = op.result else { continue };
        let ty = e.func.ty(r).clone();
        let nv = e.push(renamed(&op.kind, &map), ty);
        map.insert(r, nv);
    }
    index.iter().map(|v| *map.get(v).unwrap_or(v)).collect()
}

/// The `pending` count of each copy's wait (see the module doc): groups newer than the copy
/// of iteration i at its wait, minimised over the prologue's iterations and one steady one.
/// In the body, copy `c` issues its refill (iteration `i + d`) right after its own wait.
fn wait_counts(dists: &[u32]) -> Vec<u32> {
    let dmax = i64::from(dists.iter().copied().max().unwrap_or(0));
    let mut seq: Vec<(usize, i64)> = vec![];
    for t in -dmax..0 {
        for (c, &d) in dists.iter().enumerate() {
            if t + i64::from(d) >= 0 {
                seq.push((c, t + i64::from(d)));
            }
        }
    }
    let mut best = vec![u32::MAX; dists.len()];
    for i in 0..=dmax {
        for (c, &d) in dists.iter().enumerate() {
            // (c, i) was issued by the prologue or by iteration i - d.
            if let Some(p) = seq.iter().position(|&x| x == (c, i)) {
                best[c] = best[c].min(u32::try_from(seq.len() - 1 - p).unwrap_or(0));
            }
            seq.push((c, i + i64::from(d)));
        }
    }
    best
}

fn bytes_of(ty: &Type) -> i64 {
    ty.shape().iter().product::<i64>() * i64::from(ty.dtype().bytes())
}

/// The name of the tensor a copy reads, for the report.
fn tensor_name<'f>(func: &'f Func, kind: &OpKind) -> &'f str {
    match kind {
        OpKind::AsyncCopy { tensor, .. } => func.param_name(*tensor).unwrap_or("?"),
        _ => "?",
    }
}

/// A ring the pass made, for the shared-memory check.
struct RingInfo {
    ring: ValueId,
    stage_bytes: i64,
    stages: u32,
    /// `load of T`, as the report and the error name it.
    what: String,
    span: Option<tilec_core::Span>,
}

impl Pass<'_> {
    /// A TMA copy of these coordinates (and tensor) in a CTA-pair kernel loads the same tile
    /// in both CTAs: the lowering multicasts it.
    fn multicast(&self, roots: &[ValueId]) -> bool {
        self.rank_dependent.as_ref().is_some_and(|d| !roots.iter().any(|v| d.contains(v)))
    }
}

struct Pass<'a> {
    opts: &'a Options,
    consts: BTreeMap<ValueId, i64>,
    report: Vec<String>,
    rings: Vec<RingInfo>,
    /// The tensors the kernel writes (found before the pass takes the ops apart).
    written: std::collections::BTreeSet<ValueId>,
    /// In a CTA-pair kernel, the values that differ between the pair's CTAs
    /// (`tile_cta_pair::rank_dependent`): a TMA copy whose coordinates are none of them loads
    /// the same tile in both and becomes a multicast, whose ring is released on empty
    /// mbarriers that both CTAs' warps arrive on (the copy writes the peer's stage too).
    rank_dependent: Option<std::collections::BTreeSet<ValueId>>,
}

/// The loop a pipelined loop sits in, at the top of its body (a persistent kernel's tile
/// loop around a GEMM's K loop): where the inner loop's bounds are made before it, the rings
/// are made once before it too and count their fills across its iterations.
#[derive(Clone)]
struct Outer {
    iv: ValueId,
    lb: ValueId,
    step: ValueId,
    /// The values its body makes (nested regions included), its induction variable and its
    /// loop-carried values.
    inside: std::collections::BTreeSet<ValueId>,
}

impl Pass<'_> {
    /// Pipelines the loops of `ops` (innermost first). Returns the ops and the rings of loops
    /// at the top of `ops` that count their fills across the iterations of `outer`: those
    /// are to be made before `outer`.
    /// `in_loop`: `ops` run inside a loop (perhaps under an `if` of it).
    fn ops(&mut self, func: &mut Func, ops: Vec<Op>, outer: Option<&Outer>, in_loop: bool) -> (Vec<Op>, Vec<Op>) {
        let mut out = Vec::with_capacity(ops.len());
        let mut hoisted = vec![];
        for mut op in ops {
            match &mut op.kind {
                OpKind::For { body, iv, lb, step, iters, .. } => {
                    let mut inside = tilec_core::tir::defined_values(body);
                    inside.insert(*iv);
                    inside.extend(iters.iter().copied());
                    let me = Outer { iv: *iv, lb: *lb, step: *step, inside };
                    let (b, rings) = self.ops(func, std::mem::take(body), Some(&me), true);
                    *body = b;
                    out.extend(rings);
                    let (ops, r) = self.pipeline_loop(func, op, outer, in_loop);
                    out.extend(ops);
                    hoisted.extend(r);
                }
                OpKind::If { then_ops, else_ops, .. } => {
                    // A loop in an `if` may skip iterations of the loop around: its rings stay
                    // its own.
                    let (t, _) = self.ops(func, std::mem::take(then_ops), None, in_loop);
                    let (e, _) = self.ops(func, std::mem::take(else_ops), None, in_loop);
                    *then_ops = t;
                    *else_ops = e;
                    out.push(op);
                }
                _ => out.push(op),
            }
        }
        (out, hoisted)
    }

    /// Pipelines one loop: the prologue, the loop, the epilogue. Where `outer` (the loop this
    /// one is at the top of) makes none of this loop's bounds, the rings count their fills
    /// across `outer`'s iterations (fill `j` of iteration `k` of `outer` is fill
    /// `k · trip + j`, so that a TMA ring's mbarrier phases run on) and are returned to be
    /// made before `outer`; else they are made in the prologue. A loop inside another
    /// (`in_loop`) whose fills cannot be counted so keeps `cp.async` rings: a TMA ring made
    /// again would initialise its mbarriers while a slower warp may still wait on them.
    fn pipeline_loop(
        &mut self,
        func: &mut Func,
        mut op: Op,
        outer: Option<&Outer>,
        in_loop: bool,
    ) -> (Vec<Op>, Vec<Op>) {
        let OpKind::For { lb, step, iv, iters, body, yields, ub, .. } = &mut op.kind else {
            return (vec![op], vec![]);
        };
        let ub = *ub;
        let outer = outer.filter(|o| [*lb, ub, *step].iter().all(|v| !o.inside.contains(v)));
        let tma_here = !in_loop || outer.is_some();
        let keep = if self.opts.in_flight { in_flight_mma(func, body, iters, yields) } else { None };
        // A tcgen05 product's reads end only where a commit says so: every buffer it reads
        // must become a TMA ring whose stages its commits release.
        let keep = keep.filter(|k| {
            !k.tcgen05
                || k.bufs.iter().all(|b| {
                    !body.iter().any(|o| o.result == Some(*b))
                        || body.iter().enumerate().any(|(p, o)| {
                            let OpKind::AsyncCopy { dst: None, tensor, index, latency, .. } = &o.kind else {
                                return false;
                            };
                            let mut roots = index.clone();
                            roots.push(*tensor);
                            o.result == Some(*b)
                                && self.opts.tma
                                && tma_here
                                && (*latency > 0 || self.opts.default_distance > 0)
                                && matches!(body.get(p + 1).map(|w| &w.kind), Some(OpKind::AsyncWait { pending: 0 }))
                                && tma_copy(func, &o.kind, func.ty(*b))
                                && index_slice(func, body, p, &roots, iters, &self.written).is_ok()
                        })
                })
        });
        let committed = |buf: ValueId| keep.as_ref().is_some_and(|k| k.tcgen05 && k.bufs.contains(&buf));
        let info = LoopInfo {
            lb: *lb,
            step: *step,
            iv: *iv,
            lb_c: self.consts.get(lb).copied(),
            step_c: self.consts.get(step).copied(),
            ty: func.ty(*iv).clone(),
        };
        let mut cands: Vec<Candidate> = vec![];
        for (p, o) in body.iter().enumerate() {
            let k @ OpKind::AsyncCopy { dst: None, tensor, index, latency, .. } = &o.kind else { continue };
            let waits = matches!(body.get(p + 1).map(|w| &w.kind), Some(OpKind::AsyncWait { pending: 0 }));
            let (Some(buf), true) = (o.result, waits) else { continue };
            let what = format!("load of {}", tensor_name(func, k));
            let mut roots = index.clone();
            roots.push(*tensor);
            match index_slice(func, body, p, &roots, iters, &self.written) {
                Ok(slice) => {
                    let (distance, hinted) = match *latency {
                        0 => (self.opts.default_distance, false),
                        n => (n, true),
                    };
                    if distance == 0 {
                        self.report.push(format!("{what}: not pipelined (distance 0)"));
                        continue;
                    }
                    let bty = func.ty(buf).clone();
                    let tma = self.opts.tma && tma_copy(func, k, &bty) && tma_here;
                    if self.opts.tma && !tma_here && tma_copy(func, k, &bty) {
                        self.report.push(format!(
                            "{what}: cp.async rather than TMA: its loop runs inside another whose iterations cannot number the ring's fills (its bounds change, or an `if` skips it)"
                        ));
                    }
                    let Type::Smem { shape, dtype, layout } = &bty else { continue };
                    let extra = u32::from(keep.as_ref().is_some_and(|k| k.bufs.contains(&buf)));
                    let stages = distance + 1 + extra;
                    let mut rshape = vec![i64::from(stages)];
                    rshape.extend(shape);
                    let ring = func.new_value(Type::Smem { shape: rshape, dtype: *dtype, layout: layout.clone() });
                    self.rings.push(RingInfo { ring, stage_bytes: bytes_of(&bty), stages, what, span: o.span });
                    cands.push(Candidate {
                        pos: p,
                        buf,
                        kind: k.clone(),
                        span: o.span,
                        distance,
                        hinted,
                        slice,
                        ring,
                        stages,
                        tma,
                        released: if tma && (self.opts.empty_barriers || committed(buf) || self.multicast(&roots)) {
                            last_reader(body, buf)
                        } else {
                            None
                        },
                    });
                }
                Err(why) => self.report.push(format!("{what}: not pipelined: {why}")),
            }
        }
        if cands.is_empty() {
            return (vec![op], vec![]);
        }
        let OpKind::For { body, .. } = &mut op.kind else { return (vec![op], vec![]) };
        let old_body = std::mem::take(body);
        let dists: Vec<u32> = cands.iter().map(|c| c.distance).collect();
        // Group counts concern the cp.async copies only: a TMA copy makes no group.
        let groups: Vec<u32> = cands.iter().filter(|c| !c.tma).map(|c| c.distance).collect();
        let mut counts = wait_counts(&groups).into_iter();
        let pend: Vec<u32> = cands.iter().map(|c| if c.tma { 0 } else { counts.next().unwrap_or(0) }).collect();
        let dmax = i64::from(dists.iter().copied().max().unwrap_or(0));
        // TMA rings in a loop around: fills numbered across its iterations (see the doc above).
        let outer = outer.filter(|_| cands.iter().any(|c| c.tma));
        let rings: Vec<Op> =
            cands.iter().map(|c| Op { kind: OpKind::StagesAlloc, result: Some(c.ring), span: c.span }).collect();

        // Prologue.
        let mut pro = Emit { func, ops: vec![] };
        // The fills of the loop around's earlier iterations, `k · trip` (`trip` = this loop's
        // iteration count, 0 when it runs none).
        let mut base: Option<(ValueId, ValueId)> = None;
        if let Some(o) = outer {
            let ty = info.ty.clone();
            let rel = pro.bin(BinOp::Sub, o.iv, o.lb, &ty);
            let k = pro.bin(BinOp::Div, rel, o.step, &ty);
            let span = pro.bin(BinOp::Sub, ub, info.lb, &ty);
            let one = pro.int(1, &ty);
            let sm1 = pro.bin(BinOp::Sub, info.step, one, &ty);
            let up = pro.bin(BinOp::Add, span, sm1, &ty);
            let q = pro.bin(BinOp::Div, up, info.step, &ty);
            let zero = pro.int(0, &ty);
            let trip = pro.bin(BinOp::Max, q, zero, &ty);
            base = Some((pro.bin(BinOp::Mul, k, trip, &ty), trip));
        } else {
            pro.ops.extend(rings.iter().cloned());
        }
        for t in -dmax..0 {
            for c in &cands {
                let target = t + i64::from(c.distance);
                if target < 0 {
                    continue;
                }
                let at = info.iv_at(&mut pro, target);
                let OpKind::AsyncCopy { index, .. } = &c.kind else { continue };
                let mut e = Emit { func: &mut *pro.func, ops: vec![] };
                let idx = clone_slice(&mut e, &old_body, &c.slice, info.iv, at, index);
                match base {
                    None => {
                        let s = e.int(target % i64::from(c.stages), &info.ty);
                        self.copy_into(&mut e, c, s, idx, Fill::Const(target));
                    }
                    Some((b, _)) => {
                        let tv = e.int(target, &info.ty);
                        let fill = e.bin(BinOp::Add, b, tv, &info.ty);
                        let sc = e.int(i64::from(c.stages), &info.ty);
                        let s = e.bin(BinOp::Rem, fill, sc, &info.ty);
                        self.copy_into(&mut e, c, s, idx, Fill::Value(fill));
                    }
                }
                let ops = e.ops;
                self.guarded(&mut pro, c, at, ub, ops);
            }
        }
        let prologue = pro.ops;

        // The body: the old ops, each copy replaced by its wait, its stage's read and the
        // refill `d` iterations ahead.
        let mut top = Emit { func, ops: vec![] };
        let local = info.iteration(&mut top);
        // The fill number of this iteration's stages, counted across the loop around.
        let n = match base {
            Some((b, _)) => top.bin(BinOp::Add, local, b, &info.ty),
            None => local,
        };
        let mut new_body = top.ops;
        let mut skip_wait = false;
        // The stage each candidate reads in this iteration.
        let mut slots: BTreeMap<usize, ValueId> = BTreeMap::new();
        for (p, o) in old_body.iter().enumerate() {
            if skip_wait {
                skip_wait = false;
                continue;
            }
            let Some((ci, c)) = cands.iter().enumerate().find(|(_, c)| c.pos == p) else {
                new_body.push(o.clone());
                continue;
            };
            skip_wait = true;
            if !c.tma {
                new_body.push(Op { kind: OpKind::AsyncWait { pending: pend[ci] }, result: None, span: None });
            }
            let mut e = Emit { func, ops: vec![] };
            let sc = e.int(i64::from(c.stages), &info.ty);
            let slot = e.bin(BinOp::Rem, n, sc, &info.ty);
            slots.insert(ci, slot);
            if c.tma {
                // The stage was filled for the (n / S)-th time: its mbarrier's phase of that parity.
                let fills = e.bin(BinOp::Div, n, sc, &info.ty);
                let two = e.int(2, &info.ty);
                let phase = e.bin(BinOp::Rem, fills, two, &info.ty);
                e.ops.push(Op { kind: OpKind::StageWait { ring: c.ring, slot, phase }, result: None, span: None });
            }
            new_body.extend(e.ops);
            new_body.push(Op { kind: OpKind::Stage { buf: c.ring, index: slot }, result: Some(c.buf), span: c.span });
            let mut e = Emit { func, ops: vec![] };
            let ahead = info.iv_ahead(&mut e, i64::from(c.distance));
            let OpKind::AsyncCopy { index, .. } = &c.kind else { continue };
            let idx = clone_slice(&mut e, &old_body, &c.slice, info.iv, ahead, index);
            // With `range(0, …)` the iteration number is the induction value.
            let nk = if n == info.iv && info.step_c == Some(1) && base.is_none() {
                ahead
            } else {
                let k = e.int(i64::from(c.distance), &info.ty);
                e.bin(BinOp::Add, n, k, &info.ty)
            };
            let sc = e.int(i64::from(c.stages), &info.ty);
            let refill = e.bin(BinOp::Rem, nk, sc, &info.ty);
            let mut g = Emit { func: &mut *e.func, ops: vec![] };
            self.copy_into(&mut g, c, refill, idx, Fill::Value(nk));
            let ops = g.ops;
            self.guarded(&mut e, c, ahead, ub, ops);
            new_body.extend(e.ops);
            let how =
                if c.hinted { format!("latency={} →", c.distance) } else { "no hint, target default →".into() };
            self.report.push(format!(
                "load of {}: {how} distance {}, {} stages × {} B, {}",
                tensor_name(func, &c.kind),
                c.distance,
                c.stages,
                bytes_of(func.ty(c.buf)),
                if c.tma {
                    "TMA into NVMMA stages, an mbarrier each (copies past the loop's end not issued)".to_string()
                } else {
                    format!("cp.async, wait pending={}", pend[ci])
                }
            ));
        }
        // A product kept in flight: its result renamed, the wait giving the old name (the
        // yield reads it), and after the loop the final wait giving the loop result's name.
        let mut after = vec![];
        if let Some(k) = &keep {
            // Every buffer it reads is a ring of this loop or made before it.
            let ringed = k
                .bufs
                .iter()
                .all(|b| cands.iter().any(|c| c.buf == *b) || !old_body.iter().any(|o| o.result == Some(*b)));
            let at = new_body.iter().position(|o| o.result == Some(k.result));
            if let (true, Some(at)) = (ringed, at) {
                let ty = func.ty(k.result).clone();
                // A wgmma waits in the loop for the previous iteration's products; a tcgen05
                // product does not: each stage is released by a commit of the products
                // issued so far.
                if !k.tcgen05 {
                    let issued = func.new_value(ty.clone());
                    new_body[at].result = Some(issued);
                    new_body.insert(
                        at + 1,
                        Op { kind: OpKind::MmaWait { value: issued, pending: 1 }, result: Some(k.result), span: None },
                    );
                }
                // The loop's result waits for the last products.
                let OpKind::For { results, .. } = &mut op.kind else { return (vec![op], vec![]) };
                let fin = results[k.iter];
                let last = func.new_value(ty);
                results[k.iter] = last;
                after.push(Op { kind: OpKind::MmaWait { value: last, pending: 0 }, result: Some(fin), span: None });
                self.report.push(if k.tcgen05 {
                    "tcgen05 products kept in flight across iterations (each stage released by tcgen05.commit onto its empty mbarrier, mma_wait pending=0 after the loop); its rings have one stage more".into()
                } else {
                    "wgmma kept in flight across iterations (mma_wait pending=1 in the loop, 0 after it); its rings have one stage more".into()
                });
            }
        }
        // Releases: after a stage's last reader; for a product kept in flight, whose reads end
        // at the next iteration's wait, the previous iteration's stage after this one's wait.
        for (ci, c) in cands.iter().enumerate() {
            let (Some(r), Some(&slot)) = (c.released, slots.get(&ci)) else { continue };
            let Some(at) = new_body.iter().position(|o| o.result == Some(r)) else { continue };
            let mut e = Emit { func: &mut *func, ops: vec![] };
            if matches!(new_body[at].kind, OpKind::MmaWait { pending: 1, .. }) {
                let sc = e.int(i64::from(c.stages), &info.ty);
                let one = e.int(i64::from(c.stages) - 1, &info.ty);
                let back = e.bin(BinOp::Add, n, one, &info.ty);
                let prev = e.bin(BinOp::Rem, back, sc, &info.ty);
                let zero = e.int(0, &info.ty);
                let release = Op { kind: OpKind::StageRelease { ring: c.ring, slot: prev }, result: None, span: None };
                e.when(CmpPred::Gt, local, zero, vec![release], None);
                // The last iteration's stage, read until the wait after the loop: released
                // there, where a later run of this loop (the loop around's next iteration)
                // refills it.
                if let Some((b, trip)) = base {
                    let mut g = Emit { func: &mut *e.func, ops: vec![] };
                    let sc = g.int(i64::from(c.stages), &info.ty);
                    let fills = g.bin(BinOp::Add, b, trip, &info.ty);
                    let one = g.int(1, &info.ty);
                    let lastf = g.bin(BinOp::Sub, fills, one, &info.ty);
                    let last = g.bin(BinOp::Rem, lastf, sc, &info.ty);
                    let zero = g.int(0, &info.ty);
                    let release =
                        Op { kind: OpKind::StageRelease { ring: c.ring, slot: last }, result: None, span: None };
                    g.when(CmpPred::Gt, trip, zero, vec![release], None);
                    after.extend(g.ops);
                }
            } else {
                e.ops.push(Op { kind: OpKind::StageRelease { ring: c.ring, slot }, result: None, span: None });
            }
            let ops = e.ops;
            new_body.splice(at + 1..at + 1, ops);
            self.report.push(format!(
                "load of {}: each stage released on its empty mbarrier after its last reader, acquired before its refill (no block-wide barrier)",
                tensor_name(func, &c.kind)
            ));
        }
        let OpKind::For { body, .. } = &mut op.kind else { return (vec![op], vec![]) };
        *body = new_body;
        let mut out = prologue;
        out.push(op);
        out.extend(after);
        if cands.iter().any(|c| !c.tma) {
            out.push(Op { kind: OpKind::AsyncWait { pending: 0 }, result: None, span: None });
        }
        if base.is_some() {
            self.report.push(
                "rings made before the loop around this one, their fills counted across its iterations (mbarrier phases run on from one run of this loop to the next)".into(),
            );
            (out, rings)
        } else {
            (out, vec![])
        }
    }

    /// `ops` (a copy into a stage) as they are for a `cp.async` ring — a copy past the loop's
    /// end reads zeros or unused tiles and the epilogue waits for it — and, for a TMA ring,
    /// only when iteration `iv` is one the loop runs (`iv < ub`): every TMA copy issued is
    /// then waited for by its iteration, and none lands after the ring is reused.
    fn guarded(&self, e: &mut Emit, c: &Candidate, iv: ValueId, ub: ValueId, ops: Vec<Op>) {
        if !c.tma {
            e.ops.extend(ops);
            return;
        }
        e.when(CmpPred::Lt, iv, ub, ops, c.span);
    }

    /// `async_copy_into(stage(ring, slot), tensor, idx)` (`tma_copy_into` for a TMA ring).
    /// `fill` is the iteration whose tile this is: a released TMA ring first acquires the
    /// stage, waiting for the release of its previous fill (phase `(fill / S + 1) % 2`).
    fn copy_into(&self, e: &mut Emit, c: &Candidate, slot: ValueId, idx: Vec<ValueId>, fill: Fill) {
        if c.released.is_some() {
            let ty = e.func.ty(slot).clone();
            let fill = match fill {
                Fill::Const(k) => e.int(k, &ty),
                Fill::Value(v) => v,
            };
            let sc = e.int(i64::from(c.stages), &ty);
            let fills = e.bin(BinOp::Div, fill, sc, &ty);
            let one = e.int(1, &ty);
            let next = e.bin(BinOp::Add, fills, one, &ty);
            let two = e.int(2, &ty);
            let phase = e.bin(BinOp::Rem, next, two, &ty);
            e.ops.push(Op { kind: OpKind::StageAcquire { ring: c.ring, slot, phase }, result: None, span: None });
        }
        let sty = e.func.ty(c.buf).clone();
        let stage = e.push(OpKind::Stage { buf: c.ring, index: slot }, sty);
        let OpKind::AsyncCopy { tensor, padding, order, tile, latency, .. } = &c.kind else { return };
        let kind = OpKind::AsyncCopy {
            dst: Some(stage),
            tensor: *tensor,
            index: idx,
            padding: *padding,
            order: order.clone(),
            tile: tile.clone(),
            latency: *latency,
            tma: c.tma,
        };
        e.ops.push(Op { kind, result: None, span: c.span });
    }
}

/// Runs the pass over a laid-out kernel.
pub fn run(func: &mut Func, opts: &Options) -> Result<PipelineReport, Diagnostic> {
    let mut consts = BTreeMap::new();
    func.walk(&mut |op| {
        if let (OpKind::ConstInt(n), Some(r)) = (&op.kind, op.result) {
            consts.insert(r, *n);
        }
    });
    let written = written_tensors(func);
    let rank_dependent = (func.cluster > 1).then(|| crate::tile_cta_pair::rank_dependent(func));
    let mut pass = Pass { opts, consts, report: vec![], rings: vec![], written, rank_dependent };
    // Hinted loads that stayed register loads: the hint has nothing to act on.
    func.walk(&mut |op| {
        if let OpKind::Load { tensor, latency, .. } = &op.kind {
            if *latency > 0 {
                let name = func.param_name(*tensor).unwrap_or("?");
                pass.report.push(format!(
                    "load of {name}: latency={latency} not used: a register load (only mma operands of 16-bit or fp8 dtypes from 16-byte aligned tensors become async copies)"
                ));
            }
        }
    });
    let ops = std::mem::take(&mut func.ops);
    func.ops = pass.ops(func, ops, None, false).0;
    budget(func, opts, &pass.rings)?;
    Ok(PipelineReport { lines: pass.report })
}

/// The shared-memory check: rings plus every other buffer (and the largest exchange
/// scratch) against the target's limit.
fn budget(func: &Func, opts: &Options, rings: &[RingInfo]) -> Result<(), Diagnostic> {
    if rings.is_empty() {
        return Ok(());
    }
    let ring_ids: Vec<ValueId> = rings.iter().map(|r| r.ring).collect();
    let (mut fixed, mut scratch) = (0i64, 0i64);
    func.walk(&mut |op| match (&op.kind, op.result) {
        (OpKind::StagesAlloc, Some(r)) if ring_ids.contains(&r) => {}
        (OpKind::LocalAlloc { .. } | OpKind::AsyncCopy { dst: None, .. } | OpKind::StagesAlloc, Some(r)) => {
            fixed += bytes_of(func.ty(r))
        }
        (OpKind::ConvertLayout { scratch: s, value }, Some(r)) => {
            let (t, x) = (func.ty(r), func.ty(*value));
            // A conversion that keeps every element in its register moves nothing.
            let moves = match (x.layout(), t.layout()) {
                (Some(a), Some(b)) => !a.same_placement(b, x.shape()),
                _ => true,
            };
            if moves {
                scratch = scratch.max(s.size(t.shape()) * i64::from(t.dtype().bytes()));
            }
        }
        _ => {}
    });
    let fixed = fixed + scratch;
    let need = |cap: u32| fixed + rings.iter().map(|r| r.stage_bytes * i64::from(r.stages.min(cap))).sum::<i64>();
    let limit = i64::from(opts.smem_limit);
    let total = need(u32::MAX);
    if total <= limit {
        return Ok(());
    }
    let most = rings.iter().map(|r| r.stages).max().unwrap_or(1);
    let fits = (2..=most).rev().find(|&s| need(s) <= limit);
    let worst = rings.iter().max_by_key(|r| r.stage_bytes * i64::from(r.stages));
    let list: Vec<String> = rings.iter().map(|r| format!("{}: {} × {} B", r.what, r.stages, r.stage_bytes)).collect();
    let mut d = Diagnostic::error(
        "E0022",
        format!(
            "the pipelined loads need {total} bytes of shared memory, more than the {limit} a block has on {}",
            func.target
        ),
    )
    .with_note(format!("rings of stages: {}; other buffers: {fixed} B", list.join(", ")));
    d = match fits {
        Some(s) => d.with_note(format!("at most {s} stages a ring fit (latency={} or less on these loads)", s - 1)),
        None => d.with_note("even two stages a ring do not fit: drop the latency hints or use smaller tiles"),
    };
    if let Some(RingInfo { what, span: Some(span), .. }) = worst {
        d = d.with_primary(*span, format!("the largest ring: {what}"));
    }
    Err(d)
}

#[cfg(test)]
mod tests {
    use super::wait_counts;

    #[test]
    fn one_distance_waits_for_exactly_its_iteration() {
        // One copy d ahead, refilled after its wait: the d - 1 newer groups may stay in
        // flight (with d = 1, the one refill is issued after the wait: nothing newer).
        assert_eq!(wait_counts(&[1]), vec![0]);
        assert_eq!(wait_counts(&[3]), vec![2]);
        // Two copies of one distance (GEMM's A and B): at A's wait, B's group of the same
        // iteration and the two of the next are newer; at B's, A's refill joins them.
        assert_eq!(wait_counts(&[2, 2]), vec![3, 3]);
    }

    #[test]
    fn mixed_distances_are_conservative_in_the_prologue() {
        // FMHA's K (2 ahead) and V (4 ahead): V's steady-state count is 7, the prologue
        // has one group fewer, so 6.
        assert_eq!(wait_counts(&[2, 4]), vec![3, 6]);
    }
}
