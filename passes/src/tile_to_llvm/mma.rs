//! Tensor cores (the `mma.sync` family; `wgmma` is [`super::wgmma`]): shared buffers for `mma` operands (`local_alloc`), their `#dot_operand`
//! reads (`local_load`, lowered lazily by the `mma` that uses them) and `mma` itself as
//! `mma.sync.m16n8k16` with f32 accumulation.
//!
//! A `local_alloc` writes each thread's registers into the swizzled buffer — runs of
//! registers contiguous along the buffer's contiguous dim as one vector store of up to 16
//! bytes — then a barrier. A `local_load` into a `#dot_operand` emits nothing: the `mma`
//! walks K in steps of 16 and, per step, reads the A fragments of its M repetitions and the
//! B fragments of its N repetitions with `ldmatrix` (x4: four 8×8 matrices; x2 for a lone B
//! tile), then issues the products of that step. So only one K step of operands is live,
//! and a tile that stays in shared memory across a loop (FMHA's Q) is read where it is used.
//! `ldmatrix` is `.trans` when the buffer's contiguous dim is not the operand's K dim
//! (a row-major B, V of attention; the transposed-load K of attention reads without it).
//! Operands already in registers (P, the accumulator of the previous product) are packed two
//! 16-bit elements per register. `ldmatrix` and `mma.sync` are `nvvm` ops on the buffer's
//! address ([`Lowering::smem_elems`]); the asynchronous copies are upstream `nvgpu` ops on
//! memref views of the buffers ([`Lowering::smem_view`]).
//!
//! 8-bit operands (fp8, and packed fp4 for the block-scaled products) are read from their
//! buffers as byte pairs (`pair_view`): the k32 fragment of bytes is the k16 fragment of
//! 16-bit elements. A block-scaled product (`mma_scaled`, sm_121a) per K step also builds
//! each lane's two scale registers from the scale buffers (`scale_register`: the row and
//! column `tilec_core::layout::blockscale` says the lane supplies, K block j in byte j) and
//! issues `mma.sync … block_scale`; with `emulate_block_scale` (`--emulate sm_121a` on a chip
//! without it) the instruction becomes fp8 products times the factors taken from the lanes
//! the instruction reads.

use super::emit::{Emitter, Reg, Ty};
use super::int_arith::{IntArith, Ints};
use super::regs::Value;
use super::{err, Lowering};
use std::collections::BTreeMap;
use tilec_core::layout::{blockscale, Layout, SwizzledShared, MMA_K, MMA_M, MMA_N};
use tilec_core::tir::{Op, OpKind, Type, ValueId};
use tilec_core::{DType, Diagnostic};

/// A thread's part of the indices of its elements in a swizzled buffer
/// ([`Lowering::swizzle_thread`]). Where a register's compile-time offsets (row_c, col_c) set
/// none of the bits the thread parts (row_t, col_t) may, `+` is `|` is `^` between them and
/// every shift and mask of the swizzle splits into a thread part and a constant one:
/// element (row_t + row_c, col_t + col_c) is at `base + (bits ^ C) + K`, `base` the row
/// (and NVMMA block) of the thread, `bits` its swizzled vector and place in it, `C` and `K`
/// those of the constants ([`Lowering::swizzled_at`]).
#[derive(Clone, Debug)]
pub(crate) struct SwizzleThread {
    sl: SwizzledShared,
    shape: Vec<i64>,
    scale: i64,
    row_bits: i64,
    col_bits: i64,
    base: Reg,
    bits: Reg,
}

/// The first `chunk` registers of `regs` (`bytes` each) as one value to store: the register
/// itself, a vector of them, or of 32-bit words of four bytes each.
fn chunk_value(em: &mut Emitter, regs: &[Reg], chunk: i64, bytes: i64, ety: &Ty) -> Reg {
    if chunk == 1 {
        return regs[0].clone();
    }
    if bytes == 1 && chunk % 4 == 0 {
        let mut v = em.undef(Ty::Vector((chunk / 4) as u32, Box::new(Ty::I32)));
        for w in 0..chunk / 4 {
            let at = (4 * w) as usize;
            let word = bytes_to_word(em, &regs[at..at + 4]);
            v = em.insertelement(&v, &word, w);
        }
        return v;
    }
    let mut v = em.undef(Ty::Vector(chunk as u32, Box::new(ety.clone())));
    for e in 0..chunk {
        v = em.insertelement(&v, &regs[e as usize], e);
    }
    v
}

/// The byte distance of each of `copies` copies of a tile of `rows` rows from the first in a
/// swizzled buffer of `shape` (rows along dim 0): `None` unless it is one constant for every
/// element of the tile.
fn copy_shifts(sl: &SwizzledShared, shape: &[i64], rows: i64, copies: i64, bytes: i64) -> Option<Vec<i64>> {
    let cols = shape[1];
    let at = |r: i64, c: i64| {
        let (rc, cc) = if sl.order[1] == 0 { (r, c) } else { (c, r) };
        swizzle_index(&mut Ints, sl, shape, &rc, &cc)
    };
    let mut out = vec![0];
    for copy in 1..copies {
        let d = at(copy * rows, 0) - at(0, 0);
        for r in 0..rows {
            for c in 0..cols {
                if at(r + copy * rows, c) - at(r, c) != d {
                    return None;
                }
            }
        }
        out.push(d * bytes);
    }
    Some(out)
}

/// The element index of (row, col) in a buffer of `shape` with swizzle `sl`: row-major
/// within an NVMMA atom's block of columns (blocks one after another), each row's vectors
/// of `vec` elements permuted by `xor` with the row's phase.
pub(crate) fn swizzle_index<A: IntArith>(
    a: &mut A,
    sl: &SwizzledShared,
    shape: &[i64],
    row: &A::V,
    col: &A::V,
) -> A::V {
    let (rows, cols) = (shape[sl.order[1]], shape[sl.order[0]]);
    let (block_start, col) = match atom_block(a, sl, cols, col) {
        Some((block, col)) => (Some(a.mul_c(&block, rows * sl.atom)), col),
        None => (None, col.clone()),
    };
    let cols = if sl.atom != 0 { sl.atom.min(cols) } else { cols };
    let (svo, within) = swizzled_vector(a, sl, row, &col);
    let ro = a.mul_c(row, cols);
    let e = a.add(&ro, &svo);
    let e = a.add(&e, &within);
    match block_start {
        Some(b) => a.add(&e, &b),
        None => e,
    }
}

/// In an NVMMA buffer narrower than its rows (atom `col / atom` is a block of every row):
/// the block of column `col` and the column within it.
fn atom_block<A: IntArith>(a: &mut A, sl: &SwizzledShared, cols: i64, col: &A::V) -> Option<(A::V, A::V)> {
    (sl.atom != 0 && sl.atom < cols).then(|| {
        let block = a.lshr_c(col, i64::from(sl.atom.trailing_zeros()));
        (block, a.and_c(col, sl.atom - 1))
    })
}

/// The first element of column `col`'s vector once swizzled (its index `xor` the row's
/// phase, times `vec`) and the column's place in its vector.
fn swizzled_vector<A: IntArith>(a: &mut A, sl: &SwizzledShared, row: &A::V, col: &A::V) -> (A::V, A::V) {
    let vidx = a.lshr_c(col, i64::from(sl.vec.trailing_zeros()));
    let within = a.and_c(col, sl.vec - 1);
    let ph = a.lshr_c(row, i64::from(sl.per_phase.trailing_zeros()));
    let phase = a.and_c(&ph, sl.max_phase - 1);
    let sv = a.xor(&vidx, &phase);
    (a.mul_c(&sv, sl.vec), within)
}

/// [`swizzle_index`]`(row, col) · scale + offset` as `(base, bits)`, the parts `base + bits`
/// (`bits` the swizzled vector and the place in it, `base` the rest). Of a thread part and
/// a constant one whose bits are disjoint in both coordinates ([`SwizzleThread`]) the parts
/// combine: the sum's index is `base_t + base_c + (bits_t ^ bits_c)`, `scale` a power of two.
pub(crate) fn swizzle_parts<A: IntArith>(
    a: &mut A,
    sl: &SwizzledShared,
    shape: &[i64],
    row: &A::V,
    col: &A::V,
    scale: i64,
    offset: i64,
) -> (A::V, A::V) {
    let (rows, cols) = (shape[sl.order[1]], shape[sl.order[0]]);
    let cols_eff = if sl.atom != 0 { sl.atom.min(cols) } else { cols };
    let mut base = a.mul_c(row, cols_eff * scale);
    let col = match atom_block(a, sl, cols, col) {
        Some((block, col)) => {
            let b = a.mul_c(&block, rows * sl.atom * scale);
            base = a.add(&base, &b);
            col
        }
        None => col.clone(),
    };
    if offset != 0 {
        base = a.add_c(&base, offset);
    }
    let (svo, within) = swizzled_vector(a, sl, row, &col);
    let bits = a.or(&svo, &within);
    let bits = if scale == 1 { bits } else { a.mul_c(&bits, scale) };
    (base, bits)
}

