//! `tile-to-llvm`: lowers a kernel whose tiles all have layouts (tilegpu) to the `llvm` and
//! `nvvm` dialects, with its tensor-core ops as upstream `nvgpu` ops (the `nvgpu` stage; the
//! pipeline's upstream `convert-nvgpu-to-nvvm, convert-arith-to-llvm,
//! reconcile-unrealized-casts` then give the `llvm` stage).
//!
//! Needs: `tile-layout` (every tile typed with a layout: `#blocked`, `#slice`, `#mma`,
//! `#dot_operand`; shared buffers with a `#swizzled_shared` one).
//!
//! Does: each tile becomes the list of scalar SSA values one thread holds, in the register
//! order of its layout; every elementwise op (arithmetic, casts, comparisons, `where`, math)
//! is expanded per register. Memory:
//! - `load`/`store` compute one base coordinate per thread (from `tid`) and a constant
//!   offset per register; registers contiguous along the fastest dim are moved as one
//!   predicated 16-byte (or narrower) access (`@p ld.global.v4.b32`) when the tensor
//!   parameter is specialised as 16-byte aligned (unit last stride, and extents and other
//!   strides multiples of 16 bytes), else one element at a time. Out-of-bounds lanes load
//!   the padding value and store nothing. Sliced tiles (rows to broadcast) are loaded by
//!   every thread that holds them.
//! - `reduce` combines in-thread (a tree), then across lanes with `shfl.sync.bfly`, then
//!   across warps through a shared-memory scratch region of its own (one barrier, two in a
//!   loop), so every thread ends with the statistic of each row it holds (the `#slice`).
//! - `convert_layout`, `permute` and reshapes that move elements between threads go through
//!   shared memory: write at the element's linear index, barrier, read in the new layout
//!   (scalar accesses, no swizzle yet).
//! - `for` and run-time `if` become blocks with the carried registers as block arguments.
//! - `rand` is Philox 4x32-10 (mul.hi/mul.lo rounds, keys computed once per op); offsets
//!   known to be `base + c` with consecutive `c` (arange, splats and their sums) share the
//!   Philox blocks they span, with the word picked by `base mod 4` at run time.
//! - Math: `exp2` is `ex2.approx.f32` (≤ 2 ulp); `exp(x)` is `ex2.approx(x·log2 e)` with the
//!   rounding error of the product corrected by a factor `1 + e·ln 2` (overflow stays inf,
//!   never NaN); `sqrt` is `sqrt.rn`; `rsqrt` is
//!   `1 / sqrt.rn` (`rsqrt.approx` with `rounding="approx"`); `log2`/`log` use `lg2.approx`;
//!   `truediv` is `div.rn` (`div.approx` with `rounding="approx"`). f16/bf16 math runs in
//!   f32 and rounds once. `sin`/`cos` reduce by 2π (Cody–Waite) then use `sin/cos.approx`;
//!   `tanh` is an odd polynomial below 0.3 and `1 − 2/(e^{2|x|}+1)` above;
//!   `flush_to_zero=true` flushes the f32 operands and result (the `.ftz` instruction where
//!   there is one: `ex2`, `rsqrt.approx`, `div.approx`). Float `+ - *` of the source carry
//!   LLVM's `contract` flag unless `fp-fusion=false`. Not lowered: `print`,
//!   argmax/argmin.
//! - Tensor cores ([`mma`]): `local_alloc` writes a tile into a swizzled shared buffer,
//!   `local_load` into a `#dot_operand` is read by its `mma` per K step with
//!   `nvvm.ldmatrix` at the buffer's element in the kernel's one shared array (each lane's
//!   subscript is its row's swizzled element index, computed once in the prologue and moved
//!   to each K step and repetition by an XOR and an add), `mma` is `nvvm.mma.sync` m16n8k16
//!   f16/bf16 → f32. Not upstream `nvgpu.ldmatrix`/`mma.sync`: MLIR 22's `nvgpu.mma.sync`
//!   rejects bf16 operands, and for f16 both were the same `nvvm` ops inside memref
//!   descriptors and fragment arrays that `convert-nvgpu-to-nvvm` unpacked again (issue 34:
//!   the same LLVM IR and PTX, 11 % less text to parse and 25 ms less conversion on
//!   mla_decode). `async_copy` is one
//!   `nvgpu.device_async_copy` per 16-byte chunk (bypassing L1; source size 0 out of bounds:
//!   zero-filled) from a memref view of the tensor straight into the swizzled buffer, the
//!   chunks committed as one group (`device_async_create_group`); `async_wait` is
//!   `device_async_wait` and a barrier. A ring of stages (`stages_alloc`) is one region
//!   of S buffers; `stage` is a view whose first element is `index · M · N` (run time),
//!   read and filled (`async_copy_into`) through the ring's memref view; the barrier
//!   analysis treats a stage as its whole ring. The memref views meet the lowering's LLVM
//!   values through `builtin.unrealized_conversion_cast`s of the types the LLVM conversion
//!   gives them, so reconciling leaves none.
//! - Ordered loads (`load(order=…)`) read the tensor through a permuted view: vectors run
//!   along the tile dim that is contiguous in memory.
//!
//! Shared memory: every request (exchange and reduction scratch: live at one op; shared
//! buffers: from their `local_alloc` to their last reader, to the end of a loop that reads
//! them) is recorded by a first lowering; the offsets are then packed by liveness (first fit;
//! one after the other when all fit under 48 KiB) and a second lowering uses them. Barriers
//! follow the ranges read since the last barrier along the structured control flow: every
//! write is preceded by a barrier when it meets one of them (a read-after-write always gets
//! one after the write), a loop body ends with one when a range it reads after its last
//! barrier is written before its first barrier on some path (the next iteration's write
//! would overtake the read; a write after that barrier cannot), the two branches of an
//! `if` are followed from the same state and joined, and a loop's exit joins its entry
//! (zero trips) with its body's end.
//! - Gathers, scatters and element reads are one predicated scalar access per element
//!   (every index compared unsigned with its extent: negative indices are out of bounds).
//! - Global memory within a block: a tile's elements belong to threads by its layout (a
//!   replicated element is loaded by every copy, stored by one), so a store to a tensor the
//!   block read since its last barrier, and a load of one it wrote, get a barrier first (an
//!   epilogue clearing the accumulator it read, RoPE in place); tensors only read never do,
//!   two stores are left unordered, and a loop counts its own accesses as pending at its top.
//!   Every kernel also waits for the grid before it (`griddepcontrol.wait`, then
//!   `launch_dependents`; the signature's `grid_dependency`): first thing, or where
//!   `tile-grid-dependency` put a `tilegpu.grid_dependency_wait`.
//!
//! Guarantees: a module with one `llvm.func` marked `nvvm.kernel`, `nvvm.maxntid` set to the
//! block size, and (with the `occupancy` option) `nvvm.minctasm`; shared memory is one
//! `@__tilec_smem` array: static up to 48 KiB, dynamic above (sized at launch, at most the
//! target's `smem_per_block`, else E0020 listing the requests). The parameter ABI is that of `tilec_core::abi`.
//!
//! - TMA stores: an epilogue's store of an accumulator tile at the kernel's top level, on a
//!   target with TMA, is staged in an NVMMA-swizzled shared buffer and leaves in bulk tensor
//!   stores issued by thread 0 (`tma::tma_store_plan` says which stores; the buffer's tensor
//!   map is in the signature's `tma` after the copies').
//!
//! Options: `arch` (default: the module's `tile.target`), `occupancy`, `fp-fusion` (default
//! true: the source's float `+ - *` may contract into `fma`, see [`Options::fp_fusion`]),
//! `emulate-block-scale` ([`Options::emulate_block_scale`]), `tma-store` (default true,
//! [`Options::tma_store`]), `sort-loops` ([`Options::sort_loops`]), `topk-network` (default
//! true, [`Options::topk_network`]), `mma-chains` ([`Options::mma_chains`]),
//! `first-offset-chunks` (default 0, [`Options::first_offset_chunks`]), `swizzle-split`
//! (default true, [`Options::swizzle_split`]).
//!
//! Layout of this folder: [`emit`] (typed registers and one constructor per op), [`ptx_asm`]
//! (inline PTX for predicated accesses), [`regs`] (the lowered value of each tile-IR value),
//! [`int_arith`] (index formulas written once for registers and for plain integers),
//! and one file per op family — [`elementwise`], [`math`], [`rand`], [`global`], [`shared`],
//! [`reduce`], [`control`], [`mma`] (`mma.sync`), [`wgmma`]. [`unsupported`] is the one list of what this lowering does not
//! handle yet; `tile-layout` asks it before laying a kernel out.

mod control;
mod elementwise;
pub mod emit;
mod global;
mod int_arith;
mod math;
mod mma;
mod ptx_asm;
mod rand;
mod reduce;
mod regs;
mod shared;
mod sort;
mod tcgen05;
mod tma;
mod vector;
mod wgmma;

use crate::tile_warp_specialize::TURN_BARRIER;
use emit::{Emitter, Reg, Ty};
use ptx_asm::PtxAsm;
use regs::{TensorArgs, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use tilec_core::layout::Layout;
use tilec_core::target::Arch;
use tilec_core::tir::{walk_ops, BinOp, Func, Op, OpKind, Type, UnOp, ValueId};
use tilec_core::{DType, Diagnostic};

use tilec_core::target::STATIC_SMEM_LIMIT;

/// A shared-memory request of the lowering: (first position, last position live, bytes,
/// alignment in bytes: 16, or the 8-row atom of an NVMMA buffer that a descriptor reads).
type Request = (u32, u32, i64, i64);

/// The lowered kernel.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub text: String,
    pub shared_bytes: u32,
    pub block_threads: u32,
    /// The tensor maps the kernel takes after its parameters (the signature's `tma`).
    pub tma: Vec<tilec_core::abi::TmaParam>,
    /// The kernel reads `num_tiles(0)` (`tile-persistent`): it takes the grid's x extent as
    /// an i32 after its parameters, before the tensor maps (the signature's `persistent`).
    pub persistent: bool,
    /// The kernel opens with `griddepcontrol.wait` (the signature's `grid_dependency`).
    pub grid_dependency: bool,
    /// What the tensor-core lowering did (`--report`): per `mma`, the instructions of one K
    /// step; per shared buffer, its swizzle and the bank conflicts of its `ldmatrix` reads.
    pub report: Vec<String>,
}

