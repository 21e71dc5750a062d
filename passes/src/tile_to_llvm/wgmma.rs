//! The `wgmma` family: an `mma` whose accumulator is `#tilegpu.wgmma<[wm, 1]>` becomes
//! `wgmma.mma_async.sync.aligned.m64nNk16` (sm_90a), one instruction per 64-row block of a
//! warpgroup and K step of 16, reading B — and A unless it is in registers — from shared
//! memory through matrix descriptors.
//!
//! Placement: warp `w` holds rows `16w..` of its warpgroup's 64-row block, so the
//! accumulator's registers for block `r` are the instruction's `N/2` fragment registers in
//! order (the layout property test `wgmma_accumulator_matches_the_isa` proves the two maps
//! equal). An A operand in registers (FlashAttention's P) is the warp's 16×16 fragment per K
//! step, four `f16x2` registers: the mma.sync A fragment, packed as for mma.sync.
//!
//! Descriptors (PTX ISA "Matrix Descriptor Format"; the buffers are NVMMA layouts chosen by
//! `tile-swizzle`, aligned to their 8-row atom by the allocation): start address >> 4 in bits
//! 0-13, the leading byte offset >> 4 in 16-29, the stride byte offset >> 4 in 32-45, the
//! swizzle (1: 128B, 2: 64B, 3: 32B) in 62-63. A K-major operand (its buffer contiguous along
//! K) has SBO = 8 rows of an atom and no LBO (one K step of 32 bytes stays inside an atom); an
//! M- or N-major one has LBO = the distance between atoms along M/N and SBO = 8 K rows, and
//! is read transposed (`imm-trans`). The start of the block at (row, K step) is the
//! unswizzled address of its first element: the hardware applies the XOR of the address
//! bits itself. Each operand's descriptor is computed once per `mma` and moved to each block
//! and K step by a compile-time add.
//!
//! Synchronisation: `wgmma.fence` before the first product (the accumulator registers were
//! written by ordinary instructions), `commit_group`, then `wait_group 0` with every
//! accumulator register passed through the wait (read-write operands of the inline PTX), so
//! no use of the result is scheduled before the products complete. Shared-memory writes the
//! products read are fenced into the async proxy where they are published
//! (`Lowering::fence_async_proxy`). Waiting at the end of each `mma` keeps the lowering's
//! barrier analysis exact (reads end with the op); keeping a group in flight across loop
//! iterations needs the ring's stage release to wait for it, which this lowering does not do.

use super::emit::{Reg, Ty};
use super::ptx_asm::PtxAsm;
use super::regs::Value;
use super::{err, Lowering};
use tilec_core::layout::{Mma, SwizzledShared, MMA_K, MMA_M};
use tilec_core::tir::{Type, ValueId};
use tilec_core::{DType, Diagnostic};

/// A shared operand as its descriptors see it.
pub(super) struct SharedOperand {
    /// The buffer's shape (a stage's, for a ring) and layout.
    pub shape: Vec<i64>,
    pub layout: SwizzledShared,
    /// The descriptor of the operand's origin (block 0, K step 0; this warpgroup's rows).
    pub desc: Reg,
    /// Whether the buffer is contiguous along K (else M- or N-major: read transposed).
    pub k_major: bool,
    /// The elements' bytes.
    pub elem: i64,
    /// The dim of the operand tile that is K (A: 1, B: 0).
    pub kd: usize,
    /// The region and bytes the reads cover (a ring: all of it), for the barrier analysis.
    pub span: (i64, i64),
}

/// The operand A of one product.
enum AOperand {
    Shared(SharedOperand),
    Registers(Box<super::mma::Operand>),
}

/// The unswizzled element offset of operand coordinate `c` (`[dim0, dim1]`) in an NVMMA
/// buffer of `shape`: atoms along the contiguous dim, each every row of it.
pub(super) fn atom_offset(sl: &SwizzledShared, shape: &[i64], c: [i64; 2]) -> i64 {
    let (rows, cols) = (shape[sl.order[1]], shape[sl.order[0]]);
    let atom = if sl.atom == 0 { cols } else { sl.atom };
    let (r, col) = (c[sl.order[1]], c[sl.order[0]]);
    (col / atom) * rows * atom + r * atom + col % atom
}

/// The constant bits of a descriptor (everything but the start address): leading and stride
/// byte offsets and the swizzle mode.
fn descriptor_bits(swizzle_bytes: i64, k_major: bool, rows: i64) -> i64 {
    let (lbo, sbo) = if k_major { (16, 8 * swizzle_bytes) } else { (rows * swizzle_bytes, 8 * swizzle_bytes) };
    let mode = match swizzle_bytes {
        128 => 1,
        64 => 2,
        _ => 3,
    };
    ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (mode << 62)
}

