//! `rand`: Philox 4x32-10, bit for bit the interpreter's. Offset `o` is word `o % 4` of the
//! Philox block `o / 4`; registers known to be `base + c` for consecutive `c` share the
//! blocks they span (8 consecutive offsets need 3 blocks, whatever `base` is).

use super::emit::{Emitter, ICmp, Reg, Ty};
use super::regs::Value;
use super::Lowering;
use tilec_core::tir::ValueId;
use tilec_core::Diagnostic;

/// Philox 4x32-10 multipliers and key increments (as the interpreter).
const PHILOX_M: [i64; 2] = [0xD251_1F53, 0xCD9E_8D57];
const PHILOX_W: [i64; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// Philox 4x32-10 of counter `(ctr, 0, 0, 0)` with the precomputed round `keys`: the four
/// output words.
fn philox(em: &mut Emitter, ctr: &Reg, keys: &[(Reg, Reg)]) -> [Reg; 4] {
    let zero = em.ci32(0);
    let mut c = [ctr.clone(), zero.clone(), zero.clone(), zero];
    for (k0, k1) in keys {
        // mul.hi.u32 and mul.lo.u32 (the 64-bit product form lets LLVM widen the xors into
        // 64-bit arithmetic, which is slower).
        let wide = |em: &mut Emitter, x: &Reg, m: i64| -> (Reg, Reg) {
            let mc = em.ci32(m as i32 as i64);
            let hi = em.call_intrinsic("llvm.nvvm.mulhi.ui", &[x, &mc], Ty::I32);
            (hi, em.mul(x, &mc))
        };
        let (hi0, lo0) = wide(em, &c[0], PHILOX_M[0]);
        let (hi1, lo1) = wide(em, &c[2], PHILOX_M[1]);
        let a = em.xor(&hi1, &c[1]);
        let n0 = em.xor(&a, k0);
        let b = em.xor(&hi0, &c[3]);
        let n2 = em.xor(&b, k1);
        c = [n0, lo1, n2, lo0];
    }
    c
}

/// `(w >> 8) · 2⁻²⁴`.
fn word_to_uniform(em: &mut Emitter, w: &Reg) -> Reg {
    let c8 = em.ci32(8);
    let s = em.lshr(w, &c8);
    let f = em.convert("uitofp", &s, Ty::F32);
    let scale = em.cf32(1.0 / 16_777_216.0);
    em.fmul(&f, &scale)
}

/// `candidates[s]` for a run-time `s` in 0..candidates.len() (a select chain).
fn pick(em: &mut Emitter, s: &Reg, candidates: &[Reg]) -> Reg {
    let mut r = candidates[0].clone();
    for (i, c) in candidates.iter().enumerate().skip(1) {
        let ci = em.ci32(i as i64);
        let is = em.icmp(ICmp::Eq, s, &ci);
        r = em.select(&is, c, &r);
    }
    r
}

/// `rand` of a tile of offsets (see the module's contract).
fn rand_tile(em: &mut Emitter, offsets: &[Reg], aff: Option<&[(Reg, i64)]>, keys: &[(Reg, Reg)]) -> Vec<Reg> {
    let (c2, c3) = (em.ci32(2), em.ci32(3));
    let mut out: Vec<Option<Reg>> = vec![None; offsets.len()];
    // Runs of registers: consecutive constants on one base.
    let mut runs: Vec<Vec<usize>> = vec![];
    match aff {
        Some(a) if a.len() == offsets.len() => {
            let mut order: Vec<usize> = (0..a.len()).collect();
            order.sort_by(|&i, &j| (&a[i].0.name, a[i].1).cmp(&(&a[j].0.name, a[j].1)));
            for i in order {
                match runs.last_mut() {
                    Some(run)
                        if run.len() < 8
                            && a[run[run.len() - 1]].0 == a[i].0
                            && a[run[run.len() - 1]].1 + 1 == a[i].1 =>
                    {
                        run.push(i)
                    }
                    _ => runs.push(vec![i]),
                }
            }
        }
        _ => runs = (0..offsets.len()).map(|i| vec![i]).collect(),
    }
    for run in runs {
        let v0 = &offsets[run[0]];
        let q0 = em.lshr(v0, &c2);
        let s = em.and(v0, &c3);
        let blocks = (run.len() + 3).div_ceil(4);
        let mut words = vec![];
        for k in 0..blocks {
            let ctr = if k == 0 {
                q0.clone()
            } else {
                // (v0 + 4k) / 4 as u32: wraps to 0 past 2^30, like the offsets past 2^32.
                let kc = em.ci32(k as i64);
                let mask = em.ci32(0x3FFF_FFFF);
                let q = em.add(&q0, &kc);
                em.and(&q, &mask)
            };
            words.extend(philox(em, &ctr, keys));
        }
        for (j, &reg) in run.iter().enumerate() {
            let cands: Vec<Reg> = (0..4).map(|t| words[j + t].clone()).collect();
            let w = pick(em, &s, &cands);
            out[reg] = Some(word_to_uniform(em, &w));
        }
    }
    out.into_iter().flatten().collect()
}

impl Lowering<'_> {
    pub(crate) fn rand(&mut self, seed: ValueId, offsets: ValueId) -> Result<Value, Diagnostic> {
        let seed = self.scalar(seed)?;
        // The round keys are the same for every element: compute them once.
        let zero = self.em.ci32(0);
        let mut keys = vec![(seed, zero)];
        for round in 1..10 {
            let (k0, k1) = keys[round - 1].clone();
            let (w0, w1) = (self.em.ci32(PHILOX_W[0]), self.em.ci32(PHILOX_W[1]));
            let n0 = self.em.add(&k0, &w0);
            let n1 = self.em.add(&k1, &w1);
            keys.push((n0, n1));
        }
        let regs = self.tile(offsets)?;
        let aff = self.aff.get(&offsets).cloned();
        Ok(Value::Tile(rand_tile(&mut self.em, &regs, aff.as_deref(), &keys)))
    }
}
