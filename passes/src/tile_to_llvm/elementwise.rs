//! Elementwise ops, register by register: arithmetic (floor division and modulo with
//! Python semantics on integers), casts, comparisons, logic, `where`, and broadcasts (which
//! only pick registers). Tracks which i32 tiles are affine in the register (`base + c`) for
//! `rand`.

use super::emit::{Emitter, ICmp, Reg, Ty};
use super::ptx_asm::PtxAsm;
use super::regs::Value;
use super::{err, Lowering};
use std::collections::BTreeMap;
use std::rc::Rc;
use tilec_core::tir::{BinOp, LogicOp, Op, OpKind, Type, ValueId};
use tilec_core::{DType, Diagnostic};

/// `a - b` of two i32 values without wrapping: the difference in i64, clamped to i32. Against
/// a constant `k` of magnitude below 2^30 every comparison of the clamped value is that of
/// the exact one (a difference past the i32 range compares like the range's end).
fn exact_difference(em: &mut Emitter, a: &Reg, b: &Reg) -> Reg {
    let (wa, wb) = (em.convert("sext", a, Ty::I64), em.convert("sext", b, Ty::I64));
    let d = em.sub(&wa, &wb);
    let (lo, hi) = (em.cint(i64::from(i32::MIN), Ty::I64), em.cint(i64::from(i32::MAX), Ty::I64));
    let d = em.intr("smax", &[&d, &lo]);
    let d = em.intr("smin", &[&d, &hi]);
    em.convert("trunc", &d, Ty::I32)
}

/// A broadcast of at most this many registers a thread, each repeated at least
/// `ROW_FACTOR_MIN_REGS` times, is a row factor `scaled_by_row_factor` may skip.
const ROW_FACTOR_MAX_REGS: usize = 4;
const ROW_FACTOR_MIN_REGS: usize = 16;

/// `a op b` on scalars of dtype `d`.
pub(crate) fn binop(em: &mut Emitter, op: BinOp, a: &Reg, b: &Reg, d: DType) -> Reg {
    if d.is_float() {
        return match op {
            BinOp::Add => em.fsource("fadd", a, b),
            BinOp::Sub => em.fsource("fsub", a, b),
            BinOp::Mul => em.fsource("fmul", a, b),
            BinOp::Div => em.fdiv(a, b),
            BinOp::Rem => {
                // Python's `%`: fmod, moved by the divisor when its sign differs from it.
                let r = em.frem(a, b);
                let zero = em.cfloat(0.0, d);
                let nz = em.cmp(true, "une", &r, &zero);
                let rn = em.cmp(true, "olt", &r, &zero);
                let bn = em.cmp(true, "olt", b, &zero);
                let differ = em.xor(&rn, &bn);
                let adj = em.and(&nz, &differ);
                let moved = em.fadd(&r, b);
                em.select(&adj, &moved, &r)
            }
            BinOp::Max => em.intr("maximum", &[a, b]),
            BinOp::Min => em.intr("minimum", &[a, b]),
            BinOp::Pow => super::math::pow(em, a, b, d),
            // Integer-only (the verifier keeps floats away).
            BinOp::Shl | BinOp::Shr => a.clone(),
        };
    }
    let t = Ty::of(d);
    match op {
        BinOp::Add => em.add(a, b),
        BinOp::Sub => em.sub(a, b),
        BinOp::Mul => em.mul(a, b),
        BinOp::Max => em.intr("smax", &[a, b]),
        BinOp::Min => em.intr("smin", &[a, b]),
        BinOp::Shl | BinOp::Shr => {
            // PTX semantics whatever the amount (LLVM's shifts are poison from the width
            // on): the amount as unsigned, clamped to the width.
            let bits = em.cint(i64::from(d.bits()), t.clone());
            if op == BinOp::Shl {
                // An i64 amount clamped first: NVPTX folds the select below into one `shl`
                // (PTX clamps at the width) whose 32-bit amount drops an i64 amount's high
                // bits (`1 << i64::MIN` was 1 on the H100). Narrower amounts fit.
                let clamped;
                let b = if d.bits() == 64 {
                    clamped = em.intr("umin", &[b, &bits]);
                    &clamped
                } else {
                    b
                };
                let s = em.shl(a, b);
                let inside = em.icmp(ICmp::Ult, b, &bits);
                let zero = em.cint(0, t);
                em.select(&inside, &s, &zero)
            } else {
                let top = em.cint(i64::from(d.bits()) - 1, t);
                let amount = em.intr("umin", &[b, &top]);
                em.ashr(a, &amount)
            }
        }
        BinOp::Div | BinOp::Rem => {
            // Floor division and modulo (Python semantics): adjust truncating results when
            // the remainder is non-zero and its sign differs from the divisor's. Division by
            // 0 gives 0 (as the interpreter), by -1 the wrapped negation (LLVM's sdiv would be
            // undefined for the most negative value): the divisor is 1 for both.
            let zero = em.cint(0, t.clone());
            let (one, minus_one) = (em.cint(1, t.clone()), em.cint(-1, t.clone()));
            let by_zero = em.icmp(ICmp::Eq, b, &zero);
            let by_minus_one = em.icmp(ICmp::Eq, b, &minus_one);
            let special = em.or(&by_zero, &by_minus_one);
            let safe = em.select(&special, &one, b);
            let q = em.sdiv(a, &safe);
            let r = em.srem(a, &safe);
            let nz = em.icmp(ICmp::Ne, &r, &zero);
            let x = em.xor(&r, b);
            let neg = em.icmp(ICmp::Slt, &x, &zero);
            let adj = em.and(&nz, &neg);
            if op == BinOp::Div {
                let q1 = em.sub(&q, &one);
                let fq = em.select(&adj, &q1, &q);
                let negated = em.sub(&zero, a);
                let fq = em.select(&by_minus_one, &negated, &fq);
                em.select(&by_zero, &zero, &fq)
            } else {
                let r1 = em.add(&r, b);
                let fr = em.select(&adj, &r1, &r);
                em.select(&special, &zero, &fr)
            }
        }
        BinOp::Pow => a.clone(),
    }
}

