//! Reductions along an axis: a balanced tree over the registers of a thread, butterfly
//! shuffles over the lane bits of the axis, and across warps through shared memory (each
//! warp's partials written by one lane, one barrier, every thread combining its rows' partials
//! in warp order, which keeps the result deterministic).
//!
//! `argmax`/`argmin` reduce (value, index) pairs with the same tree: the pair with the larger
//! (smaller) value wins, NaN beating every number, and of equal values (or two NaNs) the lower
//! index — an order in which the combination is associative and commutative, so any tree
//! gives the interpreter's answer (the first maximum, or the first NaN).

use super::elementwise::binop;
use super::emit::{Emitter, ICmp, Reg, Ty};
use super::regs::Value;
use super::{err, Lowering};
use tilec_core::tir::{BinOp, ReduceKind, Type, ValueId};
use tilec_core::{DType, Diagnostic};

/// Combines two partial results of a reduction of `kind` over values of dtype `d`: one
/// register each, or (value, index) for the arg-reductions, where `lower` says whether b's
/// index is below a's if the caller knows (`None`: compared at run time).
fn combine(em: &mut Emitter, kind: ReduceKind, a: &[Reg], b: &[Reg], d: DType, lower: Option<bool>) -> Vec<Reg> {
    let op = match kind {
        ReduceKind::Max => BinOp::Max,
        ReduceKind::Min => BinOp::Min,
        ReduceKind::Sum => BinOp::Add,
        ReduceKind::Argmax | ReduceKind::Argmin => {
            let ((v1, i1), (v2, i2)) = ((&a[0], &a[1]), (&b[0], &b[1]));
            let max = kind == ReduceKind::Argmax;
            // b's pair is taken when its value beats a's, or ties it from a lower index:
            // with `lower` (i2 < i1) that is "a's value does not beat b's", without it "b's
            // beats a's". Where the caller knows the indices' order (the in-thread tree
            // combines its registers in increasing order along the axis) that decides it;
            // elsewhere a select does, at run time.
            let not_beaten = |em: &mut Emitter| beats(em, max, d, v1, v2, true);
            let beaten = |em: &mut Emitter| beats(em, max, d, v2, v1, false);
            let take = match lower {
                Some(true) => not_beaten(em),
                Some(false) => beaten(em),
                None => {
                    let l = em.icmp(ICmp::Slt, i2, i1);
                    let (t, f) = (not_beaten(em), beaten(em));
                    em.select(&l, &t, &f)
                }
            };
            return vec![em.select(&take, v2, v1), em.select(&take, i2, i1)];
        }
    };
    vec![binop(em, op, &a[0], &b[0], d)]
}

/// Whether `x` beats `y` in the arg-reductions' order — larger (`max`) or smaller, NaN beating
/// every number, two NaNs tied — or, with `negate`, whether it does not: one compare for an
/// integer, two joined for a float (see [`float_beats`]).
fn beats(em: &mut Emitter, max: bool, d: DType, x: &Reg, y: &Reg, negate: bool) -> Reg {
    if !d.is_float() {
        let p = match (max, negate) {
            (true, false) => ICmp::Sgt,
            (true, true) => ICmp::Sle,
            (false, false) => ICmp::Slt,
            (false, true) => ICmp::Sge,
        };
        return em.icmp(p, x, y);
    }
    let (on_y, on_xy) = float_beats(max, negate);
    let n = em.cmp(true, on_y, y, y);
    let c = em.cmp(true, on_xy, x, y);
    if negate {
        em.or(&n, &c)
    } else {
        em.and(&n, &c)
    }
}

/// The float compares of [`beats`]: a predicate of `(y, y)` and one of `(x, y)`, joined by
/// `and` (`ord(y) & ugt(x, y)`: y is a number and x larger or NaN) or, negated, by `or`
/// (`uno(y) | ole(x, y)`).
fn float_beats(max: bool, negate: bool) -> (&'static str, &'static str) {
    match (max, negate) {
        (true, false) => ("ord", "ugt"),
        (true, true) => ("uno", "ole"),
        (false, false) => ("ord", "ult"),
        (false, true) => ("uno", "oge"),
    }
}