/// The (row, col) offsets of 8×8 blocks within an operand tile.
type Offsets = Vec<(i64, i64)>;

/// One `mma` operand as the lowering reads it.
pub(crate) struct Operand {
    /// Registers (a `#dot_operand` tile) or the shared buffer `ldmatrix` reads.
    val: Value,
    /// The dim a register pair spans (K: 1 for A, 0 for B).
    pair_dim: usize,
    /// Register index of each compile-time offset (register operands).
    map: BTreeMap<Vec<i64>, i64>,
    /// Thread part of the warp's origin in the tile, per dim (shared operands).
    origin: [Reg; 2],
    /// The same origin of every warp, known at compile time.
    origins: Vec<[i64; 2]>,
}

/// Four bytes as a 32-bit word, the first in the low bits, made by shifts and ors — which
/// LLVM folds where a word's bytes come from wider values (a pair of fp8 conversions); a
/// vector of i8 it would put together a byte at a time.
pub(crate) fn bytes_to_word(em: &mut Emitter, bytes: &[Reg]) -> Reg {
    let mut word = em.ci32(0);
    for (b, x) in bytes.iter().enumerate() {
        let x = em.convert("zext", x, Ty::I32);
        let sh = em.ci32(8 * b as i64);
        let x = em.shl(&x, &sh);
        word = em.or(&word, &x);
    }
    word
}