/// The PTX name of a pair of fp8 `d` values, as the conversions spell it.
fn fp8x2(d: DType) -> &'static str {
    if d == DType::F8E4M3 {
        "e4m3x2"
    } else {
        "e5m2x2"
    }
}

/// An f32 as fp8 `d` (round to nearest even, saturating to the largest finite value, NaN
/// kept: `cvt.rn.satfinite.{e4m3,e5m2}x2.f32`, which packs its second operand in the low
/// byte).
fn f32_to_fp8(em: &mut Emitter, x: &Reg, d: DType) -> Reg {
    let kind = fp8x2(d);
    let mut asm = PtxAsm::new();
    let o = asm.output(Ty::I16);
    let a = asm.input(x);
    asm.push(&format!("cvt.rn.satfinite.{kind}.f32 {o}, 0f00000000, {a};"));
    let w = asm.emit(em).pop().unwrap_or_else(|| em.cint(0, Ty::I16));
    em.convert("trunc", &w, Ty::I8)
}

/// Two f32 as fp8 `d` with one conversion (`f32_to_fp8`'s rounding): `lo` into the low
/// byte of the pair, `hi` into the high one, returned as the two bytes.
fn f32_pair_to_fp8(em: &mut Emitter, lo: &Reg, hi: &Reg, d: DType) -> [Reg; 2] {
    let kind = fp8x2(d);
    let mut asm = PtxAsm::new();
    let o = asm.output(Ty::I16);
    let (a, b) = (asm.input(hi), asm.input(lo));
    asm.push(&format!("cvt.rn.satfinite.{kind}.f32 {o}, {a}, {b};"));
    let w = asm.emit(em).pop().unwrap_or_else(|| em.cint(0, Ty::I16));
    let eight = em.cint(8, Ty::I16);
    let high = em.lshr(&w, &eight);
    [em.convert("trunc", &w, Ty::I8), em.convert("trunc", &high, Ty::I8)]
}