pub(crate) fn err(msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error("E0900", msg)
}

/// The builtins of the language this lowering does not handle yet (the "lowered today"
/// column of docs/language.md says "no" for exactly these; `tests/it/docs.rs` checks it).
pub const NOT_LOWERED: &[&str] = &["print"];

/// The first op this lowering does not handle yet, as an `E0900` diagnostic pointing at it.
/// This is the one list of what `tile-to-llvm` lowers: `tile-layout` asks it first, so a
/// kernel that cannot lower fails before any layout work, with the construct's span.
pub fn unsupported(func: &Func) -> Option<Diagnostic> {
    let mut bad: Option<(String, Option<tilec_core::Span>)> = None;
    func.walk(&mut |op| {
        if bad.is_some() {
            return;
        }
        let what = match &op.kind {
            OpKind::Print { .. } => Some(NOT_LOWERED[0].to_string()),
            _ => None,
        };
        if let Some(w) = what {
            bad = Some((w, op.span));
        }
    });
    bad.map(|(what, span)| {
        let mut d = Diagnostic::error("E0900", format!("not lowered yet: {what}")).with_note(
            "the tile stage of this kernel is valid; the GPU lowering of this construct comes in a later version",
        );
        if let Some(s) = span {
            d = d.with_primary(s, "not supported by the lowering yet");
        }
        d
    })
}

/// See `Lowering::note_unit_factor`.
#[derive(Clone, Copy, Debug)]
enum UnitFact {
    /// `where(c, a, b)`: (a, b).
    Select(ValueId, ValueId),
    /// `m - where(c, _, m)`: 0 where the select kept `m`.
    ZeroWhenKept,
    /// `exp2` (or `exp`) of such a difference: 1.0 there.
    OneWhenKept,
}

/// The lowering of one kernel: the emitter, the lowered value of each tile-IR value, and
/// what the family functions share (thread coordinates, the shared-memory buffer).
pub(crate) struct Lowering<'f> {
    func: &'f Func,
    /// The sort lowered last, for a `topk`'s second result (see `sort`).
    last_sort: Option<sort::LastSort>,
    /// A persistent kernel's tile-count parameter (`num_tiles(0)`).
    num_tiles: Option<Reg>,
    /// The target; family functions ask it what the chip has.
    arch: &'static Arch,
    /// See [`Options::emulate_block_scale`].
    emulate_block_scale: bool,
    /// See [`Options::sort_loops`].
    sort_loops: bool,
    /// See [`Options::topk_network`].
    topk_network: bool,
    /// See [`Options::mma_chains`].
    mma_chains: i64,
    /// See [`Options::first_offset_chunks`].
    first_offset_chunks: i64,
    /// See [`Options::swizzle_split`].
    swizzle_split: bool,
    em: Emitter,
    vals: BTreeMap<ValueId, Value>,
    /// For i32 tiles known to be affine in the register: register r = `base + c` with `base`
    /// an SSA value and `c` a constant (arange, splats and their sums). `rand` uses it to
    /// share one Philox call between consecutive offsets.
    aff: BTreeMap<ValueId, Vec<(Reg, i64)>>,
    /// Index tiles whose element at coordinates `c` is `c[d]` (plus a scalar, where one was
    /// added): `arange`, reshaped, broadcast and offset. A layout conversion of one makes
    /// it anew in the target layout instead of sending it through shared memory.
    iota: BTreeMap<ValueId, (usize, Option<Reg>)>,
    /// Broadcasts of a few registers a thread over many (`scaled_by_row_factor`): the
    /// operand's registers.
    row_factors: BTreeMap<ValueId, Vec<Reg>>,
    /// What `note_unit_factor` knows of a value on the way to a row factor.
    unit_facts: BTreeMap<ValueId, UnitFact>,
    /// Sums of two bases already emitted.
    base_sums: BTreeMap<(std::rc::Rc<str>, std::rc::Rc<str>), Reg>,
    /// Per-layout thread coordinates, cached: (layout text, dim and its terms) → i32 value.
    bases: BTreeMap<(String, String), Reg>,
    lane: Reg,
    warp: Reg,
    tid: Reg,
    /// What the kernel's asynchronous ops ask (TMA parameters and rings, async proxy, …).
    facts: &'f AsyncFacts,
    /// Per TMA ring (by its offset): its mbarriers' offset, its stage count, whether it has
    /// empty barriers (after the full ones).
    tma_bars: BTreeMap<i64, (i64, i64, bool)>,
    /// The rings (by offset) a CTA pair shares: multicast, or read by `cta_group::2` products.
    ring_sharing: BTreeMap<i64, tma::Sharing>,
    /// `%cluster_ctarank`, read once where a CTA pair needs it.
    cluster_rank: Option<Reg>,
    /// Bytes of `@__tilec_smem` handed out so far.
    smem: u32,
    /// The largest alignment a request asked for (the alignment of `@__tilec_smem`).
    smem_align: i64,
    smem_ptr: Option<Reg>,
    /// The 32-bit shared address of `smem_ptr` (wgmma descriptors), made once.
    smem_addr: Option<Reg>,
    /// Memref views of shared buffers for the `nvgpu` ops: (byte offset, elements, dtype).
    smem_views: BTreeMap<(i64, i64, DType), Reg>,
    /// Groups of asynchronous copies not waited for yet: (block serial, token).
    async_groups: Vec<(u32, Reg)>,
    /// Per enclosing loop, innermost last: the shared ranges its body writes before its
    /// first barrier (a write in the next iteration must not overtake a read of this one).
    loop_writes: Vec<LoopWrites>,
    /// Position of the op being lowered in the kernel's walk order.
    pos: u32,
    /// Shared-memory requests so far: (first, last position live, bytes).
    requests: Vec<Request>,
    /// Offsets of the requests, from the allocation of a first lowering (None: that one).
    plan: Option<Vec<i64>>,
    /// Shared ranges read since the last barrier (a write over one needs a barrier first).
    pending_reads: Vec<(i64, i64)>,
    /// Tensors read and written through global memory since the last barrier: a block's
    /// threads own a tile's elements by its layout (a load's replicated elements are read by
    /// every copy, a store's written by one), so a store after a load of the same tensor (an
    /// epilogue clearing its accumulator, RoPE in place) or a load after a store may meet an
    /// element in different threads; a barrier orders them (`bar.sync` orders the
    /// participating threads' global accesses too).
    global_reads: BTreeSet<ValueId>,
    global_writes: BTreeSet<ValueId>,
    /// Lines for `--report`.
    report: Vec<String>,
    /// The thread that issues TMA copies and acquires stages (the producer's first thread
    /// while its part of a warp-specialized kernel is lowered).
    issuer: i64,
    /// `elect.sync`'s lane, and per issuing thread the predicate naming it (`on_thread`).
    elect_lane: Option<Reg>,
    elected: BTreeMap<i64, Reg>,
    /// The kernel's TMEM base address and the mbarrier its tcgen05 products commit to.
    tmem: Option<(Reg, Reg)>,
    /// The mbarrier of each tcgen05 product left in flight (`TmemPlan::deferred`).
    tmem_bars: BTreeMap<ValueId, Reg>,
    /// The first of the two mbarriers of each double-buffered chain, by its tile loop
    /// (`TmemPlan::double`); the second follows it.
    tmem_double_bars: BTreeMap<ValueId, Reg>,
    /// Inside a double-buffered tile loop's body: the region its product loop writes.
    tmem_slot: Option<regs::TmemAlt>,
    /// Whether a thread loaded or stored TMEM since the last product (the next one waits).
    tmem_dirty: bool,
    /// A CTA pair's `cta_group::2` products: the leader's mbarrier the peer arrives on when
    /// its threads are done with TMEM (`tcgen05::tmem_issue_sync`).
    tmem_pair_bar: Option<Reg>,
    /// The buffers holding the replicated rows of copied A operands of products of fewer
    /// than 64 rows (`Lowering::replicated_a`), by the offset of the buffer (or ring) copied.
    a_replicas: BTreeMap<i64, i64>,
    /// Per-lane `ldmatrix` row indices computed once in the prologue (see
    /// `Lowering::ldmatrix_blocks`), by buffer, swizzle, warp origin and block pattern.
    lane_bases: BTreeMap<String, Reg>,
    /// The results lowered as vectors of a thread's registers (`vector::plan`).
    vector_plan: &'f BTreeSet<ValueId>,
    /// The op being lowered is in `vector_plan`.
    vector_now: bool,
    /// [`Options::vector_lanes`].
    vector_lanes: usize,
    /// A vectorised value's registers extracted so far: (block serial, lanes).
    lane_cache: BTreeMap<ValueId, (u32, Vec<Reg>)>,
    /// A tile's registers inserted into vectors so far, by value and group: (block serial,
    /// vector).
    pack_cache: BTreeMap<(ValueId, usize), (u32, Reg)>,
}

/// The shared writes of a loop body that the previous iteration's reads can meet.
#[derive(Debug, Default)]
struct LoopWrites {
    /// Ranges written before the body's first barrier on some path.
    exposed: Vec<(i64, i64)>,
    /// Every path from the body's top has passed a barrier.
    crossed: bool,
}