/// A butterfly shuffle of a 16-, 32- or 64-bit scalar.
fn shfl_bfly(em: &mut Emitter, v: &Reg, d: DType, offset: i64) -> Reg {
    // The shuffle's constants first, whatever the width (they are hoisted and numbered in
    // creation order).
    em.ci32(-1);
    em.ci32(offset);
    em.ci32(31);
    match d.bits() {
        32 => em.shfl_bfly32(v, offset),
        8 => {
            let w = em.convert("zext", v, Ty::I32);
            let s = em.shfl_bfly32(&w, offset);
            em.convert("trunc", &s, Ty::I8)
        }
        64 if d.is_float() => {
            let i = em.bitcast(v, Ty::I64);
            let s = shfl_bfly(em, &i, DType::I64, offset);
            em.bitcast(&s, Ty::F64)
        }
        16 => {
            let i = em.bitcast(v, Ty::I16);
            let w = em.convert("zext", &i, Ty::I32);
            let s = em.shfl_bfly32(&w, offset);
            let t = em.convert("trunc", &s, Ty::I16);
            em.bitcast(&t, Ty::of(d))
        }
        _ => {
            let lo = em.convert("trunc", v, Ty::I32);
            let c32 = em.cint(32, Ty::I64);
            let h = em.lshr(v, &c32);
            let hi = em.convert("trunc", &h, Ty::I32);
            let slo = em.shfl_bfly32(&lo, offset);
            let shi = em.shfl_bfly32(&hi, offset);
            let zl = em.convert("zext", &slo, Ty::I64);
            let zh = em.convert("zext", &shi, Ty::I64);
            let sh = em.shl(&zh, &c32);
            em.or(&sh, &zl)
        }
    }
}

