//! Reads a verified MLIR module in the `tile`/`tilegpu` dialects back into the Rust form
//! ([`tilec_core::tir::Func`]), so that a tilec pass can run after an upstream MLIR pass
//! (`tilec opt --passes canonicalize,tile-layout,…`) or on a `.mlir` file.
//!
//! The reader accepts exactly the ops the printer of `tir` emits (plus what upstream
//! canonicalisation keeps within that set: folded scalar constants, fewer ops); anything
//! else — an op with no tile-IR form, a tensor constant, a type tile IR lacks — is an error
//! naming the op, never a guess. Values are matched by MLIR's own value identity, so names in
//! the text do not matter. MLIR keeps no names of function arguments: parameters come back as
//! `arg0`, `arg1`, … (the ABI keeps the source names; the reader is for passes).
//!
//! Op names, predicates, reduction kinds and paddings are read through the tables of
//! `tilec_core::tir` (the ones the printer uses). With the source the kernel came from, an
//! op's `loc("file":line:col to line:col)` becomes its span again, so a diagnostic of a
//! tilec pass that runs after an upstream one still points at the source line.

use melior::ir::attribute::{
    AttributeLike, DenseI32ArrayAttribute, DictionaryAttribute, FloatAttribute, IntegerAttribute, StringAttribute,
};
use melior::ir::block::BlockLike;
use melior::ir::operation::OperationLike;
use melior::ir::{Attribute, BlockRef, Module, OperationRef, RegionLike, Value, ValueLike};
use std::collections::HashMap;
use tilec_core::tir::{
    is_cast_op, AtomicOp, BinOp, CmpPred, Func, LogicOp, MathFlags, MemScope, MemSem, Op, OpKind, Padding, ReduceKind,
    Type, UnOp, ValueId,
};
use tilec_core::{DType, Diagnostic, Source, Span};

fn fail(msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error("E0903", msg.into())
}

/// The one `func.func` of `module` as tile IR (no spans).
pub fn read_func(module: &Module) -> Result<Func, Diagnostic> {
    read_func_with(module, None)
}

/// The one `func.func` of `module` as tile IR; with `source`, the ops' locations in that
/// file become their spans.
pub fn read_func_with(module: &Module, source: Option<&Source>) -> Result<Func, Diagnostic> {
    let top = module.as_operation();
    let target = match top.attribute("tile.target") {
        Ok(a) => string_attr(a).ok_or_else(|| fail("module attribute `tile.target` is not a string"))?,
        Err(_) => return Err(fail("the module has no `tile.target` attribute (it is not a tilec kernel)")),
    };
    let mut funcs = vec![];
    let mut op = module.body().first_operation();
    while let Some(o) = op {
        if o.name().as_string_ref().as_str() == Ok("func.func") {
            funcs.push(o);
        }
        op = o.next_in_block();
    }
    let [func_op] = funcs.as_slice() else {
        let mut op = module.body().first_operation();
        let mut lowered = None;
        while let Some(o) = op {
            if o.name().as_string_ref().as_str() == Ok("llvm.func") {
                lowered = o.attribute("sym_name").ok().and_then(string_attr);
            }
            op = o.next_in_block();
        }
        return Err(match lowered {
            Some(name) => fail(format!(
                "the module is already lowered to the llvm dialect (`llvm.func @{name}`): tilec's passes run on the tile and tilegpu stages"
            )),
            None => fail(format!("tile IR holds one kernel (`func.func`); the module has {}", funcs.len())),
        });
    };
    let name = func_op.attribute("sym_name").ok().and_then(string_attr).ok_or_else(|| fail("func without a name"))?;
    let num_warps = func_op.attribute("tile.num_warps").ok().and_then(int_attr).unwrap_or(4);
    let num_warps =
        u32::try_from(num_warps).map_err(|_| fail(format!("`tile.num_warps = {num_warps}` is not a warp count")))?;
    let mut r = Reader { func: Func::new(name, target, num_warps), ids: HashMap::new(), source };
    if let Ok(a) = func_op.attribute("tile.warp_specialize") {
        match i32_array(a).as_deref() {
            Some(&[producer_warps, producer_regs, consumer_regs]) => {
                r.func.warp_spec = Some(tilec_core::tir::WarpSpec { producer_warps, producer_regs, consumer_regs })
            }
            _ => {
                return Err(fail(
                    "`tile.warp_specialize` is `array<i32: producer warps, producer regs, consumer regs>`",
                ))
            }
        }
    }
    if let Ok(a) = func_op.attribute("tile.cluster") {
        r.func.cluster = int_attr(a)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| fail("`tile.cluster` is a number of CTAs (`2 : i32`)"))?;
    }
    let region = func_op.region(0).map_err(|_| fail("func without a body"))?;
    let block = region.first_block().ok_or_else(|| fail("func without a body"))?;
    if block.next_in_region().is_some() {
        return Err(fail("a kernel body is one block (no unstructured control flow)"));
    }
    let attrs = param_attrs(func_op, block.argument_count())?;
    for (i, (div, independent)) in attrs.into_iter().enumerate() {
        let arg: Value = block.argument(i).map_err(|e| fail(e.to_string()))?.into();
        let ty = r.parse_type(&arg)?;
        let v = r.func.add_param(&format!("arg{i}"), ty);
        r.func.params[i].divisibility = div;
        r.func.params[i].independent = independent;
        r.ids.insert(key(&arg), v);
    }
    let (ops, ret) = r.block_ops(block)?;
    if ret.name != "func.return" || !ret.operands.is_empty() {
        return Err(fail("a kernel ends with a `return` of no values"));
    }
    r.func.ops = ops;
    Ok(r.func)
}