/// The last position each `local_alloc` buffer is live at: its readers (`local_load`s and
/// the `mma`s that read those), extended to the end of every loop a reader is in and the
/// buffer's definition is not (the buffer is read again next iteration).
fn buffer_live_ends(func: &Func) -> BTreeMap<ValueId, u32> {
    struct Walk {
        pos: u32,
        def: BTreeMap<ValueId, (u32, Vec<u32>)>,
        readers: BTreeMap<ValueId, Vec<ValueId>>,
        uses: Vec<(ValueId, u32, Vec<u32>)>,
        loops: Vec<u32>,
        loop_end: BTreeMap<u32, u32>,
        /// Stage views → their ring.
        alias: BTreeMap<ValueId, ValueId>,
    }
    impl Walk {
        fn root(&self, v: ValueId) -> ValueId {
            self.alias.get(&v).copied().unwrap_or(v)
        }
    }
    fn go(w: &mut Walk, ops: &[Op]) {
        for op in ops {
            w.pos += 1;
            let here = w.pos;
            match &op.kind {
                OpKind::LocalAlloc { .. } | OpKind::AsyncCopy { dst: None, .. } | OpKind::StagesAlloc => {
                    if let Some(r) = op.result {
                        w.def.insert(r, (here, w.loops.clone()));
                    }
                }
                // A stage is its ring: copying into it or reading it keeps the ring alive.
                OpKind::Stage { buf, .. } => {
                    let root = w.root(*buf);
                    w.uses.push((root, here, w.loops.clone()));
                    if let Some(r) = op.result {
                        w.alias.insert(r, root);
                    }
                }
                OpKind::AsyncCopy { dst: Some(d), .. } => {
                    let root = w.root(*d);
                    w.uses.push((root, here, w.loops.clone()));
                }
                OpKind::LocalLoad { buf, .. } => {
                    let root = w.root(*buf);
                    w.uses.push((root, here, w.loops.clone()));
                    if let Some(r) = op.result {
                        w.readers.entry(r).or_default().push(root);
                    }
                }
                OpKind::Mma { a, b, scales, .. } => {
                    let mut read = vec![a, b];
                    if let Some((sa, sb)) = scales {
                        read.extend([sa, sb]);
                    }
                    let mut all = vec![];
                    for x in read {
                        if let Some(bufs) = w.readers.get(x).cloned() {
                            for bf in bufs {
                                w.uses.push((bf, here, w.loops.clone()));
                                all.push(bf);
                            }
                        }
                    }
                    // A product left in flight reads its buffers until its wait.
                    if let Some(r) = op.result {
                        w.readers.insert(r, all);
                    }
                }
                OpKind::MmaWait { value, .. } => {
                    for bf in w.readers.get(value).cloned().unwrap_or_default() {
                        w.uses.push((bf, here, w.loops.clone()));
                    }
                }
                _ => {}
            }
            match &op.kind {
                OpKind::For { body, .. } => {
                    w.loops.push(here);
                    go(w, body);
                    w.loops.pop();
                    w.loop_end.insert(here, w.pos);
                }
                OpKind::If { then_ops, else_ops, .. } => {
                    go(w, then_ops);
                    go(w, else_ops);
                }
                _ => {}
            }
        }
    }
    let mut w = Walk {
        pos: 0,
        def: BTreeMap::new(),
        readers: BTreeMap::new(),
        uses: vec![],
        loops: vec![],
        loop_end: BTreeMap::new(),
        alias: BTreeMap::new(),
    };
    go(&mut w, &func.ops);
    let mut ends = BTreeMap::new();
    for (buf, at, loops) in &w.uses {
        let Some((d, dloops)) = w.def.get(buf) else { continue };
        let mut end = (*at).max(*d);
        for l in loops.iter().filter(|l| !dloops.contains(l)) {
            end = end.max(w.loop_end.get(l).copied().unwrap_or(end));
        }
        let e = ends.entry(*buf).or_insert(end);
        *e = (*e).max(end);
    }
    ends
}

/// What the asynchronous ops of a kernel ask of its lowering, found once before the
/// lowerings (there may be two: see [`run`]).
struct AsyncFacts {
    /// The tensor maps of the kernel's TMA copies (parameters `%tmap{k}`).
    tma: Vec<tilec_core::abi::TmaParam>,
    /// The rings TMA fills.
    tma_rings: std::collections::BTreeSet<ValueId>,
    /// The stores that go out through TMA, by their tile value (`tma::tma_stores`).
    tma_stores: BTreeMap<ValueId, tma::TmaStore>,
    /// The rings whose stages are released on empty mbarriers (`stage_release`).
    released_rings: std::collections::BTreeSet<ValueId>,
    /// The rings of a CTA pair whose copies are multicast (`tma::multicast_rings`).
    multicast: std::collections::BTreeSet<ValueId>,
    /// A CTA pair's tcgen05 products issued as `cta_group::2` by the pair's leader
    /// (`tcgen05::pair_plan`), or why not (for the report).
    pair: Option<tcgen05::PairPlan>,
    pair_note: Option<String>,
    /// Where the tcgen05 accumulators live in Tensor Memory.
    tmem: tcgen05::TmemPlan,
    /// Whether some `mma` is a `wgmma` or `tcgen05`: its operands are read through the async proxy, so
    /// shared-memory writes they read are fenced (`fence.proxy.async`) before the barrier
    /// that publishes them.
    async_proxy: bool,
    /// The `mma` results a `tilegpu.mma_wait` waits for: those products are left in flight.
    in_flight: std::collections::BTreeSet<ValueId>,
    /// Buffers only their writers' warpgroups read (see
    /// `tile_warp_specialize::warpgroup_local_buffers`): published by a warpgroup barrier.
    warpgroup_local: std::collections::BTreeSet<ValueId>,
    /// A warp-specialized kernel's ops by role (see `tile-warp-specialize`).
    partition: Option<crate::tile_warp_specialize::Partition>,
    /// The last position each shared buffer is read at, over the ops in the order the
    /// lowering walks them (a warp-specialized kernel's: common, producer, consumer).
    live_end: BTreeMap<ValueId, u32>,
}

impl AsyncFacts {
    fn of(func: &Func, tma_stores: bool) -> Result<AsyncFacts, Diagnostic> {
        let tma_stores = tma::tma_stores(func, tma_stores);
        let mut f = AsyncFacts {
            tma: tma::tma_params(func, &tma_stores)?,
            tma_stores,
            tma_rings: tma::tma_rings(func),
            tmem: tcgen05::TmemPlan::of(func)?,
            warpgroup_local: crate::tile_warp_specialize::warpgroup_local_buffers(func),
            released_rings: Default::default(),
            multicast: Default::default(),
            pair: None,
            pair_note: None,
            async_proxy: false,
            in_flight: Default::default(),
            partition: None,
            live_end: BTreeMap::new(),
        };
        // A warp-specialized kernel lowers its partition, in the order the roles are emitted,
        // so that liveness positions match the walk.
        if func.warp_spec.is_some() {
            let p = crate::tile_warp_specialize::partition(func).map_err(|why| {
                err(format!("a kernel marked warp-specialized has no producer/consumer partition: {why}"))
            })?;
            let mut walked = func.clone();
            walked.ops = p.common.iter().chain(&p.producer).chain(&p.consumer).cloned().collect();
            f.live_end = buffer_live_ends(&walked);
            f.partition = Some(p);
        } else {
            f.live_end = buffer_live_ends(func);
        }
        func.walk(&mut |op| match (&op.kind, op.result) {
            (OpKind::Mma { .. }, Some(r)) => {
                f.async_proxy |= func.ty(r).layout().is_some_and(Layout::reads_by_descriptor)
            }
            (OpKind::MmaWait { value, .. }, _) => {
                f.in_flight.insert(*value);
            }
            (OpKind::StageRelease { ring, .. }, _) => {
                f.released_rings.insert(*ring);
            }
            _ => {}
        });
        if func.cluster > 1 {
            // (Which rings a pair shares: once, for the multicast and the cta_group::2 plan.)
            let by_rank = tma::rings_by_rank(func);
            f.multicast = tma::multicast_rings(&by_rank, &f.released_rings);
            if f.tmem.columns > 0 {
                match tcgen05::pair_plan(func, &f.tmem, &f.released_rings, &by_rank) {
                    Ok(p) => {
                        f.multicast.retain(|r| !p.has(*r));
                        f.pair = Some(p);
                    }
                    Err(why) => f.pair_note = Some(why),
                }
            }
        }
        Ok(f)
    }
}

/// Offsets for shared-memory requests: one after the other when they fit the static limit
/// together (no reuse, no barrier between phases), else packed by liveness — first fit, 16-byte
/// aligned, among the requests live at the same time.
fn pack_requests(reqs: &[Request]) -> Vec<i64> {
    let (bump, top) = bump_offsets(reqs);
    let packed = pack_by_liveness(reqs);
    let packed_top = reqs.iter().zip(&packed).map(|(r, o)| o + r.2).max().unwrap_or(0);
    // One after the other where that fits and costs little over the packing: a block of
    // `paged_attention_decode` whose exchanges add up to 46 KB packs into 29 KB (four blocks
    // an H100 SM against seven).
    if top <= i64::from(STATIC_SMEM_LIMIT) && top <= packed_top + BUMP_SLACK {
        return bump;
    }
    packed
}

/// How many bytes more than the liveness packing one-after-the-other placement may take.
const BUMP_SLACK: i64 = 8 * 1024;

/// First fit by liveness (see [`pack_requests`]).
fn pack_by_liveness(reqs: &[Request]) -> Vec<i64> {
    let mut order: Vec<usize> = (0..reqs.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(reqs[i].2), reqs[i].0, i));
    let mut placed: Vec<(usize, i64)> = vec![];
    let mut out = vec![0; reqs.len()];
    for i in order {
        let (s, e, b, a) = reqs[i];
        let mut busy: Vec<(i64, i64)> = placed
            .iter()
            .filter(|(j, _)| reqs[*j].0 <= e && s <= reqs[*j].1)
            .map(|(j, o)| (*o, *o + reqs[*j].2))
            .collect();
        busy.sort();
        let mut o = 0;
        for (lo, hi) in busy {
            if o + b <= lo {
                break;
            }
            o = o.max(align_up(hi, a));
        }
        out[i] = o;
        placed.push((i, o));
    }
    out
}