impl Lowering<'_> {
    /// Reduces a tile along `axis`: in-thread tree, butterfly shuffles, shared memory across
    /// warps. Works on any layout: the register, lane and warp bits whose bases lie along
    /// `axis` are the ones combined; bits of copies (zero bases) are not, so a replicated
    /// tile is not counted twice.
    pub(crate) fn reduce(
        &mut self,
        kind: ReduceKind,
        axis: usize,
        value: ValueId,
        ty: &Type,
    ) -> Result<Value, Diagnostic> {
        let xty = self.func.ty(value).clone();
        let src = self.tile(value)?;
        let xl = xty.layout().ok_or_else(|| err("reduce of a tile without layout"))?.clone();
        let l = ty.layout().ok_or_else(|| err("reduce result without layout"))?.clone();
        let (xs, s) = (xty.shape().to_vec(), ty.shape().to_vec());
        // The operand's dtype; the result's is i32 for the arg-reductions.
        let d = xty.dtype();
        let arg = matches!(kind, ReduceKind::Argmax | ReduceKind::Argmin);
        let parts: Vec<DType> = if arg { vec![d, DType::I32] } else { vec![d] };
        let (lx, lr) = (xl.to_linear(&xs), l.to_linear(&s));
        let n = lr.num_regs();
        // The index along `axis` of each operand register (arg-reductions only).
        let along_base = if arg { Some(self.thread_base(&xl, &xs, axis)) } else { None };
        // 1. In-thread: a balanced tree over the registers that differ only along `axis`, in
        //    increasing order along it.
        let mut groups: std::collections::BTreeMap<Vec<i64>, Vec<(i64, i64)>> = std::collections::BTreeMap::new();
        for r in 0..lx.num_regs() {
            let mut o = lx.reg_offset(r);
            let along = o[axis];
            o[axis] = 0;
            groups.entry(o).or_default().push((along, r));
        }
        let mut vals: Vec<Vec<Reg>> = vec![];
        for sr in 0..n {
            let o = lr.reg_offset(sr);
            let mut members =
                groups.get(&o).cloned().ok_or_else(|| err("reduction result register without operand registers"))?;
            members.sort_unstable();
            let mut items: Vec<Vec<Reg>> = vec![];
            for &(along, r) in &members {
                let mut item = vec![src[r as usize].clone()];
                if let Some(b) = &along_base {
                    let c = self.em.ci32(along);
                    item.push(self.em.add(b, &c));
                }
                items.push(item);
            }
            // A sum of f32 pairs where the target adds two at once (`Feature::PackedF32`):
            // a tree over (x[2k], x[2k+1]) pairs, then the pair's two lanes.
            let packed = kind == ReduceKind::Sum
                && d == DType::F32
                && items.len() >= 4
                && items.len().is_multiple_of(2)
                && self.arch.has(tilec_core::target::Feature::PackedF32);
            if packed {
                let mut pairs: Vec<Reg> = items.chunks(2).map(|p| self.em.pack2(&p[0][0], &p[1][0])).collect();
                while pairs.len() > 1 {
                    let mut next = vec![];
                    for p in pairs.chunks(2) {
                        next.push(if p.len() == 2 { self.em.fsource("fadd", &p[0], &p[1]) } else { p[0].clone() });
                    }
                    pairs = next;
                }
                let (lo, hi) = (self.em.extractelement(&pairs[0], 0), self.em.extractelement(&pairs[0], 1));
                items = vec![vec![self.em.fsource("fadd", &lo, &hi)]];
            }
            while items.len() > 1 {
                let mut next = vec![];
                for pair in items.chunks(2) {
                    next.push(if pair.len() == 2 {
                        combine(&mut self.em, kind, &pair[0], &pair[1], d, Some(false))
                    } else {
                        pair[0].clone()
                    });
                }
                items = next;
            }
            vals.push(items.pop().ok_or_else(|| err("empty reduction"))?);
        }
        // 2. Across lanes: xor-butterfly over the lane bits along `axis`.
        for (k, b) in lx.lanes.iter().enumerate() {
            if b[axis] == 0 {
                continue;
            }
            for v in vals.iter_mut() {
                let other: Vec<Reg> =
                    v.iter().zip(&parts).map(|(x, pd)| shfl_bfly(&mut self.em, x, *pd, 1 << k)).collect();
                *v = combine(&mut self.em, kind, v, &other, d, None);
            }
        }
        let result = |vals: Vec<Vec<Reg>>| -> Result<Value, Diagnostic> {
            let pick = usize::from(arg);
            vals.into_iter()
                .map(|v| v.get(pick).cloned().ok_or_else(|| err("a reduction without its result part")))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Tile)
        };
        // 3. Across warps: each warp's partials go to shared memory, then every thread
        //    combines the partials of its rows in warp order (deterministic).
        let terms = lx.dim_terms(axis);
        let Some(wrun) = terms.warp.first().copied() else { return result(vals) };
        if terms.warp.len() > 1 {
            return Err(err("a reduction across warps whose warp bits along the axis are not contiguous"));
        }
        let w = 1i64 << wrun.bits;
        let rows: i64 = s.iter().product();
        // One array per part, each `rows · w` elements, 4-byte aligned.
        let part_bytes: Vec<i64> = parts.iter().map(|pd| (rows * w * i64::from(pd.bytes()) + 3) / 4 * 4).collect();
        let total: i64 = part_bytes.iter().sum();
        let region = self.smem_region(total)?;
        self.smem_write_begin(region, total);
        let base = self.smem_base();
        // This thread's coordinate along `axis` among warps, and whether it is lane 0 there.
        let (warp, lane) = (self.warp.clone(), self.lane.clone());
        let warp_a = self.coord_bits(&warp, wrun.shift, w);
        let lane_a = match terms.lane.first() {
            Some(r) => self.coord_bits(&lane, r.shift, 1 << r.bits),
            None => self.coord_bits(&lane, 0, 1),
        };
        let zero = self.em.ci32(0);
        let writer = self.em.icmp(ICmp::Eq, &lane_a, &zero);
        // Linear row index of each result register (row-major over the result shape, whose
        // extent along `axis` is 1).
        let row_idx: Vec<Reg> = (0..n).map(|sr| self.element_index(&l, &s, &lr.reg_offset(sr))).collect();
        let wc = self.em.ci32(w);
        let mut part_at = vec![];
        let mut at = region;
        for pb in &part_bytes {
            part_at.push(self.em.ci32(at));
            at += pb;
        }
        let slot = |em: &mut Emitter, part: usize, row: &Reg, wi: &Reg| -> Reg {
            let rw = em.mul(row, &wc);
            let i = em.add(&rw, wi);
            let bsz = em.ci32(i64::from(parts[part].bytes()));
            let bo = em.mul(&i, &bsz);
            let o = em.add(&bo, &part_at[part]);
            em.gep(&base, &o, &Ty::I8)
        };
        let mut stores = vec![];
        for (ri, v) in row_idx.iter().zip(&vals) {
            for (p, x) in v.iter().enumerate() {
                stores.push((slot(&mut self.em, p, ri, &warp_a), x.clone(), i64::from(parts[p].bytes())));
            }
        }
        let (then_b, join_b) = (self.em.new_block(), self.em.new_block());
        self.em.cond_br(&writer, &then_b, &join_b);
        self.em.label(&then_b, &[]);
        for (a, v, b) in &stores {
            self.em.store(v, a, *b);
        }
        self.em.br(&join_b, &[]);
        self.em.label(&join_b, &[]);
        self.smem_written();
        let mut out = vec![];
        for ri in &row_idx {
            // The row's slots of every warp: one address, then constant steps.
            let first: Vec<Reg> = (0..parts.len()).map(|p| slot(&mut self.em, p, ri, &zero)).collect();
            let mut acc: Option<Vec<Reg>> = None;
            for wi in 0..w {
                let mut x = vec![];
                for (p, pd) in parts.iter().enumerate() {
                    let a = if wi == 0 {
                        first[p].clone()
                    } else {
                        let step = self.em.ci32(wi * i64::from(pd.bytes()));
                        self.em.gep(&first[p], &step, &Ty::I8)
                    };
                    x.push(self.em.load(&a, Ty::of(*pd), i64::from(pd.bytes())));
                }
                acc = Some(match acc {
                    None => x,
                    Some(prev) => combine(&mut self.em, kind, &prev, &x, d, None),
                });
            }
            out.push(acc.ok_or_else(|| err("empty cross-warp reduction"))?);
        }
        self.smem_read_done(region, total);
        result(out)
    }
}

