//! `tile.sort` (the language's `sort`, `argsort`, `topk`): a bitonic network in shared
//! memory.
//!
//! Every thread writes each of its elements as one u64 code ([`Lowering::code`]): the key's
//! 32 bits made unsigned-ordered (NaN one value above every number, -0.0 a tie with 0.0;
//! flipped when descending) over its position along the axis. Codes are distinct, and their
//! ascending order is the sort's order on (key, position): the stable sort — equal keys keep
//! the lower position first, as torch's — for either direction, with NaN above every number.
//! Each line along the sorted axis is contiguous in the buffer; a float sort asked for its
//! values also writes the values as they came into a second buffer. One barrier. Then the
//! network's stages ([`network`]): a sort's is the bitonic sort of a line of `n` (a power of
//! two, as every tile extent), `log₂n · (log₂n + 1) / 2` stages of `n / 2` compare-exchanges
//! a line; a `topk`'s (the sort cut to `k < n`) sorts the groups of `k` and then halves the
//! live groups round by round, far fewer pairs (option `topk-network`). Each stage is written
//! out (or, with the `sort-loops` option, the sort's stages are two loops); its pairs are
//! dealt out to the block's threads (a last share not every thread has is guarded), one
//! barrier a stage. A compare-exchange is two 8-byte loads, one unsigned compare, two selects
//! and two 8-byte stores (against (key, position) pairs in two buffers and a ten-op float
//! order: 40 % of topk_merge's compile and 16 % of its run time on an H200, session 44). Last,
//! each thread reads the first `k` codes of each line in the result's layout: the position is
//! the code's low half; an i32 key its high half again, a float value is read back from where
//! the position says it came (exactly as it was: NaN payloads and -0.0 kept). A `topk` asks
//! for the values and then the positions of the same sort: the second op reuses the first's
//! network when it comes right after it.

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
    /// None where an argsort of floats did not keep them (a values op after it sorts again).
    values: Option<Vec<Reg>>,
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
            if *indices {
                return Ok(Value::Tile(l.indices.clone()));
            }
            if let Some(v) = &l.values {
                return Ok(Value::Tile(v.clone()));
            }
        }
        let xty = self.func.ty(*value).clone();
        let ty = rty.ok_or_else(|| err("sort without result"))?.clone();
        let regs = self.tile(*value)?;
        let (shape, rshape) = (xty.shape().to_vec(), ty.shape().to_vec());
        let ax = *axis as usize;
        let n = shape[ax];
        let total: i64 = shape.iter().product();
        let float = xty.dtype().is_float();
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
        // One buffer of (key, position) codes, u64 in the sort's ascending order; where the
        // values are floats and asked for, a second one of the values as they came (the code's
        // key is not theirs: NaN and -0.0 are made one, see `code`).
        let from_codes = !float;
        let keep_values = float && !*indices;
        let esize = i64::from(xty.dtype().bytes());
        let codes_bytes = total * 8;
        let bytes = codes_bytes + if keep_values { total * esize } else { 0 };
        let region = self.smem_region(bytes)?;
        let vregion = region + codes_bytes;
        self.smem_write_begin(region, bytes);
        let base = self.smem_base();
        let ls = xty.layout().ok_or_else(|| err("a sort of a tile without layout"))?.clone();
        let caddr = self.exchange_addresses(&ls, &shape, &st, region, 8, &base);
        let vaddr = if keep_values { self.exchange_addresses(&ls, &shape, &st, vregion, esize, &base) } else { vec![] };
        let along = self.thread_base(&ls, &shape, ax);
        for (r, v) in regs.iter().enumerate() {
            let (p, _) = self.reg_position(&ls, &shape, &along, ax, r as i64);
            let c = self.code(v, &p, xty.dtype(), *descending);
            self.em.store(&c, &caddr[r], 8);
            if keep_values {
                self.em.store(v, &vaddr[r], esize);
            }
        }
        self.smem_written();

        // The network.
        let threads = i64::from(self.func.num_warps) * 32;
        let lines = total / n;
        let co = self.em.ci32(region);
        let codes = self.em.gep(&base, &co, &Ty::I8);
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
                    self.on_share(share, |lw| lw.compare_exchange(share, s, &codes))?;
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
                self.on_share(share, |lw| lw.looped_compare_exchange(share, (&sb, &jb), &codes))?;
            }
            self.full_barrier();
            let next_jb = self.em.sub(&jb, &one);
            self.em.br(&inner, &[next_jb]);
            self.em.label(&latch, &[]);
            let next_sb = self.em.add(&sb, &one);
            self.em.br(&outer, &[next_sb]);
            self.em.label(&done, &[]);
        }

        // The first k of each line, in the result's layout: the position from the code, the
        // value from the code (i32) or from where the position says it came (floats).
        let lr = ty.layout().ok_or_else(|| err("a sort into a tile without layout"))?.clone();
        let cread = self.exchange_addresses(&lr, &rshape, &st, region, 8, &base);
        let vread =
            if keep_values { self.exchange_addresses(&lr, &rshape, &st, vregion, esize, &base) } else { vec![] };
        let along = if keep_values { Some(self.thread_base(&lr, &rshape, ax)) } else { None };
        let vty = Ty::of(xty.dtype());
        let mut vals = vec![];
        let mut pos = vec![];
        for (r, ca) in cread.iter().enumerate() {
            let c = self.em.load(ca, Ty::I64, 8);
            let p = self.em.convert("trunc", &c, Ty::I32);
            if let Some(along) = &along {
                // vread[r] is where element j of the line came from; the value is `p - j` after.
                let (j, _) = self.reg_position(&lr, &rshape, along, ax, r as i64);
                let back = self.em.sub(&p, &j);
                let at = self.em.gep(&vread[r], &back, &vty);
                vals.push(self.em.load(&at, vty.clone(), esize));
            } else if from_codes {
                let c32 = self.em.cint(32, Ty::I64);
                let hi = self.em.lshr(&c, &c32);
                let hi = self.em.convert("trunc", &hi, Ty::I32);
                let flip = self.em.ci32(i32_flip(*descending));
                vals.push(self.em.xor(&hi, &flip));
            }
            pos.push(p);
        }
        self.smem_read_done(region, bytes);
        let values = (keep_values || from_codes).then(|| vals.clone());
        self.last_sort = Some(LastSort { key, pos: self.pos, values, indices: pos.clone() });
        Ok(Value::Tile(if *indices { pos } else { vals }))
    }

    /// The u64 whose ascending order is the sort's order on (key `v`, position `p`): the key's
    /// 32 bits made unsigned-ordered above the position. A float's key is its f32 bits with
    /// NaN made one positive NaN (above every number, two NaNs a tie) and -0.0 made +0.0 (a
    /// tie with it, as `==` has it), then the sign bit set where it was clear and every bit
    /// flipped where it was set; an i32's key its sign bit flipped. Descending flips the
    /// key's bits (the position's do not flip: a tie keeps the lower position first).
    fn code(&mut self, v: &Reg, p: &Reg, dtype: DType, descending: bool) -> Reg {
        let key = if dtype.is_float() {
            let f = if v.ty == Ty::F32 { v.clone() } else { self.em.convert("fpext", v, Ty::F32) };
            let bits = self.em.bitcast(&f, Ty::I32);
            let zero = self.em.cf32(0.0);
            let is_zero = self.em.cmp(true, "oeq", &f, &zero);
            let z = self.em.ci32(0);
            let bits = self.em.select(&is_zero, &z, &bits);
            let is_nan = self.em.cmp(true, "uno", &f, &f);
            let qnan = self.em.ci32(0x7fc0_0000);
            let bits = self.em.select(&is_nan, &qnan, &bits);
            let c31 = self.em.ci32(31);
            let sign = self.em.ashr(&bits, &c31);
            let set = self.em.ci32(i64::from(i32::MIN));
            let flip = self.em.or(&sign, &set);
            let flip = if descending {
                let all = self.em.ci32(-1);
                self.em.xor(&flip, &all)
            } else {
                flip
            };
            self.em.xor(&bits, &flip)
        } else {
            let flip = self.em.ci32(i32_flip(descending));
            self.em.xor(v, &flip)
        };
        let hi = self.em.convert("zext", &key, Ty::I64);
        let c32 = self.em.cint(32, Ty::I64);
        let hi = self.em.shl(&hi, &c32);
        let lo = self.em.convert("zext", p, Ty::I64);
        self.em.or(&hi, &lo)
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
    fn compare_exchange(&mut self, share: &Share, stage: &NetStage, codes: &Reg) {
        let x = stage.first(&mut self.em, &share.p);
        let ex = self.em.add(&share.start, &x);
        let d = self.em.ci32(1 << stage.dist);
        let ey = self.em.add(&ex, &d);
        let reversed = stage.rev.map(|b| {
            let bit = self.em.ci32(1 << b);
            self.reversed(&x, &bit)
        });
        self.exchange((&ex, &ey), reversed, codes);
    }

    /// One compare-exchange of the sort's stage `(size, j) = (2^sb, 2^jb)` with run-time
    /// exponents (`sort-loops`): elements `x` and `x + j` of this thread's pair's line, where
    /// x is the pair's index with a 0 put in at bit jb, in the reverse order where `x & size`
    /// is set (the bitonic halves).
    fn looped_compare_exchange(&mut self, share: &Share, (sb, jb): (&Reg, &Reg), codes: &Reg) {
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
        self.exchange((&ex, &ey), Some(reversed), codes);
    }

    /// Whether `x & bit` is set: the pair goes in the reverse order.
    fn reversed(&mut self, x: &Reg, bit: &Reg) -> Reg {
        let b = self.em.and(x, bit);
        let zero = self.em.ci32(0);
        self.em.icmp(ICmp::Ne, &b, &zero)
    }

    /// Codes `ex` and `ey` of the buffer put in ascending order (descending where `reversed`
    /// holds). No two codes are equal (their positions differ), so one unsigned compare
    /// orders the pair.
    fn exchange(&mut self, (ex, ey): (&Reg, &Reg), reversed: Option<Reg>, codes: &Reg) {
        let cx_p = self.em.gep(codes, ex, &Ty::I64);
        let cy_p = self.em.gep(codes, ey, &Ty::I64);
        let cx = self.em.load(&cx_p, Ty::I64, 8);
        let cy = self.em.load(&cy_p, Ty::I64, 8);
        let y_first = self.em.icmp(ICmp::Ult, &cy, &cx);
        let swap = match reversed {
            Some(r) => self.em.xor(&y_first, &r),
            None => y_first,
        };
        let (nx, ny) = (self.em.select(&swap, &cy, &cx), self.em.select(&swap, &cx, &cy));
        self.em.store(&nx, &cx_p, 8);
        self.em.store(&ny, &cy_p, 8);
    }
}

