//! Global memory: tile loads and stores (one base coordinate per thread, a constant offset
//! per register, predicated vector accesses of up to 16 bytes), and element accesses —
//! gathers, scatters and element reads, one predicated scalar access each, every index
//! compared unsigned with its extent so that negative indices are out of bounds.

use super::emit::{Emitter, ICmp, Reg, Ty};
use super::ptx_asm::PtxAsm;
use super::regs::{TensorArgs, Value};
use super::{err, Lowering};
use std::collections::{BTreeMap, BTreeSet};
use tilec_core::tir::{AtomicOp, MemSem, Op, OpKind, Padding, Type, ValueId};
use tilec_core::{DType, Diagnostic};

/// Bit pattern of the padding of one element, as `u64`.
fn pad_bits(p: Padding, d: DType) -> u64 {
    let v = p.value();
    if d.is_float() {
        d.float_bits(v)
    } else {
        (v as i64 as u64) & if d.bits() >= 64 { u64::MAX } else { (1u64 << d.bits()) - 1 }
    }
}

/// How an element of dtype `d` lies in memory: i1 as one byte (0 or 1).
fn mem_ty(d: DType) -> Ty {
    if d == DType::I1 {
        Ty::I8
    } else {
        Ty::of(d)
    }
}

/// The register type and PTX type suffix of a `bits`-bit memory word (a byte travels in a
/// 16-bit register: PTX has no 8-bit registers).
fn word(bits: u32) -> (Ty, String) {
    if bits == 8 {
        (Ty::I16, "u8".into())
    } else {
        (Ty::int(bits), format!("b{bits}"))
    }
}

/// A loaded single-element word as a value of dtype `d` (a byte is != 0 for i1; other bytes
/// come in the low half of a 16-bit register).
fn from_word(em: &mut Emitter, w: &Reg, d: DType) -> Reg {
    match d {
        DType::I1 => {
            let z = em.cint(0, w.ty.clone());
            em.icmp(ICmp::Ne, w, &z)
        }
        _ if d.bytes() == 1 => em.convert("trunc", w, Ty::I8),
        _ => em.bitcast(w, Ty::of(d)),
    }
}

/// A value of dtype `d` as the word that stores it.
fn to_word(em: &mut Emitter, v: &Reg, d: DType) -> Reg {
    match d {
        DType::I1 => em.convert("zext", v, Ty::I16),
        _ if d.bytes() == 1 => em.convert("zext", v, Ty::I16),
        _ => em.bitcast(v, Ty::int(d.bits())),
    }
}

/// One tile access.
pub(crate) enum Access {
    Load(Padding),
    /// The registers stored; with a mask (one i1 register per register), each element
    /// alone under its own predicate.
    Store {
        vals: Vec<Reg>,
        mask: Option<Vec<Reg>>,
    },
    /// An atomic read-modify-write of each element (one `atom` each, under the mask's and
    /// the bounds' predicate, by the owner of a replicated element): the old values.
    Atomic {
        op: AtomicOp,
        vals: Vec<Reg>,
        cmp: Option<Vec<Reg>>,
        mask: Vec<Reg>,
        qual: String,
    },
    /// An asynchronous copy (`nvgpu.device_async_copy`) of each 16-byte chunk into the
    /// shared view `dst`, at the element index given for the chunk's first register; the
    /// source is read through the global view `src`; out-of-bounds chunks are zero-filled
    /// (source size 0).
    Async {
        src: Reg,
        dst: Reg,
        at: std::collections::BTreeMap<i64, Reg>,
    },
}

/// One element's access by a gather, scatter or element read.
enum ElemAccess {
    /// Load; out-of-bounds reads these bits.
    Load(u64),
    /// Store this value; out-of-bounds writes nothing.
    Store(Reg),
}

/// Reads or writes the element at i32 indices `idx` of a tensor, predicated on every index
/// being in `0..extent`.
/// The address of element `idx` of `t` and whether it is in bounds (a negative index is not:
/// it compares as a large unsigned one).
fn element_address(em: &mut Emitter, t: &TensorArgs, idx: &[Reg], d: DType) -> Result<(Reg, Reg), Diagnostic> {
    if idx.len() != t.dims.len() {
        return Err(err("element access with the wrong number of indices"));
    }
    let mut pred: Option<Reg> = None;
    let mut lin: Option<Reg> = None;
    for (k, i) in idx.iter().enumerate() {
        let c = em.convert("sext", i, Ty::I64);
        let ok = em.icmp(ICmp::Ult, &c, &t.dims[k]);
        pred = Some(match pred {
            None => ok,
            Some(p) => em.and(&p, &ok),
        });
        let term = em.mul(&c, &t.strides[k]);
        lin = Some(match lin {
            None => term,
            Some(p) => em.add(&p, &term),
        });
    }
    let (Some(pred), Some(lin)) = (pred, lin) else { return Err(err("element access of a rank-0 tensor")) };
    let ety = mem_ty(d);
    Ok((em.gep(&t.ptr, &lin, &ety), pred))
}