/// One hardware bit that moves along a scan's axis: a register bit, a lane bit or a warp bit.
#[derive(Clone, Copy, Debug)]
enum AxisBit {
    Reg(usize),
    Lane(usize),
    Warp(usize),
}

/// Whether an element is in the upper half of its block of the axis at one scan step.
#[derive(Clone, Debug)]
enum Upper {
    Known(bool),
    RunTime(Reg),
}

impl Lowering<'_> {
    /// The row-major index of the element that register `r` of this thread holds, of a tile of
    /// `shape` in layout `l` (i32).
    pub(crate) fn element_index(&mut self, l: &tilec_core::layout::Layout, shape: &[i64], off: &[i64]) -> Reg {
        let mut lin: Option<Reg> = None;
        let mut stride = 1i64;
        for dd in (0..shape.len()).rev() {
            if shape[dd] > 1 {
                let tb = self.thread_base(l, shape, dd);
                let o = self.em.ci32(off[dd]);
                let c = self.em.add(&tb, &o);
                let st = self.em.ci32(stride);
                let term = self.em.mul(&c, &st);
                lin = Some(match lin {
                    None => term,
                    Some(p) => self.em.add(&p, &term),
                });
            }
            stride *= shape[dd];
        }
        lin.unwrap_or_else(|| self.em.ci32(0))
    }

    /// An inclusive scan along `axis`: over the hardware bits that move along the axis, in
    /// increasing order of the coordinate bit they move, each element keeps its prefix and
    /// the total of its block of the axis; the partner across a bit (the element with that
    /// coordinate bit flipped) gives its block's total — another register, a butterfly
    /// shuffle, or through shared memory across warps. log2(extent) steps for any layout.
    pub(crate) fn scan(&mut self, op: BinOp, axis: usize, value: ValueId, ty: &Type) -> Result<Value, Diagnostic> {
        let src = self.tile(value)?;
        let l = ty.layout().ok_or_else(|| err("scan of a tile without layout"))?.clone();
        let shape = ty.shape().to_vec();
        let d = ty.dtype();
        let map = l.to_linear(&shape);
        let mut bits: Vec<(i64, AxisBit)> = vec![];
        let groups = [(&map.regs, 0), (&map.lanes, 1), (&map.warps, 2)];
        for (bases, kind) in groups {
            for (k, b) in bases.iter().enumerate() {
                if b[axis] == 0 {
                    continue;
                }
                if b.iter().enumerate().any(|(dd, v)| dd != axis && *v != 0) {
                    return Err(err("a scan over a layout whose bits move along several dims"));
                }
                bits.push((b[axis], [AxisBit::Reg(k), AxisBit::Lane(k), AxisBit::Warp(k)][kind]));
            }
        }
        bits.sort_by_key(|(p, _)| *p);
        let combine = |em: &mut Emitter, a: &Reg, b: &Reg| binop(em, op, a, b, d);
        let commutes = matches!(op, BinOp::Add | BinOp::Mul);
        let mut pre = src.clone();
        let mut tot = src;
        let n = map.num_regs();
        // Each register's byte offset in a scratch copy of the tile, for the warp steps:
        // computed once, the steps differ only in region and partner distance.
        let mut byte_offsets: Option<Vec<Reg>> = None;
        for (p, bit) in bits {
            // The partner's total, and whether this element is the upper half (bit set): known
            // per register for a register bit, a run-time i1 for a lane or warp bit.
            let (partner, upper): (Vec<Reg>, Vec<Upper>) = match bit {
                AxisBit::Reg(k) => {
                    let partner = (0..n).map(|r| tot[(r ^ (1 << k)) as usize].clone()).collect();
                    let upper = (0..n).map(|r| Upper::Known((r >> k) & 1 == 1)).collect();
                    (partner, upper)
                }
                AxisBit::Lane(k) => {
                    let partner = tot.iter().map(|t| shfl_bfly(&mut self.em, t, d, 1 << k)).collect();
                    let lane = self.lane.clone();
                    let b = self.coord_bits(&lane, k as u32, 2);
                    let one = self.em.ci32(1);
                    let u = self.em.icmp(ICmp::Eq, &b, &one);
                    (partner, vec![Upper::RunTime(u); n as usize])
                }
                AxisBit::Warp(k) => {
                    let warp = self.warp.clone();
                    let b = self.coord_bits(&warp, k as u32, 2);
                    let one = self.em.ci32(1);
                    let u = self.em.icmp(ICmp::Eq, &b, &one);
                    // Every thread writes its totals, then reads its partner's: the element
                    // whose axis coordinate differs by ±p.
                    let bytes = i64::from(d.bytes());
                    let total: i64 = shape.iter().product::<i64>() * bytes;
                    let region = self.smem_region(total)?;
                    self.smem_write_begin(region, total);
                    let base = self.smem_base();
                    let stride: i64 = shape[axis + 1..].iter().product();
                    let (region_c, bsz) = (self.em.ci32(region), self.em.ci32(bytes));
                    let (down, upc) = (self.em.ci32(-p * stride * bytes), self.em.ci32(p * stride * bytes));
                    let delta = self.em.select(&u, &down, &upc);
                    if byte_offsets.is_none() {
                        let offs = (0..n)
                            .map(|r| {
                                let lin = self.element_index(&l, &shape, &map.reg_offset(r));
                                self.em.mul(&lin, &bsz)
                            })
                            .collect();
                        byte_offsets = Some(offs);
                    }
                    let mut reads = vec![];
                    for (r, bo) in byte_offsets.iter().flatten().enumerate() {
                        let at = self.em.add(bo, &region_c);
                        let a = self.em.gep(&base, &at, &Ty::I8);
                        self.em.store(&tot[r], &a, bytes);
                        let pat = self.em.add(&at, &delta);
                        reads.push(self.em.gep(&base, &pat, &Ty::I8));
                    }
                    self.smem_written();
                    let partner = reads.iter().map(|a| self.em.load(a, Ty::of(d), bytes)).collect();
                    self.smem_read_done(region, total);
                    (partner, vec![Upper::RunTime(u); n as usize])
                }
            };
            for r in 0..n as usize {
                let (pt, mine_pre, mine_tot) = (&partner[r], pre[r].clone(), tot[r].clone());
                // Upper half: the lower block's total comes first; lower half: after it.
                match &upper[r] {
                    Upper::Known(false) => tot[r] = combine(&mut self.em, &mine_tot, pt),
                    Upper::Known(true) => {
                        pre[r] = combine(&mut self.em, pt, &mine_pre);
                        tot[r] = combine(&mut self.em, pt, &mine_tot);
                    }
                    Upper::RunTime(u) => {
                        let hi_pre = combine(&mut self.em, pt, &mine_pre);
                        let hi_tot = combine(&mut self.em, pt, &mine_tot);
                        pre[r] = self.em.select(u, &hi_pre, &mine_pre);
                        // Add and Mul commute (LLVM's CSE takes `a + b` for `b + a`, floats
                        // too): the block's total is the same either side.
                        tot[r] = if commutes {
                            hi_tot
                        } else {
                            let lo_tot = combine(&mut self.em, &mine_tot, pt);
                            self.em.select(u, &hi_tot, &lo_tot)
                        };
                    }
                }
            }
        }
        Ok(Value::Tile(pre))
    }
}