/// The options of `tile-to-llvm`.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Blocks per SM to ask ptxas for (`.minnctapersm`).
    pub occupancy: Option<u32>,
    /// Float `+`, `-` and `*` of the source may fuse into one `fma` (one rounding instead of
    /// two), as Triton's `enable_fp_fusion` and nvcc's default allow: FlashAttention's
    /// `qk · scale − m` is then one FFMA. Off: every product and sum rounds on its own, as
    /// on the interpreter.
    pub fp_fusion: bool,
    /// Block-scaled products (`mma_scaled`) as fp8 `mma.sync` products times the scale
    /// factors, read from the registers and lanes the block-scaled instruction would read
    /// them from: sm_121a's code on a chip without the instruction (`--emulate sm_121a`).
    pub emulate_block_scale: bool,
    /// Epilogue stores of accumulator tiles go out through TMA where the target has it
    /// (`tma::tma_store_plan`); off: `tma-store=false`, `--no-tma-store`, `--no-tma`.
    pub tma_store: bool,
    /// A sort's bitonic network as two loops over its stages instead of each stage written
    /// out (`sort-loops=true`): far less code to compile, slower to run (see `sort`).
    pub sort_loops: bool,
    /// A `topk` (a sort cut to `k < n`) through the top-k network, fewer and shrinking stages
    /// (default); off (`topk-network=false`): the whole sort's network (see `sort::network`).
    pub topk_network: bool,
    /// The independent `mma.sync` accumulator chains a warp keeps in flight where its
    /// product has fewer accumulator blocks than this over a long K: the K steps are dealt to
    /// partial accumulators summed at the end (see `mma`). 1: one chain per block, as written.
    pub mma_chains: i64,
    /// Outside loops, a global load or store with at least this many chunks a thread takes
    /// each chunk's address from the thread's first offset (see `global`'s `tile_access`);
    /// 0 (default): only in loops. 16 compiles mla_decode in 11 % fewer instructions (its
    /// epilogue stores) and runs it 0.4–1 % slower on an H200
    /// (bench/results/2026-11-29-session31/first-offset-stores/), so it is not the default.
    pub first_offset_chunks: i64,
    /// An epilogue's register stores into its TMA-store buffer and each `cp.async` chunk of a
    /// ring addressed as the thread's part of the swizzle plus a register constant
    /// (`mma::SwizzleThread`: an `xor` and an `add` or two a chunk) where the constant's bits
    /// are clear of the thread's (default); off: each chunk's whole swizzle written out, which
    /// LLVM folds to about the same code in more time (the A/B of that change).
    pub swizzle_split: bool,
    /// Registers a thread's chains of elementwise ops are written on at a time, as one
    /// `vector<N x T>` op each (`vector`): a quarter of the ops of a register-by-register
    /// chain at 4 (default) — gelu sm_121a compiles in 33 % fewer instructions; its registers
    /// a thread go 45 -> 54 at 4, 71 at 8, 159 at 32, as a group's temporaries live together
    /// (sm_90a 48 -> 40 at 4). 0 or 1: register by register.
    pub vector_lanes: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            occupancy: None,
            fp_fusion: true,
            emulate_block_scale: false,
            tma_store: true,
            sort_loops: false,
            topk_network: true,
            mma_chains: 4,
            first_offset_chunks: 0,
            swizzle_split: true,
            vector_lanes: 4,
        }
    }
}

/// Lowers a kernel with layouts to the `llvm`/`nvvm` dialects.
pub fn run(func: &Func, arch: &'static Arch, opts: &Options) -> Result<Lowered, Diagnostic> {
    // The pass's precondition, checked once here rather than where each op meets it.
    let mut unlaid = false;
    func.walk(&mut |op| unlaid |= op.result.is_some_and(|r| matches!(func.ty(r), Type::Tile { layout: None, .. })));
    if unlaid {
        return Err(Diagnostic::error(
            "E0904",
            "`tile-to-llvm` needs every tile laid out: run `tile-layout` before it",
        ));
    }
    if let Some(d) = unsupported(func) {
        return Err(d);
    }
    // The first lowering places shared memory one request after the other; only when the
    // liveness packing chooses other offsets does the kernel lower again with them.
    let facts = AsyncFacts::of(func, opts.tma_store && arch.has(tilec_core::target::Feature::Tma))?;
    let vectors = if opts.vector_lanes > 1 { vector::plan(func, opts.vector_lanes) } else { BTreeSet::new() };
    let (first, requests) = lower_with(func, arch, opts, &facts, &vectors, None)?;
    let plan = pack_requests(&requests);
    let low = if plan == bump_offsets(&requests).0 {
        first
    } else {
        lower_with(func, arch, opts, &facts, &vectors, Some(plan))?.0
    };
    let smem = low.shared_bytes;
    if smem > arch.smem_per_block {
        let mut d = Diagnostic::error(
            "E0020",
            format!(
                "the kernel needs {smem} bytes of shared memory; {} gives a block {}",
                arch.name, arch.smem_per_block
            ),
        );
        for (k, (_, _, b, _)) in requests.iter().enumerate().filter(|(_, r)| r.2 >= 1024) {
            d = d.with_note(format!("shared request {k}: {b} bytes"));
        }
        return Err(d.with_note("use smaller tiles (the `by_target` constants) for this target"));
    }
    // The occupancy the kernel asks for must fit an SM, or `.minnctapersm` would only cut the
    // registers of blocks that never run side by side.
    if let Some(o) = opts.occupancy {
        if let Some(why) = tilec_core::target::occupancy_refusal(arch, o, low.block_threads, smem) {
            let mut d = Diagnostic::error(
                "E0025",
                format!("the kernel asks for {o} blocks per SM (`occupancy`), which {} cannot hold", arch.name),
            )
            .with_note(why);
            for line in low.report.iter().filter(|l| l.starts_with("buffer ")) {
                d = d.with_note(line.clone());
            }
            return Err(d.with_note(
                "lower the `occupancy` hint for this target (a `by_target` value), or use smaller tiles or fewer stages (`latency=`)",
            ));
        }
    }
    Ok(low)
}

/// `x` rounded up to a multiple of `a`.
fn align_up(x: i64, a: i64) -> i64 {
    (x + a - 1) / a * a
}

/// Offsets placing the requests one after the other, each at its alignment, and their total.
fn bump_offsets(reqs: &[Request]) -> (Vec<i64>, i64) {
    let mut bump = vec![];
    let mut top = 0i64;
    for &(_, _, b, a) in reqs {
        let o = align_up(top, a);
        bump.push(o);
        top = o + b;
    }
    (bump, top)
}