impl Lowering<'_> {
    /// `local_alloc`: writes the tile into its shared buffer.
    pub(crate) fn local_alloc(&mut self, op: &Op, x: ValueId, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let mut ty = rty.ok_or_else(|| err("local_alloc without result"))?.clone();
        // The A operand of a tcgen05 product of fewer than 64 rows: its rows several times.
        if let (Some(&reps), Type::Smem { shape, .. }) =
            (op.result.and_then(|r| self.facts.tmem.replicated.get(&r)), &mut ty)
        {
            shape[0] *= reps;
        }
        let (region, total) = self.buffer_region(op, &ty)?;
        // A buffer only its writers' warpgroups read: a warpgroup's previous reads of it are
        // its own products, waited for before it writes again, so they need no barrier, and
        // the next iteration's write does not meet another warpgroup's read.
        let local = op.result.is_some_and(|r| self.facts.warpgroup_local.contains(&r));
        if local {
            self.pending_reads.retain(|&(o, b)| (o, b) != (region, total));
            if super::overlaps(&self.pending_reads, region, total) {
                self.full_barrier();
            }
        } else {
            self.smem_write_begin(region, total);
        }
        // Not split (`swizzle_thread`): a block's few chunks of an operand before or in its
        // loop, where attention_decode_grouped and paged_attention_decode at B1 ran 1 % slower
        // with the split addresses on an H200 (the same loop, a shorter prologue).
        self.write_tile_to_smem(x, &ty, region, false)?;
        self.fence_async_proxy();
        if local {
            // Warpgroup g's barrier: its 128 threads wrote the rows its products read.
            let wg = self.warpgroup();
            let (base, n) = (self.em.ci32(crate::tile_warp_specialize::WARPGROUP_BARRIER), self.em.ci32(128));
            let id = self.em.add(&base, &wg);
            self.em.line(format!("nvvm.barrier id = {id} number_of_threads = {n}"));
        } else {
            self.smem_written();
        }
        self.report_buffer(&ty, region, if local { "registers (a warpgroup barrier)" } else { "registers" });
        Ok(Value::SmemBuf { offset: region, ty, ring: None })
    }

    /// This thread's registers of tile `x` stored into the buffer of type `ty` at `region`
    /// (its swizzle), in vectors as wide as the registers and the swizzle allow. A buffer of
    /// more rows (dim 0) than the tile holds it that many times over, one copy after another.
    /// `split`: chunk addresses from the thread's part of the swizzle ([`SwizzleThread`]).
    pub(crate) fn write_tile_to_smem(
        &mut self,
        x: ValueId,
        ty: &Type,
        region: i64,
        split: bool,
    ) -> Result<(), Diagnostic> {
        let Type::Smem { shape, dtype, layout: sl } = ty else { return Err(err("a register store to a non-buffer")) };
        let xty = self.func.ty(x).clone();
        let l = xty.layout().ok_or_else(|| err("a shared store of a tile without layout"))?.clone();
        let bytes = i64::from(dtype.bytes());
        let rows = xty.shape().first().copied().unwrap_or(1);
        let copies = if shape.len() == 2 && xty.shape().len() == 2 && rows > 0 { shape[0] / rows } else { 1 };
        if copies > 1 && shape[0] != rows * copies {
            return Err(err(format!("a tile of {rows} rows in a buffer of {} rows", shape[0])));
        }
        let tshape = if copies > 1 { xty.shape().to_vec() } else { shape.clone() };
        let map = l.to_linear(&tshape);
        let cd = sl.order[0];
        let contiguous = map.contiguous_reg_bits(cd);
        let chunk = (1i64 << contiguous).min(sl.vec).min(16 / bytes).max(1);
        let (row_t, col_t) = (self.thread_base(&l, &tshape, sl.order[1]), self.thread_base(&l, &tshape, cd));
        let st = if split {
            self.swizzle_thread(sl, shape, (&l, &tshape), (sl.order[1], &row_t), (cd, &col_t), (bytes, region))
        } else {
            None
        };
        let ety = Ty::of(*dtype);
        let regs = self.tile(x)?;
        // The copies after the first at one constant distance each (whole swizzle periods
        // apart, checked for every element): addressed from the first copy's address, which
        // LLVM is not let see into (`opaque_i32`) — else InstCombine folds the distance into
        // the swizzle's `or` chain and each copy's address is computed whole (only LLVM's
        // straight-line strength reduction, which a kernel may leave out, finds them again).
        // As `[addr + distance]` the copies cost nothing but their stores.
        let shifts = if copies > 1 && st.is_none() { copy_shifts(sl, shape, rows, copies, bytes) } else { None };
        let mut r = 0;
        while r < regs.len() as i64 {
            let off = map.reg_offset(r);
            let (mut first, mut value): (Option<Reg>, Option<Reg>) = (None, None);
            for copy in 0..copies {
                let mut o = off.clone();
                o[0] += copy * rows;
                let (row_c, col_c) = (o[sl.order[1]], o[cd]);
                let o = match (&shifts, &first) {
                    (Some(sh), Some(f)) => {
                        let k = self.em.ci32(sh[copy as usize]);
                        self.em.add(f, &k)
                    }
                    _ => {
                        let o = match st.as_ref().and_then(|t| self.swizzled_at(t, row_c, col_c)) {
                            Some(o) => o,
                            None => self.swizzled_offset(sl, shape, region, bytes, &row_t, row_c, &col_t, col_c),
                        };
                        if shifts.is_none() {
                            o
                        } else {
                            let o = self.em.opaque_i32(&o);
                            first = Some(o.clone());
                            o
                        }
                    }
                };
                let addr = self.smem_at(&o);
                // Packed once, after the first address (the order the stages had).
                let v = match &value {
                    Some(v) => v.clone(),
                    None => value.insert(chunk_value(&mut self.em, &regs[r as usize..], chunk, bytes, &ety)).clone(),
                };
                self.em.store(&v, &addr, chunk * bytes);
            }
            r += chunk;
        }
        Ok(())
    }

    /// A `--report` line for a shared buffer: size, place, swizzle, how it is filled, and the
    /// bank conflicts of its `ldmatrix` reads in the CPU model.
    fn report_buffer(&mut self, ty: &Type, region: i64, filled_by: &str) {
        if let Type::Smem { shape, dtype, layout } = ty {
            let bytes = smem_bytes(ty);
            if let Some(b) = layout.nvmma_bytes() {
                self.report.push(format!(
                    "buffer {shape:?} {dtype}: {bytes} B at {region}, NVMMA {b}-byte swizzle order {:?} (read by {}), filled by {filled_by}",
                    layout.order,
                    if self.facts.tmem.columns > 0 {
                        "tcgen05 descriptors"
                    } else if self.arch.has(tilec_core::target::Feature::Wgmma) {
                        "wgmma descriptors"
                    } else {
                        "ldmatrix"
                    }
                ));
                return;
            }
            // A ring's stages are laid out alike: the model reads one.
            let conflicts =
                layout.ldmatrix_conflicts(&shape[shape.len().saturating_sub(2)..], i64::from(dtype.bytes()));
            self.report.push(format!(
                "buffer {shape:?} {dtype}: {bytes} B at {region}, swizzle vec {} perPhase {} maxPhase {} order {:?}, filled by {filled_by}; ldmatrix bank conflicts {conflicts} (CPU model)",
                layout.vec, layout.per_phase, layout.max_phase, layout.order
            ));
        }
    }

    /// The shared region of the buffer an op defines (of type `ty`), live until its last
    /// reader: (offset, bytes).
    fn buffer_region(&mut self, op: &Op, ty: &Type) -> Result<(i64, i64), Diagnostic> {
        let total = smem_bytes(ty);
        let end = op.result.and_then(|r| self.facts.live_end.get(&r).copied()).unwrap_or(self.pos);
        // A descriptor's swizzle is of the address bits: an NVMMA buffer starts on its 8-row atom.
        let align = match ty {
            Type::Smem { layout, .. } => layout.nvmma_bytes().map_or(16, |b| 8 * b),
            _ => 16,
        };
        Ok((self.smem_alloc(total, end, align)?, total))
    }

    /// `async_copy`: a new buffer filled with `cp.async` from global memory, one group.
    /// The copy is spread over the block like a coalesced load of the tile (16-byte chunks;
    /// `tile-layout` only makes async copies where they are).
    pub(crate) fn async_copy(&mut self, op: &Op, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let ty = rty.ok_or_else(|| err("async_copy without result"))?.clone();
        let (region, _) = self.buffer_region(op, &ty)?;
        let buf = Value::SmemBuf { offset: region, ty: ty.clone(), ring: None };
        self.copy_into(op, &buf)?;
        self.report_buffer(&ty, region, "cp.async");
        Ok(buf)
    }

    /// The copies of an `async_copy` into `buf` (its new buffer, or for `async_copy_into`
    /// the stage given), committed as one group.
    pub(crate) fn copy_into(&mut self, op: &Op, buf: &Value) -> Result<(), Diagnostic> {
        let OpKind::AsyncCopy { tensor, index, order, tile, .. } = &op.kind else {
            return Err(err("not an async copy"));
        };
        let Value::SmemBuf { offset: region, ty: ty @ Type::Smem { shape, dtype, layout: sl }, ring } = buf else {
            return Err(err("async copy into a non-buffer"));
        };
        let bytes = i64::from(dtype.bytes());
        // A stage's index is known at run time only: the write is to the whole ring.
        let span_ty = buf_span(ty, ring);
        let first = ring.as_ref().map(|r| r.first.clone());
        self.smem_write_begin(*region, smem_bytes(span_ty));
        let warps = i64::from(self.func.num_warps);
        let b = tilec_core::layout::Blocked::for_load(tile, dtype.bytes(), warps, order)
            .map_err(|e| err(format!("async copy: {e}")))?;
        let l = Layout::Blocked(b);
        let map = l.to_linear(tile);
        // The buffer's two dims among the tile's (the non-unit ones).
        let dims: Vec<usize> = (0..tile.len()).filter(|&d| tile[d] != 1).collect();
        let (Some(&rd), Some(&cd)) = (dims.get(sl.order[1]), dims.get(sl.order[0])) else {
            return Err(err("async copy of a tile that is not two-dimensional"));
        };
        let chunk = (1i64 << map.contiguous_reg_bits(cd)).min(16 / bytes);
        if chunk * bytes != 16 {
            return Err(err("async copy without 16-byte chunks"));
        }
        let (row_t, col_t) = (self.thread_base(&l, tile, rd), self.thread_base(&l, tile, cd));
        let st = self.swizzle_thread(sl, shape, (&l, tile), (rd, &row_t), (cd, &col_t), (1, 0));
        let mut at = BTreeMap::new();
        let mut r = 0;
        while r < map.num_regs() {
            let off = map.reg_offset(r);
            let mut e = match st.as_ref().and_then(|t| self.swizzled_at(t, off[rd], off[cd])) {
                Some(e) => e,
                None => self.swizzled_index(sl, shape, &row_t, off[rd], &col_t, off[cd]),
            };
            if let Some(f) = &first {
                e = self.em.add(&e, f);
            }
            at.insert(r, self.em.index_cast(&e));
            r += chunk;
        }
        let view = self.smem_view(*region, span_ty)?;
        let tile_ty = Type::Tile { shape: tile.clone(), dtype: *dtype, layout: Some(l) };
        let tokens = self.copy_async(*tensor, index, order, &tile_ty, view, at)?;
        let group = self.em.nvgpu_async_group(&tokens);
        self.async_groups.push((self.em.block_serial(), group));
        Ok(())
    }

    /// `stages_alloc`: a ring of S buffers, one region of S times a stage's bytes, alive
    /// until the last use of any stage. Nothing is written.
    pub(crate) fn stages_alloc(&mut self, op: &Op, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let ty = rty.ok_or_else(|| err("stages_alloc without result"))?.clone();
        let (region, _) = self.buffer_region(op, &ty)?;
        self.report_buffer(&ty, region, "async copies into its stages");
        Ok(Value::SmemBuf { offset: region, ty, ring: None })
    }

    /// `stage`: the view of stage `index` of a ring (its first element at `index · M · N`).
    pub(crate) fn stage(&mut self, buf: ValueId, index: ValueId, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let ty = rty.ok_or_else(|| err("stage without result"))?.clone();
        let Value::SmemBuf { offset, ty: ring_ty, ring: None } = self.get(buf)? else {
            return Err(err("a stage of something that is not a ring of buffers"));
        };
        let i = self.scalar(index)?;
        let per = self.em.ci32(ty.shape().iter().product::<i64>());
        let first = self.em.mul(&i, &per);
        Ok(Value::SmemBuf { offset, ty, ring: Some(Box::new(super::regs::Ring { ty: ring_ty, first, slot: i })) })
    }

    /// Programmatic dependent launch: the kernel may start while the grid before it on the
    /// stream finishes (where the runtime launches it so), so every thread waits for that
    /// grid's completion and memory — before any load of what it wrote (a read after its
    /// write) or store (a write after its read) — and then lets the grid after this one start
    /// launching: only after the wait, so that no more than one grid waits ahead of the one
    /// running (a chain of early launches would fill the SMs with waiting blocks).
    pub(crate) fn grid_dependency_wait(&mut self) {
        self.em.line("nvvm.griddepcontrol wait");
        self.em.line("nvvm.griddepcontrol launch_dependents");
    }

    /// `async_wait`: waits until at most `pending` groups of copies are in flight.
    pub(crate) fn async_wait(&mut self, pending: u32) {
        let here = self.em.block_serial();
        // The newest group made in this block. A group committed in another block (an
        // earlier loop iteration, a branch) has no token that dominates the wait; the wait's
        // PTX (`cp.async.wait_group N`) names no group, so a token cast from a constant
        // stands for it there.
        let token = match self.async_groups.iter().rev().find(|(b, _)| *b == here) {
            Some((_, t)) => t.clone(),
            None => {
                let z = self.em.ci32(0);
                self.em.cast(&z, Ty::AsyncToken)
            }
        };
        self.em.nvgpu_async_wait(&token, pending);
        if pending == 0 {
            self.async_groups.clear();
        }
    }

    /// The byte offset into the kernel's shared buffer of element (row, col) of a swizzled
    /// buffer at byte `region`, with run-time thread parts `row_t`/`col_t` and compile-time
    /// parts `row_c`/`col_c` (col_c a multiple of the swizzle vector or within the thread's own
    /// vector).
    #[allow(clippy::too_many_arguments)]
    fn swizzled_offset(
        &mut self,
        sl: &SwizzledShared,
        shape: &[i64],
        region: i64,
        bytes: i64,
        row_t: &Reg,
        row_c: i64,
        col_t: &Reg,
        col_c: i64,
    ) -> Reg {
        let e = self.swizzled_index(sl, shape, row_t, row_c, col_t, col_c);
        let b = self.em.ci32(bytes);
        let eb = self.em.mul(&e, &b);
        let reg = self.em.ci32(region);
        self.em.add(&eb, &reg)
    }

    /// The thread's part of its elements' places in a swizzled buffer of `shape` — index ·
    /// `scale` + `offset`: bytes from the kernel's shared buffer for a store, elements for a
    /// copy — from the thread parts `row_t`, `col_t` of dims `rd`, `cd` of the registers'
    /// layout `l` over `tshape`, whose bits it may set ([`Lowering::thread_bits`], found only
    /// when the split is on). Made where it is used, not in the prologue: an epilogue's would otherwise be held (or spilled,
    /// matmul_fp8_rowwise on sm_121a) across the main loop, where the thread ids it is
    /// computed from are read again for free; LLVM hoists a loop's out of it. See
    /// [`SwizzleThread`]. `None` with `swizzle-split=false` (nothing emitted).
    pub(crate) fn swizzle_thread(
        &mut self,
        sl: &SwizzledShared,
        shape: &[i64],
        (l, tshape): (&Layout, &[i64]),
        (rd, row_t): (usize, &Reg),
        (cd, col_t): (usize, &Reg),
        (scale, offset): (i64, i64),
    ) -> Option<SwizzleThread> {
        if !self.swizzle_split {
            return None;
        }
        let (row_bits, col_bits) = (Self::thread_bits(l, tshape, rd), Self::thread_bits(l, tshape, cd));
        let (base, bits) = swizzle_parts(&mut self.em, sl, shape, row_t, col_t, scale, offset);
        Some(SwizzleThread { sl: sl.clone(), shape: shape.to_vec(), scale, row_bits, col_bits, base, bits })
    }

    /// The index of element (row_t + row_c, col_t + col_c) of [`Lowering::swizzle_thread`]'s
    /// buffer: `base + (bits ^ C) + K`, C and K [`swizzle_parts`] of the constants — one `xor`
    /// and an `add` or two a chunk instead of the whole swizzle of
    /// [`Lowering::swizzled_index`], which it equals where the constants set none of the
    /// thread's bits and the scale is a power of two (else `None`).
    pub(crate) fn swizzled_at(&mut self, t: &SwizzleThread, row_c: i64, col_c: i64) -> Option<Reg> {
        let pow2 = t.scale > 0 && t.scale & (t.scale - 1) == 0;
        if !pow2 || row_c < 0 || col_c < 0 || row_c & t.row_bits != 0 || col_c & t.col_bits != 0 {
            return None;
        }
        let (k, c) = swizzle_parts(&mut Ints, &t.sl, &t.shape, &row_c, &col_c, t.scale, 0);
        // A zero `c` or `k` writes no op: the emitter folds `x ^ 0` and `x + 0`.
        let c = self.em.ci32(c);
        let x = self.em.xor(&t.bits, &c);
        let e = self.em.add(&t.base, &x);
        let k = self.em.ci32(k);
        Some(self.em.add(&e, &k))
    }

    /// The element index (i32) of element (row, col) in a swizzled buffer (see
    /// [`Lowering::swizzled_offset`]).
    fn swizzled_index(
        &mut self,
        sl: &SwizzledShared,
        shape: &[i64],
        row_t: &Reg,
        row_c: i64,
        col_t: &Reg,
        col_c: i64,
    ) -> Reg {
        let rc = self.em.ci32(row_c);
        let row = self.em.add(row_t, &rc);
        let cc = self.em.ci32(col_c);
        let col = self.em.add(col_t, &cc);
        swizzle_index(&mut self.em, sl, shape, &row, &col)
    }

    /// A buffer of `ty` at byte `region` of the kernel's one shared buffer: that buffer's
    /// pointer, the element offset and the element type (what `ldmatrix` addresses from).
    pub(crate) fn smem_elems(&mut self, region: i64, ty: &Type) -> Result<(Reg, i64, Ty), Diagnostic> {
        let Type::Smem { dtype, .. } = ty else { return Err(err("a shared view of a non-buffer")) };
        let bytes = i64::from(dtype.bytes());
        if region % bytes != 0 {
            return Err(err(format!("shared buffer at byte {region} not aligned to its {bytes}-byte elements")));
        }
        Ok((self.smem_base(), region / bytes, Ty::of(*dtype)))
    }

    /// The memref view (`memref<NxT, strided<[1], offset: O>, 3>`) of a buffer of `ty` at
    /// byte `region` of the kernel's one shared buffer, made once in the prologue: the
    /// operand of the upstream `nvgpu` asynchronous copies into it.
    pub(crate) fn smem_view(&mut self, region: i64, ty: &Type) -> Result<Reg, Diagnostic> {
        let Type::Smem { shape, dtype, .. } = ty else { return Err(err("a shared view of a non-buffer")) };
        let len = shape.iter().product::<i64>();
        let key = (region, len, *dtype);
        if let Some(v) = self.smem_views.get(&key) {
            return Ok(v.clone());
        }
        let (base, offset, elem) = self.smem_elems(region, ty)?;
        let size = self.em.cint(len, Ty::I64);
        let v = self.em.memref_view(&base, elem, Some(len), offset, &size, true);
        self.smem_views.insert(key, v.clone());
        Ok(v)
    }

    /// The `ldmatrix` reads of one operand fragment group: `blocks` are the 8×8 blocks (their
    /// (row, col) offsets in the operand tile, compile-time) read by one x2/x4; lane `l` gives
    /// the address of row `l % 8` of block `l / 8` along the buffer's row dim.
    ///
    /// The fragment groups of one operand are one block pattern translated by a compile-time
    /// offset (K steps, M and N repetitions). Each lane's row index for the untranslated
    /// pattern is computed once, in the prologue; a translation is then `(base ^ X) + Y`:
    /// along the swizzled dim a multiple of the swizzle vector that never carries into the
    /// lane's own vector bits is an XOR of the index (the swizzle is an XOR of those bits),
    /// along rows a whole swizzle period is an add, which LLVM folds into the `ldmatrix`
    /// immediate. The form is checked on the CPU for every warp and lane against the
    /// swizzle's own index function; a translation it does not fit (none in the kernel
    /// library) computes the index in full.
    fn ldmatrix_blocks(
        &mut self,
        sl: &SwizzledShared,
        shape: &[i64],
        (buffer, first, word): ((&Reg, i64, &Ty), Option<&Reg>, &Ty),
        (thread, origins): (&[Reg; 2], &[[i64; 2]]),
        blocks: &[(i64, i64)],
        pair_dim: usize,
    ) -> Vec<Reg> {
        let n = blocks.len();
        let t = blocks[0];
        let pattern: Offsets = blocks.iter().map(|b| (b.0 - t.0, b.1 - t.1)).collect();
        let (cd, rd) = (sl.order[0], sl.order[1]);
        let index_at = |shift: (i64, i64)| -> Vec<i64> {
            let mut out = vec![];
            for o in origins {
                for l in 0..32i64 {
                    let (j, i) = (((l >> 3) & (n as i64 - 1)) as usize, l & 7);
                    let mut c = [o[0] + pattern[j].0 + shift.0, o[1] + pattern[j].1 + shift.1];
                    c[rd] += i;
                    out.push(sl.offset(shape, &c));
                }
            }
            out
        };
        let (base, want) = (index_at((0, 0)), index_at(t));
        let tc = [t.0, t.1][cd];
        let form = [0, tc - tc.rem_euclid(sl.vec)].into_iter().find_map(|x| {
            let y = want[0] - (base[0] ^ x);
            base.iter().zip(&want).all(|(&b, &w)| (b ^ x) + y == w).then_some((x, y))
        });
        let e = match form {
            Some((x, y)) => {
                let key = format!(
                    "{} {} {} {shape:?} {pattern:?} {} {}",
                    buffer.1,
                    buffer.2.text(),
                    sl.to_mlir(),
                    thread[0],
                    thread[1]
                );
                let b = match self.lane_bases.get(&key) {
                    Some(b) => b.clone(),
                    None => {
                        self.em.enter_prologue();
                        let b = self.lane_row_index(sl, shape, thread, &pattern);
                        self.em.leave_prologue();
                        self.lane_bases.insert(key, b.clone());
                        b
                    }
                };
                let mut e = b;
                if x != 0 {
                    let cx = self.em.ci32(x);
                    e = self.em.xor(&e, &cx);
                }
                if let Some(f) = first {
                    e = self.em.add_nowrap(&e, f);
                }
                if y != 0 {
                    let cy = self.em.ci32(y);
                    e = self.em.add_nowrap(&e, &cy);
                }
                e
            }
            None => {
                let mut e = self.lane_row_index(sl, shape, thread, blocks);
                if let Some(f) = first {
                    e = self.em.add(&e, f);
                }
                e
            }
        };
        // Non-transposed when the buffer's contiguous dim is the dim a register pair spans.
        self.em.ldmatrix(buffer, &e, (n, cd != pair_dim), word)
    }

    /// The element index of the row this lane addresses in an `ldmatrix` of `blocks`:
    /// lane `l` takes block `l / 8` (selected among the compile-time offsets by the lane's
    /// bits 3-4) and its row `l % 8`.
    fn lane_row_index(&mut self, sl: &SwizzledShared, shape: &[i64], thread: &[Reg; 2], blocks: &[(i64, i64)]) -> Reg {
        let lane = self.lane.clone();
        let n = blocks.len();
        let c3 = self.em.ci32(3);
        let j = self.em.lshr(&lane, &c3);
        let jm = self.em.ci32(n as i64 - 1);
        let j = self.em.and(&j, &jm);
        let c7 = self.em.ci32(7);
        let i = self.em.and(&lane, &c7);
        // Offsets of the lane's block: a select chain over the (at most 4) blocks.
        let mut off = [self.em.ci32(blocks[0].0), self.em.ci32(blocks[0].1)];
        for (k, b) in blocks.iter().enumerate().skip(1) {
            let kk = self.em.ci32(k as i64);
            let is = self.em.icmp(super::emit::ICmp::Eq, &j, &kk);
            let (b0, b1) = (self.em.ci32(b.0), self.em.ci32(b.1));
            off = [self.em.select(&is, &b0, &off[0]), self.em.select(&is, &b1, &off[1])];
        }
        let (cd, rd) = (sl.order[0], sl.order[1]);
        let mut c = [self.em.add(&thread[0], &off[0]), self.em.add(&thread[1], &off[1])];
        c[rd] = self.em.add(&c[rd], &i);
        self.swizzled_index(sl, shape, &c[rd], 0, &c[cd], 0)
    }

    /// Operand `op_idx` of an `mma` with accumulator layout `m`, over a tile of `shape`.
    pub(crate) fn operand(
        &mut self,
        v: ValueId,
        op_idx: u32,
        m: tilec_core::layout::Mma,
        shape: [i64; 2],
    ) -> Result<Operand, Diagnostic> {
        let val = self.get(v)?;
        self.operand_of(val, op_idx, m, shape)
    }

    /// An 8-bit operand buffer seen as a buffer of byte pairs (16-bit elements): its
    /// contiguous dim, which must be the product's K (`kd`: there is no 8-bit
    /// `ldmatrix.trans`), halved, the swizzle's vectors and atoms with it. Byte `2e + b` of the
    /// pair view is byte `2e + b` of the buffer: the XOR swizzle acts on whole vectors.
    fn pair_view(&mut self, v: Value, kd: usize) -> Result<Value, Diagnostic> {
        let half = |ty: &Type| -> Result<Type, Diagnostic> {
            let Type::Smem { shape, layout, .. } = ty else { return Err(err("an fp8 operand that is not a buffer")) };
            let n = shape.len();
            let cd = n - 2 + layout.order[0];
            if shape[cd] % 2 != 0 || layout.vec % 2 != 0 || layout.atom % 2 != 0 {
                return Err(err("an fp8 operand buffer with an odd contiguous extent or swizzle vector"));
            }
            let mut shape = shape.clone();
            shape[cd] /= 2;
            let layout = SwizzledShared { vec: layout.vec / 2, atom: layout.atom / 2, ..layout.clone() };
            Ok(Type::Smem { shape, dtype: DType::F16, layout })
        };
        match v {
            Value::SmemBuf { offset, ty, ring } => {
                let Type::Smem { layout, .. } = &ty else { return Err(err("an fp8 operand that is not a buffer")) };
                if layout.order[0] != kd {
                    return Err(err(
                        "an fp8 mma operand stored contiguous along M or N: 8-bit elements have no ldmatrix.trans; load it with its K dim contiguous (order=, as FMHA loads K)",
                    ));
                }
                let ring = match ring {
                    Some(r) => {
                        let one = self.em.ci32(1);
                        let first = self.em.lshr(&r.first, &one);
                        Some(Box::new(super::regs::Ring { ty: half(&r.ty)?, first, slot: r.slot.clone() }))
                    }
                    None => None,
                };
                Ok(Value::SmemBuf { offset, ty: half(&ty)?, ring })
            }
            _ => Err(err("an fp8 mma operand in registers: it goes through shared memory (tile-layout)")),
        }
    }

    /// `mma.sync.aligned.m16n8k32` of fp8 fragments (A four registers, B two, each four
    /// bytes along K) into four f32 accumulators.
    fn mma_fp8(&mut self, a: &[Reg], b: &[Reg], c: &[Reg], ta: DType, tb: DType) -> Vec<Reg> {
        let kind = |d: DType| if d == DType::F8E5M2 { "e5m2" } else { "e4m3" };
        let instr = format!("mma.sync.aligned.m16n8k32.row.col.f32.{}.{}.f32", kind(ta), kind(tb));
        self.mma_sync_asm(&instr, [a, b, c], None)
    }

    /// One `mma.sync` `instr` as inline PTX: D = C in place (f32), A and B as 32-bit words,
    /// and a block-scaled form's two scale registers at selector (byte-id 0, thread-id 0).
    fn mma_sync_asm(&mut self, instr: &str, [a, b, c]: [&[Reg]; 3], scales: Option<(&Reg, &Reg)>) -> Vec<Reg> {
        let mut asm = super::ptx_asm::PtxAsm::new();
        let d: Vec<String> = c.iter().map(|r| asm.inout(r, "f")).collect();
        let ai: Vec<String> = a.iter().map(|r| asm.input(r)).collect();
        let bi: Vec<String> = b.iter().map(|r| asm.input(r)).collect();
        let tail = match scales {
            Some((sa, sb)) => {
                let (s0, s1) = (asm.input(sa), asm.input(sb));
                format!(", {s0}, {{0, 0}}, {s1}, {{0, 0}}")
            }
            None => String::new(),
        };
        let (d, ai, bi) = (d.join(", "), ai.join(", "), bi.join(", "));
        asm.push(&format!("{instr} {{{d}}}, {{{ai}}}, {{{bi}}}, {{{d}}}{tail};"));
        asm.emit(&mut self.em)
    }

    /// [`Lowering::operand`] of a value already looked up.
    pub(crate) fn operand_of(
        &mut self,
        val: Value,
        op_idx: u32,
        m: tilec_core::layout::Mma,
        shape: [i64; 2],
    ) -> Result<Operand, Diagnostic> {
        let lin = Layout::DotOperand { op_idx, parent: m }.to_linear(&shape);
        // The warp's origin in the operand tile (its lanes are addressed per ldmatrix).
        let mut origin = vec![];
        for d in 0..2 {
            let runs: Vec<_> = lin.dim_terms(d).warp.into_iter().map(|r| (self.warp.clone(), r)).collect();
            origin.push(self.sum_of_runs(&runs));
        }
        let origins = (0..i64::from(self.func.num_warps))
            .map(|w| {
                let o = lin.thread_offset(w, 0);
                [o[0], o[1]]
            })
            .collect();
        Ok(Operand {
            val,
            pair_dim: if op_idx == 0 { 1 } else { 0 },
            map: lin.reg_of_offset(),
            origin: [origin[0].clone(), origin[1].clone()],
            origins,
        })
    }

    /// The packed registers of the 8×8 `blocks` of an operand, in block order: one
    /// `ldmatrix` from a shared buffer, or pairs of its registers packed two per register.
    pub(crate) fn fragments(
        &mut self,
        op: &Operand,
        blocks: &[(i64, i64)],
        bf16: bool,
    ) -> Result<Vec<Reg>, Diagnostic> {
        // bf16 multiplicands go as i32 (`mma_m16n8k16`'s bf16 form), f16 ones as vector<2xf16>.
        let half = if bf16 { Ty::BF16 } else { Ty::F16 };
        Ok(match &op.val {
            Value::SmemBuf { offset, ty: ty @ Type::Smem { shape, layout, .. }, ring } => {
                let (sl, shape) = (layout.clone(), shape.clone());
                // A stage is read from its ring's buffer, from the stage's first element.
                let (base, at, elem) = self.smem_elems(*offset, buf_span(ty, ring))?;
                let first = ring.as_ref().map(|r| r.first.clone());
                let word = if bf16 { Ty::I32 } else { Ty::Vector(2, Box::new(half.clone())) };
                self.ldmatrix_blocks(
                    &sl,
                    &shape,
                    ((&base, at, &elem), first.as_ref(), &word),
                    (&op.origin, &op.origins),
                    blocks,
                    op.pair_dim,
                )
            }
            Value::Tile(regs) => {
                let mut out = vec![];
                for b in blocks {
                    let mut next = [b.0, b.1];
                    next[op.pair_dim] += 1;
                    let find = |o: [i64; 2]| op.map.get(o.as_slice()).map(|&r| regs[r as usize].clone());
                    let (Some(x), Some(y)) = (find([b.0, b.1]), find(next)) else {
                        return Err(err("mma operand register missing"));
                    };
                    let v = self.em.undef(Ty::Vector(2, Box::new(half.clone())));
                    let v = self.em.insertelement(&v, &x, 0);
                    let v = self.em.insertelement(&v, &y, 1);
                    out.push(if bf16 { self.em.bitcast(&v, Ty::I32) } else { v });
                }
                out
            }
            _ => return Err(err("an mma operand is neither registers nor a shared buffer")),
        })
    }

    /// The 32-bit scale register of every lane for one block-scaled instruction: the `vec`
    /// factors (byte j: K block `first + j`) of row `line` of an A scale buffer (M × Ks,
    /// `a_side`) or of column `line` of a B one (Ks × N), read byte by byte from shared memory.
    /// Which row or column a lane supplies is `blockscale::{a_row_of_lane, b_col_of_lane}`
    /// (the model its tests check against the instruction's selectors).
    fn scale_register(
        &mut self,
        buf: &Value,
        a_side: bool,
        line: &Reg,
        first: i64,
        vec: i64,
    ) -> Result<Reg, Diagnostic> {
        let Value::SmemBuf { offset, ty: Type::Smem { shape, layout, .. }, ring: None } = buf else {
            return Err(err("an mma_scaled scale that is not a shared buffer"));
        };
        // The K-block dim contiguous in an unswizzled buffer whose rows and region keep `vec`
        // bytes aligned: the factors are one little-endian load (block first + j in byte j).
        // The shared address of the factor of K block `kb`: its coordinates (dim 0, dim 1),
        // then (slow, fast) in the buffer's order.
        let addr_of = |me: &mut Self, kb: i64| {
            let kb = me.em.ci32(kb);
            let c = if a_side { [line.clone(), kb] } else { [kb, line.clone()] };
            let (slow, fast) = (c[layout.order[1]].clone(), c[layout.order[0]].clone());
            let o = me.swizzled_offset(layout, shape, *offset, 1, &slow, 0, &fast, 0);
            me.smem_at(&o)
        };
        let kd = usize::from(a_side);
        let cols = shape[layout.order[0]];
        if vec > 1
            && layout.order[0] == kd
            && layout.max_phase == 1
            && layout.atom == 0
            && cols % vec == 0
            && offset % vec == 0
        {
            let addr = addr_of(self, first);
            let w = self.em.load(&addr, Ty::int(8 * vec as u32), vec);
            return Ok(if vec == 4 { w } else { self.em.convert("zext", &w, Ty::I32) });
        }
        let mut word = self.em.ci32(0);
        for j in 0..vec {
            let addr = addr_of(self, first + j);
            let byte = self.em.load(&addr, Ty::I8, 1);
            let w = self.em.convert("zext", &byte, Ty::I32);
            let sh = self.em.ci32(8 * j);
            let w = self.em.shl(&w, &sh);
            word = self.em.or(&word, &w);
        }
        Ok(word)
    }

    /// The lane's row of a 16-row A block and column of an 8-column B block whose scale
    /// factors it supplies (i32 registers).
    fn scale_lanes(&mut self) -> (Reg, Reg) {
        let lane = self.lane.clone();
        let two = self.em.ci32(2);
        let g = self.em.lshr(&lane, &two);
        let one = self.em.ci32(1);
        let odd = self.em.and(&lane, &one);
        let three = self.em.ci32(3);
        let eight = self.em.shl(&odd, &three);
        // blockscale::a_row_of_lane: lane / 4 + 8 (lane mod 2); b_col_of_lane: lane / 4.
        (self.em.add(&g, &eight), g)
    }

    /// One block-scaled `mma.sync` (`form`) of 8-bit fragments (A four registers, B two, each
    /// four bytes along K: four fp8 or eight packed fp4) into four f32 accumulators.
    fn mma_block_scaled(
        &mut self,
        form: &blockscale::ScaledForm,
        (ta, tb): (DType, DType),
        [a, b, c]: [&[Reg]; 3],
        scales: (&Reg, &Reg),
    ) -> Vec<Reg> {
        self.mma_sync_asm(&form.ptx(ta, tb), [a, b, c], Some(scales))
    }

    /// `shfl.sync.idx` of a 32-bit value from lane `src` (an i32 register) over the warp.
    fn shfl_idx(&mut self, v: &Reg, src: &Reg) -> Reg {
        let mut asm = super::ptx_asm::PtxAsm::new();
        let o = asm.output(Ty::I32);
        let (x, s) = (asm.input(v), asm.input(src));
        asm.push(&format!("shfl.sync.idx.b32 {o}, {x}, {s}, 31, -1;"));
        asm.emit(&mut self.em).pop().unwrap_or_else(|| v.clone())
    }

    /// Four packed fp4 values (bits 0–15 of `x`, element i in nibble i) as four e4m3 bytes
    /// (byte i), exactly: the magnitudes through a `prmt` table of the eight E2M1 values'
    /// E4M3 bytes, the signs through a second table.
    fn fp4x4_to_e4m3(&mut self, x: &Reg) -> Reg {
        let m = self.em.ci32(0x7777);
        let sel = self.em.and(x, &m);
        let three = self.em.ci32(3);
        let s = self.em.lshr(x, &three);
        let m1 = self.em.ci32(0x1111);
        let ssel = self.em.and(&s, &m1);
        // 0, 0.5, 1, 1.5 | 2, 3, 4, 6 in E4M3.
        let (lo, hi) = (self.em.ci32(0x3C38_3000), self.em.ci32(0x4C48_4440));
        let (sign, zero) = (self.em.ci32(0x8000), self.em.ci32(0));
        let mut asm = super::ptx_asm::PtxAsm::new();
        let o = asm.output(Ty::I32);
        let (a, b, c) = (asm.input(&lo), asm.input(&hi), asm.input(&sel));
        let (d, e, f) = (asm.input(&sign), asm.input(&zero), asm.input(&ssel));
        asm.push(&format!(
            "{{ .reg .b32 m, s; prmt.b32 m, {a}, {b}, {c}; prmt.b32 s, {d}, {e}, {f}; or.b32 {o}, m, s; }}"
        ));
        asm.emit(&mut self.em).pop().unwrap_or_else(|| x.clone())
    }

    /// [`Lowering::mma_block_scaled`] on a chip without the instruction (`--emulate sm_121a`
    /// on sm_90a): per K block of the instruction, an fp8 `mma.sync` m16n8k32 of the block's
    /// elements into zeros, times the factors, added to the accumulator. The factors come
    /// from the lanes and bytes the instruction reads (`blockscale::scale_a_lane` /
    /// `scale_b_lane` at thread-id 0: row g of the accumulator from lane 4g, row g + 8 from
    /// lane 4g + 1, column n from lane 4n), so the emulation checks the scale registers'
    /// placement as the hardware would. Packed fp4 operands are widened to e4m3 (exact); each
    /// half of the k64 instruction (a0/a1/b0: K 0–31, a2/a3/b1: K 32–63) becomes one k32
    /// product — thread t's eight fp4 of a register are K 8t…8t+7, its two e4m3 words the
    /// k32 fragment's K 4t… and 16 + 4t…, the same permutation of K in A and B — and a
    /// 16-element block is the half with the other block's A words zeroed (threads 2s, 2s + 1
    /// hold block s of a half). The products round as fp8 mma.sync does, not as the
    /// block-scaled tensor cores do.
    fn mma_block_scaled_emulated(
        &mut self,
        form: &blockscale::ScaledForm,
        (ta, tb): (DType, DType),
        [a, b, c]: [&[Reg]; 3],
        (sa, sb): (&Reg, &Reg),
    ) -> Vec<Reg> {
        let lane = self.lane.clone();
        let three = self.em.ci32(3);
        let t = self.em.and(&lane, &three);
        let quad = self.em.sub(&lane, &t);
        // The lanes holding the factors of this thread's rows g, g + 8 and columns 2t, 2t + 1.
        let one = self.em.ci32(1);
        let four = self.em.ci32(4);
        let row_hi = self.em.add(&quad, &one);
        let col0 = self.em.shl(&t, &three);
        let col1 = self.em.add(&col0, &four);
        let sa0 = self.shfl_idx(sa, &quad);
        let sa1 = self.shfl_idx(sa, &row_hi);
        let sb0 = self.shfl_idx(sb, &col0);
        let sb1 = self.shfl_idx(sb, &col1);
        let factor = |me: &mut Self, w: &Reg, j: i64| {
            let sh = me.em.ci32(8 * j);
            let x = me.em.lshr(w, &sh);
            let byte = me.em.convert("trunc", &x, Ty::I8);
            super::elementwise::cast(&mut me.em, &byte, form.scale, DType::F32)
        };
        let packed = ta == DType::F4E2M1X2;
        let e4m3 = |me: &mut Self, r: &Reg, high: bool| {
            let x = if high {
                let s = me.em.ci32(16);
                me.em.lshr(r, &s)
            } else {
                r.clone()
            };
            me.fp4x4_to_e4m3(&x)
        };
        let mut d: Vec<Reg> = c.to_vec();
        for j in 0..form.vec {
            // This block's k32 operands: fp8 as they are; fp4 the half holding the block.
            let (mut av, bv): (Vec<Reg>, Vec<Reg>) = if packed {
                let h = (j * form.block / 32) as usize;
                let av = vec![
                    e4m3(self, &a[2 * h], false),
                    e4m3(self, &a[2 * h + 1], false),
                    e4m3(self, &a[2 * h], true),
                    e4m3(self, &a[2 * h + 1], true),
                ];
                (av, vec![e4m3(self, &b[h], false), e4m3(self, &b[h], true)])
            } else {
                (a.to_vec(), b.to_vec())
            };
            if form.block == 16 {
                // Block s of the half is held by threads 2s and 2s + 1 of each quad.
                let s = self.em.ci32(j % 2);
                let half = self.em.lshr(&t, &one);
                let mine = self.em.icmp(super::emit::ICmp::Eq, &half, &s);
                let zero = self.em.ci32(0);
                av = av.iter().map(|r| self.em.select(&mine, r, &zero)).collect();
            }
            let zeros: Vec<Reg> = (0..4).map(|_| self.em.cf32(0.0)).collect();
            let (fa, fb) = if packed { (DType::F8E4M3, DType::F8E4M3) } else { (ta, tb) };
            let p = self.mma_fp8(&av, &bv, &zeros, fa, fb);
            let (ra, rb) = (factor(self, &sa0, j), factor(self, &sa1, j));
            let (ca, cb) = (factor(self, &sb0, j), factor(self, &sb1, j));
            // Accumulator registers: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1).
            for (i, (r, col)) in [(&ra, &ca), (&ra, &cb), (&rb, &ca), (&rb, &cb)].into_iter().enumerate() {
                let s = self.em.fmul(r, col);
                let x = self.em.fmul(&p[i], &s);
                d[i] = self.em.fadd(&d[i], &x);
            }
        }
        d
    }

    /// `mma`: `acc + a · b` with `mma.sync.m16n8k16` (m16n8k32 for fp8); with `scales`, the
    /// block-scaled `mma.sync` of `blockscale::ScaledForm`.
    pub(crate) fn mma(
        &mut self,
        a: ValueId,
        b: ValueId,
        acc: ValueId,
        scales: Option<(ValueId, ValueId)>,
        rty: Option<&Type>,
        result: Option<ValueId>,
    ) -> Result<Value, Diagnostic> {
        let ty = rty.ok_or_else(|| err("mma without result"))?.clone();
        let Some(Layout::Mma(m)) = ty.layout().cloned() else { return Err(err("mma result without #mma layout")) };
        if m.family == tilec_core::layout::MmaFamily::Tcgen05 {
            return self.tcgen05_mma([a, b, acc], scales, &ty, m, result);
        }
        if m.family == tilec_core::layout::MmaFamily::Wgmma {
            let in_flight = result.is_some_and(|r| self.facts.in_flight.contains(&r));
            return self.wgmma(a, b, acc, &ty, m, in_flight);
        }
        let (ms, ns) = (ty.shape()[0], ty.shape()[1]);
        let ks = self.func.ty(a).shape()[1];
        let dt = self.func.ty(a).dtype();
        let dtb = self.func.ty(b).dtype();
        let form = match scales {
            Some((sa, sb)) => {
                let t = |v: ValueId| self.func.ty(v);
                let shapes = [t(a).shape(), t(sa).shape(), t(b).shape(), t(sb).shape(), ty.shape()];
                let types = [dt, t(sa).dtype(), dtb, t(sb).dtype(), ty.dtype()];
                Some((blockscale::scaled_mma_form(shapes, types).map_err(err)?, self.get(sa)?, self.get(sb)?))
            }
            None => None,
        };
        // Block-scaled operands are 8-bit fragments too (packed fp4: two K elements a byte).
        let fp8 = dt.is_fp8() && dtb.is_fp8() || form.is_some();
        // fp8 fragments go as i32, as bf16 ones do.
        let bf16 = dt == DType::BF16 || fp8;
        if !matches!(dt, DType::F16 | DType::BF16) && !fp8 {
            return Err(err(format!("mma of {dt} operands")));
        }
        let [wm, wn] = m.warps_per_cta;
        let acc_l = Layout::Mma(m).to_linear(&[ms, ns]);
        let acc_of = acc_l.reg_of_offset();
        let accr = self.tile(acc)?;
        let m_reps = (ms / (MMA_M * wm)).max(1);
        let n_reps = (ns / (MMA_N * wn)).max(1);
        // An 8-bit product of K 32 (m16n8k32) places its operand bytes as the 16-bit one of
        // K 16 places its elements: the fp8 buffers are read as buffers of byte pairs.
        let ks = if fp8 { ks / 2 } else { ks };
        let k_steps = ks / MMA_K;
        let (av, bv) = (self.get(a)?, self.get(b)?);
        let (av, bv) = if fp8 { (self.pair_view(av, 1)?, self.pair_view(bv, 0)?) } else { (av, bv) };
        let ops = [self.operand_of(av, 0, m, [ms, ks])?, self.operand_of(bv, 1, m, [ks, ns])?];
        let how = |op: &Operand, n: i64| match &op.val {
            Value::SmemBuf { ty: Type::Smem { layout, .. }, .. } => {
                format!("{n} ldmatrix{}", if layout.order[0] != op.pair_dim { ".trans" } else { "" })
            }
            _ => "registers".to_string(),
        };
        let line = match &form {
            Some((f, ..)) => format!(
                "mma_scaled [{ms}, {ns}, {}] {dt}{} with {} every {}: warps {wm}x{wn}; per K step of {}: A {}, B {}, {} {} (operand buffers read as byte pairs; each lane's scale factors read from shared memory, {} byte(s) a row or column); {k_steps} K steps",
                2 * ks * f.pack,
                if dtb != dt { format!(" x {dtb}") } else { String::new() },
                f.scale,
                f.block,
                f.k_step,
                how(&ops[0], m_reps),
                how(&ops[1], (n_reps + 1) / 2),
                m_reps * n_reps,
                f.ptx(dt, dtb),
                f.vec
            ),
            None => format!(
                "mma [{ms}, {ns}, {}] {dt}{}: warps {wm}x{wn}; per K step of {}: A {}, B {}, {} mma.sync{}; {k_steps} K steps",
                if fp8 { 2 * ks } else { ks },
                if fp8 && dtb != dt { format!(" x {dtb}") } else { String::new() },
                if fp8 { 32 } else { 16 },
                how(&ops[0], m_reps),
                how(&ops[1], (n_reps + 1) / 2),
                m_reps * n_reps,
                if fp8 { " m16n8k32 (fp8 buffers read as byte pairs)" } else { "" }
            ),
        };
        self.report.push(line);
        // A warp with few accumulator blocks over a long K (MLA's scores: one m16n8 block a
        // warp, 32 K steps) would make one chain of dependent mma.sync, each waiting for the
        // last one's result (HMMA's latency, ~33 cycles on an H100, against a few cycles of
        // issue): the K steps are dealt round-robin to `parts` partial accumulators — the
        // first starts from `acc`, the others from zeros — so that about four products are in
        // flight (`mma-chains`), and the partials are summed pairwise at the end.
        let chains = m_reps * n_reps;
        let parts = if form.is_none() && chains < self.mma_chains {
            (self.mma_chains / chains).min(k_steps / MIN_STEPS_A_PART).max(1)
        } else {
            1
        };
        // accs[0] is the accumulator itself; accs[1..] the partials, zeros to start.
        let mut accs: Vec<Vec<Reg>> = vec![accr];
        if parts > 1 {
            let zero = self.em.cfloat(0.0, ty.dtype());
            let n = accs[0].len();
            accs.extend((1..parts).map(|_| vec![zero.clone(); n]));
            self.report.push(format!(
                "mma: {chains} accumulator block(s) a warp over {k_steps} K steps: {parts} partial accumulators"
            ));
        }
        let mut touched = std::collections::BTreeSet::new();
        for kk in 0..k_steps {
            let part = (kk % parts) as usize;
            let k0 = kk * MMA_K;
            // A fragments per M repetition: (m, k) blocks (0,0) (8,0) (0,8) (8,8).
            let mut afr: Vec<Vec<Reg>> = vec![];
            for mi in 0..m_reps {
                let r0 = mi * MMA_M * wm;
                afr.push(self.fragments(&ops[0], &[(r0, k0), (r0 + 8, k0), (r0, k0 + 8), (r0 + 8, k0 + 8)], bf16)?);
            }
            // B fragments per N repetition: (k, n) blocks (0,0) (8,0); two repetitions per x4.
            let mut bfr: Vec<Vec<Reg>> = vec![];
            let mut nj = 0;
            while nj < n_reps {
                let c0 = nj * MMA_N * wn;
                let two = nj + 1 < n_reps;
                let mut blocks: Offsets = vec![(k0, c0), (k0 + 8, c0)];
                if two {
                    blocks.extend([(k0, c0 + MMA_N * wn), (k0 + 8, c0 + MMA_N * wn)]);
                }
                let f = self.fragments(&ops[1], &blocks, bf16)?;
                bfr.extend(f.chunks(2).map(<[Reg]>::to_vec));
                nj += if two { 2 } else { 1 };
            }
            // Each lane's scale registers of this K step: per M repetition its A row, per N
            // repetition its B column (the warp's origin plus the repetition plus the lane's).
            let mut sreg: (Vec<Reg>, Vec<Reg>) = (vec![], vec![]);
            if let Some((f, sav, sbv)) = &form {
                let (ar, bc) = self.scale_lanes();
                for mi in 0..m_reps {
                    let r = self.em.ci32(mi * MMA_M * wm);
                    let row = self.em.add(&ops[0].origin[0], &r);
                    let row = self.em.add(&row, &ar);
                    sreg.0.push(self.scale_register(sav, true, &row, kk * f.vec, f.vec)?);
                }
                for nj in 0..bfr.len() as i64 {
                    let c = self.em.ci32(nj * MMA_N * wn);
                    let col = self.em.add(&ops[1].origin[1], &c);
                    let col = self.em.add(&col, &bc);
                    sreg.1.push(self.scale_register(sbv, false, &col, kk * f.vec, f.vec)?);
                }
            }
            for (mi, af) in afr.iter().enumerate() {
                for (nj, bf) in bfr.iter().enumerate() {
                    let (r0, c0) = (mi as i64 * MMA_M * wm, nj as i64 * MMA_N * wn);
                    let idx: Vec<usize> = [(r0, c0), (r0, c0 + 1), (r0 + 8, c0), (r0 + 8, c0 + 1)]
                        .iter()
                        .map(|&(r, c)| {
                            acc_of
                                .get(&vec![r, c])
                                .map(|&x| x as usize)
                                .ok_or_else(|| err("mma accumulator register missing"))
                        })
                        .collect::<Result<_, _>>()?;
                    let c: Vec<Reg> = idx.iter().map(|&i| accs[part][i].clone()).collect();
                    let d = if let Some((f, ..)) = &form {
                        let f = *f;
                        if self.emulate_block_scale {
                            self.mma_block_scaled_emulated(&f, (dt, dtb), [af, bf, &c], (&sreg.0[mi], &sreg.1[nj]))
                        } else {
                            self.mma_block_scaled(&f, (dt, dtb), [af, bf, &c], (&sreg.0[mi], &sreg.1[nj]))
                        }
                    } else if fp8 {
                        self.mma_fp8(af, bf, &c, dt, dtb)
                    } else {
                        self.em.mma_m16n8k16(af, bf, &c, bf16)
                    };
                    for (i, v) in idx.into_iter().zip(d) {
                        accs[part][i] = v;
                        touched.insert(i);
                    }
                }
            }
        }
        if accs.len() > 1 {
            for i in touched {
                let mut sums: Vec<Reg> = accs.iter().map(|a| a[i].clone()).collect();
                while sums.len() > 1 {
                    sums = sums
                        .chunks(2)
                        .map(|c| if c.len() == 2 { self.em.fadd(&c[0], &c[1]) } else { c[0].clone() })
                        .collect();
                }
                accs[0][i] = sums.swap_remove(0);
            }
        }
        let scale_bufs: Vec<Value> = form.map(|(_, x, y)| vec![x, y]).unwrap_or_default();
        for v in ops.iter().map(|o| &o.val).chain(scale_bufs.iter()) {
            if let Value::SmemBuf { offset, ty, ring } = v {
                // A stage's index is known at run time only: the read is of the whole ring.
                self.smem_read_done(*offset, smem_bytes(buf_span(ty, ring)));
            }
        }
        Ok(Value::Tile(accs.swap_remove(0)))
    }
}

