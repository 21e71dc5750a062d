//! `for` and run-time `if` as blocks, with the carried registers as block arguments.

use super::emit::{ICmp, Reg, Ty};
use super::ptx_asm::PtxAsm;
use super::regs::Value;
use super::tcgen05::TmemPlan;
use super::{err, Lowering};
use tilec_core::tir::{walk_ops, OpKind};
use tilec_core::Diagnostic;

impl Lowering<'_> {
    /// `for iv in range(lb, ub, step)`: a header block testing `iv < ub` with the induction
    /// variable and the carried registers as arguments, the body, the exit. The counter is
    /// 64-bit, so `iv + step` never wraps (an i32 counter near 2^31 would loop 2^32 times);
    /// a step that is not positive traps, as the interpreter stops with an error. A tcgen05
    /// accumulator chain (`tcgen05::TmemPlan`) is carried in Tensor Memory: stored before the
    /// loop, no block argument, loaded after it where its result is used; so is an A operand
    /// the loop carries to a product reading it from Tensor Memory (`TmemPlan::a_carried`):
    /// stored into the product's A region before the loop and where the body yields it.
    pub(crate) fn for_loop(&mut self, kind: &OpKind) -> Result<(), Diagnostic> {
        let OpKind::For { lb, ub, step, iv, init, iters, body, yields, results } = kind else {
            return Err(err("not a for loop"));
        };
        let (lb, ub, step) = (self.scalar(*lb)?, self.scalar(*ub)?, self.scalar(*step)?);
        let zero = self.em.ci32(0);
        let bad_step = self.em.icmp(ICmp::Sle, &step, &zero);
        let (trap, pre) = (self.em.new_block(), self.em.new_block());
        self.em.cond_br(&bad_step, &trap, &pre);
        self.em.label(&trap, &[]);
        self.em.trap();
        self.em.label(&pre, &[]);
        let (lb, ub, step) = (
            self.em.convert("sext", &lb, Ty::I64),
            self.em.convert("sext", &ub, Ty::I64),
            self.em.convert("sext", &step, Ty::I64),
        );
        let (hdr, body_b, exit) = (self.em.new_block(), self.em.new_block(), self.em.new_block());
        let key = TmemPlan::loop_key(kind);
        // A tile loop double-buffering a chain (`tile-epilogue-overlap`), and whether this is
        // the product loop of the tile loop being lowered: its chain lives in the slot's region.
        let double = key.and_then(|k| self.facts.tmem.double.get(&k).cloned().map(|d| (k, d)));
        let product_loop = self
            .tmem_slot
            .clone()
            .filter(|_| key.is_some_and(|k| self.facts.tmem.double.values().any(|d| d.product_loop == k)));
        let mut init_vals = vec![];
        for ((i, it), res) in init.iter().zip(iters).zip(results) {
            init_vals.push(match (self.facts.tmem.kept.get(it), self.get(*i)?) {
                // (Never read: the first iteration has no previous tile.)
                (Some(&col), _) if double.as_ref().is_some_and(|(_, d)| d.carried == *it) => {
                    Value::Tmem { col, alt: None }
                }
                (Some(&col), _) => self.tmem_chain_init(*i, col, product_loop.as_ref())?,
                // An accumulator carried in Tensor Memory through a rescale: into its region.
                (None, _) if self.facts.tmem.acc_carried.contains_key(it) => {
                    self.tmem_chain_init(*i, self.facts.tmem.acc_carried[it], None)?
                }
                // The initial registers of a wgmma chain kept in flight pass through an
                // opaque identity: otherwise LLVM sees a constant (a zero accumulator) flowing
                // into the loop's block argument and rematerialises it on the back edge's
                // other side, so ptxas meets the accumulator registers defined outside the
                // asynchronous chain and serialises it (C7515: "wgmma … serialized").
                (None, Value::Tile(regs)) if self.facts.in_flight.contains(res) => {
                    let mut asm = PtxAsm::new();
                    for r in &regs {
                        asm.inout(r, "f");
                    }
                    asm.push("// the accumulator enters its wgmma chain");
                    Value::Tile(asm.emit(&mut self.em))
                }
                // An A operand carried in Tensor Memory: the initial registers go into the
                // region its product reads.
                (None, _) if self.facts.tmem.a_carried.contains_key(it) => self.tmem_store_carried_a(*it, *i)?,
                (None, v) => v,
            });
        }
        // TMEM accesses before the loop complete before its first product, once, not in
        // every iteration.
        if self.tmem_dirty {
            self.tmem_before_loop(kind)?;
        }
        let mut entry = vec![lb];
        entry.extend(super::regs::flatten_values(&init_vals)?);
        // The double-buffered chain's slot: 0 in the first iteration, then 1, 0, …
        if double.is_some() {
            entry.push(self.em.ci32(0));
        }
        self.em.br(&hdr, &entry);
        let ivn = self.em.fresh_reg(Ty::I64);
        let mut args = vec![ivn.clone()];
        args.extend(self.bind_values(iters, &init_vals)?);
        let slot = double.as_ref().map(|_| self.em.fresh_reg(Ty::I32));
        args.extend(slot.clone());
        self.em.label(&hdr, &args);
        let c = self.em.icmp(ICmp::Slt, &ivn, &ub);
        self.em.cond_br(&c, &body_b, &exit);
        self.em.label(&body_b, &[]);
        let iv32 = self.em.convert("trunc", &ivn, Ty::I32);
        self.vals.insert(*iv, Value::Scalar(iv32));
        let outer_slot = self.tmem_slot.take();
        if let (Some((k, d)), Some(slot)) = (&double, &slot) {
            let one = self.em.ci32(1);
            let other = self.em.xor(slot, &one);
            self.tmem_slot = Some(self.tmem_region(*k, d, slot)?);
            let prev = self.tmem_region(*k, d, &other)?;
            self.vals.insert(d.carried, Value::Tmem { col: d.col, alt: Some(prev) });
        }
        let before = self.smem_loop_begin();
        // The body's global accesses of the previous iteration may still be pending at its
        // top (no barrier is known to separate them): count them as pending from the start.
        walk_ops(body, &mut |o| self.global_pending(&o.kind));
        self.tmem_loop_top(kind);
        self.ops(body)?;
        self.smem_loop_end(before);
        self.tmem_slot = outer_slot;
        let next = self.em.add(&ivn, &step);
        let mut yielded = vec![];
        for (y, it) in yields.iter().zip(iters) {
            yielded.push(match self.facts.tmem.a_carried.contains_key(it) {
                true => self.tmem_store_carried_a(*it, *y)?,
                false => self.get(*y)?,
            });
        }
        let mut back: Vec<Reg> = vec![next];
        back.extend(super::regs::flatten_values(&yielded)?);
        if let Some(slot) = &slot {
            let one = self.em.ci32(1);
            back.push(self.em.xor(slot, &one));
        }
        self.em.br(&hdr, &back);
        self.em.label(&exit, &[]);
        // The header's arguments dominate the exit: they are the final values. The tile
        // loop's carried accumulator is the last tile's, in the region the slot does not name.
        if let (Some((k, d)), Some(slot)) = (&double, &slot) {
            let one = self.em.ci32(1);
            let other = self.em.xor(slot, &one);
            let prev = self.tmem_region(*k, d, &other)?;
            self.vals.insert(d.carried, Value::Tmem { col: d.col, alt: Some(prev) });
        }
        for (r, it) in results.iter().zip(iters) {
            let v = match self.get(*it)? {
                Value::Tmem { col, alt } if self.facts.tmem.used_results.contains(r) => {
                    self.tmem_chain_result(*r, col, alt.as_ref())?
                }
                v => v,
            };
            self.vals.insert(*r, v);
        }
        // This tile's products complete onto their region's mbarrier, which the next
        // iteration's epilogue waits for.
        if let Some(alt) = &product_loop {
            self.commit_on_issuer(&alt.bar, false)?;
        }
        Ok(())
    }

    /// A run-time `if`: both branches jump to a join block whose arguments are the results.
    pub(crate) fn if_op(&mut self, kind: &OpKind) -> Result<(), Diagnostic> {
        let OpKind::If { cond, then_ops, then_yields, else_ops, else_yields, results } = kind else {
            return Err(err("not an if"));
        };
        let c = self.scalar(*cond)?;
        let (tb, eb, join) = (self.em.new_block(), self.em.new_block(), self.em.new_block());
        self.em.cond_br(&c, &tb, &eb);
        // Both branches start from the shared reads pending here; after the join either
        // branch's may be pending.
        let entry = self.pending_reads.clone();
        let global_entry = (self.global_reads.clone(), self.global_writes.clone());
        let crossed = self.barrier_crossed();
        self.em.label(&tb, &[]);
        self.ops(then_ops)?;
        let regs = self.flatten(then_yields)?;
        self.em.br(&join, &regs);
        let after_then = std::mem::replace(&mut self.pending_reads, entry);
        let global_then = (
            std::mem::replace(&mut self.global_reads, global_entry.0),
            std::mem::replace(&mut self.global_writes, global_entry.1),
        );
        let crossed_then = self.barrier_crossed();
        self.set_barrier_crossed(crossed);
        self.em.label(&eb, &[]);
        self.ops(else_ops)?;
        let regs = self.flatten(else_yields)?;
        self.em.br(&join, &regs);
        self.pending_reads.extend(after_then);
        self.global_reads.extend(global_then.0);
        self.global_writes.extend(global_then.1);
        // A barrier on one branch only is no barrier for what follows.
        let crossed_else = self.barrier_crossed();
        self.set_barrier_crossed(crossed_then && crossed_else);
        let args = self.bind_args(results, then_yields)?;
        self.em.label(&join, &args);
        Ok(())
    }
}
