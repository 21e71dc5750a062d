//! The textual MLIR form of a kernel: a `builtin.module` holding one `func.func`, `tile` ops
//! in the generic syntax, `arith`/`math`/`scf` ops in their own.
//!
//! Value names are computed once per print (parameters keep their source names, the k-th
//! result of a multi-result op is `%first#k`, every other value `%id`), so printing is linear
//! in the size of the kernel. With a source, every op carries `loc("file":line:col to
//! line:col)` of its span, which MLIR keeps through upstream passes and the reader turns back
//! into spans; snapshots print without locations.

use super::attrs::cast_op;
use super::{mlir_float, Func, Op, OpKind, ValueId};
use crate::diag::Source;
use crate::dtype::DType;
use std::fmt::Write;

/// How to print.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrintOptions<'a> {
    /// The source the spans index: with it, ops carry their locations.
    pub locations: Option<&'a Source>,
}

struct Printer<'a> {
    f: &'a Func,
    names: Vec<String>,
    locations: Option<&'a Source>,
}

impl Func {
    /// The textual MLIR form (no locations).
    pub fn to_mlir(&self) -> String {
        self.to_mlir_with(PrintOptions::default())
    }

    pub fn to_mlir_with(&self, opts: PrintOptions) -> String {
        let mut names: Vec<String> = (0..self.values.len()).map(|i| format!("%{i}")).collect();
        self.walk(&mut |op| {
            if let OpKind::For { results, .. } | OpKind::If { results, .. } = &op.kind {
                if results.len() > 1 {
                    for (k, r) in results.iter().enumerate() {
                        names[r.0 as usize] = format!("%{}#{k}", results[0].0);
                    }
                }
            }
        });
        for p in &self.params {
            if let Some(n) = names.get_mut(p.value.0 as usize) {
                *n = format!("%{}", p.name);
            }
        }
        let p = Printer { f: self, names, locations: opts.locations };
        let mut s = String::new();
        let _ = writeln!(s, "module attributes {{tile.target = \"{}\"}} {{", self.target);
        let params: Vec<String> = self
            .params
            .iter()
            .map(|q| {
                let mut attrs = vec![];
                if q.divisibility > 1 {
                    attrs.push(format!("tile.divisibility = {} : i32", q.divisibility));
                }
                if q.independent {
                    attrs.push("tile.independent".to_string());
                }
                let attr = if attrs.is_empty() { String::new() } else { format!(" {{{}}}", attrs.join(", ")) };
                format!("{}: {}{attr}", p.name(q.value), self.ty(q.value).to_mlir())
            })
            .collect();
        let ws = match self.warp_spec {
            Some(w) => format!(
                ", tile.warp_specialize = array<i32: {}, {}, {}>",
                w.producer_warps, w.producer_regs, w.consumer_regs
            ),
            None => String::new(),
        };
        let cluster = if self.cluster > 1 { format!(", tile.cluster = {} : i32", self.cluster) } else { String::new() };
        let _ = writeln!(
            s,
            "  func.func @{}({}) attributes {{tile.kernel, tile.num_warps = {} : i32{ws}{cluster}}} {{",
            self.name,
            params.join(", "),
            self.num_warps
        );
        p.print_ops(&mut s, &self.ops, 2);
        let _ = writeln!(s, "    return\n  }}\n}}");
        s
    }
}