/// One lowering with shared-memory offsets from `plan` (None: one after the other), and the
/// requests it made.
fn lower_with<'f>(
    func: &'f Func,
    arch: &'static Arch,
    opts: &Options,
    facts: &'f AsyncFacts,
    vectors: &'f BTreeSet<ValueId>,
    plan: Option<Vec<i64>>,
) -> Result<(Lowered, Vec<Request>), Diagnostic> {
    let producer_warps = func.warp_spec.map_or(0, |w| w.producer_warps);
    let threads = (func.num_warps + producer_warps) * 32;
    let mut em = Emitter::new();
    em.fp_fusion = opts.fp_fusion;
    let tid = em.sreg_prologue("tid.x");
    let c31 = em.ci32(31);
    let c5 = em.ci32(5);
    let lane = em.def_prologue(Ty::I32, format!("llvm.and {tid}, {c31} : i32"));
    let warp = em.def_prologue(Ty::I32, format!("llvm.lshr {tid}, {c5} : i32"));

    // Parameters.
    let mut args: Vec<String> = vec![];
    let mut vals: BTreeMap<ValueId, Value> = BTreeMap::new();
    for p in &func.params {
        match func.ty(p.value) {
            Type::Tensor { rank, .. } => {
                let ptr = Reg::new(format!("%{}", p.name), Ty::Ptr(1));
                args.push(format!("{ptr}: !llvm.ptr<1>"));
                let dims: Vec<Reg> = (0..*rank).map(|d| Reg::new(format!("%{}_dim{d}", p.name), Ty::I64)).collect();
                let strides: Vec<Reg> =
                    (0..*rank).map(|d| Reg::new(format!("%{}_stride{d}", p.name), Ty::I64)).collect();
                args.extend(dims.iter().map(|d| format!("{d}: i64")));
                args.extend(strides.iter().map(|s| format!("{s}: i64")));
                vals.insert(
                    p.value,
                    Value::Tensor(TensorArgs { ptr, dims, strides, aligned: p.divisibility >= 16, contiguous: None }),
                );
            }
            Type::Scalar(d) => {
                let r = Reg::new(format!("%{}", p.name), Ty::of(*d));
                args.push(format!("{r}: {}", r.ty.text()));
                vals.insert(p.value, Value::Scalar(r));
            }
            Type::Tile { .. } | Type::Smem { .. } => return Err(err("a kernel parameter cannot be a tile")),
        }
    }
    // A persistent kernel's tile count (the ABI's `persistent`).
    let mut persistent = false;
    func.walk(&mut |o| persistent |= matches!(o.kind, OpKind::NumTiles { axis: 0 }));
    let num_tiles = persistent.then(|| {
        let r = Reg::new("%tilec_num_tiles_x", Ty::I32);
        args.push(format!("{r}: i32"));
        r
    });
    for k in 0..facts.tma.len() {
        // A tensor map by value (CUTLASS's `__grid_constant__ const CUtensorMap`).
        args.push(format!(
            "%tmap{k}: !llvm.ptr {{llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, nvvm.grid_constant}}"
        ));
    }
    let mut lw = Lowering {
        func,
        emulate_block_scale: opts.emulate_block_scale,
        sort_loops: opts.sort_loops,
        topk_network: opts.topk_network,
        mma_chains: opts.mma_chains.max(1),
        first_offset_chunks: opts.first_offset_chunks,
        swizzle_split: opts.swizzle_split,
        last_sort: None,
        num_tiles,
        arch,
        em,
        vals,
        aff: BTreeMap::new(),
        row_factors: BTreeMap::new(),
        unit_facts: BTreeMap::new(),
        iota: BTreeMap::new(),
        base_sums: BTreeMap::new(),
        bases: BTreeMap::new(),
        lane,
        warp,
        tid,
        facts,
        tma_bars: BTreeMap::new(),
        ring_sharing: BTreeMap::new(),
        cluster_rank: None,
        a_replicas: BTreeMap::new(),
        smem: 0,
        smem_align: 16,
        smem_ptr: None,
        smem_addr: None,
        smem_views: BTreeMap::new(),
        async_groups: vec![],
        loop_writes: vec![],
        pos: 0,
        requests: vec![],
        plan,
        pending_reads: vec![],
        global_reads: BTreeSet::new(),
        global_writes: BTreeSet::new(),
        report: vec![],
        lane_bases: BTreeMap::new(),
        vector_plan: vectors,
        vector_lanes: opts.vector_lanes,
        vector_now: false,
        lane_cache: BTreeMap::new(),
        pack_cache: BTreeMap::new(),
        issuer: 0,
        elect_lane: None,
        elected: BTreeMap::new(),
        tmem: None,
        tmem_dirty: false,
        tmem_pair_bar: None,
        tmem_bars: BTreeMap::new(),
        tmem_double_bars: BTreeMap::new(),
        tmem_slot: None,
    };
    // Programmatic dependent launch (`grid_dependency_wait`): the kernel's first instruction,
    // unless `tile-grid-dependency` placed the wait after the copies of independent tensors.
    let grid_dependency = arch.has(tilec_core::target::Feature::GridDepControl);
    if grid_dependency && !func.ops.iter().any(|o| matches!(o.kind, OpKind::GridDependencyWait)) {
        lw.grid_dependency_wait();
    }
    match (&facts.pair, &facts.pair_note) {
        (Some(_), _) => lw.report.push(
            "CTA pair: its tcgen05 products are cta_group::2 ones, issued by the pair's leader for both CTAs".into(),
        ),
        (None, Some(why)) => lw
            .report
            .push(format!("CTA pair: its tcgen05 products stay cta_group::1 (each CTA its own, B multicast): {why}")),
        _ => {}
    }
    lw.tmem_begin()?;
    match (func.warp_spec, &facts.partition) {
        (Some(spec), Some(part)) => lw.warp_specialized(spec, part)?,
        _ => lw.ops(&func.ops)?,
    }
    lw.tmem_end()?;
    if func.cluster > 1 && lw.facts.pair.is_none() {
        // No CTA of a pair leaves while the other may still arrive on its mbarriers (a pair's
        // cta_group::2 kernel meets before freeing TMEM, in `tmem_end`).
        tma::cluster_sync(&mut lw.em);
    }
    let smem = lw.smem;
    let smem_align = lw.smem_align;
    let requests = std::mem::take(&mut lw.requests);
    let (pro, body, named) = lw.em.finish_with_structs();

    let (aliases, pro, body) = alias_long_structs(pro, body, named);
    let mut s = aliases;
    let _ = writeln!(s, "module attributes {{tile.target = \"{}\"}} {{", arch.name);
    if smem > STATIC_SMEM_LIMIT {
        // Above the static limit: dynamic shared memory, sized at launch (the runtime passes
        // the artifact's shared bytes and raises the function's limit).
        let _ = writeln!(
            s,
            "  llvm.mlir.global external @__tilec_smem() {{addr_space = 3 : i32, alignment = {smem_align} : i64}} : !llvm.array<0 x i8>"
        );
    } else if smem > 0 {
        let _ = writeln!(
            s,
            "  llvm.mlir.global internal @__tilec_smem() {{addr_space = 3 : i32, alignment = {smem_align} : i64}} : !llvm.array<{smem} x i8>"
        );
    }
    let mut attrs = format!("nvvm.kernel, nvvm.maxntid = array<i32: {threads}, 1, 1>");
    // setmaxnreg needs the entry register count, which ptxas derives from the block size
    // and the blocks per SM.
    let occupancy = match func.warp_spec {
        Some(w) if w.producer_regs > 0 => Some(opts.occupancy.unwrap_or(1)),
        _ => opts.occupancy,
    };
    if let Some(o) = occupancy {
        let _ = write!(attrs, ", nvvm.minctasm = {o} : i32");
    }
    if func.cluster > 1 {
        // `.reqnctapercluster`: a plain launch groups the CTAs along x into clusters.
        let _ = write!(attrs, ", nvvm.cluster_dim = array<i32: {}, 1, 1>", func.cluster);
    }
    let _ = writeln!(s, "  llvm.func @{}({}) attributes {{{attrs}}} {{", func.name, args.join(", "));
    s.push_str(&pro);
    s.push_str(&body);
    let _ = writeln!(s, "    llvm.return\n  }}\n}}");
    let report = std::mem::take(&mut lw.report);
    Ok((
        Lowered {
            text: s,
            shared_bytes: smem,
            block_threads: threads,
            tma: facts.tma.clone(),
            persistent,
            grid_dependency,
            report,
        },
        requests,
    ))
}

