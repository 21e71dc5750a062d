//! `tile.sort` (the language's `sort`, `argsort`, `topk`): a bitonic network in shared
//! memory.
//!
//! Every thread writes its elements as (key, position along the axis) pairs — keys as f32 for
//! the float dtypes (exact for f16 and bf16), i32 for i32 — into a buffer where each line
//! along the sorted axis is contiguous; one barrier. Then the network's stages ([`network`]):
//! a sort's is the bitonic sort of a line of `n` (a power of two, as every tile extent),
//! `log₂n · (log₂n + 1) / 2` stages of `n / 2` compare-exchanges a line; a `topk`'s (the sort
//! cut to `k < n`) sorts the groups of `k` and then halves the live groups round by round, far
//! fewer pairs (option `topk-network`). Each stage is written out (or, with the `sort-loops`
//! option, the sort's stages are two loops); its pairs are dealt out to the block's threads
//! (a last share not every thread has is guarded), one barrier a stage. The order compares
//! (key, position), which makes every pair of elements distinct: the network's result is the
//! stable sort — equal keys keep the lower position first, as torch's — for either direction,
//! with NaN above every number. Last, each thread reads the first `k` of each line in the
//! result's layout. A `topk` asks for the values and then the positions of the same sort: the
//! second op reuses the first's network when it comes right after it.

use super::emit::{ICmp, Reg, Ty};
use super::int_arith::IntArith;
use super::regs::Value;
use super::{err, Lowering};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
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

/// This thread's pair of one round of a stage's compare-exchanges (`network_shares`).
struct Share {
    /// The pair's index within its line.
    p: Reg,
    /// Where its line starts in the buffers.
    start: Reg,
    /// Set where not every thread has a pair this round: whether this one has.
    guard: Option<Reg>,
}

/// A stage of a network, over lines of `n`: `2^pbits` compare-exchanges a line, pair `p`
/// (`0 ≤ p < 2^pbits`) between elements `x` and `x + 2^dist` with
/// `x = ((p >> lb) << gb) | ins(p mod 2^lb, jb)` (`ins` puts a 0 in at bit `jb`), put in the
/// sort's order — in the reverse order where bit `rev` of `x` is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NetStage {
    pub pbits: u32,
    pub lb: u32,
    pub gb: u32,
    pub jb: u32,
    pub dist: u32,
    pub rev: Option<u32>,
}

/// The stages that leave the first `2^log_k` of each line of `2^log_n` as the sort's first
/// ones, in order: the bitonic sort of every group of `k` (consecutive groups alternately in
/// the sort's order and in the reverse one), then `log₂(n/k)` rounds, each taking pairs of
/// the live groups — one in order, the next reversed: their `k` elementwise winners are the
/// `k` first of both, a bitonic sequence (the half-cleaner's split) — into the first group's
/// place and merging it, again alternately, until group 0 alone is live and in order. With
/// `k = n` this is the bitonic sort: `log₂n·(log₂n+1)/2` stages of `n/2` pairs. Fewer
/// otherwise: topk_partial's 8 of 2048 is 38 stages, of 1024 pairs down to 4, against 66
/// of 1024 (Shanbhag, Pirk, Madden, "Efficient Top-K Query Processing on Massively Parallel
/// Hardware", SIGMOD 2018).
pub(crate) fn network(log_n: u32, log_k: u32) -> Vec<NetStage> {
    let log_k = log_k.min(log_n);
    let mut stages = vec![];
    for sb in 1..=log_k {
        for jb in (0..sb).rev() {
            let half = log_n - 1;
            stages.push(NetStage { pbits: half, lb: half, gb: log_n, jb, dist: jb, rev: Some(sb) });
        }
    }
    for r in 1..=log_n - log_k {
        // Live groups sit at multiples of 2^(r-1)·k: the winners of each pair go to the first.
        let gb = r + log_k;
        stages.push(NetStage { pbits: log_n - r, lb: log_k, gb, jb: log_k, dist: gb - 1, rev: None });
        for jb in (0..log_k).rev() {
            stages.push(NetStage { pbits: log_n - r - 1, lb: log_k - 1, gb, jb, dist: jb, rev: Some(gb) });
        }
    }
    stages
}

