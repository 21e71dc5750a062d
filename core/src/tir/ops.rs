//! The ops of the tile IR (`tile` and `tilegpu` dialects), with their meaning.

use super::attrs::{AtomicOp, BinOp, CmpPred, LogicOp, MathFlags, MemScope, MemSem, Padding, ReduceKind, UnOp};
use super::{Op, ValueId};

#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// Block index along an axis of the grid.
    Bid {
        axis: u32,
    },
    /// Extent of dimension `axis` of a tensor parameter.
    Dim {
        tensor: ValueId,
        axis: u32,
    },
    ConstInt(i64),
    ConstFloat(f64),
    /// A scalar broadcast to every element of a tile.
    Splat(ValueId),
    /// Binary arithmetic; `flags` are the language's math options (`truediv(…, rounding=…)`),
    /// the defaults for plain operators.
    Binary {
        op: BinOp,
        lhs: ValueId,
        rhs: ValueId,
        flags: MathFlags,
    },
    /// Unary arithmetic and the math list, with the language's per-op options.
    Unary {
        op: UnOp,
        value: ValueId,
        flags: MathFlags,
    },
    /// `a · b + c` rounded once (floats).
    Fma {
        a: ValueId,
        b: ValueId,
        c: ValueId,
    },
    /// Element type conversion (float widths, int↔float).
    Cast(ValueId),
    /// Reduction along `axis`, keeping it with extent 1.
    Reduce {
        kind: ReduceKind,
        axis: u32,
        value: ValueId,
    },
    /// Inclusive scan along `axis` with `op` (`Add`, `Mul`, `Max` or `Min`): element i is
    /// the combination of elements 0..=i along the axis.
    Scan {
        op: BinOp,
        axis: u32,
        value: ValueId,
    },
    /// Broadcast of extent-1 dimensions to the result shape.
    Broadcast(ValueId),
    /// Tile `index` (in units of the tile shape) of the tensor viewed with its dims in
    /// `order`; out-of-bounds reads `padding`. `latency` (0: none) is the pipelining hint.
    Load {
        tensor: ValueId,
        index: Vec<ValueId>,
        padding: Padding,
        order: Vec<u32>,
        latency: u32,
    },
    /// A hint that tile `index` of `tensor` (addressed as `Load`, whose full shape is `tile`)
    /// will be read soon: its bytes are fetched into the L2 cache, nothing is returned and no
    /// result depends on it (the interpreter runs it as nothing; out-of-bounds parts fetch
    /// nothing). Lowered to `prefetch.global.L2` of the tile's 128-byte lines, dealt to the
    /// block's threads. `tile-grid-dependency` puts those of an `independent` tensor before the
    /// `tilegpu.grid_dependency_wait`, so that a model's weights arrive while the grid before
    /// runs.
    Prefetch {
        tensor: ValueId,
        index: Vec<ValueId>,
        order: Vec<u32>,
        tile: Vec<i64>,
    },
    /// Tile `index` of a tensor; out-of-bounds elements are not written, nor are those whose
    /// `mask` element (an i1 tile of the tile's shape) is false.
    Store {
        tensor: ValueId,
        index: Vec<ValueId>,
        tile: ValueId,
        mask: Option<ValueId>,
    },
    /// An atomic read-modify-write of tile `index` of a tensor (addressed as `Store`), element
    /// by element where `mask` (an i1 tile of the tile's shape) holds and the element is in
    /// bounds; the result is the tile of the values before (0 where nothing was done). `Cas`
    /// writes `tile` where the element equals `cmp`. With `at`, `index` holds one i32 tile of
    /// the tile's shape per tensor dim instead: element `i` updates the tensor at
    /// `(index[0][i], index[1][i], …)` (a scatter's addressing; out of bounds is skipped), and
    /// elements of one tile that meet at an address are all applied, in row-major order.
    Atomic {
        op: AtomicOp,
        tensor: ValueId,
        index: Vec<ValueId>,
        tile: ValueId,
        cmp: Option<ValueId>,
        mask: ValueId,
        sem: MemSem,
        scope: MemScope,
        at: bool,
    },
    /// The elements at per-dimension element-index tiles (broadcast together): a gather.
    Gather {
        tensor: ValueId,
        index: Vec<ValueId>,
        padding: Padding,
    },
    /// Writes `tile` at per-dimension element-index tiles; out-of-bounds (e.g. negative)
    /// indices are skipped, which is how a scatter is masked.
    Scatter {
        tensor: ValueId,
        index: Vec<ValueId>,
        tile: ValueId,
    },
    /// `a · b + acc` (a: M×K, b: K×N, acc: M×N). With `scales` (`mma_scaled`: a_scale
    /// M×(K/V), b_scale (K/V)×N, the block V = K / K_s), each element of `a` and `b` is
    /// multiplied by its scale first: `Σ_k a[i,k]·sa[i,k/V]·b[k,j]·sb[k/V,j] + acc[i,j]`.
    /// Packed fp4 operands (`f4e2m1x2`) hold two K elements an element: their tile's K
    /// extent is half the product's.
    Mma {
        a: ValueId,
        b: ValueId,
        acc: ValueId,
        scales: Option<(ValueId, ValueId)>,
    },
    /// `[0, 1, …, N-1]` as an i32 tile.
    Arange,
    /// One element of a tensor, as a scalar (`t[i, j]`); out of bounds reads 0.
    Element {
        tensor: ValueId,
        index: Vec<ValueId>,
    },
    /// Number of blocks along grid axis `axis`.
    NumBlocks {
        axis: u32,
    },
    /// This CTA's rank in its cluster (`tilegpu`-level, made by `tile-cta-pair`): 0 or 1 in a
    /// kernel whose blocks are CTA pairs (`Func::cluster` = 2), 0 elsewhere.
    ClusterRank,
    /// The grid extent along `axis` that the launch stands for (the signature's grid), where a
    /// persistent kernel (`tile-persistent`) runs on fewer blocks than that and walks its
    /// tiles; lowered as a parameter the launcher fills (the ABI's `persistent`).
    NumTiles {
        axis: u32,
    },
    Cmp(CmpPred, ValueId, ValueId),
    Logic(LogicOp, ValueId, ValueId),
    /// Elementwise `cond ? a : b`.
    Select {
        cond: ValueId,
        a: ValueId,
        b: ValueId,
    },
    /// Same elements, new shape (row-major order).
    Reshape(ValueId),
    /// The one element of a tile of one element, as a scalar (`t.item()`): a run-time value
    /// an `if` or a loop bound can take (a last-block-done counter's old value).
    Item(ValueId),
    /// The same tile in another layout (`tilegpu` only; inserted by `tile-layout` where a
    /// use needs a layout its operand does not have).
    ConvertLayout {
        value: ValueId,
        /// The shared-memory buffer the tile passes through.
        scratch: crate::layout::Shared,
    },
    /// A shared-memory buffer holding `value` (`tilegpu` only): every thread writes its
    /// registers into the swizzled buffer of the result type. Inserted by `tile-layout` for
    /// the operands of an `mma`; its shared memory is placed by the lowering's allocation.
    LocalAlloc {
        value: ValueId,
    },
    /// A ring of shared-memory buffers (`tilegpu` only): the result is a
    /// `memref<SxMxNxT, #tilegpu.swizzled_shared<…>>` of S stages, each an M×N buffer with
    /// the swizzle; its contents are undefined until copied into. `tile-pipeline` rotates
    /// the copies of a loop's loads through the stages.
    StagesAlloc,
    /// Stage `index` (an i32 in `[0, S)`) of a ring of buffers: the M×N buffer view that an
    /// `AsyncCopy` with `dst` fills and a `LocalLoad` reads.
    Stage {
        buf: ValueId,
        index: ValueId,
    },
    /// An asynchronous copy (`tilegpu` only) of tile `index` of `tensor` viewed in `order`
    /// (as `Load`; the tile's full shape is `tile`, a buffer holds it without its unit dims);
    /// out-of-bounds elements are `padding`. Without `dst` the result is a new buffer
    /// (`tilegpu.async_copy`); with `dst` (a `Stage` view) it fills that buffer and has no
    /// result (`tilegpu.async_copy_into`). Issues one group of copies; the buffer may be read
    /// only after an `AsyncWait` covering it.
    AsyncCopy {
        dst: Option<ValueId>,
        tensor: ValueId,
        index: Vec<ValueId>,
        padding: Padding,
        order: Vec<u32>,
        tile: Vec<i64>,
        /// The load's pipelining hint, kept for `tile-pipeline`.
        latency: u32,
        /// Issued by the Tensor Memory Accelerator (`tilegpu.tma_copy_into`: one thread, one
        /// bulk tensor copy per swizzle atom, completion counted on the stage's mbarrier and
        /// waited for with `stage_wait`) instead of `cp.async` (every thread, 16-byte chunks,
        /// a group waited for with `async_wait`). Only into an NVMMA stage of a ring.
        tma: bool,
    },
    /// Waits until the TMA copies into stage `slot` of `ring` have landed: the stage's
    /// mbarrier completes its phase `phase` (0 or 1: the parity of how many times the stage
    /// was filled before). No barrier: the copies' bytes are visible to every waiting thread.
    StageWait {
        ring: ValueId,
        slot: ValueId,
        phase: ValueId,
    },
    /// The block is done reading stage `slot` of `ring` (the products that read it have
    /// completed): every warp arrives on the stage's empty mbarrier, so a TMA copy may refill
    /// it without a block-wide barrier.
    StageRelease {
        ring: ValueId,
        slot: ValueId,
    },
    /// Before a TMA copy refills stage `slot` of `ring`: its issuing thread waits until the
    /// stage's empty mbarrier completes phase `phase` (every warp released the previous
    /// fill; a stage never filled passes at once, its barrier being in phase 0 with parity 1
    /// asked).
    StageAcquire {
        ring: ValueId,
        slot: ValueId,
        phase: ValueId,
    },
    /// Waits until at most `pending` groups of asynchronous copies are in flight, then a
    /// barrier: every thread's copies are visible to every thread.
    AsyncWait {
        pending: u32,
    },
    /// The accumulator of asynchronous tensor-core products (`tilegpu` only; `wgmma`): `value`
    /// once at most `pending` groups of products are still in flight — with `pending = 0` every
    /// product of `value` has completed and its registers may be read. `tile-pipeline` puts
    /// one with `pending = 1` after a product it keeps in flight across loop iterations (the
    /// next iteration's product accumulates into the same registers) and one with
    /// `pending = 0` after the loop. As a value it is `value` itself.
    MmaWait {
        value: ValueId,
        pending: u32,
    },
    /// Programmatic dependent launch (`tile-grid-dependency`, `tilegpu` only): every thread
    /// waits here for the grid launched before this one on the stream to complete and its
    /// memory to be visible (`griddepcontrol.wait`), then lets the grid after this one start
    /// launching (`griddepcontrol.launch_dependents`). `tile-grid-dependency` puts one at the
    /// kernel's top level, after which nothing but copies of the tensors the kernel declares
    /// `independent` touches global memory; a kernel without one at its top level waits
    /// before anything else (the lowering). No value; the interpreter runs it as nothing.
    GridDependencyWait,
    /// The consumer warpgroups of a warp-specialized kernel take turns on the tensor cores
    /// (FlashAttention-3's ping-pong, `tile-warp-specialize`): between a `begin` and the next
    /// `end`, one warpgroup at a time issues and completes its products while the others run
    /// what lies outside their turns (the softmax). Warpgroup `g` begins a turn once warpgroup
    /// `g - 1` (cyclically) has ended its own, warpgroup 0 first; an `end` with `last` is the
    /// kernel's final one (the last warpgroup hands no turn on). No value, no memory effect:
    /// the interpreter runs it as nothing.
    Turn {
        begin: bool,
        last: bool,
    },
    /// The tile of a shared-memory buffer, read in the result's layout (`tilegpu` only): into
    /// a `#dot_operand` it is `ldmatrix` (`.trans` when the buffer's contiguous dim is not the
    /// operand's K for A / is K for B… see the lowering), issued per K step by the `mma` that
    /// uses it.
    /// `trans` (`tilegpu.local_load_trans`): the 2-D buffer read with its dims swapped, the
    /// same bytes seen as the transposed tile — one buffer filled once and read both ways
    /// (`tile-layout`'s shared operand buffers: `mla_decode`'s latent tile is the B operand of
    /// both of its products, K-major in one and N-major in the other).
    LocalLoad {
        buf: ValueId,
        trans: bool,
    },
    Permute {
        value: ValueId,
        perm: Vec<u32>,
    },
    /// `value` sorted along `axis` (ascending, or descending), stable — equal elements keep
    /// their order, NaN sorts above +inf — and cut to its first `k` along the axis: the
    /// values (`indices` false, the operand's dtype) or their positions along the axis
    /// (`indices` true, i32). `sort`, `argsort` and `topk` of the language.
    Sort {
        value: ValueId,
        axis: u32,
        descending: bool,
        k: i64,
        indices: bool,
    },
    /// The sub-tile of `value` starting at `offsets` (one per dim), of the result's shape:
    /// `t[:, a:b]` with constant bounds.
    Slice {
        value: ValueId,
        offsets: Vec<i64>,
    },
    /// `values` (tiles of one dtype and rank, equal but along `axis`) one after the other
    /// along `axis`: `concat((a, b), axis)`.
    Concat {
        values: Vec<ValueId>,
        axis: u32,
    },
    /// Uniform f32 in [0, 1) from a counter-based RNG (Philox 4x32-10) keyed by `seed`,
    /// counters from the i32 `offsets` tile.
    Rand {
        seed: ValueId,
        offsets: ValueId,
    },
    /// Debug print of scalars and tiles, with a prefix.
    Print {
        prefix: String,
        values: Vec<ValueId>,
    },
    /// `for iv in range(lb, ub, step)`, with loop-carried values: `iters` are the block
    /// arguments inside `body` (initialised from `init`), `yields` their next values,
    /// `results` their final values.
    For {
        lb: ValueId,
        ub: ValueId,
        step: ValueId,
        iv: ValueId,
        init: Vec<ValueId>,
        iters: Vec<ValueId>,
        body: Vec<Op>,
        yields: Vec<ValueId>,
        results: Vec<ValueId>,
    },
    /// A run-time `if`; each branch yields the values of `results`.
    If {
        cond: ValueId,
        then_ops: Vec<Op>,
        then_yields: Vec<ValueId>,
        else_ops: Vec<Op>,
        else_yields: Vec<ValueId>,
        results: Vec<ValueId>,
    },
}