impl Lowering<'_> {
    /// A warp-specialized kernel (see `tile-warp-specialize`): the rings made by every
    /// thread, then warps `num_warps …` run the producer's ops and warps below run the
    /// consumers', each side with its `setmaxnreg` and the consumers' barriers named.
    fn warp_specialized(
        &mut self,
        spec: tilec_core::tir::WarpSpec,
        part: &crate::tile_warp_specialize::Partition,
    ) -> Result<(), Diagnostic> {
        self.ops(&part.common)?;
        let consumers = self.func.num_warps;
        let first = self.em.ci32(i64::from(consumers));
        let warp = self.warp.clone();
        let is_producer = self.em.icmp(emit::ICmp::Sge, &warp, &first);
        let (producer, consumer, end) = (self.em.new_block(), self.em.new_block(), self.em.new_block());
        self.em.cond_br(&is_producer, &producer, &consumer);
        self.em.label(&producer, &[]);
        if spec.producer_regs > 0 {
            self.em.line(format!("nvvm.setmaxregister decrease {}", spec.producer_regs));
        }
        self.issuer = i64::from(consumers) * 32;
        self.ops(&part.producer)?;
        self.em.br(&end, &[]);
        self.em.label(&consumer, &[]);
        self.issuer = 0;
        // Values the producer's block made do not dominate the consumers'.
        self.aff.clear();
        self.base_sums.clear();
        self.pending_reads.clear();
        self.em.named_barrier = Some(consumers * 32);
        if spec.consumer_regs > 0 {
            self.em.line(format!("nvvm.setmaxregister increase {}", spec.consumer_regs));
        }
        let mut turns = false;
        walk_ops(&part.consumer, &mut |o| turns |= matches!(o.kind, OpKind::Turn { .. }));
        if turns {
            // Warpgroup 0 takes the first turn: the last one hands it over before any.
            let wgs = i64::from(consumers / 4);
            let (wg, c0) = (self.warpgroup(), self.em.ci32(0));
            let last_wg = self.em.ci32(wgs - 1);
            let is_last = self.em.icmp(emit::ICmp::Eq, &wg, &last_wg);
            self.turn_arrive(&c0, Some(&is_last));
        }
        self.ops(&part.consumer)?;
        if self.em.turn_open || self.em.barrier_in_turn {
            return Err(err(
                "a consumer-wide barrier inside a warpgroup's turn, or a turn never ended: the warpgroups would deadlock (disable the ping-pong: tile-warp-specialize{pingpong=false})",
            ));
        }
        self.em.named_barrier = None;
        self.em.br(&end, &[]);
        self.em.label(&end, &[]);
        self.report.push(format!(
            "warp-specialized: {} threads ({consumers} consumer warps, {} producer warps)",
            (consumers + spec.producer_warps) * 32,
            spec.producer_warps
        ));
        Ok(())
    }

    /// This thread's consumer warpgroup.
    pub(super) fn warpgroup(&mut self) -> Reg {
        let c2 = self.em.ci32(2);
        let warp = self.warp.clone();
        self.em.lshr(&warp, &c2)
    }

    /// `bar.arrive` on the turn barrier of warpgroup `to` where `when` holds: two
    /// warpgroups' threads complete it, the arriving one and the one that waits for its turn.
    fn turn_arrive(&mut self, to: &Reg, when: Option<&Reg>) {
        let base = self.em.ci32(TURN_BARRIER);
        let id = self.em.add(&base, to);
        let mut asm = PtxAsm::new();
        let i = asm.input(&id);
        match when {
            Some(w) => {
                let w = self.em.def(Ty::I32, format!("llvm.zext {w} : i1 to i32"));
                let p = asm.input(&w);
                asm.push(&format!("{{ .reg .pred p; setp.ne.b32 p, {p}, 0; @p bar.arrive {i}, 256; }}"));
            }
            None => asm.push(&format!("bar.arrive {i}, 256;")),
        }
        asm.emit(&mut self.em);
    }

    /// A consumer warpgroup's turn (`tilegpu.turn_begin`/`turn_end`, see the op): turn `g`
    /// waits on named barrier `TURN_BARRIER + g` until warpgroup `g - 1` arrives there at the
    /// end of its own; the final end of the last warpgroup hands nothing on (nobody waits).
    fn turn(&mut self, begin: bool, last: bool) -> Result<(), Diagnostic> {
        let wgs = i64::from(self.func.num_warps / 4);
        if self.func.warp_spec.is_none() || wgs < 2 || self.em.named_barrier.is_none() {
            return Err(err(
                "a warpgroup turn outside the consumers of a warp-specialized kernel with two or more consumer warpgroups",
            ));
        }
        if begin == self.em.turn_open {
            return Err(err(if begin {
                "a warpgroup turn begun twice"
            } else {
                "a warpgroup turn ended before it began"
            }));
        }
        let wg = self.warpgroup();
        if begin {
            let (base, n) = (self.em.ci32(TURN_BARRIER), self.em.ci32(256));
            let id = self.em.add(&base, &wg);
            self.em.line(format!("nvvm.barrier id = {id} number_of_threads = {n}"));
        } else {
            let (one, w) = (self.em.ci32(1), self.em.ci32(wgs));
            let next = self.em.add(&wg, &one);
            let next = self.em.def(Ty::I32, format!("llvm.urem {next}, {w} : i32"));
            let when = last.then(|| {
                let last_wg = self.em.ci32(wgs - 1);
                self.em.icmp(emit::ICmp::Ne, &wg, &last_wg)
            });
            self.turn_arrive(&next, when.as_ref());
        }
        self.em.turn_open = begin;
        Ok(())
    }

    fn ops(&mut self, ops: &[Op]) -> Result<(), Diagnostic> {
        for op in ops {
            self.pos += 1;
            self.op(op).map_err(|d| match (d.labels.is_empty(), op.span) {
                (true, Some(s)) => d.with_primary(s, "while lowering this"),
                _ => d,
            })?;
        }
        Ok(())
    }

    /// Follows a conditional rescale's factor, `exp2(m - where(c, m_new, m))`: exactly 1.0
    /// wherever the select kept `m`, and only such factors are worth a warp's vote before a
    /// multiply by them (`scaled_by_row_factor`; an `alpha` from `maximum` is 1.0 only where
    /// the maximum did not move, rarely for a warp's rows, and the branch costs registers).
    fn note_unit_factor(&mut self, op: &Op) {
        let Some(r) = op.result else { return };
        let fact = match &op.kind {
            OpKind::Select { a, b, .. } => UnitFact::Select(*a, *b),
            OpKind::Binary { op: BinOp::Sub, lhs, rhs, .. } if matches!(self.unit_facts.get(rhs), Some(UnitFact::Select(a, b)) if a == lhs || b == lhs) => {
                UnitFact::ZeroWhenKept
            }
            OpKind::Unary { op: UnOp::Exp2 | UnOp::Exp, value, .. }
                if matches!(self.unit_facts.get(value), Some(UnitFact::ZeroWhenKept)) =>
            {
                UnitFact::OneWhenKept
            }
            _ => return,
        };
        self.unit_facts.insert(r, fact);
    }

    /// Whether `v` is a factor `note_unit_factor` found exactly 1.0 in most iterations.
    pub(crate) fn is_unit_when_kept(&self, v: ValueId) -> bool {
        matches!(self.unit_facts.get(&v), Some(UnitFact::OneWhenKept))
    }

    /// Lowers one op: the dispatch to the family functions.
    fn op(&mut self, op: &Op) -> Result<(), Diagnostic> {
        self.note_unit_factor(op);
        self.vector_now = op.result.is_some_and(|r| self.vector_plan.contains(&r));
        let rty = op.result.map(|r| self.func.ty(r).clone());
        let value = match &op.kind {
            OpKind::Bid { .. }
            | OpKind::NumBlocks { .. }
            | OpKind::NumTiles { .. }
            | OpKind::Dim { .. }
            | OpKind::ClusterRank => self.grid_value(&op.kind)?,
            OpKind::ConstInt(_) | OpKind::ConstFloat(_) | OpKind::Splat(_) | OpKind::Arange => {
                self.constant(op, rty.as_ref())?
            }
            OpKind::Binary { op: BinOp::Div, flags, .. } if !flags.is_default() => self.math_op(&op.kind)?,
            OpKind::Unary { .. } => self.math_op(&op.kind)?,
            OpKind::Binary { .. }
            | OpKind::Cast(_)
            | OpKind::Cmp(..)
            | OpKind::Logic(..)
            | OpKind::Select { .. }
            | OpKind::Fma { .. } => self.elementwise_op(op, rty.as_ref())?,
            OpKind::Rand { seed, offsets } => self.rand(*seed, *offsets)?,
            OpKind::Broadcast(x) => self.broadcast(op, *x, rty.as_ref())?,
            OpKind::Reduce { kind, axis, value } => {
                let ty = rty.ok_or_else(|| err("reduce without result"))?;
                self.reduce(*kind, *axis as usize, *value, &ty)?
            }
            OpKind::Scan { op: sop, axis, value } => {
                let ty = rty.ok_or_else(|| err("scan without result"))?;
                self.scan(*sop, *axis as usize, *value, &ty)?
            }
            OpKind::Store { tile, .. } if self.facts.tma_stores.contains_key(tile) => {
                self.global_hazard(&op.kind);
                self.tma_store(&op.kind)?;
                return Ok(());
            }
            OpKind::Load { .. } | OpKind::Store { .. } => {
                self.global_hazard(&op.kind);
                match self.global_access(&op.kind, rty.as_ref())? {
                    Some(v) => v,
                    None => return Ok(()),
                }
            }
            OpKind::Atomic { .. } => {
                self.global_hazard(&op.kind);
                self.atomic(op, rty.as_ref())?
            }
            OpKind::Gather { .. } | OpKind::Element { .. } | OpKind::Scatter { .. } => {
                self.global_hazard(&op.kind);
                match self.element_op(&op.kind, rty.as_ref())? {
                    Some(v) => v,
                    None => return Ok(()),
                }
            }
            OpKind::ConvertLayout { value, .. }
                if rty.as_ref().and_then(Type::layout).is_some_and(|l| {
                    let x = self.func.ty(*value);
                    x.layout().is_some_and(|xl| xl.same_placement(l, x.shape()))
                }) =>
            {
                // The same elements in the same registers (FlashAttention-2's P): no move.
                self.get(*value)?
            }
            // A reshape only a TMA store reads: the store writes the reshape's operand.
            OpKind::Reshape(_)
                if op.result.is_some_and(|r| self.facts.tma_stores.get(&r).is_some_and(|s| s.reshape == Some(r))) =>
            {
                return Ok(());
            }
            OpKind::Reshape(_)
            | OpKind::ConvertLayout { .. }
            | OpKind::Permute { .. }
            | OpKind::Slice { .. }
            | OpKind::Concat { .. } => self.exchange_op(op, rty.as_ref())?,
            OpKind::Sort { .. } => self.sort(op, rty.as_ref())?,
            OpKind::Item(x) => self.item(*x)?,
            OpKind::LocalAlloc { value } => self.local_alloc(op, *value, rty.as_ref())?,
            OpKind::AsyncCopy { dst: None, .. } => self.async_copy(op, rty.as_ref())?,
            OpKind::AsyncCopy { dst: Some(d), tma, .. } => {
                let dst = self.get(*d)?;
                if *tma {
                    self.tma_copy_into(op, &dst)?;
                } else {
                    self.copy_into(op, &dst)?;
                }
                return Ok(());
            }
            OpKind::StagesAlloc => {
                let v = self.stages_alloc(op, rty.as_ref())?;
                if let (Some(r), Value::SmemBuf { offset, ty, .. }) = (op.result, &v) {
                    if self.facts.tma_rings.contains(&r) {
                        let empty = match (
                            self.facts.released_rings.contains(&r),
                            self.facts.tmem.committed_rings.contains(&r),
                        ) {
                            (false, _) => None,
                            (true, true) => Some(1),
                            (true, false) => Some(i64::from(self.func.num_warps)),
                        };
                        let sharing = match &self.facts.pair {
                            Some(p) if p.has(r) => tma::Sharing::Pair { split: p.b_rings.contains(&r) },
                            _ if self.facts.multicast.contains(&r) => tma::Sharing::Multicast,
                            _ => tma::Sharing::Own,
                        };
                        self.tma_barriers(op, *offset, ty.shape()[0], empty, sharing)?;
                    }
                }
                v
            }
            OpKind::StageWait { ring, slot, phase } => {
                self.stage_wait(*ring, *slot, *phase)?;
                return Ok(());
            }
            OpKind::StageAcquire { ring, slot, phase } => {
                self.stage_acquire(*ring, *slot, *phase)?;
                return Ok(());
            }
            OpKind::Prefetch { .. } => {
                self.l2_prefetch(&op.kind)?;
                return Ok(());
            }
            OpKind::GridDependencyWait => {
                if self.arch.has(tilec_core::target::Feature::GridDepControl) {
                    self.grid_dependency_wait();
                }
                return Ok(());
            }
            OpKind::StageRelease { ring, slot } => {
                self.stage_release(*ring, *slot)?;
                return Ok(());
            }
            OpKind::Turn { begin, last } => {
                self.turn(*begin, *last)?;
                return Ok(());
            }
            OpKind::Stage { buf, index } => self.stage(*buf, *index, rty.as_ref())?,
            OpKind::AsyncWait { pending } => {
                self.async_wait(*pending);
                self.fence_async_proxy();
                self.smem_written();
                return Ok(());
            }
            OpKind::LocalLoad { buf, trans } => match (self.get(*buf)?, rty.as_ref().and_then(Type::layout)) {
                (Value::SmemBuf { offset, ty, ring }, Some(Layout::DotOperand { .. })) if *trans => {
                    // The same bytes seen transposed: the readers address them by the view's
                    // order (`ldmatrix` with or without `.trans`, a descriptor K- or MN-major).
                    let ty =
                        ty.smem_transposed().ok_or_else(|| err("a transposed read of a buffer that is not 2-D"))?;
                    Value::SmemBuf { offset, ty, ring }
                }
                (v @ Value::SmemBuf { .. }, Some(Layout::DotOperand { .. })) => v,
                _ => return Err(err("a shared-memory read into a layout other than #dot_operand is not lowered yet")),
            },
            OpKind::Mma { a, b, acc, scales } => self.mma(*a, *b, *acc, *scales, rty.as_ref(), op.result)?,
            OpKind::MmaWait { value, .. } if self.facts.tmem.deferred.contains_key(value) => {
                self.tmem_deferred_wait(*value)?
            }
            OpKind::MmaWait { value, pending } => match self.get(*value)? {
                Value::Tmem { col, alt } if *pending == 0 => self.tmem_chain_wait(op.result, col, alt.as_ref())?,
                Value::Tmem { .. } => return Err(err("a tcgen05 chain waited for with products left pending")),
                _ => self.mma_wait(*value, *pending)?,
            },
            OpKind::For { .. } => return self.for_loop(&op.kind),
            OpKind::If { .. } => return self.if_op(&op.kind),
            OpKind::Print { .. } => return Err(unsupported(self.func).unwrap_or_else(|| err("not lowered yet"))),
        };
        if let Some(r) = op.result {
            self.vals.insert(r, value);
        }
        Ok(())
    }

    /// `bid`, `num_blocks`, `dim`: scalars from special registers and the parameters.
    fn grid_value(&mut self, kind: &OpKind) -> Result<Value, Diagnostic> {
        Ok(match kind {
            OpKind::NumTiles { axis: 0 } => {
                Value::Scalar(self.num_tiles.clone().ok_or_else(|| err("num_tiles without its parameter"))?)
            }
            // Only x is walked by a persistent kernel: along y and z the launch is the grid.
            // A block of a CTA-pair kernel is a cluster: its index and count are the cluster's.
            OpKind::Bid { axis } | OpKind::NumBlocks { axis } | OpKind::NumTiles { axis } => {
                let a = ["x", "y", "z"].get(*axis as usize).ok_or_else(|| err("grid axis out of range"))?;
                let reg = match (matches!(kind, OpKind::Bid { .. }), self.func.cluster > 1) {
                    (true, false) => "ctaid",
                    (false, false) => "nctaid",
                    (true, true) => "clusterid",
                    (false, true) => "nclusterid",
                };
                Value::Scalar(self.em.sreg(&format!("{reg}.{a}")))
            }
            OpKind::ClusterRank if self.func.cluster > 1 => Value::Scalar(self.cluster_rank()),
            OpKind::ClusterRank => Value::Scalar(self.em.ci32(0)),
            OpKind::Dim { tensor, axis } => {
                let t = self.tensor(*tensor)?;
                let d = t.dims.get(*axis as usize).ok_or_else(|| err("dim axis out of range"))?.clone();
                Value::Scalar(self.em.convert("trunc", &d, Ty::I32))
            }
            _ => return Err(err("not a grid value")),
        })
    }

    /// Constants, splats and `arange`.
    fn constant(&mut self, op: &Op, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let rdtype = rty.map(Type::dtype);
        Ok(match &op.kind {
            OpKind::ConstInt(v) => Value::Scalar(self.em.cint(*v, Ty::of(rdtype.unwrap_or(tilec_core::DType::I32)))),
            OpKind::ConstFloat(v) => Value::Scalar(self.em.cfloat(*v, rdtype.unwrap_or(tilec_core::DType::F32))),
            OpKind::Splat(s) => {
                let s = self.scalar(*s)?;
                let ty = rty.ok_or_else(|| err("splat without result"))?;
                let l = ty.layout().ok_or_else(|| err("tile without layout (run tile-layout first)"))?;
                let n = l.regs_per_thread(ty.shape()) as usize;
                if let (Some(r), tilec_core::DType::I32) = (op.result, ty.dtype()) {
                    self.aff.insert(r, vec![(s.clone(), 0); n]);
                }
                Value::Tile(vec![s; n])
            }
            OpKind::Arange => {
                let ty = rty.ok_or_else(|| err("arange without result"))?;
                let l = ty.layout().ok_or_else(|| err("arange without layout"))?.clone();
                let (out, aff) = self.iota_in(&l, ty.shape(), 0, None);
                if let Some(r) = op.result {
                    self.aff.insert(r, aff);
                    self.iota.insert(r, (0, None));
                }
                Value::Tile(out)
            }
            _ => return Err(err("not a constant")),
        })
    }

    /// The thread part of coordinate `d` of a tile of `shape` in layout `l` (i32), computed
    /// once per layout and dim in the prologue: `(warp_d · 2^lane_bits + lane_d) · unit` when
    /// the dim's lane bits and warp bits are one run each (every `#blocked` layout), else the
    /// sum of each run's `((id >> shift) & mask) · base`.
    fn thread_base(&mut self, l: &Layout, shape: &[i64], d: usize) -> Reg {
        // A slice holds the sliced dim at coordinate 0 in every thread.
        let Some(t) = l.dim_terms(shape, d) else { return self.em.ci32(0) };
        let mut root = l;
        while let Layout::Slice { parent, .. } = root {
            root = parent;
        }
        let key = (root.to_mlir(), format!("{d} {t:?}"));
        if let Some(v) = self.bases.get(&key) {
            return v.clone();
        }
        let (lane, warp) = (self.lane.clone(), self.warp.clone());
        let lane_bits = t.lane.first().map(|r| r.bits).unwrap_or(0);
        let factored = t.lane.len() <= 1
            && t.warp.len() <= 1
            && t.lane.first().is_none_or(|r| r.base == t.unit)
            && t.warp.first().is_none_or(|r| r.base == t.unit << lane_bits);
        let r = if factored {
            let lane_d = match t.lane.first() {
                Some(r) => self.coord_bits(&lane, r.shift, 1 << r.bits),
                None => self.em.ci32(0),
            };
            let warp_d = match t.warp.first() {
                Some(r) => self.coord_bits(&warp, r.shift, 1 << r.bits),
                None => self.em.ci32(0),
            };
            let tpw = self.em.ci32(1 << lane_bits);
            let spt = self.em.ci32(t.unit);
            let wt = self.em.bin_prologue("mul", &warp_d, &tpw);
            let s = self.em.bin_prologue("add", &wt, &lane_d);
            self.em.bin_prologue("mul", &s, &spt)
        } else {
            let runs: Vec<(Reg, tilec_core::layout::Run)> =
                t.lane.iter().map(|r| (lane.clone(), *r)).chain(t.warp.iter().map(|r| (warp.clone(), *r))).collect();
            self.sum_of_runs(&runs)
        };
        self.bases.insert(key, r.clone());
        r
    }

    /// The bits [`Lowering::thread_base`]`(l, shape, d)` may set in some thread: a register
    /// offset whose bits are outside them is added to it without a carry, so it may be
    /// `or`ed or `xor`ed in instead (what [`Lowering::swizzle_thread`] builds on). Runs of
    /// power-of-two bases on disjoint bits set exactly theirs; otherwise every bit up to the
    /// largest sum.
    fn thread_bits(l: &Layout, shape: &[i64], d: usize) -> i64 {
        let Some(t) = l.dim_terms(shape, d) else { return 0 };
        let (mut bits, mut max, mut disjoint) = (0i64, 0i64, true);
        for r in t.lane.iter().chain(&t.warp) {
            let span = ((1i64 << r.bits) - 1) * r.base;
            disjoint &= r.base > 0 && r.base & (r.base - 1) == 0 && bits & span == 0;
            bits |= span;
            max += span;
        }
        if disjoint {
            bits
        } else {
            i64::try_from((max.max(0) as u64 + 1).next_power_of_two()).map_or(i64::MAX, |p| p - 1)
        }
    }

    /// An index tile (`iota`) made in layout `l` of `shape`: register `r` holds its thread's
    /// coordinate along `d` plus the register's, plus the scalar `offset`.
    pub(crate) fn iota_in(
        &mut self,
        l: &Layout,
        shape: &[i64],
        d: usize,
        offset: Option<&Reg>,
    ) -> (Vec<Reg>, Vec<(Reg, i64)>) {
        let n = l.regs_per_thread(shape);
        let mut base = self.thread_base(l, shape, d);
        if let Some(s) = offset {
            base = self.em.add(&base, s);
        }
        let (mut out, mut aff) = (vec![], vec![]);
        for r in 0..n {
            let (p, c) = self.reg_position(l, shape, &base, d, r);
            out.push(p);
            aff.push((base.clone(), c));
        }
        (out, aff)
    }

    /// Register `r`'s position along dim `d`: `base` (the thread's, [`Lowering::thread_base`])
    /// plus the register's constant offset, emitted where it is asked for (a caller walking
    /// the registers interleaves them with its own ops), and that offset.
    pub(crate) fn reg_position(&mut self, l: &Layout, shape: &[i64], base: &Reg, d: usize, r: i64) -> (Reg, i64) {
        let c = l.reg_offset(shape, r)[d];
        let o = self.em.ci32(c);
        (self.em.add(base, &o), c)
    }

    /// `Σ ((id >> shift) & mask) · base` over bit runs of the lane or warp id, in the
    /// prologue.
    fn sum_of_runs(&mut self, runs: &[(Reg, tilec_core::layout::Run)]) -> Reg {
        let mut acc = self.em.ci32(0);
        for (id, run) in runs {
            let bits = self.coord_bits(id, run.shift, 1 << run.bits);
            let base = self.em.ci32(run.base);
            let term = self.em.bin_prologue("mul", &bits, &base);
            acc = self.em.bin_prologue("add", &acc, &term);
        }
        acc
    }

    /// `(id >> shift) & (extent - 1)` in the prologue (0 for an extent of 1).
    fn coord_bits(&mut self, id: &Reg, shift: u32, extent: i64) -> Reg {
        if extent == 1 {
            return self.em.ci32(0);
        }
        let sh = self.em.ci32(i64::from(shift));
        let mask = self.em.ci32(extent - 1);
        let s = self.em.bin_prologue("lshr", id, &sh);
        self.em.bin_prologue("and", &s, &mask)
    }

    /// The address of the kernel's shared-memory buffer.
    fn smem_base(&mut self) -> Reg {
        if let Some(p) = &self.smem_ptr {
            return p.clone();
        }
        let p = self.em.addressof("__tilec_smem", 3);
        self.smem_ptr = Some(p.clone());
        p
    }

    /// The address `offset` bytes into the kernel's shared buffer.
    fn smem_at(&mut self, offset: &Reg) -> Reg {
        let base = self.smem_base();
        self.em.gep(&base, offset, &Ty::I8)
    }

    /// The 32-bit shared-memory address of the kernel's buffer, once per kernel.
    pub(crate) fn smem_address(&mut self) -> Reg {
        if let Some(a) = &self.smem_addr {
            return a.clone();
        }
        let base = self.smem_base();
        self.em.enter_prologue();
        let a = self.em.def(Ty::I32, format!("llvm.ptrtoint {base} : !llvm.ptr<3> to i32"));
        self.em.leave_prologue();
        self.smem_addr = Some(a.clone());
        a
    }

    /// Reserves `bytes` of shared memory live only at the op being lowered (scratch).
    fn smem_region(&mut self, bytes: i64) -> Result<i64, Diagnostic> {
        self.smem_alloc(bytes, self.pos, 16)
    }

    /// Reserves `bytes` of shared memory at an `align`-byte boundary, live from the op being
    /// lowered to position `end`; returns the offset the plan gives it (one after the other
    /// without a plan).
    fn smem_alloc(&mut self, bytes: i64, end: u32, align: i64) -> Result<i64, Diagnostic> {
        let k = self.requests.len();
        self.requests.push((self.pos, end.max(self.pos), bytes, align));
        self.smem_align = self.smem_align.max(align);
        let off = match &self.plan {
            Some(p) => *p.get(k).ok_or_else(|| err("shared-memory plan out of step with the lowering"))?,
            // One after the other (what `bump_offsets` computes).
            None => align_up(i64::from(self.smem), align),
        };
        let top = u32::try_from(off + bytes).map_err(|_| err("shared memory overflow"))?;
        self.smem = self.smem.max(top);
        Ok(off)
    }

    /// `item`: a one-element tile is replicated — every thread's first register holds the
    /// element (checked on the layout) — so each thread's scalar is its own copy.
    fn item(&mut self, x: ValueId) -> Result<Value, Diagnostic> {
        let ty = self.func.ty(x).clone();
        let l = ty.layout().ok_or_else(|| err("the item of a tile without a layout"))?;
        let map = l.to_linear(ty.shape());
        let every = (0..i64::from(self.func.num_warps))
            .all(|w| (0..32).all(|lane| map.num_regs() > 0 && map.coord(w, lane, 0).iter().all(|&c| c == 0)));
        if !every {
            return Err(err(format!(
                "the item of a tile whose layout {} does not give every thread its element",
                l.to_mlir()
            )));
        }
        let regs = self.tile(x)?;
        let first = regs.first().ok_or_else(|| err("the item of a tile without registers"))?;
        Ok(Value::Scalar(first.clone()))
    }

    /// Before writing `[off, off + bytes)`: a barrier if a thread may still read it.
    fn smem_write_begin(&mut self, off: i64, bytes: i64) {
        if overlaps(&self.pending_reads, off, bytes) {
            self.full_barrier();
        }
        if let Some(w) = self.loop_writes.last_mut().filter(|w| !w.crossed) {
            w.exposed.push((off, bytes));
        }
    }

    /// After this thread's shared-memory writes (stores, `cp.async` waited for), before the
    /// barrier that publishes them: where a `wgmma` may read them through the async proxy,
    /// `fence.proxy.async.shared::cta` orders the writes before those reads.
    fn fence_async_proxy(&mut self) {
        if self.facts.async_proxy {
            self.async_proxy_fence();
        }
    }

    /// `fence.proxy.async.shared::cta`: this thread's shared-memory writes so far ordered
    /// before the async proxy's reads of them (a TMA store of the buffer).
    fn async_proxy_fence(&mut self) {
        self.em.line("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}");
    }

    /// After every thread's writes, before anyone reads them.
    fn smem_written(&mut self) {
        self.full_barrier();
    }

    /// Before a global access: a barrier where another thread of the block may still read
    /// or write what it writes, or write what it reads (see `global_reads`). Tensors only
    /// read (weights, tables) never need one.
    fn global_hazard(&mut self, kind: &OpKind) {
        let Some((tensor, reads, writes)) = kind.global_access() else { return };
        // Two stores of one tensor are left unordered: the library's loops store disjoint tiles
        // (a barrier an iteration would cost them), and an element stored twice is a
        // kernel's own race.
        let conflict =
            (reads && self.global_writes.contains(&tensor)) || (writes && self.global_reads.contains(&tensor));
        if conflict {
            self.full_barrier();
        }
        self.global_pending(kind);
    }

    /// Counts `kind`'s global access as pending until the next barrier.
    fn global_pending(&mut self, kind: &OpKind) {
        if let Some((tensor, reads, writes)) = kind.global_access() {
            if reads {
                self.global_reads.insert(tensor);
            }
            if writes {
                self.global_writes.insert(tensor);
            }
        }
    }

    fn full_barrier(&mut self) {
        self.em.barrier();
        self.global_reads.clear();
        self.global_writes.clear();
        self.pending_reads.clear();
        if let Some(w) = self.loop_writes.last_mut() {
            w.crossed = true;
        }
    }

    /// Whether every path of the innermost loop body so far has passed a barrier (saved
    /// around the branches of an `if`, see [`Lowering::set_barrier_crossed`]).
    fn barrier_crossed(&self) -> bool {
        self.loop_writes.last().is_some_and(|w| w.crossed)
    }

    fn set_barrier_crossed(&mut self, crossed: bool) {
        if let Some(w) = self.loop_writes.last_mut() {
            w.crossed = crossed;
        }
    }

    /// After reading `[off, off + bytes)`: remembered for [`Lowering::smem_write_begin`] and
    /// for the end of an enclosing loop ([`Lowering::smem_loop_end`]).
    fn smem_read_done(&mut self, off: i64, bytes: i64) {
        self.pending_reads.push((off, bytes));
    }

    /// Entering a loop body: its shared-memory writes are collected. Returns the ranges
    /// read before the loop and not yet behind a barrier.
    fn smem_loop_begin(&mut self) -> Vec<(i64, i64)> {
        self.loop_writes.push(LoopWrites::default());
        self.pending_reads.clone()
    }

    /// Leaving a loop body (before the back edge), with what [`Lowering::smem_loop_begin`]
    /// returned. The next iteration's writes meet this iteration's last reads only before
    /// the next iteration's first barrier: a barrier at the end of the body when a range
    /// read after the body's last barrier is written before its first one (a pipelined
    /// ring refilled right after its wait needs none; the body's own barriers cover every
    /// other pair). After the loop, the reads still pending are those of the body's end or,
    /// for a loop that ran zero times, those before it; the loop's exposed writes are
    /// exposed in the enclosing body too unless it had passed a barrier before the loop
    /// (which the loop's own barriers do not count for: it may run zero times).
    fn smem_loop_end(&mut self, before: Vec<(i64, i64)>) {
        let writes = self.loop_writes.pop().unwrap_or_default();
        if writes.exposed.iter().any(|&(o, b)| overlaps(&self.pending_reads, o, b)) {
            self.em.barrier();
            self.pending_reads.clear();
        }
        if let Some(outer) = self.loop_writes.last_mut().filter(|w| !w.crossed) {
            outer.exposed.extend(writes.exposed);
        }
        self.pending_reads.extend(before);
    }
}