/// The fewest K steps a partial accumulator takes (its final add against the chain it
/// shortens).
const MIN_STEPS_A_PART: i64 = 4;

/// The bytes of a shared buffer (or ring) of type `ty`.
pub(super) fn smem_bytes(ty: &Type) -> i64 {
    ty.shape().iter().product::<i64>() * i64::from(ty.dtype().bytes())
}

/// What a buffer occupies as far as addressing and barriers go: a stage, its whole ring
/// (the stage index is known at run time only); any other buffer, itself.
pub(super) fn buf_span<'a>(ty: &'a Type, ring: &'a Option<Box<super::regs::Ring>>) -> &'a Type {
    ring.as_ref().map_or(ty, |r| &r.ty)
}

#[cfg(test)]
mod tests {
    use super::super::int_arith::Ints;
    use super::super::Lowering;
    use super::{copy_shifts, swizzle_index, swizzle_parts};
    use tilec_core::layout::{Blocked, Layout, Mma, SwizzledShared};

    #[test]
    fn copies_whole_swizzle_periods_apart_are_one_constant_apart() {
        // The M = 64 tcgen05 product's A: a 16-row query held four times in a K-major NVMMA
        // buffer (mla_decode on sm_103a), checked against the swizzle's own offsets.
        let (sl, shape) = (SwizzledShared::nvmma(128, 2, [1, 0]), vec![64, 576]);
        let shifts = copy_shifts(&sl, &shape, 16, 4, 2).expect("whole periods apart");
        assert_eq!(shifts, vec![0, 2048, 4096, 6144]);
        for (copy, shift) in shifts.iter().enumerate() {
            for (r, c) in [(0, 0), (5, 8), (15, 575), (9, 130)] {
                let moved = sl.offset(&shape, &[r + 16 * copy as i64, c]);
                assert_eq!(moved * 2, sl.offset(&shape, &[r, c]) * 2 + shift, "copy {copy} ({r}, {c})");
            }
        }
        // Copies of 4 rows under a swizzle whose phase changes every row: the second copy's
        // rows have other phases than the first's, so no one distance.
        let sl = SwizzledShared { vec: 8, per_phase: 1, max_phase: 8, order: [1, 0], atom: 0 };
        assert_eq!(copy_shifts(&sl, &[16, 64], 4, 4, 2), None);
    }

