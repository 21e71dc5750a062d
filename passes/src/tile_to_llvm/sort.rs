//! `tile.sort` (the language's `sort`, `argsort`, `topk`): a bitonic sorting network in
//! shared memory.
//!
//! Every thread writes its elements as (key, position along the axis) pairs — keys as f32 for
//! the float dtypes (exact for f16 and bf16), i32 for i32 — into a buffer where each line
//! along the sorted axis is contiguous; one barrier. Then the network: for every stage
//! `(k, j)` of the bitonic sort of a line of `n` (a power of two, as every tile extent; each
//! stage written out, or two loops over them with the `sort-loops` option), the
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

/// A stage of the network by its exponents (merged size 2^sb, distance 2^jb): constants where
/// the network is written out, the loops' run-time values with `sort-loops`.
struct Stage<'a> {
    sb: Exp<'a>,
    jb: Exp<'a>,
}

/// One of a stage's exponents.
#[derive(Clone, Copy)]
enum Exp<'a> {
    Const(i64),
    Run(&'a Reg),
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
        // Each of the `log₂n · (log₂n + 1) / 2` stages written out, their strides constants —
        // or, with `sort-loops`, two loops of the program over them (outer: the merged size
        // 2^sb, sb = 1 … log₂n; inner: the distance 2^jb, jb = sb − 1 … 0): a sort of 2048 is
        // then 330 lines of PTX instead of 7,700 and its whole compile 137 M instructions
        // instead of 2,843 M, but it ran 11 % slower on the H100 (topk_partial 16 / 256 rows of
        // 152064, 0.155 / 2.149 ms against 0.138 / 1.938: the run-time strides and the loops'
        // branches in each stage's critical path; bench/results/2026-11-27-h100-session18/sort-loops/).
        let log_n = i64::from(n.trailing_zeros());
        let mine: Vec<(Reg, Reg)> =
            (0..rounds).map(|round| self.network_pair(round, threads, pairs, n, half_bits)).collect();
        if !self.sort_loops {
            for sb in 1..=log_n {
                for jb in (0..sb).rev() {
                    let st = Stage { sb: Exp::Const(sb), jb: Exp::Const(jb) };
                    self.network_stage(&mine, &st, (&keys, &idxs), &kty, *descending);
                }
            }
        } else {
            let (outer, outer_body, inner, inner_body, latch, done) = (
                self.em.new_block(),
                self.em.new_block(),
                self.em.new_block(),
                self.em.new_block(),
                self.em.new_block(),
                self.em.new_block(),
            );
            let one = self.em.ci32(1);
            self.em.br(&outer, std::slice::from_ref(&one));
            let sb = self.em.fresh_reg(Ty::I32);
            self.em.label(&outer, std::slice::from_ref(&sb));
            let last_sb = self.em.ci32(log_n);
            let more = self.em.icmp(ICmp::Sle, &sb, &last_sb);
            self.em.cond_br(&more, &outer_body, &done);
            self.em.label(&outer_body, &[]);
            let jb0 = self.em.sub(&sb, &one);
            self.em.br(&inner, std::slice::from_ref(&jb0));
            let jb = self.em.fresh_reg(Ty::I32);
            self.em.label(&inner, std::slice::from_ref(&jb));
            let zero = self.em.ci32(0);
            let more = self.em.icmp(ICmp::Sge, &jb, &zero);
            self.em.cond_br(&more, &inner_body, &latch);
            self.em.label(&inner_body, &[]);
            let st = Stage { sb: Exp::Run(&sb), jb: Exp::Run(&jb) };
            self.network_stage(&mine, &st, (&keys, &idxs), &kty, *descending);
            let next_jb = self.em.sub(&jb, &one);
            self.em.br(&inner, &[next_jb]);
            self.em.label(&latch, &[]);
            let next_sb = self.em.add(&sb, &one);
            self.em.br(&outer, &[next_sb]);
            self.em.label(&done, &[]);
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

    /// This thread's pair of round `round` of every stage (`threads` pairs a round, the last
    /// share clamped to the last pair): its index within its line and where the line starts,
    /// made once for the whole network.
    fn network_pair(&mut self, round: i64, threads: i64, pairs: i64, n: i64, half_bits: u32) -> (Reg, Reg) {
        let f = self.em.ci32(round * threads);
        let tid = self.tid.clone();
        let q0 = self.em.add(&tid, &f);
        let last = self.em.ci32(pairs - 1);
        let inside = self.em.icmp(ICmp::Slt, &q0, &last);
        let q = self.em.select(&inside, &q0, &last);
        let hb = self.em.ci32(i64::from(half_bits));
        let line = self.em.lshr(&q, &hb);
        let hmask = self.em.ci32((n / 2).max(1) - 1);
        let p = self.em.and(&q, &hmask);
        let nb = self.em.ci32(i64::from(n.trailing_zeros()));
        (p, self.em.shl(&line, &nb))
    }

    /// A stage of the network: the thread's pairs of each round (`network_pair`), then a
    /// barrier.
    fn network_stage(&mut self, pairs: &[(Reg, Reg)], stage: &Stage, bufs: (&Reg, &Reg), kty: &Ty, descending: bool) {
        for pair in pairs {
            self.compare_exchange(pair, stage, bufs, kty, descending);
        }
        self.full_barrier();
    }

    /// One compare-exchange of stage `(size, j) = (2^sb, 2^jb)` (`Stage`) for this
    /// thread's pair `first + tid` (clamped to the last pair): elements `x` and `x + j` of its
    /// line, in the order of the sort where `x & size` is 0 and in the reverse order elsewhere
    /// (the bitonic halves).
    fn compare_exchange(
        &mut self,
        (p, start): &(Reg, Reg),
        stage: &Stage,
        (keys, idxs): (&Reg, &Reg),
        kty: &Ty,
        descending: bool,
    ) {
        // (Constant exponents as constants: the written-out network's code is what it was
        // before the loops existed.)
        let (jb0, jb1, jm) = match stage.jb {
            Exp::Const(jb) => (self.em.ci32(jb), self.em.ci32(jb + 1), self.em.ci32((1 << jb) - 1)),
            Exp::Run(jb) => {
                let one = self.em.ci32(1);
                let j = self.pow2(Exp::Run(jb));
                (jb.clone(), self.em.add(jb, &one), self.em.sub(&j, &one))
            }
        };
        let hi = self.em.lshr(p, &jb0);
        let hi = self.em.shl(&hi, &jb1);
        let lo = self.em.and(p, &jm);
        let x = self.em.or(&hi, &lo);
        let ex = self.em.add(start, &x);
        let jr = self.pow2(stage.jb);
        let ey = self.em.add(&ex, &jr);
        let at = |lw: &mut Self, base: &Reg, e: &Reg, ty: &Ty| lw.em.gep(base, e, ty);
        let (kx_p, ky_p) = (at(self, keys, &ex, kty), at(self, keys, &ey, kty));
        let (ix_p, iy_p) = (at(self, idxs, &ex, &Ty::I32), at(self, idxs, &ey, &Ty::I32));
        let kx = self.em.load(&kx_p, kty.clone(), 4);
        let ky = self.em.load(&ky_p, kty.clone(), 4);
        let ix = self.em.load(&ix_p, Ty::I32, 4);
        let iy = self.em.load(&iy_p, Ty::I32, 4);
        // The two elements' positions differ, so the order is total and strict: x comes first
        // exactly when y does not. One comparison serves both halves (LLVM cannot see that
        // `before(x, y)` is `!before(y, x)`: the NaN tests and the tie-break make ~14 ops).
        let y_first = self.before((&ky, &iy), (&kx, &ix), kty, descending);
        // In the reversed halves the pair is put in the reverse order.
        let sz = self.pow2(stage.sb);
        let bit = self.em.and(&x, &sz);
        let zero = self.em.ci32(0);
        let reversed = self.em.icmp(ICmp::Ne, &bit, &zero);
        let swap = self.em.xor(&y_first, &reversed);
        let (nkx, nky) = (self.em.select(&swap, &ky, &kx), self.em.select(&swap, &kx, &ky));
        let (nix, niy) = (self.em.select(&swap, &iy, &ix), self.em.select(&swap, &ix, &iy));
        self.em.store(&nkx, &kx_p, 4);
        self.em.store(&nky, &ky_p, 4);
        self.em.store(&nix, &ix_p, 4);
        self.em.store(&niy, &iy_p, 4);
    }

    /// 2^e: a constant, or a shift of 1 by the run-time exponent.
    fn pow2(&mut self, e: Exp) -> Reg {
        match e {
            Exp::Const(e) => self.em.ci32(1 << e),
            Exp::Run(e) => {
                let one = self.em.ci32(1);
                self.em.shl(&one, e)
            }
        }
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