struct Reader<'s> {
    func: Func,
    source: Option<&'s Source>,
    /// MLIR value identity → tile IR value (a lookup table; never iterated).
    ids: HashMap<usize, ValueId>,
}

/// The terminator of a block: its op name and operands.
struct Terminator {
    name: String,
    operands: Vec<ValueId>,
}

fn key(v: &Value) -> usize {
    v.to_raw().ptr as usize
}

/// `(tensor, index…, tail…)` operands: the tensor, the indices between, and the last `tail`.
fn split_operands(ops: &[ValueId], tail: usize) -> Option<(ValueId, Vec<ValueId>, Vec<ValueId>)> {
    let (tensor, rest) = ops.split_first()?;
    let at = rest.len().checked_sub(tail)?;
    Some((*tensor, rest[..at].to_vec(), rest[at..].to_vec()))
}

fn string_attr(a: Attribute) -> Option<String> {
    StringAttribute::try_from(a).ok().map(|s| s.value().to_string())
}

fn int_attr(a: Attribute) -> Option<i64> {
    IntegerAttribute::try_from(a).ok().map(|i| i.value())
}

fn i64_array(a: Attribute) -> Option<Vec<i64>> {
    let arr = melior::ir::attribute::DenseI64ArrayAttribute::try_from(a).ok()?;
    (0..arr.len()).map(|i| arr.element(i).ok()).collect()
}

fn i32_array(a: Attribute) -> Option<Vec<u32>> {
    let arr = DenseI32ArrayAttribute::try_from(a).ok()?;
    (0..arr.len()).map(|i| arr.element(i).ok().and_then(|x| u32::try_from(x).ok())).collect()
}

/// `tile.divisibility` and `tile.independent` of each argument, from the function's
/// `arg_attrs` (one dictionary per argument, in order).
fn param_attrs(func: &OperationRef, n: usize) -> Result<Vec<(u32, bool)>, Diagnostic> {
    let mut out = vec![(1, false); n];
    let Ok(attrs) = func.attribute("arg_attrs") else { return Ok(out) };
    for (i, slot) in out.iter_mut().enumerate() {
        let Some(dict) = array_element(attrs, i).and_then(|a| DictionaryAttribute::try_from(a).ok()) else { continue };
        slot.1 = dict.element_by_name("tile.independent").is_some();
        if let Some(v) = dict.element_by_name("tile.divisibility") {
            let d = int_attr(v)
                .and_then(|x| u32::try_from(x).ok())
                .filter(|x| x.is_power_of_two() && *x <= 16)
                .ok_or_else(|| fail(format!("argument {i}: `tile.divisibility = {v}` is not 1, 2, 4, 8 or 16")))?;
            slot.0 = d;
        }
    }
    Ok(out)
}