    /// Every value whose set bits are among `mask`'s.
    fn subsets(mask: i64) -> Vec<i64> {
        let mut out = vec![];
        let mut s = mask;
        loop {
            out.push(s);
            if s == 0 {
                return out;
            }
            s = (s - 1) & mask;
        }
    }

    #[test]
    fn a_swizzle_splits_into_a_thread_part_and_a_register_constant() {
        let cases = [
            // NVMMA atoms narrower than the rows: blocks of columns one after another.
            (SwizzledShared::nvmma(128, 2, [1, 0]), vec![32, 128], (0b1_0101, 0b1_0110)),
            (SwizzledShared::nvmma(64, 2, [1, 0]), vec![16, 32], (0b0111, 0b0011)),
            (SwizzledShared::nvmma(32, 1, [0, 1]), vec![64, 32], (0b10_1010, 0b0100)),
            (
                SwizzledShared { vec: 8, per_phase: 2, max_phase: 4, order: [1, 0], atom: 0 },
                vec![32, 64],
                (0b0_0110, 0b11_0011),
            ),
            (SwizzledShared::plain(4, [1, 0]), vec![16, 32], (0b1111, 0b0_0011)),
        ];
        for (sl, shape, (row_bits, col_bits)) in cases {
            let (rows, cols) = (shape[sl.order[1]], shape[sl.order[0]]);
            for (scale, offset) in [(1, 0), (2, 96), (4, 1024)] {
                for row_t in subsets(row_bits) {
                    for col_t in subsets(col_bits) {
                        let (base, bits) = swizzle_parts(&mut Ints, &sl, &shape, &row_t, &col_t, scale, offset);
                        for row_c in (0..rows).filter(|r| r & row_bits == 0) {
                            for col_c in (0..cols).filter(|c| c & col_bits == 0) {
                                let (row, col) = (row_t + row_c, col_t + col_c);
                                let mut c = vec![0; 2];
                                (c[sl.order[1]], c[sl.order[0]]) = (row, col);
                                let want = sl.offset(&shape, &c);
                                assert_eq!(swizzle_index(&mut Ints, &sl, &shape, &row, &col), want, "{sl:?} {c:?}");
                                let (k, cc) = swizzle_parts(&mut Ints, &sl, &shape, &row_c, &col_c, scale, 0);
                                assert_eq!(base + (bits ^ cc) + k, want * scale + offset, "{sl:?} {c:?} scale {scale}");
                            }
                        }
                    }
                }
            }
        }
        // A constant on a thread's bits carries into them: the split no longer holds, which
        // is why `swizzled_at` declines it.
        let (sl, shape) = (SwizzledShared::nvmma(128, 2, [1, 0]), vec![32, 64]);
        let (base, bits) = swizzle_parts(&mut Ints, &sl, &shape, &1, &0, 1, 0);
        let (k, cc) = swizzle_parts(&mut Ints, &sl, &shape, &1, &0, 1, 0);
        assert_ne!(base + (bits ^ cc) + k, sl.offset(&shape, &[2, 0]));
    }