/// The operand slots of an op, in [`OpKind::operands`]' order: one match for the shared
/// (`iter`) and the mutable (`iter_mut`) views.
macro_rules! operand_slots {
    ($kind:expr, $iter:ident) => {
        match $kind {
            OpKind::Bid { .. }
            | OpKind::NumBlocks { .. }
            | OpKind::NumTiles { .. }
            | OpKind::ClusterRank
            | OpKind::ConstInt(_)
            | OpKind::ConstFloat(_)
            | OpKind::Arange => vec![],
            OpKind::Dim { tensor, .. } => vec![tensor],
            OpKind::Splat(x)
            | OpKind::Cast(x)
            | OpKind::Broadcast(x)
            | OpKind::Reshape(x)
            | OpKind::Item(x)
            | OpKind::Unary { value: x, .. }
            | OpKind::Reduce { value: x, .. }
            | OpKind::Scan { value: x, .. }
            | OpKind::ConvertLayout { value: x, .. }
            | OpKind::LocalAlloc { value: x }
            | OpKind::LocalLoad { buf: x, .. }
            | OpKind::MmaWait { value: x, .. }
            | OpKind::Permute { value: x, .. }
            | OpKind::Slice { value: x, .. }
            | OpKind::Sort { value: x, .. } => vec![x],
            OpKind::Concat { values, .. } => values.$iter().collect(),
            OpKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            OpKind::Cmp(_, a, b) | OpKind::Logic(_, a, b) => vec![a, b],
            OpKind::Select { cond, a, b } => vec![cond, a, b],
            OpKind::Fma { a, b, c } => vec![a, b, c],
            OpKind::Mma { a, b, acc, scales: None } => vec![a, b, acc],
            OpKind::Mma { a, b, acc, scales: Some((sa, sb)) } => vec![a, sa, b, sb, acc],
            OpKind::Rand { seed, offsets } => vec![seed, offsets],
            OpKind::AsyncWait { .. } | OpKind::StagesAlloc | OpKind::Turn { .. } | OpKind::GridDependencyWait => vec![],
            OpKind::Stage { buf, index } => vec![buf, index],
            OpKind::StageWait { ring, slot, phase } | OpKind::StageAcquire { ring, slot, phase } => {
                vec![ring, slot, phase]
            }
            OpKind::StageRelease { ring, slot } => vec![ring, slot],
            OpKind::AsyncCopy { dst, tensor, index, .. } => {
                dst.$iter().chain(std::iter::once(tensor)).chain(index.$iter()).collect()
            }
            OpKind::Load { tensor, index, .. }
            | OpKind::Prefetch { tensor, index, .. }
            | OpKind::Gather { tensor, index, .. }
            | OpKind::Element { tensor, index } => std::iter::once(tensor).chain(index.$iter()).collect(),
            OpKind::Store { tensor, index, tile, mask } => {
                std::iter::once(tensor).chain(index.$iter()).chain(std::iter::once(tile)).chain(mask.$iter()).collect()
            }
            OpKind::Scatter { tensor, index, tile } => {
                std::iter::once(tensor).chain(index.$iter()).chain(std::iter::once(tile)).collect()
            }
            OpKind::Atomic { tensor, index, tile, cmp, mask, .. } => {
                std::iter::once(tensor).chain(index.$iter()).chain(cmp.$iter()).chain([tile, mask]).collect()
            }
            OpKind::Print { values, .. } => values.$iter().collect(),
            OpKind::For { lb, ub, step, init, yields, .. } => {
                [lb, ub, step].into_iter().chain(init.$iter()).chain(yields.$iter()).collect()
            }
            OpKind::If { cond, then_yields, else_yields, .. } => {
                std::iter::once(cond).chain(then_yields.$iter()).chain(else_yields.$iter()).collect()
            }
        }
    };
}

