//! `tile.sort` (the language's `sort`, `argsort`, `topk`): a bitonic sorting network in
//! shared memory.
//!
//! Every thread writes its elements as (key, position along the axis) pairs — keys as f32 for
//! the float dtypes (exact for f16 and bf16), i32 for i32 — into a buffer where each line
//! along the sorted axis is contiguous; one barrier. Then the network: for every stage
//! `(k, j)` of the bitonic sort of a line of `n` (a power of two, as every tile extent), the
//! `lines · n / 2` compare-exchanges are dealt out to the block's threads (a thread's last
//! share is clamped to the last pair: two threads then write the same pair with the same
//! values), one barrier a stage: `log₂n · (log₂n + 1) / 2` of them. The order compares
//! (key, position), which makes every pair of elements distinct: the network's result is the
//! stable sort — equal keys keep the lower position first, as torch's — for either direction,
//! with NaN above every number. Last, each thread reads the first `k` of each line in the
//! result's layout. A `topk` asks for the values and then the positions of the same sort: the
//! second op reuses the first's network when it comes right after it.

use super::emit::{ICmp, Reg, Ty};
use super::regs::Value;
use super::{err, Lowering};
use tilec_core::tir::{Op, OpKind, Type, ValueId};
use tilec_core::{DType, Diagnostic};

/// A sort just lowered: its operand and order, where it was, and both of its results.
#[derive(Clone, Debug)]
pub(crate) struct LastSort {
    key: (ValueId, u32, bool, i64),
    pos: u32,
    values: Vec<Reg>,
    indices: Vec<Reg>,
}