impl Printer<'_> {
    fn name(&self, v: ValueId) -> String {
        self.names.get(v.0 as usize).cloned().unwrap_or_else(|| format!("%{}", v.0))
    }

    /// ` loc("file":l:c to l2:c2)` of an op with a span, when printing locations.
    fn loc(&self, op: &Op) -> String {
        match (self.locations, op.span) {
            (Some(src), Some(sp)) => {
                let (l1, c1) = src.line_col(sp.start);
                let (l2, c2) = src.line_col(sp.end);
                format!(" loc({:?}:{l1}:{c1} to {l2}:{c2})", src.name)
            }
            _ => String::new(),
        }
    }

    fn print_ops(&self, s: &mut String, ops: &[Op], depth: usize) {
        let pad = "  ".repeat(depth);
        for op in ops {
            match &op.kind {
                OpKind::For { lb, ub, step, iv, init, iters, body, yields, results } => {
                    let res = self.results_prefix(results);
                    let iter_args: Vec<String> =
                        iters.iter().zip(init).map(|(a, i)| format!("{} = {}", self.name(*a), self.name(*i))).collect();
                    let tys = self.type_list(results);
                    let header = if iters.is_empty() {
                        String::new()
                    } else {
                        format!(" iter_args({}) -> ({tys})", iter_args.join(", "))
                    };
                    let _ = writeln!(
                        s,
                        "{pad}{res}scf.for {} = {} to {} step {}{header} : i32 {{",
                        self.name(*iv),
                        self.name(*lb),
                        self.name(*ub),
                        self.name(*step)
                    );
                    self.print_ops(s, body, depth + 1);
                    self.print_yield(s, yields, depth + 1);
                    let _ = writeln!(s, "{pad}}}{}", self.loc(op));
                }
                OpKind::If { cond, then_ops, then_yields, else_ops, else_yields, results } => {
                    let res = self.results_prefix(results);
                    let tys =
                        if results.is_empty() { String::new() } else { format!(" -> ({})", self.type_list(results)) };
                    let _ = writeln!(s, "{pad}{res}scf.if {}{tys} {{", self.name(*cond));
                    self.print_ops(s, then_ops, depth + 1);
                    self.print_yield(s, then_yields, depth + 1);
                    // MLIR prints no empty `else` (an `if` without results); neither do we.
                    if !else_ops.is_empty() || !results.is_empty() {
                        let _ = writeln!(s, "{pad}}} else {{");
                        self.print_ops(s, else_ops, depth + 1);
                        self.print_yield(s, else_yields, depth + 1);
                    }
                    let _ = writeln!(s, "{pad}}}{}", self.loc(op));
                }
                _ => {
                    let _ = writeln!(s, "{pad}{}{}", self.op_to_mlir(op), self.loc(op));
                }
            }
        }
    }

    fn results_prefix(&self, results: &[ValueId]) -> String {
        match results {
            [] => String::new(),
            [r] => format!("{} = ", self.name(*r)),
            [first, ..] => format!("%{}:{} = ", first.0, results.len()),
        }
    }

    fn type_list(&self, vs: &[ValueId]) -> String {
        vs.iter().map(|v| self.f.ty(*v).to_mlir()).collect::<Vec<_>>().join(", ")
    }

    fn print_yield(&self, s: &mut String, yields: &[ValueId], depth: usize) {
        let pad = "  ".repeat(depth);
        if yields.is_empty() {
            return;
        }
        let names: Vec<String> = yields.iter().map(|v| self.name(*v)).collect();
        let _ = writeln!(s, "{pad}scf.yield {} : {}", names.join(", "), self.type_list(yields));
    }

    fn op_to_mlir(&self, op: &Op) -> String {
        let n = |v: &ValueId| self.name(*v);
        let t = |v: &ValueId| self.f.ty(*v).to_mlir();
        let res = op.result.map(|r| format!("{} = ", self.name(r))).unwrap_or_default();
        let rty = op.result.map(|r| self.f.ty(r).to_mlir()).unwrap_or_default();
        let body = match &op.kind {
            OpKind::Bid { axis } => format!("\"tile.bid\"() {{axis = {axis} : i32}} : () -> {rty}"),
            OpKind::Dim { tensor, axis } => {
                format!("\"tile.dim\"({}) {{axis = {axis} : i32}} : ({}) -> {rty}", n(tensor), t(tensor))
            }
            OpKind::ConstInt(v) => format!("arith.constant {v} : {rty}"),
            OpKind::ConstFloat(v) => {
                let d = op.result.map(|r| self.f.ty(r).dtype()).unwrap_or(DType::F32);
                format!("arith.constant {} : {rty}", mlir_float(*v, d))
            }
            OpKind::Splat(x) => format!("\"tile.splat\"({}) : ({}) -> {rty}", n(x), t(x)),
            OpKind::Binary { op: b, lhs, rhs, flags } => {
                format!("{} {}, {}{} : {rty}", b.arith_name(self.f.ty(*lhs).dtype()), n(lhs), n(rhs), flags.attr())
            }
            OpKind::Unary { op: u, value, flags } => format!("{} {}{} : {rty}", u.mlir_name(), n(value), flags.attr()),
            OpKind::Cast(x) => {
                let from = self.f.ty(*x).dtype();
                let to = op.result.map(|r| self.f.ty(r).dtype()).unwrap_or(from);
                match cast_op(from, to) {
                    "tile.cast" => format!("\"tile.cast\"({}) : ({}) -> {rty}", n(x), t(x)),
                    name => format!("{name} {} : {} to {rty}", n(x), t(x)),
                }
            }
            OpKind::Reduce { kind, axis, value } => format!(
                "\"tile.reduce\"({}) {{kind = \"{}\", axis = {axis} : i32}} : ({}) -> {rty}",
                n(value),
                kind.name(),
                t(value)
            ),
            OpKind::Scan { op: sop, axis, value } => format!(
                "\"tile.scan\"({}) {{op = \"{}\", axis = {axis} : i32}} : ({}) -> {rty}",
                n(value),
                sop.scan_name().unwrap_or("add"),
                t(value)
            ),
            OpKind::Broadcast(x) => format!("\"tile.broadcast\"({}) : ({}) -> {rty}", n(x), t(x)),
            OpKind::Load { tensor, index, padding, order, latency } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                let ord: Vec<String> = order.iter().map(|o| o.to_string()).collect();
                format!(
                    "\"tile.load\"({}) {{latency = {latency} : i32, order = array<i32: {}>, padding = \"{}\"}} : ({}) -> {rty}",
                    args.join(", "),
                    ord.join(", "),
                    padding.name(),
                    tys.join(", ")
                )
            }
            OpKind::Gather { tensor, index, padding } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                format!(
                    "\"tile.gather\"({}) {{padding = \"{}\"}} : ({}) -> {rty}",
                    args.join(", "),
                    padding.name(),
                    tys.join(", ")
                )
            }
            OpKind::Scatter { tensor, index, tile } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                args.push(n(tile));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                tys.push(t(tile));
                format!("\"tile.scatter\"({}) : ({}) -> ()", args.join(", "), tys.join(", "))
            }
            OpKind::Atomic { op: aop, tensor, index, tile, cmp, mask, sem, scope, at } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                for v in cmp.iter().chain([tile, mask]) {
                    args.push(n(v));
                    tys.push(t(v));
                }
                let attrs =
                    format!("{{op = \"{}\", scope = \"{}\", sem = \"{}\"}}", aop.name(), scope.name(), sem.name());
                let (args, tys) = (args.join(", "), tys.join(", "));
                // Quoted as printed (the IRDL test reads the op names from this file).
                let name = match (cmp, at) {
                    (Some(_), false) => "\"tile.atomic_cas\"",
                    (None, false) => "\"tile.atomic\"",
                    (Some(_), true) => "\"tile.atomic_cas_at\"",
                    (None, true) => "\"tile.atomic_at\"",
                };
                format!("{name}({args}) {attrs} : ({tys}) -> {rty}")
            }
            OpKind::Mma { a, b, acc, scales: None } => {
                format!("\"tile.mma\"({}, {}, {}) : ({}, {}, {}) -> {rty}", n(a), n(b), n(acc), t(a), t(b), t(acc))
            }
            OpKind::Mma { a, b, acc, scales: Some((sa, sb)) } => format!(
                "\"tile.mma_scaled\"({}, {}, {}, {}, {}) : ({}, {}, {}, {}, {}) -> {rty}",
                n(a),
                n(sa),
                n(b),
                n(sb),
                n(acc),
                t(a),
                t(sa),
                t(b),
                t(sb),
                t(acc)
            ),
            OpKind::Arange => format!("\"tile.arange\"() : () -> {rty}"),
            OpKind::Element { tensor, index } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                format!("\"tile.element\"({}) : ({}) -> {rty}", args.join(", "), tys.join(", "))
            }
            OpKind::NumBlocks { axis } => format!("\"tile.num_blocks\"() {{axis = {axis} : i32}} : () -> {rty}"),
            OpKind::ClusterRank => format!("\"tile.cluster_rank\"() : () -> {rty}"),
            OpKind::NumTiles { axis } => format!("\"tile.num_tiles\"() {{axis = {axis} : i32}} : () -> {rty}"),
            OpKind::Cmp(p, x, y) => {
                let f = self.f.ty(*x).dtype().is_float();
                format!("{} {}, {}, {} : {}", if f { "arith.cmpf" } else { "arith.cmpi" }, p.mlir(f), n(x), n(y), t(x))
            }
            OpKind::Logic(l, x, y) => {
                format!("{} {}, {} : {rty}", l.mlir_name(), n(x), n(y))
            }
            OpKind::Fma { a, b, c } => format!("math.fma {}, {}, {} : {rty}", n(a), n(b), n(c)),
            OpKind::Select { cond, a, b } => {
                format!("arith.select {}, {}, {} : {}, {rty}", n(cond), n(a), n(b), t(cond))
            }
            OpKind::Reshape(x) => format!("\"tile.reshape\"({}) : ({}) -> {rty}", n(x), t(x)),
            OpKind::Item(x) => format!("\"tile.item\"({}) : ({}) -> {rty}", n(x), t(x)),
            OpKind::ConvertLayout { value: x, scratch } => format!(
                "\"tilegpu.convert_layout\"({}) {{scratch = {}}} : ({}) -> {rty}",
                n(x),
                scratch.to_mlir(),
                t(x)
            ),
            OpKind::AsyncCopy { dst, tensor, index, padding, order, tile, latency, tma } => {
                let mut args: Vec<String> = dst.iter().map(n).collect();
                args.push(n(tensor));
                args.extend(index.iter().map(n));
                let mut tys: Vec<String> = dst.iter().map(t).collect();
                tys.push(t(tensor));
                tys.extend(index.iter().map(t));
                let o: Vec<String> = order.iter().map(|x| x.to_string()).collect();
                let sh: Vec<String> = tile.iter().map(|x| x.to_string()).collect();
                let (name, rty) = match (dst, tma) {
                    (Some(_), true) => ("\"tilegpu.tma_copy_into\"", "()".to_string()),
                    (Some(_), false) => ("\"tilegpu.async_copy_into\"", "()".to_string()),
                    (None, _) => ("\"tilegpu.async_copy\"", rty),
                };
                format!(
                    "{name}({}) {{latency = {latency} : i32, order = array<i32: {}>, padding = \"{}\", tile = array<i64: {}>}} : ({}) -> {rty}",
                    args.join(", "),
                    o.join(", "),
                    padding.name(),
                    sh.join(", "),
                    tys.join(", ")
                )
            }
            OpKind::StagesAlloc => format!("\"tilegpu.stages_alloc\"() : () -> {rty}"),
            OpKind::Stage { buf, index } => {
                format!("\"tilegpu.stage\"({}, {}) : ({}, {}) -> {rty}", n(buf), n(index), t(buf), t(index))
            }
            OpKind::StageWait { ring, slot, phase } | OpKind::StageAcquire { ring, slot, phase } => {
                let name = match op.kind {
                    OpKind::StageWait { .. } => "\"tilegpu.stage_wait\"",
                    _ => "\"tilegpu.stage_acquire\"",
                };
                format!(
                    "{name}({}, {}, {}) : ({}, {}, {}) -> ()",
                    n(ring),
                    n(slot),
                    n(phase),
                    t(ring),
                    t(slot),
                    t(phase)
                )
            }
            OpKind::StageRelease { ring, slot } => {
                format!("\"tilegpu.stage_release\"({}, {}) : ({}, {}) -> ()", n(ring), n(slot), t(ring), t(slot))
            }
            OpKind::GridDependencyWait => "\"tilegpu.grid_dependency_wait\"() : () -> ()".to_string(),
            OpKind::Turn { begin: true, .. } => "\"tilegpu.turn_begin\"() : () -> ()".to_string(),
            OpKind::Turn { begin: false, last } => {
                format!("\"tilegpu.turn_end\"() {{last = {} : i32}} : () -> ()", u8::from(*last))
            }
            OpKind::AsyncWait { pending } => {
                format!("\"tilegpu.async_wait\"() {{pending = {pending} : i32}} : () -> ()")
            }
            OpKind::LocalAlloc { value } => format!("\"tilegpu.local_alloc\"({}) : ({}) -> {rty}", n(value), t(value)),
            OpKind::MmaWait { value, pending } => {
                format!("\"tilegpu.mma_wait\"({}) {{pending = {pending} : i32}} : ({}) -> {rty}", n(value), t(value))
            }
            OpKind::LocalLoad { buf, trans: false } => {
                format!("\"tilegpu.local_load\"({}) : ({}) -> {rty}", n(buf), t(buf))
            }
            OpKind::LocalLoad { buf, trans: true } => {
                format!("\"tilegpu.local_load_trans\"({}) : ({}) -> {rty}", n(buf), t(buf))
            }
            OpKind::Concat { values, axis } => {
                let args: Vec<String> = values.iter().map(n).collect();
                let tys: Vec<String> = values.iter().map(t).collect();
                format!("\"tile.concat\"({}) {{axis = {axis} : i32}} : ({}) -> {rty}", args.join(", "), tys.join(", "))
            }
            OpKind::Sort { value, axis, descending, k, indices } => format!(
                "\"tile.sort\"({}) {{axis = {axis} : i32, descending = {} : i32, indices = {} : i32, k = {k} : i64}} : ({}) -> {rty}",
                n(value),
                u8::from(*descending),
                u8::from(*indices),
                t(value)
            ),
            OpKind::Slice { value, offsets } => {
                let o: Vec<String> = offsets.iter().map(|o| o.to_string()).collect();
                format!(
                    "\"tile.slice\"({}) {{offsets = array<i64: {}>}} : ({}) -> {rty}",
                    n(value),
                    o.join(", "),
                    t(value)
                )
            }
            OpKind::Permute { value, perm } => {
                let p: Vec<String> = perm.iter().map(|o| o.to_string()).collect();
                format!(
                    "\"tile.permute\"({}) {{perm = array<i32: {}>}} : ({}) -> {rty}",
                    n(value),
                    p.join(", "),
                    t(value)
                )
            }
            OpKind::Rand { seed, offsets } => {
                format!("\"tile.rand\"({}, {}) : ({}, {}) -> {rty}", n(seed), n(offsets), t(seed), t(offsets))
            }
            OpKind::Print { prefix, values } => {
                let args: Vec<String> = values.iter().map(n).collect();
                let tys: Vec<String> = values.iter().map(t).collect();
                format!("\"tile.print\"({}) {{prefix = {:?}}} : ({}) -> ()", args.join(", "), prefix, tys.join(", "))
            }
            OpKind::For { .. } | OpKind::If { .. } => "// region op printed by print_ops".to_string(),
            OpKind::Prefetch { tensor, index, order, tile } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                let o: Vec<String> = order.iter().map(|x| x.to_string()).collect();
                let sh: Vec<String> = tile.iter().map(|x| x.to_string()).collect();
                format!(
                    "\"tile.prefetch\"({}) {{order = array<i32: {}>, tile = array<i64: {}>}} : ({}) -> ()",
                    args.join(", "),
                    o.join(", "),
                    sh.join(", "),
                    tys.join(", ")
                )
            }
            OpKind::Store { tensor, index, tile, mask } => {
                let mut args = vec![n(tensor)];
                args.extend(index.iter().map(n));
                args.push(n(tile));
                let mut tys = vec![t(tensor)];
                tys.extend(index.iter().map(t));
                tys.push(t(tile));
                if let Some(m) = mask {
                    args.push(n(m));
                    tys.push(t(m));
                }
                let (args, tys) = (args.join(", "), tys.join(", "));
                match mask {
                    Some(_) => format!("\"tile.store_masked\"({args}) : ({tys}) -> ()"),
                    None => format!("\"tile.store\"({args}) : ({tys}) -> ()"),
                }
            }
        };
        format!("{res}{body}")
    }
}