/// A ue8m0 byte as its f32 (`tilec_core::dtype::from_ue8m0`): the byte is the exponent
/// field, 0 the subnormal 2^-127, 0xFF NaN.
fn ue8m0_to_f32(em: &mut Emitter, x: &Reg) -> Reg {
    let w = em.convert("zext", x, Ty::I32);
    let sh = em.ci32(23);
    let bits = em.shl(&w, &sh);
    let (zero, ff) = (em.ci32(0), em.ci32(0xff));
    let is0 = em.icmp(ICmp::Eq, &w, &zero);
    let isff = em.icmp(ICmp::Eq, &w, &ff);
    let (sub, nan) = (em.ci32(0x0040_0000), em.ci32(0x7fc0_0000));
    let bits = em.select(&is0, &sub, &bits);
    let bits = em.select(&isff, &nan, &bits);
    em.bitcast(&bits, Ty::F32)
}

/// An f32 as ue8m0 (`tilec_core::dtype::to_ue8m0`): its exponent field, at most 0xFE; NaN
/// and negative values 0xFF.
fn f32_to_ue8m0(em: &mut Emitter, x: &Reg) -> Reg {
    let bits = em.bitcast(x, Ty::I32);
    let sh = em.ci32(23);
    let e = em.lshr(&bits, &sh);
    let ff = em.ci32(0xff);
    let e = em.and(&e, &ff);
    let fe = em.ci32(0xfe);
    let big = em.icmp(ICmp::Ult, &fe, &e);
    let e = em.select(&big, &fe, &e);
    let z = em.cf32(0.0);
    let bad = em.cmp(true, "ult", x, &z);
    let e = em.select(&bad, &ff, &e);
    em.convert("trunc", &e, Ty::I8)
}

/// An f32 as ue4m3 (`tilec_core::dtype::to_ue4m3`): E4M3 of the value, negative values 0.
fn f32_to_ue4m3(em: &mut Emitter, x: &Reg) -> Reg {
    let z = em.cf32(0.0);
    let neg = em.cmp(true, "olt", x, &z);
    let x = em.select(&neg, &z, x);
    let b = f32_to_fp8(em, &x, DType::F8E4M3);
    let m = em.cint(0x7f, Ty::I8);
    em.and(&b, &m)
}

/// An fp8 byte as the f16 holding its value exactly (`cvt.rn.f16x2.{e4m3,e5m2}x2`).
fn fp8_to_f16(em: &mut Emitter, x: &Reg, d: DType) -> Reg {
    let kind = fp8x2(d);
    let w = em.convert("zext", x, Ty::I16);
    let mut asm = PtxAsm::new();
    let o = asm.output(Ty::I32);
    let a = asm.input(&w);
    asm.push(&format!("cvt.rn.f16x2.{kind} {o}, {a};"));
    let pair = asm.emit(em).pop().unwrap_or_else(|| em.cint(0, Ty::I32));
    let lo = em.convert("trunc", &pair, Ty::I16);
    em.bitcast(&lo, Ty::F16)
}

/// Element type conversion: float widths; int ↔ float (unsigned through `uitofp` and
/// `fptoui.sat`); float → int truncating and saturating (NaN → 0); int ↔ int extending by
/// the source's signedness or truncating; bool → number with true as 1 (a cast to bool is a
/// comparison with 0 by the time it gets here); fp8 through f32 (from) and f16 (to).
pub(crate) fn cast(em: &mut Emitter, v: &Reg, from: DType, to: DType) -> Reg {
    let t = Ty::of(to);
    let fp8 = |d: DType| matches!(d, DType::F8E4M3 | DType::F8E5M2);
    // The scale types: ue4m3 is E4M3's bits without the sign, ue8m0 an f32's exponent field.
    if from == DType::UE4M3 {
        let m = em.cint(0x7f, Ty::I8);
        let b = em.and(v, &m);
        return cast(em, &b, DType::F8E4M3, to);
    }
    if from == DType::UE8M0 {
        let f = ue8m0_to_f32(em, v);
        return if to == DType::F32 { f } else { cast(em, &f, DType::F32, to) };
    }
    if to.is_scale() {
        let f = if from == DType::F32 { v.clone() } else { cast(em, v, from, DType::F32) };
        return if to == DType::UE8M0 { f32_to_ue8m0(em, &f) } else { f32_to_ue4m3(em, &f) };
    }
    if from == DType::I1 {
        if fp8(to) {
            let f = em.convert("uitofp", v, Ty::F32);
            return f32_to_fp8(em, &f, to);
        }
        return em.convert(if to.is_float() { "uitofp" } else { "zext" }, v, t);
    }
    if fp8(from) {
        let h = fp8_to_f16(em, v, from);
        return if to == DType::F16 { h } else { cast(em, &h, DType::F16, to) };
    }
    if fp8(to) {
        let f = if from == DType::F32 { v.clone() } else { cast(em, v, from, DType::F32) };
        return f32_to_fp8(em, &f, to);
    }
    let op = match (from.is_float(), to.is_float()) {
        (true, true) if to.bits() > from.bits() => "fpext",
        (true, true) if from == DType::F16 && to == DType::BF16 || from == DType::BF16 && to == DType::F16 => {
            let x = em.convert("fpext", v, Ty::F32);
            return em.convert("fptrunc", &x, t);
        }
        (true, true) => "fptrunc",
        (false, true) if from.is_unsigned() => "uitofp",
        (false, true) => "sitofp",
        // Truncation toward zero, saturating, NaN → 0 (cvt.rzi.sat), as the interpreter;
        // LLVM's plain fptosi is poison out of range.
        (true, false) => return em.float_to_int_sat(!to.is_unsigned(), v, t),
        (false, false) if to.bits() > from.bits() && from.is_unsigned() => "zext",
        (false, false) if to.bits() > from.bits() => "sext",
        (false, false) if to.bits() == from.bits() => return v.clone(),
        (false, false) => "trunc",
    };
    em.convert(op, v, t)
}