fn element_access(
    em: &mut Emitter,
    t: &TensorArgs,
    idx: &[Reg],
    d: DType,
    access: ElemAccess,
) -> Result<Option<Reg>, Diagnostic> {
    let (addr, pred) = element_address(em, t, idx, d)?;
    let bits = d.bytes() * 8;
    let (wty, suffix) = word(bits);
    let rbits = if bits == 8 { 16 } else { bits };
    let mut asm = PtxAsm::new();
    Ok(match access {
        ElemAccess::Load(pad) => {
            let o = asm.output(wty);
            let a = asm.input(&addr);
            let p = asm.input(&pred);
            asm.push(&format!("mov.b{rbits} {o}, 0x{pad:X}; @{p} ld.global.{suffix} {o}, [{a}];"));
            let w = asm.emit(em).pop().ok_or_else(|| err("inline asm without result"))?;
            Some(from_word(em, &w, d))
        }
        ElemAccess::Store(v) => {
            let w = to_word(em, &v, d);
            let a = asm.input(&addr);
            let x = asm.input(&w);
            let p = asm.input(&pred);
            asm.push(&format!("@{p} st.global.{suffix} [{a}], {x};"));
            asm.emit(em);
            None
        }
    })
}

/// The tensor viewed with its dims in `order` (view dim i is tensor dim `order[i]`), the
/// dim that has unit stride recorded.
fn view(t: &TensorArgs, order: &[u32]) -> Result<TensorArgs, Diagnostic> {
    if order.iter().enumerate().all(|(i, &o)| o as usize == i) {
        return Ok(t.clone());
    }
    let pick = |v: &[Reg]| -> Result<Vec<Reg>, Diagnostic> {
        order.iter().map(|&o| v.get(o as usize).cloned().ok_or_else(|| err("load order out of range"))).collect()
    };
    let rank = t.dims.len();
    Ok(TensorArgs {
        ptr: t.ptr.clone(),
        dims: pick(&t.dims)?,
        strides: pick(&t.strides)?,
        aligned: t.aligned,
        contiguous: order.iter().position(|&o| o as usize + 1 == rank),
    })
}