impl Lowering<'_> {
    pub(crate) fn sort(&mut self, op: &Op, rty: Option<&Type>) -> Result<Value, Diagnostic> {
        let OpKind::Sort { value, axis, descending, k, indices } = &op.kind else {
            return Err(err("not a sort"));
        };
        let key = (*value, *axis, *descending, *k);
        if let Some(l) = self.last_sort.as_ref().filter(|l| l.key == key && l.pos + 1 == self.pos) {
            return Ok(Value::Tile(if *indices { l.indices.clone() } else { l.values.clone() }));
        }
        let xty = self.func.ty(*value).clone();
        let ty = rty.ok_or_else(|| err("sort without result"))?.clone();
        let regs = self.tile(*value)?;
        let (shape, rshape) = (xty.shape().to_vec(), ty.shape().to_vec());
        let ax = *axis as usize;
        let n = shape[ax];
        let total: i64 = shape.iter().product();
        let float = xty.dtype().is_float();
        let kty = if float { Ty::F32 } else { Ty::I32 };
        // Element strides of the buffer: each line along the axis contiguous, lines row-major.
        let mut st = vec![0i64; shape.len()];
        let mut m = n;
        for d in (0..shape.len()).rev() {
            if d == ax {
                st[d] = 1;
            } else {
                st[d] = m;
                m *= shape[d];
            }
        }
        let bytes = total * 8;
        let region = self.smem_region(bytes)?;
        self.smem_write_begin(region, bytes);
        let base = self.smem_base();
        let ls = xty.layout().ok_or_else(|| err("a sort of a tile without layout"))?.clone();
        let kaddr = self.exchange_addresses(&ls, &shape, &st, region, 4, &base);
        let iaddr = self.exchange_addresses(&ls, &shape, &st, region + total * 4, 4, &base);
        let along = self.thread_base(&ls, &shape, ax);
        for (r, v) in regs.iter().enumerate() {
            let kv = match xty.dtype() {
                DType::F16 | DType::BF16 => self.em.convert("fpext", v, Ty::F32),
                _ => v.clone(),
            };
            self.em.store(&kv, &kaddr[r], 4);
            let off = self.em.ci32(ls.reg_offset(&shape, r as i64)[ax]);
            let p = self.em.add(&along, &off);
            self.em.store(&p, &iaddr[r], 4);
        }
        self.smem_written();

        // The network.
        let threads = i64::from(self.func.num_warps) * 32;
        let pairs = total / 2;
        let rounds = (pairs + threads - 1) / threads;
        let half_bits = (n / 2).max(1).trailing_zeros();
        let (ko, io) = (self.em.ci32(region), self.em.ci32(region + total * 4));
        let keys = self.em.gep(&base, &ko, &Ty::I8);
        let idxs = self.em.gep(&base, &io, &Ty::I8);
        let mut size = 2;
        while size <= n {
            let mut j = size / 2;
            while j >= 1 {
                for round in 0..rounds {
                    self.compare_exchange(
                        round * threads,
                        pairs,
                        n,
                        half_bits,
                        size,
                        j,
                        (&keys, &idxs),
                        &kty,
                        *descending,
                    );
                }
                self.full_barrier();
                j /= 2;
            }
            size *= 2;
        }

        // The first k of each line, in the result's layout.
        let lr = ty.layout().ok_or_else(|| err("a sort into a tile without layout"))?.clone();
        let kread = self.exchange_addresses(&lr, &rshape, &st, region, 4, &base);
        let iread = self.exchange_addresses(&lr, &rshape, &st, region + total * 4, 4, &base);
        let mut vals = vec![];
        let mut pos = vec![];
        for (ka, ia) in kread.iter().zip(&iread) {
            let kv = self.em.load(ka, kty.clone(), 4);
            vals.push(match xty.dtype() {
                DType::F16 | DType::BF16 => self.em.convert("fptrunc", &kv, Ty::of(xty.dtype())),
                _ => kv,
            });
            pos.push(self.em.load(ia, Ty::I32, 4));
        }
        self.smem_read_done(region, bytes);
        self.last_sort = Some(LastSort { key, pos: self.pos, values: vals.clone(), indices: pos.clone() });
        Ok(Value::Tile(if *indices { pos } else { vals }))
    }

    /// One compare-exchange of stage `(size, j)` for this thread's pair `first + tid` (clamped
    /// to the last pair): elements `x` and `x + j` of its line, in the order of the sort where
    /// `x & size` is 0 and in the reverse order elsewhere (the bitonic halves).
    #[allow(clippy::too_many_arguments)]
    fn compare_exchange(
        &mut self,
        first: i64,
        pairs: i64,
        n: i64,
        half_bits: u32,
        size: i64,
        j: i64,
        (keys, idxs): (&Reg, &Reg),
        kty: &Ty,
        descending: bool,
    ) {
        let f = self.em.ci32(first);
        let tid = self.tid.clone();
        let q0 = self.em.add(&tid, &f);
        let last = self.em.ci32(pairs - 1);
        let inside = self.em.icmp(ICmp::Slt, &q0, &last);
        let q = self.em.select(&inside, &q0, &last);
        let hb = self.em.ci32(i64::from(half_bits));
        let line = self.em.lshr(&q, &hb);
        let hmask = self.em.ci32((n / 2).max(1) - 1);
        let p = self.em.and(&q, &hmask);
        let jb = j.trailing_zeros();
        let (jb0, jb1, jm) = (self.em.ci32(i64::from(jb)), self.em.ci32(i64::from(jb) + 1), self.em.ci32(j - 1));
        let hi = self.em.lshr(&p, &jb0);
        let hi = self.em.shl(&hi, &jb1);
        let lo = self.em.and(&p, &jm);
        let x = self.em.or(&hi, &lo);
        let nb = self.em.ci32(i64::from(n.trailing_zeros()));
        let start = self.em.shl(&line, &nb);
        let ex = self.em.add(&start, &x);
        let jr = self.em.ci32(j);
        let ey = self.em.add(&ex, &jr);
        let at = |lw: &mut Self, base: &Reg, e: &Reg, ty: &Ty| lw.em.gep(base, e, ty);
        let (kx_p, ky_p) = (at(self, keys, &ex, kty), at(self, keys, &ey, kty));
        let (ix_p, iy_p) = (at(self, idxs, &ex, &Ty::I32), at(self, idxs, &ey, &Ty::I32));
        let kx = self.em.load(&kx_p, kty.clone(), 4);
        let ky = self.em.load(&ky_p, kty.clone(), 4);
        let ix = self.em.load(&ix_p, Ty::I32, 4);
        let iy = self.em.load(&iy_p, Ty::I32, 4);
        let y_first = self.before((&ky, &iy), (&kx, &ix), kty, descending);
        let x_first = self.before((&kx, &ix), (&ky, &iy), kty, descending);
        // In the reversed halves the pair is put in the reverse order.
        let sz = self.em.ci32(size);
        let bit = self.em.and(&x, &sz);
        let zero = self.em.ci32(0);
        let forward = self.em.icmp(ICmp::Eq, &bit, &zero);
        let swap = self.em.select(&forward, &y_first, &x_first);
        let (nkx, nky) = (self.em.select(&swap, &ky, &kx), self.em.select(&swap, &kx, &ky));
        let (nix, niy) = (self.em.select(&swap, &iy, &ix), self.em.select(&swap, &ix, &iy));
        self.em.store(&nkx, &kx_p, 4);
        self.em.store(&nky, &ky_p, 4);
        self.em.store(&nix, &ix_p, 4);
        self.em.store(&niy, &iy_p, 4);
    }

    /// Whether (key a, position ia) comes before (key b, position ib) in the sort: the larger
    /// key first when descending, the smaller otherwise, NaN the largest; equal keys by the
    /// lower position.
    fn before(&mut self, (a, ia): (&Reg, &Reg), (b, ib): (&Reg, &Reg), kty: &Ty, descending: bool) -> Reg {
        let (gt, lt) = if *kty == Ty::F32 {
            let a_nan = self.em.cmp(true, "uno", a, a);
            let b_nan = self.em.cmp(true, "uno", b, b);
            let t = self.em.cint(1, Ty::I1);
            let not_a = self.em.xor(&a_nan, &t);
            let not_b = self.em.xor(&b_nan, &t);
            let ogt = self.em.cmp(true, "ogt", a, b);
            let olt = self.em.cmp(true, "olt", a, b);
            let a_big = self.em.and(&a_nan, &not_b);
            let b_big = self.em.and(&b_nan, &not_a);
            (self.em.or(&ogt, &a_big), self.em.or(&olt, &b_big))
        } else {
            (self.em.icmp(ICmp::Sgt, a, b), self.em.icmp(ICmp::Slt, a, b))
        };
        let (wins, loses) = if descending { (gt, lt) } else { (lt, gt) };
        let lower = self.em.icmp(ICmp::Slt, ia, ib);
        let t = self.em.cint(1, Ty::I1);
        let not_loses = self.em.xor(&loses, &t);
        let tie = self.em.and(&not_loses, &lower);
        self.em.or(&wins, &tie)
    }
}