#[cfg(test)]
mod tests {
    use super::float_beats;

    /// LLVM's `fcmp` predicates that `float_beats` names.
    fn fcmp(pred: &str, x: f32, y: f32) -> bool {
        let uno = x.is_nan() || y.is_nan();
        match pred {
            "ord" => !uno,
            "uno" => uno,
            "ugt" => uno || x > y,
            "ult" => uno || x < y,
            "ole" => !uno && x <= y,
            "oge" => !uno && x >= y,
            _ => panic!("{pred}"),
        }
    }

    /// The combine's choice for every pair of special values and index orders is the
    /// interpreter's: of the two, the first NaN, else the first maximum (minimum).
    #[test]
    fn arg_reduction_combines_take_the_first_nan_else_the_first_extreme() {
        let vals = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.0, -1.0, 2.5];
        for max in [true, false] {
            let beats = |x: f32, y: f32, negate: bool| {
                let (on_y, on_xy) = float_beats(max, negate);
                let (n, c) = (fcmp(on_y, y, y), fcmp(on_xy, x, y));
                if negate {
                    n || c
                } else {
                    n && c
                }
            };
            for &v1 in &vals {
                for &v2 in &vals {
                    for lower in [false, true] {
                        // b = (v2, i2) is taken: as the combine decides it for `lower` (i2 < i1).
                        let take = if lower { beats(v1, v2, true) } else { beats(v2, v1, false) };
                        // The interpreter's answer over the two in index order.
                        let (first, second) = if lower { (v2, v1) } else { (v1, v2) };
                        let second_wins = if first.is_nan() {
                            false
                        } else if second.is_nan() {
                            true
                        } else if max {
                            second > first
                        } else {
                            second < first
                        };
                        let want = if lower { !second_wins } else { second_wins };
                        assert_eq!(take, want, "max {max}, a = {v1}, b = {v2}, b's index lower {lower}");
                    }
                }
            }
        }
    }
}