/// Whether `[off, off + bytes)` meets one of `ranges`.
pub(super) fn overlaps(ranges: &[(i64, i64)], off: i64, bytes: i64) -> bool {
    ranges.iter().any(|&(o, b)| o < off + bytes && off < o + b)
}

/// Names each long struct type of the kernel's text once, `!tilec_sN = !llvm.struct<(…)>`
/// before the module, and writes the name at every use: a tile's registers travel as
/// `!llvm.struct<(f32, …)>` of up to 128 members, written again at each `extractvalue` and
/// asm result, and MLIR's parser read every copy (on FMHA 1,152 of them: ~5 % of a compile).
/// The module means the same: the `llvm` stage prints the types in full again. `named` are
/// the types the emitter already wrote by name (`!tilec_s{k}` the `k`-th,
/// [`Emitter::ty_str`]); a type found in full in the text gets the next number, or its
/// name if it is one of them. Returns the alias lines and the prologue and body with the
/// names in place.
fn alias_long_structs(pro: String, body: String, named: Vec<String>) -> (String, String, String) {
    const OPEN: &str = "!llvm.struct<(";
    let mut found: Vec<String> = named;
    // Which of `found` the text writes in full (only those are replaced in it).
    let mut in_text = vec![false; found.len()];
    for text in [&pro, &body] {
        let mut from = 0;
        while let Some(at) = text[from..].find(OPEN) {
            let start = from + at;
            // The type ends where its angle brackets balance (on its line).
            let mut depth = 0i32;
            let mut end = None;
            for (i, b) in text.as_bytes()[start..].iter().enumerate() {
                match b {
                    b'<' => depth += 1,
                    b'>' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(start + i + 1);
                            break;
                        }
                    }
                    b'\n' => break,
                    _ => {}
                }
            }
            if let Some(end) = end {
                let ty = &text[start..end];
                if ty.len() > emit::ALIASED_STRUCT_CHARS {
                    match found.iter().position(|f| f == ty) {
                        Some(k) => in_text[k] = true,
                        None => {
                            found.push(ty.to_string());
                            in_text.push(true);
                        }
                    }
                }
            }
            // A struct nested in another is met on a later step, inside its container.
            from = start + OPEN.len();
        }
    }
    // Longest first: a container's text is replaced before the types inside it, whose own
    // names its alias then uses; the aliases are written shortest first (defined before use).
    let mut order: Vec<usize> = (0..found.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(found[i].len()));
    let (mut pro, mut body) = (pro, body);
    let mut defs: Vec<(usize, String)> = vec![];
    for (k, &i) in order.iter().enumerate() {
        let name = format!("!tilec_s{i}");
        let mut def = found[i].clone();
        for &j in &order[k + 1..] {
            def = def.replace(&found[j], &format!("!tilec_s{j}"));
        }
        defs.push((found[i].len(), format!("{name} = {def}\n")));
        if in_text[i] {
            pro = pro.replace(&found[i], &name);
            body = body.replace(&found[i], &name);
        }
    }
    defs.sort_by_key(|(len, _)| *len);
    (defs.into_iter().map(|(_, d)| d).collect(), pro, body)
}