impl Lowering<'_> {
    /// The descriptor of operand `op_idx` read from `v`: its origin for
    /// this thread's warpgroup (A: the warpgroup's first 64-row block; B: all of it) — for a
    /// `tcgen05` product, in its format and for the whole block.
    pub(super) fn shared_operand(
        &mut self,
        v: ValueId,
        op_idx: u32,
        tcgen05: bool,
    ) -> Result<SharedOperand, Diagnostic> {
        let buf = self.get(v)?;
        self.shared_operand_of(buf, op_idx, tcgen05)
    }

    /// [`Lowering::shared_operand`] of a buffer value.
    pub(super) fn shared_operand_of(
        &mut self,
        buf: Value,
        op_idx: u32,
        tcgen05: bool,
    ) -> Result<SharedOperand, Diagnostic> {
        let Value::SmemBuf { offset, ty, ring } = buf else {
            return Err(err("a wgmma operand that is neither a shared buffer nor registers"));
        };
        let Type::Smem { shape, dtype, layout } = ty.clone() else {
            return Err(err("a wgmma operand buffer of a non-buffer type"));
        };
        let Some(sb) = layout.nvmma_bytes() else {
            return Err(err("a wgmma operand buffer without an NVMMA layout (run tile-swizzle)"));
        };
        let shape = shape[shape.len() - 2..].to_vec();
        let elem = i64::from(dtype.bytes());
        let kd = if op_idx == 0 { 1 } else { 0 };
        let k_major = layout.order[0] == kd;
        let span = (offset, super::mma::smem_bytes(super::mma::buf_span(&ty, &ring)));
        let rows = shape[layout.order[1]];
        let bits = if tcgen05 {
            super::tcgen05::descriptor_bits(sb, k_major, rows)
        } else {
            descriptor_bits(sb, k_major, rows)
        };
        let mut addr = self.smem_address();
        let reg = self.em.ci32(offset);
        addr = self.em.add(&addr, &reg);
        if let Some(r) = &ring {
            let eb = self.em.ci32(elem);
            let first = self.em.mul(&r.first, &eb);
            addr = self.em.add(&addr, &first);
        }
        if op_idx == 0 && !tcgen05 {
            // Warpgroup g's rows start 64·g rows down: linear in g (an atom holds 8 rows;
            // 64 rows are whole atoms along M whether M is the rows or the atoms' dim).
            let per_wg = atom_offset(&layout, &shape, [64, 0]) - atom_offset(&layout, &shape, [0, 0]);
            let c2 = self.em.ci32(2);
            let wg = self.em.lshr(&self.warp.clone(), &c2);
            let pw = self.em.ci32(per_wg * elem);
            let o = self.em.mul(&wg, &pw);
            addr = self.em.add(&addr, &o);
        }
        let c4 = self.em.ci32(4);
        let a4 = self.em.lshr(&addr, &c4);
        let mask = self.em.ci32(0x3fff);
        // (Both formats keep the start address in bits 0-13.)
        let start = self.em.and(&a4, &mask);
        let start = self.em.def(Ty::I64, format!("llvm.zext {start} : i32 to i64"));
        let hi = self.em.cint(bits, Ty::I64);
        let desc = self.em.or(&start, &hi);
        Ok(SharedOperand { shape, layout, desc, k_major, elem, kd, span })
    }

    /// The descriptor of the block of `op` at operand coordinate `c` (a compile-time offset
    /// from its origin).
    pub(super) fn descriptor_at(&mut self, op: &SharedOperand, c: [i64; 2]) -> Reg {
        let off = (atom_offset(&op.layout, &op.shape, c) - atom_offset(&op.layout, &op.shape, [0, 0])) * op.elem;
        if off == 0 {
            return op.desc.clone();
        }
        let d = self.em.cint(off >> 4, Ty::I64);
        self.em.add(&op.desc, &d)
    }

    /// `mma` on the wgmma family: `acc + a · b`.
    /// With `in_flight` (a `tilegpu.mma_wait` waits for the result) the products are
    /// committed and left running: the wait op waits.
    pub(crate) fn wgmma(
        &mut self,
        a: ValueId,
        b: ValueId,
        acc: ValueId,
        ty: &Type,
        m: Mma,
        in_flight: bool,
    ) -> Result<Value, Diagnostic> {
        let (ms, ns) = (ty.shape()[0], ty.shape()[1]);
        let ks = self.func.ty(a).shape()[1];
        let dt = self.func.ty(a).dtype();
        let dtb = self.func.ty(b).dtype();
        let fp8 = dt.is_fp8() && dtb.is_fp8();
        if !fp8 && (!matches!(dt, DType::F16 | DType::BF16) || dtb != dt) {
            return Err(err(format!("wgmma of {dt} operands")));
        }
        let wm = m.warps_per_cta[0];
        let blocks = ms / (MMA_M * wm);
        // A K step is 32 bytes of each operand row: 16 16-bit elements, 32 fp8 ones.
        let kstep = if fp8 { 2 * MMA_K } else { MMA_K };
        let k_steps = ks / kstep;
        let per = (ns / 2) as usize;
        let mut accr = self.tile(acc)?;
        if accr.len() != per * blocks as usize {
            return Err(err("wgmma accumulator registers do not match the instruction"));
        }
        let bop = self.shared_operand(b, 1, false)?;
        let aop = match self.get(a)? {
            Value::SmemBuf { .. } => AOperand::Shared(self.shared_operand(a, 0, false)?),
            Value::Tile(_) => AOperand::Registers(Box::new(self.operand(a, 0, m, [ms, ks])?)),
            _ => return Err(err("a wgmma A operand that is neither registers nor a shared buffer")),
        };
        let how = |o: &SharedOperand| {
            format!(
                "{}-major {}B-swizzled descriptor",
                if o.k_major {
                    "K"
                } else if o.kd == 1 {
                    "M"
                } else {
                    "N"
                },
                o.layout.nvmma_bytes().unwrap_or(0)
            )
        };
        let a_how = match &aop {
            AOperand::Shared(o) => how(o),
            AOperand::Registers(_) => "registers".into(),
        };
        if fp8
            && (!bop.k_major
                || matches!(&aop, AOperand::Registers(_) | AOperand::Shared(SharedOperand { k_major: false, .. })))
        {
            return Err(err("wgmma's fp8 form reads both operands K-major from shared memory"));
        }
        self.report.push(format!(
            "mma [{ms}, {ns}, {ks}] {dt}: wgmma.m64n{ns}k{kstep}, {} warpgroup(s) x {blocks} block(s) of 64 rows, {k_steps} K steps; A {a_how}, B {}; {}",
            wm / 4,
            how(&bop),
            if in_flight { "left in flight for its mma_wait" } else { "waited for at once" }
        ));
        let kind = |d: DType| match d {
            DType::BF16 => "bf16",
            DType::F8E4M3 => "e4m3",
            DType::F8E5M2 => "e5m2",
            _ => "f16",
        };
        let types = format!("{}.{}", kind(dt), kind(dtb));
        self.em.line("nvvm.wgmma.fence.aligned");
        let one = self.em.ci32(1);
        for blk in 0..blocks {
            for kk in 0..k_steps {
                let k0 = kk * kstep;
                let bdesc = self.descriptor_at(&bop, [k0, 0]);
                let mut asm = PtxAsm::new();
                let d: Vec<String> =
                    accr[blk as usize * per..(blk as usize + 1) * per].iter().map(|r| asm.inout(r, "f")).collect();
                let (a_text, trans_a) = match &aop {
                    AOperand::Shared(o) => {
                        let ad = self.descriptor_at(o, [blk * MMA_M * wm, k0]);
                        (asm.input(&ad), Some(!o.k_major))
                    }
                    AOperand::Registers(o) => {
                        let r0 = blk * MMA_M * wm;
                        let frags = self.fragments(
                            o,
                            &[(r0, k0), (r0 + 8, k0), (r0, k0 + 8), (r0 + 8, k0 + 8)],
                            dt == DType::BF16,
                        )?;
                        let names: Vec<String> = frags
                            .iter()
                            .map(|f| {
                                let w = if f.ty == Ty::I32 { f.clone() } else { self.em.bitcast(f, Ty::I32) };
                                asm.input(&w)
                            })
                            .collect();
                        (format!("{{{}}}", names.join(", ")), None)
                    }
                };
                let b_text = asm.input(&bdesc);
                let scale = asm.input(&one);
                // The transpose immediates exist for 16-bit operands only (fp8 is K-major).
                let trans = match (fp8, trans_a) {
                    (true, _) => String::new(),
                    (false, Some(ta)) => format!(", {}, {}", u8::from(ta), u8::from(!bop.k_major)),
                    (false, None) => format!(", {}", u8::from(!bop.k_major)),
                };
                asm.push(&format!(
                    "{{ .reg .pred p; setp.ne.b32 p, {scale}, 0; wgmma.mma_async.sync.aligned.m64n{ns}k{kstep}.f32.{types} {{{}}}, {a_text}, {b_text}, p, 1, 1{trans}; }}",
                    d.join(", ")
                ));
                let out = asm.emit(&mut self.em);
                accr.splice(blk as usize * per..(blk as usize + 1) * per, out);
            }
        }
        self.em.line("nvvm.wgmma.commit.group.sync.aligned");
        let accr = if in_flight { accr } else { self.wait_group(&accr, 0) };
        // In flight, the reads end at the wait; the ring `tile-pipeline` made for a product it
        // keeps in flight has a stage more, so no write meets them before it.
        for (off, bytes) in
            [Some(bop.span), if let AOperand::Shared(o) = &aop { Some(o.span) } else { None }].into_iter().flatten()
        {
            self.smem_read_done(off, bytes);
        }
        Ok(Value::Tile(accr))
    }

    /// `wgmma.wait_group pending`, every accumulator register passed through it.
    fn wait_group(&mut self, regs: &[Reg], pending: u32) -> Vec<Reg> {
        let mut asm = PtxAsm::new();
        for r in regs {
            asm.inout(r, "f");
        }
        asm.push(&format!("wgmma.wait_group.sync.aligned {pending};"));
        asm.emit(&mut self.em)
    }

    /// `mma_wait`: the accumulator once at most `pending` groups are in flight.
    pub(crate) fn mma_wait(&mut self, value: ValueId, pending: u32) -> Result<Value, Diagnostic> {
        let regs = self.tile(value)?;
        Ok(Value::Tile(self.wait_group(&regs, pending)))
    }
}

