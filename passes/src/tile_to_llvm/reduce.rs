//! Reductions along an axis: a balanced tree over the registers of a thread, butterfly
//! shuffles over the lane bits of the axis, and across warps through shared memory (each
//! warp's partials written by one lane, one barrier, every thread combining its rows' partials
//! in warp order, which keeps the result deterministic).

use super::elementwise::binop;
use super::emit::{Emitter, ICmp, Reg, Ty};
use super::regs::Value;
use super::{err, Lowering};
use tilec_core::tir::{BinOp, ReduceKind, Type, ValueId};
use tilec_core::{DType, Diagnostic};

fn combine_op(k: ReduceKind) -> Result<BinOp, Diagnostic> {
    match k {
        ReduceKind::Max => Ok(BinOp::Max),
        ReduceKind::Min => Ok(BinOp::Min),
        ReduceKind::Sum => Ok(BinOp::Add),
        ReduceKind::Argmax | ReduceKind::Argmin => Err(err("argmax/argmin is not lowered yet")),
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
        let d = ty.dtype();
        let op = combine_op(kind)?;
        let (lx, lr) = (xl.to_linear(&xs), l.to_linear(&s));
        let n = lr.num_regs();
        // 1. In-thread: a balanced tree over the registers that differ only along `axis`, in
        //    increasing order along it.
        let mut groups: std::collections::BTreeMap<Vec<i64>, Vec<(i64, i64)>> = std::collections::BTreeMap::new();
        for r in 0..lx.num_regs() {
            let mut o = lx.reg_offset(r);
            let along = o[axis];
            o[axis] = 0;
            groups.entry(o).or_default().push((along, r));
        }
        let mut vals = vec![];
        for sr in 0..n {
            let o = lr.reg_offset(sr);
            let mut members =
                groups.get(&o).cloned().ok_or_else(|| err("reduction result register without operand registers"))?;
            members.sort_unstable();
            let mut items: Vec<Reg> = members.iter().map(|&(_, r)| src[r as usize].clone()).collect();
            while items.len() > 1 {
                let mut next = vec![];
                for pair in items.chunks(2) {
                    next.push(if pair.len() == 2 {
                        binop(&mut self.em, op, &pair[0], &pair[1], d)
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
                let other = shfl_bfly(&mut self.em, v, d, 1 << k);
                *v = binop(&mut self.em, op, v, &other, d);
            }
        }
        // 3. Across warps: each warp's partials go to shared memory, then every thread
        //    combines the partials of its rows in warp order (deterministic).
        let terms = lx.dim_terms(axis);
        let Some(wrun) = terms.warp.first().copied() else { return Ok(Value::Tile(vals)) };
        if terms.warp.len() > 1 {
            return Err(err("a reduction across warps whose warp bits along the axis are not contiguous"));
        }
        let w = 1i64 << wrun.bits;
        let bytes = i64::from(d.bytes());
        let rows: i64 = s.iter().product();
        let region = self.smem_region(rows * w * bytes)?;
        self.smem_write_begin(region, rows * w * bytes);
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
        // Linear row index of each result register (row-major over the result shape).
        let mut row_idx = vec![];
        for sr in 0..n {
            let off = lr.reg_offset(sr);
            let mut lin: Option<Reg> = None;
            let mut stride = 1i64;
            for dd in (0..s.len()).rev() {
                if dd != axis && s[dd] > 1 {
                    let tb = self.thread_base(&l, &s, dd);
                    let o = self.em.ci32(off[dd]);
                    let c = self.em.add(&tb, &o);
                    let st = self.em.ci32(stride);
                    let term = self.em.mul(&c, &st);
                    lin = Some(match lin {
                        None => term,
                        Some(p) => self.em.add(&p, &term),
                    });
                }
                stride *= s[dd];
            }
            row_idx.push(lin.unwrap_or_else(|| self.em.ci32(0)));
        }
        let wc = self.em.ci32(w);
        let region_c = self.em.ci32(region);
        let slot = |em: &mut Emitter, row: &Reg, wi: &Reg| -> Reg {
            let rw = em.mul(row, &wc);
            let i = em.add(&rw, wi);
            let bsz = em.ci32(bytes);
            let bo = em.mul(&i, &bsz);
            let o = em.add(&bo, &region_c);
            em.gep(&base, &o, &Ty::I8)
        };
        let addrs: Vec<Reg> = row_idx.iter().map(|ri| slot(&mut self.em, ri, &warp_a)).collect();
        let (then_b, join_b) = (self.em.new_block(), self.em.new_block());
        self.em.cond_br(&writer, &then_b, &join_b);
        self.em.label(&then_b, &[]);
        for (a, v) in addrs.iter().zip(&vals) {
            self.em.store(v, a, bytes);
        }
        self.em.br(&join_b, &[]);
        self.em.label(&join_b, &[]);
        self.smem_written();
        let mut out = vec![];
        for ri in &row_idx {
            let mut acc: Option<Reg> = None;
            for wi in 0..w {
                let wv = self.em.ci32(wi);
                let a = slot(&mut self.em, ri, &wv);
                let x = self.em.load(&a, Ty::of(d), bytes);
                acc = Some(match acc {
                    None => x,
                    Some(p) => binop(&mut self.em, op, &p, &x, d),
                });
            }
            out.push(acc.ok_or_else(|| err("empty cross-warp reduction"))?);
        }
        self.smem_read_done(region, rows * w * bytes);
        Ok(Value::Tile(out))
    }
}