impl NetStage {
    /// The first element of pair `p` (see [`NetStage`]); its partner is `2^dist` after it.
    /// One formula for the lowering's registers and the tests' model ([`IntArith`]).
    pub(crate) fn first<A: IntArith>(&self, a: &mut A, p: &A::V) -> A::V {
        // Written in the ops of the sort's former lowering (a stage's ops unchanged where the
        // whole line is one group).
        let lo = if self.lb < self.pbits { a.and_c(p, (1 << self.lb) - 1) } else { p.clone() };
        let ins = if self.jb < self.lb {
            let hi = a.lshr_c(&lo, i64::from(self.jb));
            let hi = a.shl_c(&hi, i64::from(self.jb + 1));
            let low = a.and_c(&lo, (1 << self.jb) - 1);
            a.or(&hi, &low)
        } else {
            lo
        };
        if self.lb < self.pbits {
            let g = a.lshr_c(p, i64::from(self.lb));
            let g = a.shl_c(&g, i64::from(self.gb));
            a.or(&g, &ins)
        } else {
            ins
        }
    }
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
        let lines = total / n;
        let (ko, io) = (self.em.ci32(region), self.em.ci32(region + total * 4));
        let keys = self.em.gep(&base, &ko, &Ty::I8);
        let idxs = self.em.gep(&base, &io, &Ty::I8);
        let log_n = n.trailing_zeros();
        if !self.sort_loops {
            // The stages written out, their strides constants: the sort's, or the top-k's
            // (fewer, and fewer pairs a stage as the lines halve) where it keeps k < n.
            let kept = if self.topk_network { (*k).clamp(1, n) } else { n };
            let stages = network(log_n, kept.trailing_zeros());
            // Each stage shape's shares, made once (before the first stage: they dominate all).
            let mut shares: BTreeMap<u32, Vec<Share>> = BTreeMap::new();
            for s in &stages {
                if let Entry::Vacant(e) = shares.entry(s.pbits) {
                    e.insert(self.network_shares(lines << s.pbits, threads, s.pbits, log_n));
                }
            }
            for s in &stages {
                for share in &shares[&s.pbits] {
                    self.on_share(share, |lw| lw.compare_exchange(share, s, (&keys, &idxs), &kty, *descending))?;
                }
                self.full_barrier();
            }
        } else {
            // Two loops of the program over the sort's stages (outer: the merged size 2^sb,
            // sb = 1 … log₂n; inner: the distance 2^jb, jb = sb − 1 … 0): a sort of 2048 is
            // then 330 lines of PTX instead of 7,700 and its whole compile 137 M instructions
            // instead of 2,843 M, but it ran 11 % slower on the H100 (topk_partial 16 / 256
            // rows of 152064, 0.155 / 2.149 ms against 0.138 / 1.938: the run-time strides and
            // the loops' branches in each stage's critical path;
            // bench/results/2026-11-27-h100-session18/sort-loops/). The whole sort, also for a
            // top-k: its stages do not share one shape.
            let half_bits = log_n.saturating_sub(1);
            let mine = self.network_shares(total / 2, threads, half_bits, log_n);
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
            let last_sb = self.em.ci32(i64::from(log_n));
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
            for share in &mine {
                self.on_share(share, |lw| {
                    lw.looped_compare_exchange(share, (&sb, &jb), (&keys, &idxs), &kty, *descending)
                })?;
            }
            self.full_barrier();
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

    /// This thread's shares of a stage of `count` pairs (`2^pbits` a line, lines of `2^log_n`),
    /// `threads` pairs a share: the pair's index within its line and where the line starts,
    /// made once for every stage of that shape. A last share that not every thread has is
    /// guarded: two threads doing one pair could each read the other's half-written result.
    fn network_shares(&mut self, count: i64, threads: i64, pbits: u32, log_n: u32) -> Vec<Share> {
        let rounds = (count + threads - 1) / threads;
        (0..rounds)
            .map(|round| {
                let f = self.em.ci32(round * threads);
                let tid = self.tid.clone();
                let q = self.em.add(&tid, &f);
                let guard = ((round + 1) * threads > count).then(|| {
                    let c = self.em.ci32(count);
                    self.em.icmp(ICmp::Slt, &q, &c)
                });
                let pb = self.em.ci32(i64::from(pbits));
                let line = self.em.lshr(&q, &pb);
                let pmask = self.em.ci32((1 << pbits) - 1);
                let p = self.em.and(&q, &pmask);
                let nb = self.em.ci32(i64::from(log_n));
                Share { p, start: self.em.shl(&line, &nb), guard }
            })
            .collect()
    }

    /// `f`'s code for a share: in a block only the threads that have a pair run where the
    /// share is guarded.
    fn on_share(&mut self, share: &Share, f: impl FnOnce(&mut Self)) -> Result<(), Diagnostic> {
        match &share.guard {
            None => {
                f(self);
                Ok(())
            }
            Some(g) => self.when(g, |lw| {
                f(lw);
                Ok(())
            }),
        }
    }

    /// One compare-exchange of a written-out stage for this thread's pair (`NetStage::first`).
    fn compare_exchange(&mut self, share: &Share, stage: &NetStage, bufs: (&Reg, &Reg), kty: &Ty, descending: bool) {
        let x = stage.first(&mut self.em, &share.p);
        let ex = self.em.add(&share.start, &x);
        let d = self.em.ci32(1 << stage.dist);
        let ey = self.em.add(&ex, &d);
        let reversed = stage.rev.map(|b| {
            let bit = self.em.ci32(1 << b);
            self.reversed(&x, &bit)
        });
        self.exchange((&ex, &ey), reversed, bufs, kty, descending);
    }

    /// One compare-exchange of the sort's stage `(size, j) = (2^sb, 2^jb)` with run-time
    /// exponents (`sort-loops`): elements `x` and `x + j` of this thread's pair's line, where
    /// x is the pair's index with a 0 put in at bit jb, in the reverse order where `x & size`
    /// is set (the bitonic halves).
    fn looped_compare_exchange(
        &mut self,
        share: &Share,
        (sb, jb): (&Reg, &Reg),
        bufs: (&Reg, &Reg),
        kty: &Ty,
        descending: bool,
    ) {
        let one = self.em.ci32(1);
        let j = self.em.shl(&one, jb);
        let jb1 = self.em.add(jb, &one);
        let jm = self.em.sub(&j, &one);
        let hi = self.em.lshr(&share.p, jb);
        let hi = self.em.shl(&hi, &jb1);
        let lo = self.em.and(&share.p, &jm);
        let x = self.em.or(&hi, &lo);
        let ex = self.em.add(&share.start, &x);
        let ey = self.em.add(&ex, &j);
        let sz = self.em.shl(&one, sb);
        let reversed = self.reversed(&x, &sz);
        self.exchange((&ex, &ey), Some(reversed), bufs, kty, descending);
    }

    /// Whether `x & bit` is set: the pair goes in the reverse order.
    fn reversed(&mut self, x: &Reg, bit: &Reg) -> Reg {
        let b = self.em.and(x, bit);
        let zero = self.em.ci32(0);
        self.em.icmp(ICmp::Ne, &b, &zero)
    }

    /// Elements `ex` and `ey` of the buffers put in the sort's order (the reverse one where
    /// `reversed` holds).
    fn exchange(
        &mut self,
        (ex, ey): (&Reg, &Reg),
        reversed: Option<Reg>,
        (keys, idxs): (&Reg, &Reg),
        kty: &Ty,
        descending: bool,
    ) {
        let at = |lw: &mut Self, base: &Reg, e: &Reg, ty: &Ty| lw.em.gep(base, e, ty);
        let (kx_p, ky_p) = (at(self, keys, ex, kty), at(self, keys, ey, kty));
        let (ix_p, iy_p) = (at(self, idxs, ex, &Ty::I32), at(self, idxs, ey, &Ty::I32));
        let kx = self.em.load(&kx_p, kty.clone(), 4);
        let ky = self.em.load(&ky_p, kty.clone(), 4);
        let ix = self.em.load(&ix_p, Ty::I32, 4);
        let iy = self.em.load(&iy_p, Ty::I32, 4);
        // The two elements' positions differ, so the order is total and strict: x comes first
        // exactly when y does not. One comparison serves both halves (LLVM cannot see that
        // `before(x, y)` is `!before(y, x)`: the NaN tests and the tie-break make ~10 ops).
        let y_first = self.before((&ky, &iy), (&kx, &ix), kty, descending);
        let swap = match reversed {
            Some(r) => self.em.xor(&y_first, &r),
            None => y_first,
        };
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
            // NaN the largest: a > b where b is a number and a is larger or NaN (`ugt`), a < b
            // where a is a number and b larger or NaN; two NaNs tie.
            let a_num = self.em.cmp(true, "ord", a, a);
            let b_num = self.em.cmp(true, "ord", b, b);
            let ugt = self.em.cmp(true, "ugt", a, b);
            let ult = self.em.cmp(true, "ult", a, b);
            (self.em.and(&b_num, &ugt), self.em.and(&a_num, &ult))
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

#[cfg(test)]
mod tests {
    use super::super::int_arith::Ints;
    use super::{network, NetStage};

    /// The lowering's order on (key, position): NaN the largest, ties by the lower position.
    fn before(a: (f32, i64), b: (f32, i64), descending: bool) -> bool {
        let gt = a.0 > b.0 || (a.0.is_nan() && !b.0.is_nan());
        let lt = a.0 < b.0 || (b.0.is_nan() && !a.0.is_nan());
        let (wins, loses) = if descending { (gt, lt) } else { (lt, gt) };
        wins || (!loses && a.1 < b.1)
    }

    /// A line through the stages as the block runs them: every pair of a stage at once.
    fn run(stages: &[NetStage], line: &mut [(f32, i64)], descending: bool) {
        let n = line.len() as i64;
        for s in stages {
            let mut touched = vec![false; line.len()];
            for p in 0..1i64 << s.pbits {
                let x = s.first(&mut Ints, &p);
                let y = x + (1 << s.dist);
                assert!(0 <= x && y < n, "{s:?}: pair {p} is ({x}, {y}) in a line of {n}");
                for e in [x, y] {
                    assert!(!std::mem::replace(&mut touched[e as usize], true), "{s:?}: {e} twice");
                }
                let rev = s.rev.is_some_and(|b| x & (1 << b) != 0);
                let (a, b) = (line[x as usize], line[y as usize]);
                if before(b, a, descending) != rev {
                    line.swap(x as usize, y as usize);
                }
            }
        }
    }

    /// Every network leaves the stable sort's first k, for every power-of-two n and k, both
    /// orders, ties and NaN; a top-k's has no more stages than the sort and fewer pairs (n ≥ 4).
    #[test]
    fn networks_leave_the_first_k_of_the_stable_sort() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for log_n in 0..=9u32 {
            let n = 1usize << log_n;
            for log_k in 0..=log_n {
                let k = 1usize << log_k;
                let stages = network(log_n, log_k);
                let pairs = |s: &[NetStage]| s.iter().map(|s| 1u64 << s.pbits).sum::<u64>();
                let sort = network(log_n, log_n);
                assert!(stages.len() <= sort.len());
                assert!(pairs(&stages) < pairs(&sort) || n < 4 || k == n, "n = {n}, k = {k}");
                for trial in 0..4 {
                    for descending in [false, true] {
                        let line: Vec<(f32, i64)> = (0..n as i64)
                            .map(|i| {
                                seed ^= seed << 13;
                                seed ^= seed >> 7;
                                seed ^= seed << 17;
                                let v = match seed % 11 {
                                    0 => f32::NAN,
                                    1 => f32::INFINITY,
                                    2 => f32::NEG_INFINITY,
                                    r => ((r + trial) % 5) as f32, // many ties
                                };
                                (v, i)
                            })
                            .collect();
                        let mut want = line.clone();
                        want.sort_by(|a, b| {
                            if before(*a, *b, descending) {
                                std::cmp::Ordering::Less
                            } else {
                                std::cmp::Ordering::Greater
                            }
                        });
                        let mut got = line.clone();
                        run(&stages, &mut got, descending);
                        let pos = |v: &[(f32, i64)]| v[..k].iter().map(|e| e.1).collect::<Vec<_>>();
                        assert_eq!(pos(&got), pos(&want), "n = {n}, k = {k}, descending {descending}");
                    }
                }
            }
        }
        // topk_partial's network: 8 of 2048.
        let s = network(11, 3);
        assert_eq!(s.len(), 38);
        // The groups' sorts, then eight rounds of a halving and three merge stages.
        assert_eq!(s.iter().map(|s| 1u64 << s.pbits).sum::<u64>(), 6 * 1024 + 2040 + 3 * 1020);
    }
}