impl Lowering<'_> {
    /// Whether this thread is the one that stores a replicated element: its replicated lane
    /// and warp bits are all clear.
    pub(crate) fn owner(&mut self, rep_lanes: i64, rep_warps: i64) -> Reg {
        let zero = self.em.ci32(0);
        let mut pred: Option<Reg> = None;
        for (id, mask) in [(self.lane.clone(), rep_lanes), (self.warp.clone(), rep_warps)] {
            if mask == 0 {
                continue;
            }
            let m = self.em.ci32(mask);
            let bits = self.em.and(&id, &m);
            let ok = self.em.icmp(ICmp::Eq, &bits, &zero);
            pred = Some(match pred {
                None => ok,
                Some(p) => self.em.and(&p, &ok),
            });
        }
        pred.unwrap_or_else(|| self.em.cint(1, Ty::I1))
    }

    /// `load` and `store`; a store has no value.
    pub(crate) fn global_access(&mut self, kind: &OpKind, rty: Option<&Type>) -> Result<Option<Value>, Diagnostic> {
        match kind {
            OpKind::Load { tensor, index, padding, order, .. } => {
                let t = self.tensor(*tensor)?;
                let idx = index.iter().map(|i| self.scalar(*i)).collect::<Result<Vec<_>, _>>()?;
                let ty = rty.ok_or_else(|| err("load without result"))?.clone();
                let t = view(&t, order)?;
                Ok(Some(Value::Tile(self.tile_access(&t, &idx, &ty, Access::Load(*padding))?)))
            }
            OpKind::Store { tensor, index, tile, mask } => {
                let t = self.tensor(*tensor)?;
                let idx = index.iter().map(|i| self.scalar(*i)).collect::<Result<Vec<_>, _>>()?;
                let ty = self.func.ty(*tile).clone();
                let regs = self.tile(*tile)?;
                let mask = match mask {
                    Some(m) => Some(self.tile(*m)?),
                    None => None,
                };
                self.tile_access(&t, &idx, &ty, Access::Store { vals: regs, mask })?;
                Ok(None)
            }
            _ => Err(err("not a tile access")),
        }
    }

    /// A `prefetch` of a tile: the tile's 128-byte lines along its unit-stride dim, dealt
    /// round-robin to the block's threads, each issuing `prefetch.global.L2` for an element of
    /// each of its lines that lies inside the tensor (lines past its bounds are skipped). The
    /// load/store unit takes them, not the Tensor Memory Accelerator: TMA prefetches
    /// (`cp.async.bulk.prefetch.tensor`, one thread a box) made Qwen2-7B's decode step 3 %
    /// slower on an H200 — likely queued ahead of the rings' copies in the SM's copy engine
    /// (bench/results/2026-11-28-session25/). The largest tile (2^22 elements) is 512 rounds
    /// of a 128-thread block.
    pub(crate) fn l2_prefetch(&mut self, kind: &OpKind) -> Result<(), Diagnostic> {
        let OpKind::Prefetch { tensor, index, order, tile } = kind else { return Err(err("not a prefetch")) };
        let Type::Tensor { dtype, .. } = self.func.ty(*tensor).clone() else {
            return Err(err("a prefetch of a value that is not a tensor"));
        };
        let t = view(&self.tensor(*tensor)?, order)?;
        let rank = tile.len();
        let idx = index.iter().map(|i| self.scalar(*i)).collect::<Result<Vec<_>, _>>()?;
        // The tile dim along the tensor's unit-stride dim, and the elements of a line there.
        let c = t.contiguous.unwrap_or(rank - 1);
        let per_line = (128 / i64::from(dtype.bytes())).max(1);
        let mut extents = tile.clone();
        extents[c] = (tile[c] + per_line - 1) / per_line;
        let slots: i64 = extents.iter().product();
        let threads = i64::from(self.func.num_warps) * 32;
        let origin: Vec<Reg> = (0..rank)
            .map(|k| {
                let e = self.em.ci32(tile[k]);
                self.em.mul(&idx[k], &e)
            })
            .collect();
        for round in 0..(slots + threads - 1) / threads {
            let first = self.em.ci32(round * threads);
            let slot = self.em.add(&self.tid.clone(), &first);
            // The slot's coordinates, the last dim fastest; along `c` in lines.
            let mut rest = slot.clone();
            let mut at = vec![self.em.ci32(0); rank];
            for k in (0..rank).rev() {
                let e = self.em.ci32(extents[k]);
                let q = self.em.sdiv(&rest, &e);
                let r = self.em.srem(&rest, &e);
                let step = if k == c { self.em.ci32(per_line) } else { self.em.ci32(1) };
                let local = self.em.mul(&r, &step);
                at[k] = self.em.add(&origin[k], &local);
                rest = q;
            }
            let (addr, mut pred) = element_address(&mut self.em, &t, &at, dtype)?;
            if (round + 1) * threads > slots {
                let n = self.em.ci32(slots);
                let live = self.em.icmp(ICmp::Slt, &slot, &n);
                pred = self.em.and(&pred, &live);
            }
            let mut asm = PtxAsm::new();
            let (a, p) = (asm.input(&addr), asm.input(&pred));
            asm.push(&format!("@{p} prefetch.global.L2 [{a}];"));
            asm.emit(&mut self.em);
        }
        Ok(())
    }

    /// Gathers, element reads and scatters; a scatter has no value.
    pub(crate) fn element_op(&mut self, kind: &OpKind, rty: Option<&Type>) -> Result<Option<Value>, Diagnostic> {
        match kind {
            OpKind::Gather { tensor, index, padding } => {
                let t = self.tensor(*tensor)?;
                let d = rty.map(Type::dtype).ok_or_else(|| err("gather without result"))?;
                let pad = pad_bits(*padding, d);
                let v = self.elementwise(index, |em, idx| {
                    element_access(em, &t, idx, d, ElemAccess::Load(pad))?.ok_or_else(|| err("gather without value"))
                })?;
                Ok(Some(v))
            }
            OpKind::Element { tensor, index } => {
                let t = self.tensor(*tensor)?;
                let d = rty.map(Type::dtype).ok_or_else(|| err("element read without result"))?;
                // Out of bounds reads 0.
                let v = self.elementwise(index, |em, idx| {
                    element_access(em, &t, idx, d, ElemAccess::Load(0))?.ok_or_else(|| err("read without value"))
                })?;
                Ok(Some(v))
            }
            OpKind::Scatter { tensor, index, tile } => {
                let t = self.tensor(*tensor)?;
                let d = self.func.ty(*tile).dtype();
                let mut operands = index.clone();
                operands.push(*tile);
                let n = index.len();
                for x in self.registers(&operands)?.0 {
                    element_access(&mut self.em, &t, &x[..n], d, ElemAccess::Store(x[n].clone()))?;
                }
                Ok(None)
            }
            _ => Err(err("not an element access")),
        }
    }

    /// `cp.async` of tile `index` of `tensor` (viewed in `order`, laid out as `ty` says) to
    /// the shared address of each 16-byte chunk in `smem` (by the chunk's first register).
    pub(crate) fn copy_async(
        &mut self,
        tensor: ValueId,
        index: &[ValueId],
        order: &[u32],
        ty: &Type,
        dst: Reg,
        at: std::collections::BTreeMap<i64, Reg>,
    ) -> Result<Vec<Reg>, Diagnostic> {
        let t = self.tensor(tensor)?;
        let idx = index.iter().map(|i| self.scalar(*i)).collect::<Result<Vec<_>, _>>()?;
        let t = view(&t, order)?;
        // The view spans the tensor's elements: 1 + Σ (extent − 1) · stride. Only the
        // copies' subscripts are read from it; its size is for the reader of the IR.
        let one = self.em.cint(1, Ty::I64);
        let mut span = one.clone();
        for (d, s) in t.dims.iter().zip(&t.strides) {
            let dm = self.em.sub(d, &one);
            let m = self.em.mul(&dm, s);
            span = self.em.add(&span, &m);
        }
        let src = self.em.memref_view(&t.ptr, Ty::of(ty.dtype()), None, 0, &span, false);
        self.tile_access(&t, &idx, ty, Access::Async { src, dst, at })
    }

    /// `acc + term`, or `term` where there is no sum yet.
    fn plus(&mut self, acc: Option<Reg>, term: Reg) -> Reg {
        match acc {
            None => term,
            Some(p) => self.em.add(&p, &term),
        }
    }

    /// `acc && ok` (`ok` alone for the first).
    fn both(&mut self, acc: Option<Reg>, ok: &Reg) -> Reg {
        match acc {
            None => ok.clone(),
            Some(p) => self.em.and(&p, ok),
        }
    }

    /// Loads or stores one tile: per-thread base coordinates, constant per-register offsets,
    /// predicated vector accesses. Returns the registers loaded, or the tokens of the
    /// asynchronous copies.
    fn tile_access(&mut self, t: &TensorArgs, idx: &[Reg], ty: &Type, access: Access) -> Result<Vec<Reg>, Diagnostic> {
        let shape = ty.shape().to_vec();
        let d = ty.dtype();
        let l = ty.layout().ok_or_else(|| err("load/store of a tile without layout"))?.clone();
        // A sliced tile (a row broadcast later) is read by every thread that holds it: the
        // duplicate reads hit the same cache lines; a duplicate store writes the same value.
        let rank = shape.len();
        let bytes = i64::from(d.bytes());
        if d == DType::I1 && matches!(access, Access::Async { .. }) {
            return Err(err("an asynchronous copy of an i1 tile"));
        }
        let masked = matches!(&access, Access::Store { mask: Some(_), .. } | Access::Atomic { .. });
        // The dim with unit stride under the 16-byte specialisation: the view's, which for an
        // ordered load is the tile dim viewing the tensor's last dim.
        let last = t.contiguous.unwrap_or(rank - 1);
        let map = l.to_linear(&shape);
        // Registers contiguous along the last dim: the leading register bases 1, 2, 4, … there.
        let contiguous = map.contiguous_reg_bits(last);
        // A masked store writes element by element (each has its own predicate).
        let chunk = if t.aligned && !masked { (1i64 << contiguous).min(16 / bytes).max(1) } else { 1 };
        // Threads holding copies of the tile (a tile smaller than the block) do not store.
        let (rep_lanes, rep_warps) = (map.replicated_lanes(), map.replicated_warps());
        let owner = match (&access, rep_lanes | rep_warps) {
            (Access::Store { .. } | Access::Atomic { .. }, m) if m != 0 => Some(self.owner(rep_lanes, rep_warps)),
            _ => None,
        };
        // Global coordinate of this thread's first element, per dim, in 64 bits: a tile index
        // times the tile's extent can pass 2^31 and must not wrap back into the tensor.
        let mut g = vec![];
        for (dd, &extent) in shape.iter().enumerate() {
            let s = self.em.cint(extent, Ty::I64);
            let i = self.em.convert("sext", &idx[dd], Ty::I64);
            let o = self.em.mul(&i, &s);
            let base = self.thread_base(&l, &shape, dd);
            let b = self.em.convert("sext", &base, Ty::I64);
            g.push(self.em.add(&o, &b));
        }
        // In a loop, the thread's first element's offset once, each chunk adding its constant
        // offsets times the strides — rather than each chunk's `(g + off) · stride` written
        // out, whose common part LLVM's straight-line strength reduction rediscovers chunk by
        // chunk (85 of mla_decode's 179 ms in llc, most in its combine loops; issue 34). Only
        // where the chunks have at most four offsets along strided dims: each `off · stride` is
        // loop-invariant, a 64-bit register LLVM hoists out of the loop (more are untried).
        // Outside loops only where asked (`first-offset-chunks`: accesses of that many chunks
        // or more): at 16 it took a tenth off mla_decode's compile while the pass ran on it
        // (its epilogue stores of [16, 512] tiles, whose written-out addresses the pass
        // compares pairwise; 0.6 % since the kernel leaves the pass out) but runs it 0.4–1 %
        // slower on an H200; for every access it tipped ptxas into allocating
        // fmha_step2_mma (sm_121a) 168 registers instead of 181, spilling in its main loop,
        // for its last store alone.
        let regs = l.regs_per_thread(&shape);
        let strided_offsets: BTreeSet<(usize, i64)> = (0..regs)
            .step_by(chunk as usize)
            .flat_map(|r| l.reg_offset(&shape, r).into_iter().enumerate())
            .filter(|&(dd, o)| o != 0 && !(dd == last && t.aligned))
            .collect();
        let chunks = regs / chunk;
        let many = self.first_offset_chunks > 0 && chunks >= self.first_offset_chunks;
        let from_first = (many || !self.loop_writes.is_empty()) && strided_offsets.len() <= 4;
        let mut first: Option<Reg> = None;
        if from_first {
            for (dd, gd) in g.iter().enumerate() {
                let term = if dd == last && t.aligned { gd.clone() } else { self.em.mul(gd, &t.strides[dd]) };
                first = Some(self.plus(first, term));
            }
        }
        let mut out: Vec<Option<Reg>> =
            vec![None; if matches!(access, Access::Load(_) | Access::Atomic { .. }) { regs as usize } else { 0 }];
        let mut tokens = vec![];
        let ety = mem_ty(d);
        // Each dim's coordinate, bound check and address term of an offset, made once for
        // the chunks that share the offset (a row's chunks share its row): all in this block,
        // so the first dominates the rest. LLVM would merge the copies; not writing them keeps
        // the stages proportional to the tile's rows and columns rather than its chunks.
        let mut along: BTreeMap<(usize, i64), (Reg, Option<Reg>)> = BTreeMap::new();
        let mut r = 0;
        while r < regs {
            let off = l.reg_offset(&shape, r);
            let mut inb: Option<Reg> = None;
            let mut lin = first.clone();
            let mut per_chunk: Option<Reg> = None;
            for dd in 0..rank {
                // With the 16-byte specialisation the last stride is 1 (checked at launch).
                let unit = dd == last && t.aligned;
                let term = match along.get(&(dd, off[dd])).cloned() {
                    Some((ok, term)) => {
                        inb = Some(self.both(inb, &ok));
                        term
                    }
                    None => {
                        let o = self.em.cint(off[dd], Ty::I64);
                        let c = self.em.add(&g[dd], &o);
                        let ok = self.em.icmp(ICmp::Ult, &c, &t.dims[dd]);
                        // The check joins the chunk's before the term is written (LLVM keeps
                        // the order it is given, and the PTX with it).
                        inb = Some(self.both(inb, &ok));
                        let term = match (from_first, off[dd] != 0, unit) {
                            (true, false, _) => None,
                            (true, true, true) => Some(o),
                            (true, true, false) => Some(self.em.mul(&o, &t.strides[dd])),
                            (false, _, true) => Some(c),
                            (false, _, false) => Some(self.em.mul(&c, &t.strides[dd])),
                        };
                        along.insert((dd, off[dd]), (ok, term.clone()));
                        term
                    }
                };
                if let Some(term) = term {
                    if from_first {
                        lin = lin.map(|p| self.em.add(&p, &term));
                    } else {
                        per_chunk = Some(self.plus(per_chunk, term));
                    }
                }
            }
            let lin = if from_first { lin } else { per_chunk };
            let (Some(mut pred), Some(lin)) = (inb, lin) else { return Err(err("rank-0 access")) };
            if let Some(o) = &owner {
                pred = self.em.and(&pred, o);
            }
            if let Access::Store { mask: Some(m), .. } | Access::Atomic { mask: m, .. } = &access {
                let mr = m.get(r as usize).ok_or_else(|| err("a mask with too few registers"))?;
                pred = self.em.and(&pred, mr);
            }
            let addr =
                if matches!(access, Access::Async { .. }) { None } else { Some(self.em.gep(&t.ptr, &lin, &ety)) };
            let addr = || addr.clone().ok_or_else(|| err("a global access without its address"));
            let nbytes = chunk * bytes;
            // Access words: 32-bit when the chunk allows, else one 16-bit (or 64-bit) element.
            let wbits = if nbytes >= 4 { (bytes * 8).max(32) } else { nbytes * 8 };
            let nwords = nbytes * 8 / wbits;
            let (wty, wsuffix) = word(wbits as u32);
            let rbits = if wbits == 8 { 16 } else { wbits };
            let vsuf = if nwords > 1 { format!(".v{nwords}") } else { String::new() };
            let per_word = (wbits / 8 / bytes).max(1);
            let mut asm = PtxAsm::new();
            match &access {
                Access::Load(p) => {
                    let pb = pad_bits(*p, d);
                    let mut pat: u64 = 0;
                    for k in 0..per_word {
                        pat |= pb << (k * bytes * 8);
                    }
                    let outs: Vec<String> = (0..nwords).map(|_| asm.output(wty.clone())).collect();
                    let a = asm.input(&addr()?);
                    let pr = asm.input(&pred);
                    let movs: String = outs.iter().map(|o| format!("mov.b{rbits} {o}, 0x{pat:X}; ")).collect();
                    let dst = if nwords > 1 { format!("{{{}}}", outs.join(", ")) } else { outs[0].clone() };
                    asm.push(&format!("{movs}@{pr} ld.global{vsuf}.{wsuffix} {dst}, [{a}];"));
                    let words = asm.emit(&mut self.em);
                    let mut k = 0;
                    for w in words {
                        if per_word == 1 && wbits == 8 {
                            // A byte in a 16-bit register.
                            out[(r + k) as usize] = Some(match d {
                                DType::I1 => from_word(&mut self.em, &w, d),
                                _ => self.em.convert("trunc", &w, ety.clone()),
                            });
                            k += 1;
                        } else if per_word == 1 {
                            out[(r + k) as usize] = Some(self.em.bitcast(&w, ety.clone()));
                            k += 1;
                        } else {
                            let v = self.em.bitcast(&w, Ty::Vector(per_word as u32, Box::new(ety.clone())));
                            for e in 0..per_word {
                                let x = self.em.extractelement(&v, e);
                                out[(r + k) as usize] = Some(if d == DType::I1 {
                                    let z = self.em.cint(0, Ty::I8);
                                    self.em.icmp(ICmp::Ne, &x, &z)
                                } else {
                                    x
                                });
                                k += 1;
                            }
                        }
                    }
                }
                Access::Store { vals, .. } => {
                    let mut words = vec![];
                    // Bytes (i1) widen to i8 before packing.
                    let elem = |em: &mut Emitter, v: &Reg| {
                        if d == DType::I1 {
                            em.convert("zext", v, Ty::I8)
                        } else {
                            v.clone()
                        }
                    };
                    for w in 0..nwords {
                        let first = (r + w * per_word) as usize;
                        if per_word == 1 && wbits == 8 {
                            let b = elem(&mut self.em, &vals[first]);
                            words.push(self.em.convert("zext", &b, Ty::I16));
                        } else if per_word == 1 {
                            words.push(self.em.bitcast(&vals[first], wty.clone()));
                        } else {
                            let vty = Ty::Vector(per_word as u32, Box::new(ety.clone()));
                            let mut v = self.em.undef(vty);
                            for e in 0..per_word {
                                let x = elem(&mut self.em, &vals[first + e as usize]);
                                v = self.em.insertelement(&v, &x, e);
                            }
                            words.push(self.em.bitcast(&v, wty.clone()));
                        }
                    }
                    let a = asm.input(&addr()?);
                    let ins: Vec<String> = words.iter().map(|w| asm.input(w)).collect();
                    let pr = asm.input(&pred);
                    let src = if nwords > 1 { format!("{{{}}}", ins.join(", ")) } else { ins[0].clone() };
                    asm.push(&format!("@{pr} st.global{vsuf}.{wsuffix} [{a}], {src};"));
                    asm.emit(&mut self.em);
                }
                Access::Atomic { op, vals, cmp, qual, .. } => {
                    let v = vals.get(r as usize).ok_or_else(|| err("an atomic without its value"))?;
                    out[r as usize] = Some(atomic_element(
                        &mut self.em,
                        *op,
                        &addr()?,
                        v,
                        cmp.as_ref().map(|c| &c[r as usize]),
                        &pred,
                        d,
                        qual,
                    )?);
                }
                Access::Async { src, dst, at } => {
                    let di = at.get(&r).ok_or_else(|| err("async copy: no shared index for a chunk"))?.clone();
                    if nbytes != 16 {
                        return Err(err("async copy of a chunk that is not 16 bytes"));
                    }
                    // Out of bounds: nothing read, the 16 bytes are zero-filled.
                    let (all, none) = (self.em.ci32(chunk), self.em.ci32(0));
                    let n = self.em.select(&pred, &all, &none);
                    let n = self.em.index_cast(&n);
                    let si = self.em.index_cast(&lin);
                    tokens.push(self.em.nvgpu_async_copy(src, &si, dst, &di, chunk, &n));
                }
            }
            r += chunk;
        }
        if matches!(access, Access::Async { .. }) {
            return Ok(tokens);
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// `atomic_*`: the old values, in every thread that holds the tile (a replicated
    /// element is updated once, by its owner, and its old value reaches the copies through
    /// shared memory when the result is used).
    pub(crate) fn atomic(&mut self, op: &Op, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let OpKind::Atomic { op: aop, tensor, index, tile, cmp, mask, sem, scope, at } = &op.kind else {
            return Err(err("not an atomic"));
        };
        let t = self.tensor(*tensor)?;
        let ty = rty.ok_or_else(|| err("atomic without result"))?.clone();
        let qual = format!("{}.{}", sem.ptx(), scope.ptx());
        let l = ty.layout().ok_or_else(|| err("atomic of a tile without layout"))?.clone();
        let shape = ty.shape().to_vec();
        let map = l.to_linear(&shape);
        let replicated = map.replicated_lanes() | map.replicated_warps() != 0;
        // The atomic is the block's: a release orders every thread's earlier accesses before
        // it (a barrier, then the owners' release atomics, cumulative over what the barrier
        // ordered), an acquire every thread's later ones after it (a barrier after it).
        if matches!(sem, MemSem::Release | MemSem::AcqRel) {
            self.full_barrier();
        }
        let acquire = matches!(sem, MemSem::Acquire | MemSem::AcqRel);
        let old = if *at {
            // Element by element at its index tiles' addresses, by the element's owner only
            // (a copy in another lane or warp would apply it twice).
            let owner = replicated.then(|| self.owner(map.replicated_lanes(), map.replicated_warps()));
            let mut operands = index.clone();
            operands.extend([*tile, *mask]);
            operands.extend(*cmp);
            let n = index.len();
            let d = ty.dtype();
            let mut old = vec![];
            for x in self.registers(&operands)?.0 {
                let (addr, inb) = element_address(&mut self.em, &t, &x[..n], d)?;
                let mut pred = self.em.and(&inb, &x[n + 1]);
                if let Some(o) = &owner {
                    pred = self.em.and(&pred, o);
                }
                old.push(atomic_element(&mut self.em, *aop, &addr, &x[n], x.get(n + 2), &pred, d, &qual)?);
            }
            old
        } else {
            let idx = index.iter().map(|i| self.scalar(*i)).collect::<Result<Vec<_>, _>>()?;
            let vals = self.tile(*tile)?;
            let cmp = match cmp {
                Some(c) => Some(self.tile(*c)?),
                None => None,
            };
            let mask = self.tile(*mask)?;
            self.tile_access(&t, &idx, &ty, Access::Atomic { op: *aop, vals, cmp, mask, qual })?
        };
        let used = op.result.is_some_and(|r| {
            let mut u = false;
            self.func.walk(&mut |o| u |= o.kind.operands().contains(&r));
            u
        });
        if !replicated || !used {
            if acquire {
                self.full_barrier();
            }
            return Ok(Value::Tile(old));
        }
        // Owners write every element's old value, then every copy reads it.
        let d = ty.dtype();
        let bytes = i64::from(d.bytes());
        let n: i64 = shape.iter().product();
        let region = self.smem_region(n * bytes)?;
        self.smem_write_begin(region, n * bytes);
        let base = self.smem_base();
        let owner = self.owner(map.replicated_lanes(), map.replicated_warps());
        let region_c = self.em.ci32(region);
        let bsz = self.em.ci32(bytes);
        let mut addrs = vec![];
        for r in 0..map.num_regs() {
            let lin = self.element_index(&l, &shape, &map.reg_offset(r));
            let bo = self.em.mul(&lin, &bsz);
            let at = self.em.add(&bo, &region_c);
            addrs.push(self.em.gep(&base, &at, &Ty::I8));
        }
        let (then_b, join_b) = (self.em.new_block(), self.em.new_block());
        self.em.cond_br(&owner, &then_b, &join_b);
        self.em.label(&then_b, &[]);
        for (a, v) in addrs.iter().zip(&old) {
            self.em.store(v, a, bytes);
        }
        self.em.br(&join_b, &[]);
        self.em.label(&join_b, &[]);
        self.smem_written();
        let out = addrs.iter().map(|a| self.em.load(a, Ty::of(d), bytes)).collect();
        self.smem_read_done(region, n * bytes);
        Ok(Value::Tile(out))
    }
}

/// One element's `atom` (PTX) under predicate `pred`; the old value (0 where not done). f32
/// max/min order the bits as integers: non-negative values as signed (`max.s32`), negative
/// ones as unsigned in the opposite sense (`min.u32`), which is the float order for every
/// non-NaN value.
#[allow(clippy::too_many_arguments)]
fn atomic_element(
    em: &mut Emitter,
    op: AtomicOp,
    addr: &Reg,
    v: &Reg,
    cmp: Option<&Reg>,
    pred: &Reg,
    d: DType,
    qual: &str,
) -> Result<Reg, Diagnostic> {
    let mut asm = PtxAsm::new();
    let float_order = d == DType::F32 && matches!(op, AtomicOp::Max | AtomicOp::Min);
    let cas_bits = d == DType::F32 && op == AtomicOp::Cas;
    let (rty, zero) = match d {
        DType::F16 | DType::BF16 => (Ty::I16, "mov.b16"),
        DType::I64 => (Ty::I64, "mov.b64"),
        DType::F32 if !float_order && !cas_bits => (Ty::F32, "mov.b32"),
        _ => (Ty::I32, "mov.b32"),
    };
    let o = asm.output(rty.clone());
    let a = asm.input(addr);
    let word = |em: &mut Emitter, x: &Reg| match d {
        DType::F16 | DType::BF16 => em.bitcast(x, Ty::I16),
        DType::F32 if float_order || cas_bits => em.bitcast(x, Ty::I32),
        _ => x.clone(),
    };
    let vw = word(em, v);
    let x = asm.input(&vw);
    let text = match (op, d) {
        (AtomicOp::Add, DType::F32) => {
            let p = asm.input(pred);
            format!("@{p} atom.{qual}.global.add.f32 {o}, [{a}], {x};")
        }
        (AtomicOp::Add, DType::F16 | DType::BF16) => {
            let p = asm.input(pred);
            format!("@{p} atom.{qual}.global.add.noftz.{} {o}, [{a}], {x};", d.name())
        }
        (AtomicOp::Add, DType::I32) => {
            let p = asm.input(pred);
            format!("@{p} atom.{qual}.global.add.u32 {o}, [{a}], {x};")
        }
        (AtomicOp::Add, DType::I64) => {
            let p = asm.input(pred);
            format!("@{p} atom.{qual}.global.add.u64 {o}, [{a}], {x};")
        }
        (AtomicOp::Max | AtomicOp::Min, DType::I32) => {
            let p = asm.input(pred);
            format!("@{p} atom.{qual}.global.{}.s32 {o}, [{a}], {x};", if op == AtomicOp::Max { "max" } else { "min" })
        }
        (AtomicOp::Max | AtomicOp::Min, DType::F32) => {
            let zero_i = em.cint(0, Ty::I32);
            let neg = em.icmp(ICmp::Slt, &vw, &zero_i);
            let t = em.cint(1, Ty::I1);
            let pos = em.xor(&neg, &t);
            let (pp, pn) = (em.and(pred, &pos), em.and(pred, &neg));
            let (p1, p2) = (asm.input(&pp), asm.input(&pn));
            let (a1, a2) = if op == AtomicOp::Max { ("max.s32", "min.u32") } else { ("min.s32", "max.u32") };
            format!("@{p1} atom.{qual}.global.{a1} {o}, [{a}], {x}; @{p2} atom.{qual}.global.{a2} {o}, [{a}], {x};")
        }
        (AtomicOp::Cas, DType::I32 | DType::F32) => {
            let c = cmp.ok_or_else(|| err("a compare-and-swap without its compared value"))?;
            let cw = word(em, c);
            let ci = asm.input(&cw);
            let p = asm.input(pred);
            format!("@{p} atom.{qual}.global.cas.b32 {o}, [{a}], {ci}, {x};")
        }
        (op, d) => return Err(err(format!("atomic {} of {d}", op.name()))),
    };
    asm.push(&format!("{zero} {o}, 0; {text}"));
    let w = asm.emit(em).pop().ok_or_else(|| err("an atom without result"))?;
    Ok(match d {
        DType::F16 | DType::BF16 => em.bitcast(&w, Ty::of(d)),
        DType::F32 if float_order || cas_bits => em.bitcast(&w, Ty::F32),
        _ => w,
    })
}