impl Lowering<'_> {
    pub(crate) fn elementwise_op(&mut self, op: &Op, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let func = self.func;
        Ok(match &op.kind {
            OpKind::Binary { op: b, lhs: x, rhs: y, .. } => {
                let d = func.ty(*x).dtype();
                match (b, op.result) {
                    (BinOp::Add, Some(r)) => {
                        self.iota_plus_scalar(r, *x, *y);
                        self.affine_sum(r, *x, *y, false)
                    }
                    (BinOp::Sub, Some(r)) => self.affine_sum(r, *x, *y, true),
                    _ => {}
                }
                if let (BinOp::Mul, Some(r)) = (b, op.result) {
                    if self.facts.tmem.acc_carried.contains_key(&r) {
                        let (acc, f) = if self.facts.tmem.acc_carried.contains_key(x) { (*x, *y) } else { (*y, *x) };
                        return self.tmem_rescale(acc, f, r);
                    }
                }
                if let Some(v) = self.scaled_by_row_factor(*b, *x, *y, d)? {
                    return Ok(v);
                }
                if matches!(b, BinOp::Add | BinOp::Sub | BinOp::Mul) && d == DType::F32 && !self.vector_now {
                    if let Some(v) = self.paired(&[*x, *y], |em, a| binop(em, *b, &a[0], &a[1], d))? {
                        return Ok(v);
                    }
                }
                self.elementwise(&[*x, *y], |em, a| Ok(binop(em, *b, &a[0], &a[1], d)))?
            }
            OpKind::Cast(x) => {
                let from = func.ty(*x).dtype();
                let to = rty.map(Type::dtype).unwrap_or(from);
                if from == DType::F32 && matches!(to, DType::F8E4M3 | DType::F8E5M2) {
                    // A tile's f32 registers two to a conversion (FMHA's P: half the cvt, and
                    // the pairs' bytes are already where 8-bit stores pack them).
                    let (regs, tile) = self.registers(&[*x])?;
                    if tile && regs.len() >= 2 && regs.len().is_multiple_of(2) {
                        let out = regs.chunks(2).flat_map(|p| f32_pair_to_fp8(&mut self.em, &p[0][0], &p[1][0], to));
                        return Ok(Value::Tile(out.collect()));
                    }
                }
                self.elementwise(&[*x], |em, a| Ok(cast(em, &a[0], from, to)))?
            }
            OpKind::Cmp(p, x, y) => {
                let float = func.ty(*x).dtype().is_float();
                let pred = p.mlir(float);
                if let Some(v) = self.affine_cmp(pred, *x, *y)? {
                    return Ok(v);
                }
                self.elementwise(&[*x, *y], |em, a| Ok(em.cmp(float, pred, &a[0], &a[1])))?
            }
            OpKind::Logic(l, x, y) => self.elementwise(&[*x, *y], |em, a| {
                Ok(match l {
                    LogicOp::And => em.and(&a[0], &a[1]),
                    LogicOp::Or => em.or(&a[0], &a[1]),
                    LogicOp::Xor => em.xor(&a[0], &a[1]),
                })
            })?,
            OpKind::Select { cond, a, b } => {
                self.elementwise(&[*cond, *a, *b], |em, x| Ok(em.select(&x[0], &x[1], &x[2])))?
            }
            OpKind::Fma { a, b, c } => {
                let d = func.ty(*a).dtype();
                if d == DType::F32 && !self.vector_now {
                    if let Some(v) = self.paired(&[*a, *b, *c], |em, x| em.intr("fma", &[&x[0], &x[1], &x[2]]))? {
                        return Ok(v);
                    }
                }
                self.elementwise(&[*a, *b, *c], |em, x| {
                    if matches!(d, DType::F32 | DType::F64) {
                        return Ok(em.intr("fma", &[&x[0], &x[1], &x[2]]));
                    }
                    // f16/bf16: the f32 fma of the widened operands (the product is exact) rounds
                    // the sum to f32, then to the dtype; the interpreter rounds through f64.
                    let w: Vec<Reg> = x.iter().map(|r| em.convert("fpext", r, Ty::F32)).collect();
                    let r = em.intr("fma", &[&w[0], &w[1], &w[2]]);
                    Ok(em.convert("fptrunc", &r, Ty::of(d)))
                })?
            }
            _ => return Err(err("not an elementwise op")),
        })
    }

    /// `x * f` in a loop, for `f` a broadcast of a few registers a thread that is a
    /// conditional rescale's factor (`Lowering::note_unit_factor`: FlashAttention-4's
    /// `alpha`): the products are skipped where
    /// every factor of the warp is 1.0 (`vote.any`: the branch is uniform), which is exact
    /// (`x * 1.0 == x` for every `x`, NaN and signed zeros included). An online softmax whose
    /// running maximum only moves past a threshold (FlashAttention-4's conditional rescale,
    /// `kernels/fmha.tile`) gets factors of exactly 1.0 in most iterations, and its rescale
    /// then costs a compare and a vote instead of a multiply per accumulator register.
    fn scaled_by_row_factor(
        &mut self,
        b: BinOp,
        x: ValueId,
        y: ValueId,
        d: DType,
    ) -> Result<Option<Value>, Diagnostic> {
        if b != BinOp::Mul || d != DType::F32 || self.loop_writes.is_empty() {
            return Ok(None);
        }
        let (big, factors) = match (self.row_factors.get(&y), self.row_factors.get(&x)) {
            (Some(f), _) => (x, f.clone()),
            (None, Some(f)) => (y, f.clone()),
            (None, None) => return Ok(None),
        };
        let Value::Tile(xs) = self.get(big)?.clone() else { return Ok(None) };
        let Value::Tile(fs) = self.get(if big == x { y } else { x })?.clone() else { return Ok(None) };
        if xs.len() != fs.len() || xs.len() < ROW_FACTOR_MIN_REGS * factors.len() {
            return Ok(None);
        }
        let Some(warp_any) = self.warp_any_not_one(&factors) else { return Ok(None) };
        let (then, skip, join) = (self.em.new_block(), self.em.new_block(), self.em.new_block());
        self.em.cond_br(&warp_any, &then, &skip);
        self.em.label(&skip, &[]);
        self.em.br(&join, &xs);
        self.em.label(&then, &[]);
        let prod: Vec<Reg> = xs.iter().zip(&fs).map(|(a, f)| binop(&mut self.em, b, a, f, d)).collect();
        self.em.br(&join, &prod);
        let args: Vec<Reg> = xs.iter().map(|r| self.em.fresh_reg(r.ty.clone())).collect();
        self.em.label(&join, &args);
        Ok(Some(Value::Tile(args)))
    }

    /// Whether some factor of the warp's lanes is not exactly 1.0 (`vote.any` of each lane's
    /// `f != 1.0` over its `factors`): a uniform branch condition. `None` without factors.
    pub(crate) fn warp_any_not_one(&mut self, factors: &[Reg]) -> Option<Reg> {
        let one = self.em.cf32(1.0);
        let mut any: Option<Reg> = None;
        for f in factors {
            let ne = self.em.cmp(true, "une", f, &one);
            any = Some(match any {
                Some(a) => self.em.or(&a, &ne),
                None => ne,
            });
        }
        let any = any?;
        let all = self.em.ci32(-1);
        Some(self.em.call_intrinsic("llvm.nvvm.vote.any.sync", &[&all, &any], Ty::I1))
    }

    /// An f32 op on tiles, two registers at a time as `vector<2xf32>` where the target has
    /// paired f32 arithmetic (`Feature::PackedF32`: NVPTX makes it `.f32x2`, ptxas FFMA2
    /// and the like); `None` elsewhere, for scalars and odd register counts. `f` is the op
    /// on one register of each operand, applied here to pairs. Registers `2i` and `2i + 1`
    /// are consecutive columns of a row in the tensor-core layouts, as `tcgen05.ld` returns
    /// them, so ptxas finds the pairs in adjacent registers.
    pub(crate) fn paired(
        &mut self,
        operands: &[ValueId],
        f: impl Fn(&mut Emitter, &[Reg]) -> Reg,
    ) -> Result<Option<Value>, Diagnostic> {
        if !self.arch.has(tilec_core::target::Feature::PackedF32) {
            return Ok(None);
        }
        let (regs, tile) = self.registers(operands)?;
        if !tile || regs.len() < 2 || !regs.len().is_multiple_of(2) {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(regs.len());
        // An operand broadcast from a scalar packs the same two registers for every pair:
        // once a call (a pack made here is in this block; one kept for later might not
        // dominate its next use).
        let mut splats: BTreeMap<Rc<str>, Reg> = BTreeMap::new();
        for pair in regs.chunks(2) {
            let mut vs = Vec::with_capacity(operands.len());
            for (a, b) in pair[0].iter().zip(&pair[1]) {
                vs.push(if a.name == b.name {
                    match splats.get(&a.name) {
                        Some(v) => v.clone(),
                        None => {
                            let v = self.em.pack2(a, b);
                            splats.insert(a.name.clone(), v.clone());
                            v
                        }
                    }
                } else {
                    self.em.pack2(a, b)
                });
            }
            let r = f(&mut self.em, &vs);
            let (lo, hi) = self.em.unpack2(&r);
            out.push(lo);
            out.push(hi);
        }
        Ok(Some(Value::Tile(out)))
    }

    /// A broadcast of extent-1 dims: each result register is a register of the operand.
    pub(crate) fn broadcast(&mut self, op: &Op, x: ValueId, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let xty = self.func.ty(x).clone();
        let ty = rty.ok_or_else(|| err("broadcast without result"))?;
        let (Some(xl), Some(l)) = (xty.layout(), ty.layout()) else {
            return Err(err("broadcast without layouts"));
        };
        let src = self.tile(x)?;
        // Result register r holds the element of the operand register at the same offset
        // with the broadcast dims at 0 (tile-layout gave the operand the slice placement).
        let (lr, lx) = (l.to_linear(ty.shape()), xl.to_linear(xty.shape()));
        let by_offset = lx.reg_of_offset();
        let mut idx = Vec::with_capacity(lr.num_regs() as usize);
        for r in 0..lr.num_regs() {
            let mut c = lr.reg_offset(r);
            for (d, &e) in xty.shape().iter().enumerate() {
                if e == 1 {
                    c[d] = 0;
                }
            }
            let i = by_offset
                .get(&c)
                .copied()
                .ok_or_else(|| err("broadcast of a tile whose layout is not the slice of the result's"))?
                as usize;
            if i >= src.len() {
                return Err(err("broadcast register out of range"));
            }
            idx.push(i);
        }
        if let (Some(a), Some(res)) = (self.aff.get(&x).cloned(), op.result) {
            self.aff.insert(res, idx.iter().map(|i| a[*i].clone()).collect());
        }
        if let (Some(i), Some(res)) = (self.iota.get(&x).cloned(), op.result) {
            self.iota.insert(res, i);
        }
        if let Some(res) = op.result {
            let few = src.len() <= ROW_FACTOR_MAX_REGS && idx.len() >= ROW_FACTOR_MIN_REGS * src.len();
            if few && self.is_unit_when_kept(x) {
                self.row_factors.insert(res, src.clone());
            }
        }
        Ok(Value::Tile(idx.iter().map(|i| src[*i].clone()).collect()))
    }

    /// Records `r = x + y` (`x - y` with `sub`) as affine when both operands are.
    fn affine_sum(&mut self, r: ValueId, x: ValueId, y: ValueId, sub: bool) {
        let (Some(a), Some(b)) = (self.aff.get(&x).cloned(), self.aff.get(&y).cloned()) else { return };
        if a.len() != b.len() {
            return;
        }
        let mut out = vec![];
        for ((ba, ca), (bb, cb)) in a.into_iter().zip(b) {
            let base = self.base_combination(&ba, &bb, sub);
            out.push((base, if sub { ca - cb } else { ca + cb }));
        }
        self.aff.insert(r, out);
    }

    /// `r = x + y` of an index tile and a splat (either way round) is an index tile.
    fn iota_plus_scalar(&mut self, r: ValueId, x: ValueId, y: ValueId) {
        let splat = |lw: &Self, v: ValueId| match lw.aff.get(&v) {
            Some(a) if !a.is_empty() && a.iter().all(|(b, c)| *c == 0 && b.name == a[0].0.name) => Some(a[0].0.clone()),
            _ => None,
        };
        let (iota, s) = match (self.iota.get(&x).cloned(), self.iota.get(&y).cloned()) {
            (Some(i), None) => (i, splat(self, y)),
            (None, Some(i)) => (i, splat(self, x)),
            _ => return,
        };
        let Some(s) = s else { return };
        let offset = match &iota.1 {
            Some(o) => self.em.add(o, &s),
            None => s,
        };
        self.iota.insert(r, (iota.0, Some(offset)));
    }

    /// `a + b` (`a - b` with `sub`) of two bases: a sum emitted once a pair (as before), a
    /// difference every time — one first made in a branch would not dominate its next use
    /// (LLVM merges the copies).
    fn base_combination(&mut self, a: &Reg, b: &Reg, sub: bool) -> Reg {
        let key = (a.name.clone(), b.name.clone());
        if let (false, Some(s)) = (sub, self.base_sums.get(&key)) {
            return s.clone();
        }
        if sub {
            return self.em.sub(a, b);
        }
        let s = self.em.add(a, b);
        self.base_sums.insert(key, s.clone());
        s
    }

    /// A comparison of two affine index tiles (`arange`, splats and their sums): register
    /// `i` compares `bx + cx` with `by + cy`, which is `bx - by` against the constant
    /// `cy - cx` — one difference of bases a pair (LLVM merges the copies), where comparing
    /// the tiles' registers keeps every offset of a loop-invariant `arange` live through the
    /// loop (sm_103a's FMHA: the 32 key columns of a thread, its ragged-tile mask). The
    /// difference is exact (`exact_difference`), so the comparison is the one of the exact
    /// sums: the same as the registers' wherever those do not wrap, which an index's do not.
    fn affine_cmp(&mut self, pred: &str, x: ValueId, y: ValueId) -> Result<Option<Value>, Diagnostic> {
        if self.func.ty(x).dtype() != DType::I32 {
            return Ok(None);
        }
        let (Some(a), Some(b)) = (self.aff.get(&x).cloned(), self.aff.get(&y).cloned()) else {
            return Ok(None);
        };
        let (Value::Tile(xs), Value::Tile(ys)) = (self.get(x)?, self.get(y)?) else { return Ok(None) };
        if a.len() != b.len() || xs.len() != a.len() || ys.len() != b.len() {
            return Ok(None);
        }
        if a.iter().chain(&b).any(|(_, c)| c.abs() >= 1 << 30) {
            return Ok(None);
        }
        let mut out = vec![];
        for ((bx, cx), (by, cy)) in a.into_iter().zip(b) {
            let d = exact_difference(&mut self.em, &bx, &by);
            let c = self.em.ci32(cy - cx);
            out.push(self.em.cmp(false, pred, &d, &c));
        }
        Ok(Some(Value::Tile(out)))
    }
}