/// Element `i` of an array attribute. (melior 0.27's `ArrayAttribute` conversion tests for a
/// dense i64 array instead of an array, so the C API is asked directly.)
fn array_element(a: Attribute, i: usize) -> Option<Attribute> {
    // SAFETY: `a` is a live attribute of the module's context; the C API is only asked for
    // an element after it confirmed that `a` is an array with more than `i` elements.
    unsafe {
        let raw = a.to_raw();
        if !mlir_sys::mlirAttributeIsAArray(raw) || i >= mlir_sys::mlirArrayAttrGetNumElements(raw) as usize {
            return None;
        }
        Some(Attribute::from_raw(mlir_sys::mlirArrayAttrGetElement(raw, i as isize)))
    }
}

fn padding(a: Attribute) -> Option<Padding> {
    Padding::parse(&string_attr(a)?)
}

impl Reader<'_> {
    /// The span of an op's `loc("file":l:c to l2:c2)` in the source, if it names it.
    fn span(&self, op: &OperationRef) -> Option<Span> {
        let src = self.source?;
        let loc = op.location();
        if !loc.is_file_line_col_range() {
            return None;
        }
        let file = loc.file_line_col_range_filename();
        if file.as_string_ref().as_str().ok()? != src.name {
            return None;
        }
        let start = src.offset(loc.file_line_col_range_start_line(), loc.file_line_col_range_start_column())?;
        let end = src.offset(loc.file_line_col_range_end_line(), loc.file_line_col_range_end_column())?;
        Some(Span::new(start, end.max(start)))
    }

    fn parse_type(&self, v: &Value) -> Result<Type, Diagnostic> {
        let text = v.r#type().to_string();
        Type::parse_mlir(&text).ok_or_else(|| fail(format!("type `{text}` has no tile-IR form")))
    }

    fn value(&self, v: Value) -> Result<ValueId, Diagnostic> {
        self.ids.get(&key(&v)).copied().ok_or_else(|| fail("a value is used outside the region that defines it"))
    }

    fn define(&mut self, v: Value) -> Result<ValueId, Diagnostic> {
        let ty = self.parse_type(&v)?;
        let id = self.func.new_value(ty);
        self.ids.insert(key(&v), id);
        Ok(id)
    }

    fn block_ops(&mut self, block: BlockRef) -> Result<(Vec<Op>, Terminator), Diagnostic> {
        let mut ops = vec![];
        let mut cur = block.first_operation();
        while let Some(op) = cur {
            let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
            if op.next_in_block().is_none() {
                let operands = op.operands().map(|v| self.value(v)).collect::<Result<_, _>>()?;
                return Ok((ops, Terminator { name, operands }));
            }
            ops.push(self.op(&op, &name)?);
            cur = op.next_in_block();
        }
        Err(fail("a block without terminator"))
    }

    fn op(&mut self, op: &OperationRef, name: &str) -> Result<Op, Diagnostic> {
        let bad = |what: &str| fail(format!("`{name}`: {what}"));
        let operands: Vec<ValueId> = op.operands().map(|v| self.value(v)).collect::<Result<_, _>>()?;
        let attr = |n: &str| op.attribute(n).map_err(|_| bad(&format!("no `{n}` attribute")));
        let u32_attr = |n: &str| -> Result<u32, Diagnostic> {
            int_attr(attr(n)?).and_then(|x| u32::try_from(x).ok()).ok_or_else(|| bad(&format!("bad `{n}`")))
        };
        let flags = MathFlags {
            ftz: op.has_attribute(MathFlags::FTZ),
            approx: op.has_attribute(MathFlags::APPROX),
            pinned: op.has_attribute(MathFlags::PINNED),
        };
        let operand_dtype = |i: usize| operands.get(i).map(|v| self.func.ty(*v).dtype());
        let arity = |n: usize| -> Result<(), Diagnostic> {
            if operands.len() == n {
                Ok(())
            } else {
                Err(bad(&format!("expected {n} operands, found {}", operands.len())))
            }
        };
        let arith = match (BinOp::from_arith(name), UnOp::from_mlir(name)) {
            (Some(b), _) => {
                arity(2)?;
                Some(OpKind::Binary { op: b, lhs: operands[0], rhs: operands[1], flags })
            }
            (_, Some(u)) => {
                arity(1)?;
                Some(OpKind::Unary { op: u, value: operands[0], flags })
            }
            (None, None) => None,
        };
        let kind = if let Some(k) = arith {
            k
        } else {
            match name {
                "scf.for" => return self.for_op(op, operands),
                "scf.if" => return self.if_op(op, operands),
                "tile.bid" => OpKind::Bid { axis: u32_attr("axis")? },
                "tile.num_blocks" => OpKind::NumBlocks { axis: u32_attr("axis")? },
                "tile.cluster_rank" => OpKind::ClusterRank,
                "tile.num_tiles" => OpKind::NumTiles { axis: u32_attr("axis")? },
                "tile.dim" => {
                    arity(1)?;
                    OpKind::Dim { tensor: operands[0], axis: u32_attr("axis")? }
                }
                "arith.constant" => {
                    let a = attr("value")?;
                    if let Some(i) = int_attr(a) {
                        OpKind::ConstInt(i)
                    } else if let Ok(f) = FloatAttribute::try_from(a) {
                        OpKind::ConstFloat(f.value())
                    } else if a.to_string().starts_with("true") || a.to_string().starts_with("false") {
                        OpKind::ConstInt(i64::from(a.to_string().starts_with("true")))
                    } else {
                        return Err(bad(&format!("constant `{a}` has no tile-IR form (only scalar constants)")));
                    }
                }
                "tile.splat" => {
                    arity(1)?;
                    OpKind::Splat(operands[0])
                }
                n if is_cast_op(n) => {
                    arity(1)?;
                    OpKind::Cast(operands[0])
                }
                "tile.reduce" => {
                    arity(1)?;
                    let kind = string_attr(attr("kind")?).as_deref().and_then(ReduceKind::parse).ok_or_else(|| {
                        bad(&format!(
                            "unknown reduction kind (one of {})",
                            ReduceKind::names().collect::<Vec<_>>().join(", ")
                        ))
                    })?;
                    OpKind::Reduce { kind, axis: u32_attr("axis")?, value: operands[0] }
                }
                "tile.scan" => {
                    arity(1)?;
                    let name = string_attr(attr("op")?).unwrap_or_default();
                    let op = BinOp::parse_scan(&name).ok_or_else(|| bad("unknown scan op"))?;
                    OpKind::Scan { op, axis: u32_attr("axis")?, value: operands[0] }
                }
                "tile.broadcast" => {
                    arity(1)?;
                    OpKind::Broadcast(operands[0])
                }
                "tile.reshape" => {
                    arity(1)?;
                    OpKind::Reshape(operands[0])
                }
                "tile.item" => {
                    arity(1)?;
                    OpKind::Item(operands[0])
                }
                "tilegpu.convert_layout" => {
                    arity(1)?;
                    let text = attr("scratch")?.to_string();
                    let scratch = tilec_core::layout::Shared::parse(&text).ok_or_else(|| bad("bad scratch layout"))?;
                    OpKind::ConvertLayout { value: operands[0], scratch }
                }
                "tilegpu.async_copy" | "tilegpu.async_copy_into" | "tilegpu.tma_copy_into" => {
                    // `async_copy_into` names the buffer it fills first.
                    let (dst, rest) = match name {
                        "tilegpu.async_copy_into" | "tilegpu.tma_copy_into" => {
                            let (d, rest) = operands.split_first().ok_or_else(|| bad("no destination operand"))?;
                            (Some(*d), rest)
                        }
                        _ => (None, &operands[..]),
                    };
                    let (tensor, index) = rest.split_first().ok_or_else(|| bad("no tensor operand"))?;
                    OpKind::AsyncCopy {
                        dst,
                        tensor: *tensor,
                        index: index.to_vec(),
                        padding: padding(attr("padding")?).ok_or_else(|| bad("bad padding"))?,
                        order: i32_array(attr("order")?).ok_or_else(|| bad("bad order"))?,
                        tile: i64_array(attr("tile")?)
                            .filter(|t| t.iter().all(|&d| d >= 1))
                            .ok_or_else(|| bad("bad tile"))?,
                        latency: u32_attr("latency")?,
                        tma: name == "tilegpu.tma_copy_into",
                    }
                }
                "tilegpu.async_wait" => OpKind::AsyncWait { pending: u32_attr("pending")? },
                "tilegpu.turn_begin" => {
                    arity(0)?;
                    OpKind::Turn { begin: true, last: false }
                }
                "tilegpu.grid_dependency_wait" => {
                    arity(0)?;
                    OpKind::GridDependencyWait
                }
                "tilegpu.turn_end" => {
                    arity(0)?;
                    OpKind::Turn { begin: false, last: u32_attr("last")? != 0 }
                }
                "tilegpu.stage_acquire" => {
                    arity(3)?;
                    OpKind::StageAcquire { ring: operands[0], slot: operands[1], phase: operands[2] }
                }
                "tilegpu.stage_release" => {
                    arity(2)?;
                    OpKind::StageRelease { ring: operands[0], slot: operands[1] }
                }
                "tilegpu.stage_wait" => {
                    arity(3)?;
                    OpKind::StageWait { ring: operands[0], slot: operands[1], phase: operands[2] }
                }
                "tilegpu.mma_wait" => {
                    arity(1)?;
                    OpKind::MmaWait { value: operands[0], pending: u32_attr("pending")? }
                }
                "tilegpu.local_alloc" => {
                    arity(1)?;
                    OpKind::LocalAlloc { value: operands[0] }
                }
                "tilegpu.stages_alloc" => {
                    arity(0)?;
                    OpKind::StagesAlloc
                }
                "tilegpu.stage" => {
                    arity(2)?;
                    OpKind::Stage { buf: operands[0], index: operands[1] }
                }
                "tilegpu.local_load" | "tilegpu.local_load_trans" => {
                    arity(1)?;
                    OpKind::LocalLoad { buf: operands[0], trans: name == "tilegpu.local_load_trans" }
                }
                "tile.arange" => OpKind::Arange,
                "tile.load" => {
                    let (tensor, index) = operands.split_first().ok_or_else(|| bad("no tensor operand"))?;
                    OpKind::Load {
                        tensor: *tensor,
                        index: index.to_vec(),
                        padding: padding(attr("padding")?).ok_or_else(|| bad("bad padding"))?,
                        order: i32_array(attr("order")?).ok_or_else(|| bad("bad order"))?,
                        latency: u32_attr("latency")?,
                    }
                }
                "tile.prefetch" => {
                    let (tensor, index) = operands.split_first().ok_or_else(|| bad("no tensor operand"))?;
                    OpKind::Prefetch {
                        tensor: *tensor,
                        index: index.to_vec(),
                        order: i32_array(attr("order")?).ok_or_else(|| bad("bad order"))?,
                        tile: i64_array(attr("tile")?).ok_or_else(|| bad("bad tile"))?,
                    }
                }
                "tile.gather" => {
                    let (tensor, index) = operands.split_first().ok_or_else(|| bad("no tensor operand"))?;
                    let padding = padding(attr("padding")?).ok_or_else(|| bad("bad padding"))?;
                    OpKind::Gather { tensor: *tensor, index: index.to_vec(), padding }
                }
                "tile.element" => {
                    let (tensor, index) = operands.split_first().ok_or_else(|| bad("no tensor operand"))?;
                    OpKind::Element { tensor: *tensor, index: index.to_vec() }
                }
                "tile.store" | "tile.scatter" | "tile.store_masked" => {
                    let masked = name == "tile.store_masked";
                    let (tensor, index, tail) = split_operands(&operands, 1 + usize::from(masked))
                        .ok_or_else(|| bad("expected a tensor, indices, a tile (and a mask)"))?;
                    let (tile, mask) = (tail[0], tail.get(1).copied());
                    if name == "tile.scatter" {
                        OpKind::Scatter { tensor, index, tile }
                    } else {
                        OpKind::Store { tensor, index, tile, mask }
                    }
                }
                "tile.atomic" | "tile.atomic_cas" | "tile.atomic_at" | "tile.atomic_cas_at" => {
                    let cas = name.starts_with("tile.atomic_cas");
                    let at = name.ends_with("_at");
                    let (tensor, index, tail) = split_operands(&operands, 2 + usize::from(cas))
                        .ok_or_else(|| bad("expected a tensor, indices, the tiles and a mask"))?;
                    let (cmp, tile, mask) = match tail[..] {
                        [c, t, m] => (Some(c), t, m),
                        [t, m] => (None, t, m),
                        _ => return Err(bad("expected the tiles and a mask")),
                    };
                    let text = |n: &str| -> Result<String, Diagnostic> {
                        string_attr(attr(n)?).ok_or_else(|| bad(&format!("bad `{n}`")))
                    };
                    let op = AtomicOp::parse(&text("op")?).ok_or_else(|| bad("unknown atomic op"))?;
                    let sem = MemSem::parse(&text("sem")?).ok_or_else(|| bad("unknown memory semantics"))?;
                    let scope = MemScope::parse(&text("scope")?).ok_or_else(|| bad("unknown scope"))?;
                    if (op == AtomicOp::Cas) != cmp.is_some() {
                        return Err(bad("`cas` is tile.atomic_cas, the others tile.atomic"));
                    }
                    OpKind::Atomic { op, tensor, index, tile, cmp, mask, sem, scope, at }
                }
                "math.fma" => {
                    arity(3)?;
                    OpKind::Fma { a: operands[0], b: operands[1], c: operands[2] }
                }
                "tile.mma" => {
                    arity(3)?;
                    OpKind::Mma { a: operands[0], b: operands[1], acc: operands[2], scales: None }
                }
                "tile.mma_scaled" => {
                    arity(5)?;
                    OpKind::Mma {
                        a: operands[0],
                        b: operands[2],
                        acc: operands[4],
                        scales: Some((operands[1], operands[3])),
                    }
                }
                "arith.cmpi" | "arith.cmpf" => {
                    arity(2)?;
                    let float = name == "arith.cmpf";
                    let p = int_attr(attr("predicate")?).ok_or_else(|| bad("bad predicate"))?;
                    let pred = CmpPred::from_mlir_number(float, p)
                        .ok_or_else(|| bad(&format!("predicate {p} has no tile-IR form")))?;
                    OpKind::Cmp(pred, operands[0], operands[1])
                }
                n if LogicOp::from_mlir(n).is_some() => {
                    arity(2)?;
                    if operand_dtype(0).is_none_or(DType::is_float) {
                        return Err(bad("bitwise ops take integers or bools"));
                    }
                    let l = LogicOp::from_mlir(n).ok_or_else(|| bad("not a logical op"))?;
                    OpKind::Logic(l, operands[0], operands[1])
                }
                "arith.select" => {
                    arity(3)?;
                    OpKind::Select { cond: operands[0], a: operands[1], b: operands[2] }
                }
                "tile.concat" => {
                    if operands.is_empty() {
                        return Err(bad("a concat of no tiles"));
                    }
                    OpKind::Concat { values: operands.clone(), axis: u32_attr("axis")? }
                }
                "tile.sort" => {
                    arity(1)?;
                    OpKind::Sort {
                        value: operands[0],
                        axis: u32_attr("axis")?,
                        descending: u32_attr("descending")? != 0,
                        indices: u32_attr("indices")? != 0,
                        k: int_attr(attr("k")?).ok_or_else(|| bad("bad `k`"))?,
                    }
                }
                "tile.slice" => {
                    arity(1)?;
                    let offsets = i64_array(attr("offsets")?).ok_or_else(|| bad("bad offsets"))?;
                    OpKind::Slice { value: operands[0], offsets }
                }
                "tile.permute" => {
                    arity(1)?;
                    OpKind::Permute {
                        value: operands[0],
                        perm: i32_array(attr("perm")?).ok_or_else(|| bad("bad perm"))?,
                    }
                }
                "tile.rand" => {
                    arity(2)?;
                    OpKind::Rand { seed: operands[0], offsets: operands[1] }
                }
                "tile.print" => {
                    let prefix = string_attr(attr("prefix")?).ok_or_else(|| bad("bad prefix"))?;
                    OpKind::Print { prefix, values: operands }
                }
                _ => return Err(fail(format!("op `{name}` has no tile-IR form, so tilec passes cannot read it"))),
            }
        };
        let result = match op.result_count() {
            0 => None,
            1 => Some(self.define(op.result(0).map_err(|e| fail(e.to_string()))?.into())?),
            n => return Err(bad(&format!("{n} results"))),
        };
        Ok(Op { kind, result, span: self.span(op) })
    }

    fn results(&mut self, op: &OperationRef) -> Result<Vec<ValueId>, Diagnostic> {
        op.results().map(|r| self.define(r.into())).collect()
    }

    fn for_op(&mut self, op: &OperationRef, operands: Vec<ValueId>) -> Result<Op, Diagnostic> {
        let bad = |m: &str| fail(format!("`scf.for`: {m}"));
        let [lb, ub, step, init @ ..] = operands.as_slice() else { return Err(bad("fewer than 3 operands")) };
        let body = op.region(0).ok().and_then(|r| r.first_block()).ok_or_else(|| bad("no body"))?;
        let args: Vec<Value> = (0..body.argument_count())
            .map(|i| body.argument(i).map(Value::from).map_err(|e| fail(e.to_string())))
            .collect::<Result<_, _>>()?;
        let (iv_arg, iter_args) = args.split_first().ok_or_else(|| bad("no induction variable"))?;
        let iv = self.define(*iv_arg)?;
        let iters = iter_args.iter().map(|a| self.define(*a)).collect::<Result<Vec<_>, _>>()?;
        let (ops, term) = self.block_ops(body)?;
        if term.name != "scf.yield" || term.operands.len() != iters.len() {
            return Err(bad("the body must end with a `scf.yield` of the loop-carried values"));
        }
        let results = self.results(op)?;
        let kind = OpKind::For {
            lb: *lb,
            ub: *ub,
            step: *step,
            iv,
            init: init.to_vec(),
            iters,
            body: ops,
            yields: term.operands,
            results,
        };
        Ok(Op { kind, result: None, span: self.span(op) })
    }

    fn if_op(&mut self, op: &OperationRef, operands: Vec<ValueId>) -> Result<Op, Diagnostic> {
        let bad = |m: &str| fail(format!("`scf.if`: {m}"));
        let [cond] = operands.as_slice() else { return Err(bad("expected one condition")) };
        let mut branch = |i: usize| -> Result<(Vec<Op>, Vec<ValueId>), Diagnostic> {
            match op.region(i).ok().and_then(|r| r.first_block()) {
                // MLIR drops an empty `else` of an `if` with no results.
                None => Ok((vec![], vec![])),
                Some(b) => {
                    let (ops, term) = self.block_ops(b)?;
                    if term.name != "scf.yield" {
                        return Err(bad("a branch must end with `scf.yield`"));
                    }
                    Ok((ops, term.operands))
                }
            }
        };
        let (then_ops, then_yields) = branch(0)?;
        let (else_ops, else_yields) = branch(1)?;
        let results = self.results(op)?;
        if then_yields.len() != results.len() || else_yields.len() != results.len() {
            return Err(bad("each branch yields one value per result"));
        }
        let kind = OpKind::If { cond: *cond, then_ops, then_yields, else_ops, else_yields, results };
        Ok(Op { kind, result: None, span: self.span(op) })
    }
}