impl OpKind {
    /// The tensor this op reads or writes through global memory, as (tensor, reads, writes):
    /// loads, gathers and element reads read, stores and scatters write, atomics do both.
    /// Asynchronous copies into shared memory are not counted.
    pub fn global_access(&self) -> Option<(ValueId, bool, bool)> {
        match self {
            OpKind::Load { tensor, .. } | OpKind::Gather { tensor, .. } | OpKind::Element { tensor, .. } => {
                Some((*tensor, true, false))
            }
            OpKind::Store { tensor, .. } | OpKind::Scatter { tensor, .. } => Some((*tensor, false, true)),
            OpKind::Atomic { tensor, .. } => Some((*tensor, true, true)),
            _ => None,
        }
    }

    /// The values this op reads (region ops: their own operands and yields, not the ops of
    /// their regions), in a fixed order.
    pub fn operands(&self) -> Vec<ValueId> {
        let slots: Vec<&ValueId> = operand_slots!(self, iter);
        slots.into_iter().copied().collect()
    }

    /// The slots of [`OpKind::operands`], in the same order, to rewrite in place.
    pub fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        operand_slots!(self, iter_mut)
    }

    /// Rewrites every read of `from` in this op's own operands (not its regions' ops) to `to`.
    pub fn replace_operand(&mut self, from: ValueId, to: ValueId) {
        for v in self.operands_mut() {
            if *v == from {
                *v = to;
            }
        }
    }
}