    #[test]
    fn thread_bits_hold_every_threads_coordinate() {
        let blocked = |shape: &[i64], bytes: u32, warps: i64| {
            Layout::Blocked(Blocked::for_load(shape, bytes, warps, &[0, 1]).expect("a load layout"))
        };
        let cases = [
            (blocked(&[64, 64], 2, 4), vec![64, 64]),
            (blocked(&[16, 256], 4, 8), vec![16, 256]),
            (blocked(&[128, 32], 1, 4), vec![128, 32]),
            (Layout::Mma(Mma::for_shape(&[128, 64], 8)), vec![128, 64]),
            (Layout::Mma(Mma::for_shape(&[64, 128], 4)), vec![64, 128]),
        ];
        for (l, shape) in cases {
            let map = l.to_linear(&shape);
            let warps = 1 << map.warps.len();
            for d in 0..2 {
                let bits = Lowering::thread_bits(&l, &shape, d);
                let mut seen = 0;
                for w in 0..warps {
                    for lane in 0..32 {
                        let c = map.coord(w, lane, 0)[d];
                        assert_eq!(c & !bits, 0, "{l:?} dim {d}: thread ({w}, {lane}) at {c} outside {bits:#b}");
                        seen |= c;
                    }
                }
                assert_eq!(seen, bits, "{l:?} dim {d}: bits no thread sets");
            }
        }
    }
}