/// The constant an i32 key is xor-ed with in its code (`Lowering::code`), and its code's high
/// half with to give the key back: the sign bit, and every other bit too when descending.
fn i32_flip(descending: bool) -> i64 {
    if descending {
        i64::from(i32::MAX)
    } else {
        i64::from(i32::MIN)
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

    /// `Lowering::code`'s arithmetic on the host: the u64 codes order (key, position) as
    /// `before` does — NaN (any payload, either sign) one value above +inf, -0.0 a tie with
    /// 0.0, ties by the lower position, both directions — and i32 keys over their whole range.
    #[test]
    fn codes_order_as_the_sort_does() {
        fn code(bits: i32, float: bool, p: i64, descending: bool) -> u64 {
            let key = if float {
                let f = f32::from_bits(bits as u32);
                let bits = if f.is_nan() {
                    0x7fc0_0000
                } else if f == 0.0 {
                    0
                } else {
                    bits
                };
                let flip = (bits >> 31) | i32::MIN;
                bits ^ if descending { !flip } else { flip }
            } else {
                bits ^ super::i32_flip(descending) as i32
            };
            (u64::from(key as u32) << 32) | p as u64
        }
        let floats = [
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001),
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1.5,
            -1.5,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::MAX,
            f32::MIN,
        ];
        let ints = [i32::MIN, i32::MIN + 1, -7, -1, 0, 1, 7, i32::MAX - 1, i32::MAX];
        for descending in [false, true] {
            for (i, &a) in floats.iter().enumerate() {
                for (j, &b) in floats.iter().enumerate() {
                    let (pa, pb) = (i as i64, (j + floats.len()) as i64);
                    let want = before((a, pa), (b, pb), descending);
                    let got =
                        code(a.to_bits() as i32, true, pa, descending) < code(b.to_bits() as i32, true, pb, descending);
                    assert_eq!(got, want, "{a} at {pa} before {b} at {pb}, descending {descending}");
                }
            }
            for (i, &a) in ints.iter().enumerate() {
                for (j, &b) in ints.iter().enumerate() {
                    let (pa, pb) = (i as i64, (j + ints.len()) as i64);
                    let want = if a == b { pa < pb } else { (a > b) == descending };
                    let (ca, cb) = (code(a, false, pa, descending), code(b, false, pb, descending));
                    assert_eq!(ca < cb, want, "{a} at {pa} before {b} at {pb}, descending {descending}");
                    // The key comes back from the code's high half.
                    assert_eq!(((ca >> 32) as i32) ^ super::i32_flip(descending) as i32, a);
                }
            }
        }
    }
}