/// Checks that every descriptor a lowering builds for the operand tiles `cases` (operand
/// index, shape, rows along M/N one instruction reads: A's block height, B's N) makes the
/// hardware read each element from the byte the buffer's layout put it at: 16-bit operands
/// in both majors, fp8 ones K-major with K steps of 32 (the same 32 bytes), every NVMMA
/// swizzle. `bits` gives a descriptor's constant bits (swizzle bytes, K-major, rows),
/// `decode` reads one as the hardware does. Returns how many elements it checked.
#[cfg(test)]
pub(super) fn check_descriptor_addresses(
    cases: &[(u32, [i64; 2], i64)],
    bits: impl Fn(i64, bool, i64) -> i64,
    decode: impl Fn(u64) -> tilec_core::layout::MatrixDescriptor,
) -> usize {
    let mut checked = 0;
    for (elem, majors) in [(2i64, &[true, false][..]), (1, &[true][..])] {
        let kstep = MMA_K * 2 / elem;
        for sw in [128, 64, 32] {
            for &(op_idx, shape, block_mn) in cases {
                let kd = if op_idx == 0 { 1 } else { 0 };
                for &k_major in majors {
                    // The contiguous dim: K for a K-major operand, M or N otherwise.
                    let order = if k_major == (kd == 1) { [1, 0] } else { [0, 1] };
                    let layout = SwizzledShared::nvmma(sw, elem, order);
                    if shape[order[0]] % layout.atom != 0 {
                        continue;
                    }
                    let constant = bits(sw, k_major, shape[order[1]]);
                    let (mn_extent, k_extent) = if op_idx == 0 { (shape[0], shape[1]) } else { (shape[1], shape[0]) };
                    let at = |mn: i64, k: i64| if op_idx == 0 { [mn, k] } else { [k, mn] };
                    for mn0 in (0..mn_extent).step_by(block_mn as usize) {
                        for k0 in (0..k_extent).step_by(kstep as usize) {
                            let start = atom_offset(&layout, &shape, at(mn0, k0)) * elem;
                            let d = decode((constant | (start >> 4)) as u64);
                            for i in 0..block_mn {
                                for j in 0..kstep {
                                    let c = at(mn0 + i, k0 + j);
                                    assert_eq!(
                                        d.address(k_major, i, j, elem),
                                        layout.offset(&shape, &c) * elem,
                                        "swizzle {sw}, operand {op_idx} {shape:?}, k-major {k_major}, {elem}-byte elements: element {c:?} of the block at ({mn0}, {k0})"
                                    );
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_core::layout::MatrixDescriptor;

    /// Every descriptor this lowering builds — each NVMMA swizzle, K-major and MN-major (fp8:
    /// K-major), A and B, every 64-row block and K step of the operand tiles the library
    /// uses — makes the hardware (the PTX ISA's canonical layouts, decoded in
    /// `tilec_core::layout::descriptor`) read each element from the byte the buffer's layout
    /// wrote it to.
    #[test]
    fn descriptors_address_the_bytes_the_layout_holds() {
        let cases = [(0u32, [128i64, 128i64], MMA_M), (1, [128, 256], 256), (1, [64, 64], 64)];
        let checked = check_descriptor_addresses(&cases, descriptor_bits, MatrixDescriptor::decode);
        assert!(checked > 100_000, "{checked} elements");
    }
}
