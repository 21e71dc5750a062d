//! The emitter: typed SSA registers and one constructor per `llvm`/`nvvm` op the lowering
//! writes, so that the syntax of each op lives in one place and an ill-typed operand is
//! caught where it is emitted (a debug assertion naming the op) instead of by MLIR's parser.
//!
//! Text stays the substrate (verified by MLIR at every stage, readable in snapshots); values
//! are [`Reg`]s — a name and an LLVM type. Constants are hoisted once per (type, value) into
//! the prologue, so per-register expansion stays readable; integer arithmetic on constants
//! and with an identity (`x + 0`, `x * 1`, `x >> 0`) is folded where it is asked for, not
//! written (the per-register address arithmetic is full of it, and LLVM would only fold it
//! after MLIR had parsed, converted and translated it). Blocks are numbered in creation
//! order.

use std::collections::BTreeMap;
use std::fmt::Write;
use tilec_core::tir::mlir_float;
use tilec_core::DType;

/// An LLVM (dialect) type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ty {
    I1,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    /// `!llvm.ptr<addrspace>`.
    Ptr(u32),
    /// `vector<NxT>`.
    Vector(u32, Box<Ty>),
    /// `!llvm.struct<(…)>`.
    Struct(Vec<Ty>),
    /// `!llvm.array<N x T>` (how LLVM holds an n-D vector: an array of 1-D ones).
    Array(u32, Box<Ty>),
    /// `index`: the subscripts of upstream ops on memrefs.
    Index,
    /// A 1-D view `memref<LENxT, strided<[1], offset: OFFSET>, SPACE>` (length `?` when
    /// `None`): how the upstream `nvgpu` ops see the kernel's shared memory and its tensors.
    MemRef {
        len: Option<i64>,
        offset: i64,
        elem: Box<Ty>,
        space: u32,
    },
    /// `!nvgpu.device.async.token`: a group of asynchronous copies.
    AsyncToken,
}

impl Ty {
    /// The type of a tile element or scalar of dtype `d` (MLIR's builtin names are LLVM's).
    /// Unsigned integers are their signless width (the ops choose the signedness); an fp8
    /// value is its byte (LLVM has no fp8 type: converted by `cvt` in the lowering).
    pub fn of(d: DType) -> Ty {
        match d {
            DType::I1 => Ty::I1,
            DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1X2 | DType::UE8M0 | DType::UE4M3 => {
                Ty::I8
            }
            DType::I32 | DType::U32 => Ty::I32,
            DType::I64 => Ty::I64,
            DType::F16 => Ty::F16,
            DType::BF16 => Ty::BF16,
            DType::F32 => Ty::F32,
            DType::F64 => Ty::F64,
        }
    }

    /// An integer type of `bits` bits.
    pub fn int(bits: u32) -> Ty {
        match bits {
            1 => Ty::I1,
            8 => Ty::I8,
            16 => Ty::I16,
            64 => Ty::I64,
            _ => Ty::I32,
        }
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write_text(&mut out);
        out
    }

    /// [`Ty::text`] appended to `out`: a tile's struct of 64 registers is written at every
    /// `extractvalue` of it, so no piece is allocated on its own, and each goes straight
    /// into the string (not through a formatter: 5 % of a GEMM's lowering when it did).
    pub fn write_text(&self, out: &mut String) {
        if let Some(name) = self.scalar_name() {
            out.push_str(name);
            return;
        }
        // Writing into a String does not fail.
        let _ = match self {
            Ty::Ptr(a) => write!(out, "!llvm.ptr<{a}>"),
            Ty::Vector(n, t) => {
                let _ = write!(out, "vector<{n}x");
                t.write_text(out);
                out.push('>');
                Ok(())
            }
            Ty::Struct(ts) => {
                out.push_str("!llvm.struct<(");
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    t.write_text(out);
                }
                out.push_str(")>");
                Ok(())
            }
            Ty::Array(n, t) => {
                let _ = write!(out, "!llvm.array<{n} x ");
                t.write_text(out);
                out.push('>');
                Ok(())
            }
            Ty::MemRef { len, offset, elem, space } => {
                out.push_str("memref<");
                let _ = match len {
                    Some(l) => write!(out, "{l}x"),
                    None => write!(out, "?x"),
                };
                elem.write_text(out);
                if *offset != 0 {
                    let _ = write!(out, ", strided<[1], offset: {offset}>");
                }
                write!(out, ", {space}>")
            }
            _ => Ok(()),
        };
    }

    /// The type as an overloaded LLVM intrinsic's name spells it (`f32`, `v4i32`).
    fn mangled(&self) -> String {
        match self {
            Ty::Vector(n, t) => format!("v{n}{}", t.mangled()),
            t => t.text(),
        }
    }

    /// The name of a type without parameters.
    fn scalar_name(&self) -> Option<&'static str> {
        Some(match self {
            Ty::I1 => "i1",
            Ty::I8 => "i8",
            Ty::I16 => "i16",
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::F16 => "f16",
            Ty::BF16 => "bf16",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::Index => "index",
            Ty::AsyncToken => "!nvgpu.device.async.token",
            _ => return None,
        })
    }

    pub fn is_float(&self) -> bool {
        matches!(self, Ty::F16 | Ty::BF16 | Ty::F32 | Ty::F64)
    }
}

/// The type as MLIR writes it: what the emitter's op formats take (a type with parameters
/// is made in a string of its own first, [`Ty::write_text`], and written at once).
impl std::fmt::Display for Ty {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.scalar_name() {
            Some(name) => out.write_str(name),
            None => {
                let mut text = String::with_capacity(64);
                self.write_text(&mut text);
                out.write_str(&text)
            }
        }
    }
}

/// A splat's key: the scalar's name, the lanes and the group (`Emitter::chunk`).
type SplatKey = (std::rc::Rc<str>, u32, Option<usize>);

/// Struct types longer than this are named once at the top of the module
/// ([`Emitter::ty_str`], `alias_long_structs`).
pub const ALIASED_STRUCT_CHARS: usize = 96;

/// An SSA value of the lowered kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reg {
    /// Shared, not copied: a register's name is cloned with it wherever a tile's registers
    /// travel (every value of every thread), and a clone is a count, not an allocation.
    pub name: std::rc::Rc<str>,
    pub ty: Ty,
    /// The value of an integer constant made by [`Emitter::cint`] (what the emitter folds).
    value: Option<i64>,
}

impl Reg {
    pub fn new(name: impl Into<String>, ty: Ty) -> Reg {
        Reg { name: name.into().into(), ty, value: None }
    }
}

impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// Integer comparison predicates of `llvm.icmp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ICmp {
    Eq,
    Ne,
    Slt,
    Sle,
    Sgt,
    Sge,
    Ult,
}

impl ICmp {
    fn text(self) -> &'static str {
        match self {
            ICmp::Eq => "eq",
            ICmp::Ne => "ne",
            ICmp::Slt => "slt",
            ICmp::Sle => "sle",
            ICmp::Sgt => "sgt",
            ICmp::Sge => "sge",
            ICmp::Ult => "ult",
        }
    }
}

/// The emitter of one kernel: a prologue (constants, thread coordinates) and a body.
#[derive(Debug, Default)]
pub struct Emitter {
    pro: String,
    body: String,
    n: u32,
    blocks: u32,
    /// Labels written so far: the serial of the block being emitted (a value made in it is
    /// usable until the next label, whatever the control flow).
    labels: u32,
    /// The float constants made so far, by their type and literal as MLIR writes them.
    floats: BTreeMap<String, Reg>,
    /// The integer constants made so far, by (type, value).
    ints: BTreeMap<(Ty, i64), Reg>,
    /// The `undef` of each type made so far.
    undefs: BTreeMap<Ty, Reg>,
    /// The two-element vectors [`Emitter::unpack2`] took apart, by the names of their lanes:
    /// [`Emitter::pack2`] of the same two registers is the vector again (only looked up,
    /// never iterated).
    unpacked: std::collections::HashMap<(std::rc::Rc<str>, std::rc::Rc<str>), Reg>,
    /// The long struct types named so far ([`Emitter::ty_str`]): the text of the `k`-th is
    /// `!tilec_s{k}`'s definition.
    struct_names: BTreeMap<Ty, usize>,
    struct_texts: Vec<String>,
    /// Between [`Emitter::enter_prologue`] and [`Emitter::leave_prologue`]: `pro` and `body`
    /// are swapped, so what goes to the prologue goes to `body`.
    in_prologue: bool,
    /// The source's float `+ - *` carry LLVM's `contract` flag ([`super::Options::fp_fusion`]).
    pub fp_fusion: bool,
    /// Threads of the named barrier 1 that [`Emitter::barrier`] syncs instead of the whole
    /// block (the consumers of a warp-specialized kernel; the producer never takes part).
    pub named_barrier: Option<u32>,
    /// Inside a consumer warpgroup's turn (`tilegpu.turn_begin` … `turn_end`).
    pub turn_open: bool,
    /// A consumer-wide barrier was emitted inside a turn: the warpgroup waiting for its turn
    /// would never reach it (the lowering refuses the kernel).
    pub barrier_in_turn: bool,
    /// While an elementwise op is written once for all of a thread's registers as one
    /// `vector<N x T>` (`super::vector`): N. The op's code is the one it has on a register;
    /// its float constants are then splats, its comparisons and conversions N lanes wide, and
    /// an intrinsic without a vector form is called lane by lane.
    pub lanes: Option<u32>,
    /// The float constants by the names of their registers, for a splat of one
    /// ([`Emitter::splat`]): (the type's text, the literal). Only looked up.
    float_lits: std::collections::HashMap<std::rc::Rc<str>, (Ty, String)>,
    /// The splats of non-constant scalars made so far: (scalar, lanes, group) to the block
    /// serial it was made in and the vector.
    splats: std::collections::HashMap<SplatKey, (u32, Reg)>,
    /// While set, the body's ops go to the `k`-th of `chunks` instead: a vectorised chain is
    /// written a group of registers at a time (`super::vector`), and each group's ops are
    /// placed together at [`Emitter::flush_chunks`], so that a group's temporaries die before
    /// the next group's are made (op after op over all registers keeps every temporary of
    /// every register live at once: gelu's registers a thread 48 -> 80 on sm_90a).
    pub chunk: Option<usize>,
    chunks: Vec<String>,
}

impl Emitter {
    pub fn new() -> Emitter {
        Emitter::default()
    }

    /// The prologue and the body, in order.
    pub fn finish(mut self) -> (String, String) {
        self.flush_chunks();
        (self.pro, self.body)
    }

    /// [`Emitter::finish`] with the struct types the emitter named, in order: the `k`-th
    /// text is `!tilec_s{k}` (the module defines them, `alias_long_structs`).
    pub fn finish_with_structs(mut self) -> (String, String, Vec<String>) {
        self.flush_chunks();
        (self.pro, self.body, self.struct_texts)
    }

    /// Writes the deferred groups of a vectorised chain (see `chunk`) into the body, first
    /// group first. Their ops are pure and read only what was defined before them, so they
    /// may follow the body's ops written meanwhile; whatever reads them calls this first
    /// (`Lowering::lanes`), and so does every terminator and label.
    pub fn flush_chunks(&mut self) {
        if self.chunks.is_empty() {
            return;
        }
        let body = if self.in_prologue { &mut self.pro } else { &mut self.body };
        for c in self.chunks.drain(..) {
            body.push_str(&c);
        }
    }

    /// Where the body's next op goes: the body, or the group of `chunk`.
    fn body_out(&mut self) -> &mut String {
        match self.chunk {
            Some(k) => {
                if self.chunks.len() <= k {
                    self.chunks.resize(k + 1, String::new());
                }
                &mut self.chunks[k]
            }
            None => &mut self.body,
        }
    }

    /// How an op writes `ty`: a struct of scalars whose text is longer than
    /// [`ALIASED_STRUCT_CHARS`] by its name, `!tilec_sN` (a tile's registers travel as a
    /// struct of up to 128 members, written at every `extractvalue` and asm result: the name
    /// instead of 700 characters, which MLIR's parser would read each time and a pass over
    /// the text replace); any other type in full.
    pub fn ty_str(&mut self, ty: &Ty) -> String {
        let Ty::Struct(ts) = ty else { return ty.text() };
        if let Some(k) = self.struct_names.get(ty) {
            return format!("!tilec_s{k}");
        }
        let text = ty.text();
        if text.len() <= ALIASED_STRUCT_CHARS || ts.iter().any(|t| t.scalar_name().is_none()) {
            return text;
        }
        let k = self.struct_texts.len();
        self.struct_names.insert(ty.clone(), k);
        self.struct_texts.push(text);
        format!("!tilec_s{k}")
    }

    pub fn fresh(&mut self) -> String {
        self.n += 1;
        format!("%v{}", self.n)
    }

    /// A fresh register of type `ty` (a block argument).
    pub fn fresh_reg(&mut self, ty: Ty) -> Reg {
        Reg::new(self.fresh(), ty)
    }

    /// `%r = <rhs>` in the body.
    pub fn def(&mut self, ty: Ty, rhs: impl std::fmt::Display) -> Reg {
        let name = self.fresh();
        let _ = writeln!(self.body_out(), "    {name} = {rhs}");
        Reg::new(name, ty)
    }

    /// The serial of the block being emitted (see `labels`).
    pub fn block_serial(&self) -> u32 {
        self.labels
    }

    /// `%r = <rhs>` in the prologue (values every later block sees).
    pub fn def_prologue(&mut self, ty: Ty, rhs: impl std::fmt::Display) -> Reg {
        let name = self.fresh();
        // Inside `enter_prologue` the prologue is the `body` buffer: a constant first made
        // there (the swizzled index of an NVMMA atom) must not land in the real body.
        let pro = if self.in_prologue { &mut self.body } else { &mut self.pro };
        let _ = writeln!(pro, "    {name} = {rhs}");
        Reg::new(name, ty)
    }

    /// Emits into the prologue until [`Emitter::leave_prologue`]: the values made meanwhile
    /// dominate every block (they must depend on prologue values only).
    pub fn enter_prologue(&mut self) {
        std::mem::swap(&mut self.pro, &mut self.body);
        self.in_prologue = true;
    }

    pub fn leave_prologue(&mut self) {
        std::mem::swap(&mut self.pro, &mut self.body);
        self.in_prologue = false;
    }

    /// `a + b` of non-negative indices known not to wrap (`nsw nuw`), so that LLVM may move
    /// a constant term through the sign extension into an address's immediate offset.
    pub fn add_nowrap(&mut self, a: &Reg, b: &Reg) -> Reg {
        if let Some(r) = self.fold("add", a, b) {
            return r;
        }
        self.def(a.ty.clone(), format_args!("llvm.add {a}, {b} overflow<nsw, nuw> : {}", a.ty))
    }

    /// An op without a result, in the body.
    pub fn line(&mut self, s: impl std::fmt::Display) {
        let _ = writeln!(self.body_out(), "    {s}");
    }

    /// An integer constant; of a vector type, or in [`Emitter::lanes`] mode, a splat (with
    /// no folding value: [`Emitter::fold`] knows scalars only).
    pub fn cint(&mut self, v: i64, ty: Ty) -> Reg {
        match (self.lanes, ty) {
            (_, Ty::Vector(n, e)) => self.dense((*e).clone(), &int_lit(&e, v), n),
            (Some(n), t) => self.dense(t.clone(), &int_lit(&t, v), n),
            (None, t) => self.cint_scalar(v, t),
        }
    }

    /// An integer constant of a scalar type whatever the mode: a lane's index.
    fn cint_scalar(&mut self, v: i64, ty: Ty) -> Reg {
        // Keyed by the type itself, not its text: the lowering asks for a constant at nearly
        // every op, and a formatted key was an allocation each time.
        let key = (ty, v);
        if let Some(r) = self.ints.get(&key) {
            return r.clone();
        }
        let t = key.0.text();
        let mut r = self.def_prologue(key.0.clone(), format!("llvm.mlir.constant({v} : {t}) : {t}"));
        r.value = Some(v);
        self.ints.insert(key, r.clone());
        r
    }

    pub fn ci32(&mut self, v: i64) -> Reg {
        self.cint(v, Ty::I32)
    }

    /// A float constant of dtype `d`; in [`Emitter::lanes`] mode its splat.
    pub fn cfloat(&mut self, v: f64, d: DType) -> Reg {
        let (lit, ty) = (mlir_float(v, d), Ty::of(d));
        if let Some(n) = self.lanes {
            return self.dense(ty, &lit, n);
        }
        let t = ty.text();
        let key = format!("{t}:{lit}");
        if let Some(r) = self.floats.get(&key) {
            return r.clone();
        }
        let r = self.def_prologue(ty.clone(), format!("llvm.mlir.constant({lit} : {t}) : {t}"));
        self.floats.insert(key, r.clone());
        self.float_lits.insert(r.name.clone(), (ty, lit));
        r
    }

    /// `dense<lit> : vector<n x elem>`, once in the prologue.
    fn dense(&mut self, elem: Ty, lit: &str, n: u32) -> Reg {
        let vty = Ty::Vector(n, Box::new(elem));
        let t = vty.text();
        let key = format!("{t}:{lit}");
        if let Some(r) = self.floats.get(&key) {
            return r.clone();
        }
        let r = self.def_prologue(vty, format!("llvm.mlir.constant(dense<{lit}> : {t}) : {t}"));
        self.floats.insert(key, r.clone());
        r
    }

    /// `vector<n x T>` of `n` copies of the scalar `s`: a constant's once in the prologue
    /// (`dense<…>`), any other's where it is asked for (insert and shuffle), once a block.
    pub fn splat(&mut self, s: &Reg, n: u32) -> Reg {
        if let Some((ty, lit)) = self.float_lits.get(&s.name).cloned() {
            return self.dense(ty, &lit, n);
        }
        if let Some(v) = s.value {
            return self.dense(s.ty.clone(), &int_lit(&s.ty, v), n);
        }
        // By group too: a splat made in a later group's ops is placed after an earlier group's.
        let key = (s.name.clone(), n, self.chunk);
        let serial = self.labels;
        if let Some((at, v)) = self.splats.get(&key) {
            if *at == serial {
                return v.clone();
            }
        }
        let vty = Ty::Vector(n, Box::new(s.ty.clone()));
        let u = self.undef(vty.clone());
        let one = self.insertelement(&u, s, 0);
        let mask = vec!["0"; n as usize].join(", ");
        let v = self.def(vty.clone(), format_args!("llvm.shufflevector {one}, {one} [{mask}] : {vty}"));
        self.splats.insert(key, (serial, v.clone()));
        v
    }

    /// In [`Emitter::lanes`] mode, `to` with as many lanes as `v` has (a scalar type for a
    /// scalar); `to` elsewhere (a bitcast of `vector<2xf16>` to `i32` is one).
    fn lanes_of(&self, v: &Reg, to: Ty) -> Ty {
        if self.lanes.is_none() {
            return to;
        }
        match (&v.ty, to) {
            (
                Ty::Vector(n, _),
                t @ (Ty::I1 | Ty::I8 | Ty::I16 | Ty::I32 | Ty::I64 | Ty::F16 | Ty::BF16 | Ty::F32 | Ty::F64),
            ) => Ty::Vector(*n, Box::new(t)),
            (_, t) => t,
        }
    }

    pub fn cf32(&mut self, v: f64) -> Reg {
        self.cfloat(v, DType::F32)
    }

    /// An address of a module global (`@name`) in address space `space`, in the prologue.
    pub fn addressof(&mut self, global: &str, space: u32) -> Reg {
        let ty = Ty::Ptr(space);
        self.def_prologue(ty.clone(), format!("llvm.mlir.addressof @{global} : {}", ty.text()))
    }

    // --- arithmetic -----------------------------------------------------------------------

    fn bin(&mut self, op: &str, a: &Reg, b: &Reg) -> Reg {
        self.bin_in(false, op, a, b)
    }

    /// `a op b` of integers in the prologue (a thread coordinate's arithmetic), folded like
    /// the body's.
    pub fn bin_prologue(&mut self, op: &str, a: &Reg, b: &Reg) -> Reg {
        self.bin_in(true, op, a, b)
    }

    /// `llvm.<op> a, b` in the prologue or the body, unless [`Emitter::fold`] knows it.
    fn bin_in(&mut self, prologue: bool, op: &str, a: &Reg, b: &Reg) -> Reg {
        debug_assert_eq!(a.ty, b.ty, "{op} of {} and {}", a.ty.text(), b.ty.text());
        if let Some(r) = self.fold(op, a, b) {
            return r;
        }
        self.def_in(prologue, a.ty.clone(), format_args!("llvm.{op} {a}, {b} : {}", a.ty))
    }

    /// `a op b` without an op where the answer is known: both operands constants, or one
    /// the op's identity (`x + 0`, `x * 1`, `x >> 0`, …) or absorbing element (`x * 0`,
    /// `x & 0`). The per-register address arithmetic is full of them (a register's offset
    /// along a dim is often 0, a stride 1), and LLVM would only fold them again — after
    /// MLIR had parsed, converted and translated each. Integers of 8 to 64 bits only; a shift
    /// by the width or more (poison) is left to LLVM.
    fn fold(&mut self, op: &str, a: &Reg, b: &Reg) -> Option<Reg> {
        let bits: u32 = match a.ty {
            Ty::I8 => 8,
            Ty::I16 => 16,
            Ty::I32 => 32,
            Ty::I64 => 64,
            _ => return None,
        };
        let (x, y) = (a.value, b.value);
        // The value as the type holds it, sign-extended (as `cint` writes constants).
        let wrap = |v: i128| -> i64 { ((v as i64) << (64 - bits)) >> (64 - bits) };
        let shift_ok = y.is_some_and(|s| (0..i64::from(bits)).contains(&s));
        let ty = a.ty.clone();
        if let (Some(x), Some(y)) = (x, y) {
            let (wx, wy) = (i128::from(x), i128::from(y));
            // The unsigned value of x in the type's width, for a logical shift right.
            let ux = i128::from(x) & ((1i128 << bits) - 1);
            let v = match op {
                "add" => wx + wy,
                "sub" => wx - wy,
                "mul" => wx * wy,
                "and" => wx & wy,
                "or" => wx | wy,
                "xor" => wx ^ wy,
                "shl" if shift_ok => wx << y,
                "lshr" if shift_ok => ux >> y,
                "ashr" if shift_ok => wx >> y,
                _ => return None,
            };
            return Some(self.cint(wrap(v), ty));
        }
        match (op, x, y) {
            ("add" | "or" | "xor", Some(0), _) | ("mul", Some(1), _) | ("and", Some(-1), _) => Some(b.clone()),
            ("add" | "sub" | "or" | "xor" | "shl" | "lshr" | "ashr", _, Some(0))
            | ("mul", _, Some(1))
            | ("and", _, Some(-1)) => Some(a.clone()),
            ("mul" | "and", Some(0), _) | ("mul" | "and", _, Some(0)) => Some(self.cint(0, ty)),
            _ => None,
        }
    }

    pub fn add(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("add", a, b)
    }
    pub fn sub(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("sub", a, b)
    }
    pub fn mul(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("mul", a, b)
    }
    pub fn sdiv(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("sdiv", a, b)
    }
    pub fn srem(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("srem", a, b)
    }
    pub fn and(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("and", a, b)
    }
    pub fn or(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("or", a, b)
    }
    pub fn xor(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("xor", a, b)
    }
    pub fn lshr(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("lshr", a, b)
    }
    pub fn shl(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("shl", a, b)
    }
    pub fn ashr(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("ashr", a, b)
    }
    pub fn fadd(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("fadd", a, b)
    }
    pub fn fsub(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("fsub", a, b)
    }
    pub fn fmul(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("fmul", a, b)
    }
    /// A float `+`, `-` or `*` written in the source: contractable into an `fma` with its
    /// neighbour under [`Emitter::fp_fusion`]. The lowering's own arithmetic (the math
    /// expansions, which depend on each rounding) uses [`Emitter::fadd`] and friends.
    pub fn fsource(&mut self, op: &str, a: &Reg, b: &Reg) -> Reg {
        if !self.fp_fusion {
            return self.bin(op, a, b);
        }
        debug_assert_eq!(a.ty, b.ty, "{op} of {} and {}", a.ty.text(), b.ty.text());
        self.def(
            a.ty.clone(),
            format_args!("llvm.{op} {a}, {b} {{fastmathFlags = #llvm.fastmath<contract>}} : {}", a.ty),
        )
    }
    pub fn fdiv(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("fdiv", a, b)
    }
    pub fn frem(&mut self, a: &Reg, b: &Reg) -> Reg {
        self.bin("frem", a, b)
    }

    pub fn fneg(&mut self, a: &Reg) -> Reg {
        self.def(a.ty.clone(), format_args!("llvm.fneg {a} : {}", a.ty))
    }

    /// `llvm.intr.<name>(args)`: the type of the result is that of the first argument.
    pub fn intr(&mut self, name: &str, args: &[&Reg]) -> Reg {
        let ty = args.first().map(|a| a.ty.clone()).unwrap_or(Ty::F32);
        self.intr_to(name, args, ty)
    }

    /// `llvm.intr.<name>(args) : (…) -> ret`.
    pub fn intr_to(&mut self, name: &str, args: &[&Reg], ret: Ty) -> Reg {
        let ret = match args.first() {
            Some(a) => self.lanes_of(a, ret),
            None => ret,
        };
        let (names, tys) = list(args);
        self.def(ret.clone(), format!("llvm.intr.{name}({names}) : ({tys}) -> {}", ret.text()))
    }

    /// `llvm.call_intrinsic "<name>"(args) : (…) -> ret`.
    pub fn call_intrinsic(&mut self, name: &str, args: &[&Reg], ret: Ty) -> Reg {
        if let (Some(_), Some(Ty::Vector(n, _)), false) =
            (self.lanes, args.first().map(|a| &a.ty), matches!(ret, Ty::Vector(..)))
        {
            let n = *n;
            // `llvm.exp2` of f32 is `ex2.approx.f32` on NVPTX, as the NVVM intrinsic; the
            // others have no vector form: lane by lane.
            if name == "llvm.nvvm.ex2.approx.f32" {
                return self.intr("exp2", args);
            }
            let mut out = vec![];
            for i in 0..i64::from(n) {
                let lanes: Vec<Reg> = args.iter().map(|a| self.extractelement(a, i)).collect();
                let lane_refs: Vec<&Reg> = lanes.iter().collect();
                out.push(self.call_intrinsic(name, &lane_refs, ret.clone()));
            }
            return self.pack(&out);
        }
        let (names, tys) = list(args);
        self.def(ret.clone(), format!("llvm.call_intrinsic \"{name}\"({names}) : ({tys}) -> {}", ret.text()))
    }

    /// `v` truncated toward zero to the integer type `to`, saturating, NaN to 0
    /// (`llvm.fpto[su]i.sat`: PTX's `cvt.rzi.sat`); of a vector, one call on the vector
    /// (`llvm.fptosi.sat.v4i32.v4f32`).
    pub fn float_to_int_sat(&mut self, signed: bool, v: &Reg, to: Ty) -> Reg {
        let to = self.lanes_of(v, to);
        let op = if signed { "fptosi" } else { "fptoui" };
        let name = format!("llvm.{op}.sat.{}.{}", to.mangled(), v.ty.mangled());
        self.call_intrinsic(&name, &[v], to)
    }

    pub fn icmp(&mut self, p: ICmp, a: &Reg, b: &Reg) -> Reg {
        debug_assert_eq!(a.ty, b.ty, "icmp of {} and {}", a.ty.text(), b.ty.text());
        self.def(self.lanes_of(a, Ty::I1), format_args!("llvm.icmp \"{}\" {a}, {b} : {}", p.text(), a.ty))
    }

    /// `llvm.icmp`/`llvm.fcmp` with a predicate spelled as MLIR spells it.
    pub fn cmp(&mut self, float: bool, pred: &str, a: &Reg, b: &Reg) -> Reg {
        let op = if float { "llvm.fcmp" } else { "llvm.icmp" };
        self.def(self.lanes_of(a, Ty::I1), format_args!("{op} \"{pred}\" {a}, {b} : {}", a.ty))
    }

    pub fn select(&mut self, c: &Reg, a: &Reg, b: &Reg) -> Reg {
        debug_assert!(
            c.ty == Ty::I1 || c.ty == self.lanes_of(a, Ty::I1),
            "select on {} of {}",
            c.ty.text(),
            a.ty.text()
        );
        self.def(a.ty.clone(), format_args!("llvm.select {c}, {a}, {b} : {}, {}", c.ty, a.ty))
    }

    /// A conversion op (`sext`, `zext`, `trunc`, `fpext`, `fptrunc`, `sitofp`, `uitofp`,
    /// `fptosi`, `bitcast`) of `v` to `to` (to as many lanes of `to` for a vector).
    pub fn convert(&mut self, op: &str, v: &Reg, to: Ty) -> Reg {
        let to = self.lanes_of(v, to);
        self.def(to.clone(), format_args!("llvm.{op} {v} : {} to {}", v.ty, to))
    }

    /// `v` reinterpreted as `to` (no op when the types agree).
    pub fn bitcast(&mut self, v: &Reg, to: Ty) -> Reg {
        let to = self.lanes_of(v, to);
        if v.ty == to {
            return v.clone();
        }
        self.convert("bitcast", v, to)
    }

    // --- memory ---------------------------------------------------------------------------

    /// `&base[idx]` in units of `elem`.
    pub fn gep(&mut self, base: &Reg, idx: &Reg, elem: &Ty) -> Reg {
        self.def(
            base.ty.clone(),
            format_args!("llvm.getelementptr {base}[{idx}] : ({}, {}) -> {}, {}", base.ty, idx.ty, base.ty, elem),
        )
    }

    pub fn load(&mut self, ptr: &Reg, ty: Ty, align: i64) -> Reg {
        let t = ty.clone();
        self.def(ty, format_args!("llvm.load {ptr} {{alignment = {align} : i64}} : {} -> {t}", ptr.ty))
    }

    pub fn store(&mut self, v: &Reg, ptr: &Reg, align: i64) {
        self.line(format_args!("llvm.store {v}, {ptr} {{alignment = {align} : i64}} : {}, {}", v.ty, ptr.ty));
    }

    // --- aggregates -----------------------------------------------------------------------

    pub fn extractvalue(&mut self, s: &Reg, i: usize) -> Reg {
        let ty = match &s.ty {
            Ty::Struct(ts) => ts.get(i).cloned().unwrap_or(Ty::I32),
            Ty::Array(_, t) => (**t).clone(),
            _ => {
                debug_assert!(false, "extractvalue of {}", s.ty.text());
                return s.clone();
            }
        };
        let st = self.ty_str(&s.ty);
        self.def(ty, format_args!("llvm.extractvalue {s}[{i}] : {st}"))
    }

    pub fn insertvalue(&mut self, s: &Reg, x: &Reg, i: usize) -> Reg {
        let st = self.ty_str(&s.ty);
        self.def(s.ty.clone(), format_args!("llvm.insertvalue {x}, {s}[{i}] : {st}"))
    }

    pub fn extractelement(&mut self, v: &Reg, i: i64) -> Reg {
        let Ty::Vector(_, et) = &v.ty else {
            debug_assert!(false, "extractelement of {}", v.ty.text());
            return v.clone();
        };
        let et = (**et).clone();
        let ci = self.cint_scalar(i, Ty::I32);
        self.def(et, format_args!("llvm.extractelement {v}[{ci} : i32] : {}", v.ty))
    }

    pub fn insertelement(&mut self, v: &Reg, x: &Reg, i: i64) -> Reg {
        let ci = self.cint_scalar(i, Ty::I32);
        self.def(v.ty.clone(), format_args!("llvm.insertelement {x}, {v}[{ci} : i32] : {}", v.ty))
    }

    /// `vector<2 x T>` of two `T` registers. Two lanes of a vector [`Emitter::unpack2`] took
    /// apart give that vector back: a chain of paired ops (`Feature::PackedF32`) passes its
    /// vectors along instead of taking each apart and packing it again, four inserts and two
    /// extracts a pair that LLVM would only fold away. The vector dominates wherever both
    /// lanes are defined (they are extracted right after it), so it is usable wherever they
    /// are.
    pub fn pack2(&mut self, a: &Reg, b: &Reg) -> Reg {
        if let Some(v) = self.unpacked.get(&(a.name.clone(), b.name.clone())) {
            return v.clone();
        }
        self.pack(&[a.clone(), b.clone()])
    }

    /// `vector<N x T>` of N registers of type `T`, in order (inserted into `undef`).
    pub fn pack(&mut self, regs: &[Reg]) -> Reg {
        let Some(first) = regs.first() else {
            debug_assert!(false, "a vector of no registers");
            return self.undef(Ty::Vector(0, Box::new(Ty::I32)));
        };
        // Integer constants (a lane's index in a pair, an `arange`'s registers): one `dense<[…]>`
        // in the prologue rather than inserts LLVM folds back into it.
        if matches!(first.ty, Ty::I1 | Ty::I8 | Ty::I16 | Ty::I32 | Ty::I64) {
            if let Some(vals) = regs.iter().map(|r| r.value).collect::<Option<Vec<i64>>>() {
                let lits: Vec<String> = vals.iter().map(|&v| int_lit(&first.ty, v)).collect();
                return self.dense(first.ty.clone(), &format!("[{}]", lits.join(", ")), regs.len() as u32);
            }
        }
        let mut v = self.undef(Ty::Vector(regs.len() as u32, Box::new(first.ty.clone())));
        for (i, r) in regs.iter().enumerate() {
            v = self.insertelement(&v, r, i as i64);
        }
        v
    }

    /// The lanes of a vector, in order.
    pub fn unpack(&mut self, v: &Reg) -> Vec<Reg> {
        let n = match &v.ty {
            Ty::Vector(n, _) => i64::from(*n),
            _ => 0,
        };
        (0..n).map(|i| self.extractelement(v, i)).collect()
    }

    /// The two lanes of a two-element vector, remembered for [`Emitter::pack2`].
    pub fn unpack2(&mut self, v: &Reg) -> (Reg, Reg) {
        let (a, b) = (self.extractelement(v, 0), self.extractelement(v, 1));
        self.unpacked.insert((a.name.clone(), b.name.clone()), v.clone());
        (a, b)
    }

    /// `undef` of `ty`, made once in the prologue like a constant: every vector a thread
    /// packs starts from it, and one op a type instead of one a vector keeps the stages
    /// short (LLVM has a single `undef` of a type either way).
    pub fn undef(&mut self, ty: Ty) -> Reg {
        if let Some(r) = self.undefs.get(&ty) {
            return r.clone();
        }
        let r = self.def_prologue(ty.clone(), format!("llvm.mlir.undef : {ty}"));
        self.undefs.insert(ty, r.clone());
        r
    }

    // --- nvvm -----------------------------------------------------------------------------

    /// A special register (`tid.x`, `ctaid.y`, …) read in the prologue.
    pub fn sreg_prologue(&mut self, name: &str) -> Reg {
        self.def_prologue(Ty::I32, format!("nvvm.read.ptx.sreg.{name} : i32"))
    }

    /// A special register read where it is used.
    pub fn sreg(&mut self, name: &str) -> Reg {
        self.def(Ty::I32, format!("nvvm.read.ptx.sreg.{name} : i32"))
    }

    /// `shfl.sync.bfly` of a 32-bit value over the whole warp.
    pub fn shfl_bfly32(&mut self, v: &Reg, offset: i64) -> Reg {
        let all = self.ci32(-1);
        let off = self.ci32(offset);
        let clamp = self.ci32(31);
        let t = v.ty.text();
        self.def(v.ty.clone(), format!("nvvm.shfl.sync bfly {all}, {v}, {off}, {clamp} : {t} -> {t}"))
    }

    /// Stops the kernel (`trap`): the launch fails with an error instead of going on wrong.
    pub fn trap(&mut self) {
        self.flush_chunks();
        self.line("llvm.intr.trap");
        self.line("llvm.unreachable");
    }

    /// `mma.sync.m16n8k16.row.col.f32.{bf16,f16}.f32`: 4 A and 2 B registers of two packed
    /// 16-bit elements each, an f32 accumulator of 4 registers (rows r and r+8, two columns
    /// each). `nvvm.mma.sync` itself rather than upstream `nvgpu.mma.sync`: MLIR 22's nvgpu
    /// op rejects bf16 operands with an error while `mlir-opt` exits 0 (TOOLCHAIN.md, example
    /// neg_01a), and for f16 it is this op wrapped in ~25 ops of array/vector packing a
    /// product that `convert-nvgpu-to-nvvm` unpacks again (issue 34: a fifth of
    /// mla_decode's `nvgpu` stage, parsed, converted and translated for nothing). bf16
    /// operands are i32 words (the op's bf16 form), f16 ones `vector<2xf16>`.
    pub fn mma_m16n8k16(&mut self, a: &[Reg], b: &[Reg], c: &[Reg], bf16: bool) -> Vec<Reg> {
        let ty = Ty::Struct(vec![Ty::F32; 4]);
        let names = |rs: &[Reg]| rs.iter().map(|r| r.name.clone()).collect::<Vec<_>>().join(", ");
        let (types, operand) = if bf16 {
            (", multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>", "i32")
        } else {
            debug_assert!(a.iter().chain(b).all(|r| r.ty == Ty::Vector(2, Box::new(Ty::F16))), "f16 mma operands");
            ("", "vector<2xf16>")
        };
        let s = self.def(
            ty.clone(),
            format!(
                "nvvm.mma.sync A[{}] B[{}] C[{}] {{layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>{types}, shape = #nvvm.shape<m = 16, n = 8, k = 16>}} : ({operand}, {operand}, f32) -> {}",
                names(a),
                names(b),
                names(c),
                ty.text()
            ),
        );
        (0..4).map(|i| self.extractvalue(&s, i)).collect()
    }

    /// `ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16` at element `offset + idx`
    /// (`idx` i32, sign-extended) of `elem` past `base`: lane `l` gives the row `l % 8` of
    /// matrix `l / 8`. One register per matrix: its i32 word (two 16-bit elements) as `word`
    /// (i32 itself, or `vector<2xf16>`). `nvvm.ldmatrix` on the
    /// pointer rather than upstream `nvgpu.ldmatrix` on a memref view: the address is the
    /// view's (`gep base[offset]`, `gep [sext idx]`, as `convert-nvgpu-to-nvvm` computes
    /// it), without the descriptor, the index cast and the fragment array around each load.
    pub fn ldmatrix(
        &mut self,
        (base, offset, elem): (&Reg, i64, &Ty),
        idx: &Reg,
        (num, trans): (usize, bool),
        word: &Ty,
    ) -> Vec<Reg> {
        let i = self.convert("sext", idx, Ty::I64);
        let mut p = base.clone();
        if offset != 0 {
            let o = self.cint(offset, Ty::I64);
            p = self.gep(&p, &o, elem);
        }
        let p = self.gep(&p, &i, elem);
        let words = Ty::Struct(vec![Ty::I32; num]);
        let layout = if trans { "col" } else { "row" };
        let s = self.def(
            words.clone(),
            format!(
                "nvvm.ldmatrix {p} {{eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<{layout}>, num = {num} : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}} : ({}) -> {}",
                p.ty.text(),
                words.text()
            ),
        );
        (0..num)
            .map(|k| {
                let w = self.extractvalue(&s, k);
                self.bitcast(&w, word.clone())
            })
            .collect()
    }

    // --- upstream nvgpu -------------------------------------------------------------------
    //
    // The tensor-core ops go through upstream `nvgpu` (lowered by `convert-nvgpu-to-nvvm`
    // in the target's pipeline) on memref views and vector fragments. Between the lowering's
    // LLVM values and those upstream types stand `builtin.unrealized_conversion_cast`s of
    // exactly the types the LLVM conversion gives them (a memref descriptor struct, an array
    // of 1-D vectors), so `reconcile-unrealized-casts` folds every one away.

    /// `builtin.unrealized_conversion_cast` of `v` to `to`.
    pub fn cast(&mut self, v: &Reg, to: Ty) -> Reg {
        let t = to.text();
        self.def(to, format!("builtin.unrealized_conversion_cast {v} : {} to {t}", v.ty.text()))
    }

    /// `arith.index_cast` of an integer to `index`.
    pub fn index_cast(&mut self, v: &Reg) -> Reg {
        self.def(Ty::Index, format!("arith.index_cast {v} : {} to index", v.ty.text()))
    }

    /// A 1-D memref view of `len` elements of `elem` starting `offset` elements after `ptr`
    /// (a descriptor with unit stride, cast to the memref type). In the prologue when
    /// `prologue` (its operands must be there too).
    pub fn memref_view(
        &mut self,
        ptr: &Reg,
        elem: Ty,
        len: Option<i64>,
        offset: i64,
        size: &Reg,
        prologue: bool,
    ) -> Reg {
        let Ty::Ptr(space) = ptr.ty else {
            debug_assert!(false, "memref view of {}", ptr.ty.text());
            return ptr.clone();
        };
        let i64s = Ty::Array(1, Box::new(Ty::I64));
        let desc = Ty::Struct(vec![ptr.ty.clone(), ptr.ty.clone(), Ty::I64, i64s.clone(), i64s]);
        let (off, one) = (self.cint(offset, Ty::I64), self.cint(1, Ty::I64));
        let mut d = self.def_in(prologue, desc.clone(), format!("llvm.mlir.poison : {}", desc.text()));
        for (x, pos) in [(ptr, "0"), (ptr, "1"), (&off, "2"), (size, "3, 0"), (&one, "4, 0")] {
            d = self.def_in(prologue, desc.clone(), format!("llvm.insertvalue {x}, {d}[{pos}] : {}", desc.text()));
        }
        let to = Ty::MemRef { len, offset, elem: Box::new(elem), space };
        let t = to.text();
        self.def_in(prologue, to, format!("builtin.unrealized_conversion_cast {d} : {} to {t}", d.ty.text()))
    }

    fn def_in(&mut self, prologue: bool, ty: Ty, rhs: impl std::fmt::Display) -> Reg {
        if prologue {
            self.def_prologue(ty, rhs)
        } else {
            self.def(ty, rhs)
        }
    }

    /// `nvgpu.device_async_copy` of `elems` elements (16 bytes: `cp.async.cg`, bypassing
    /// L1) from `src[si]` to `dst[di]`; only the first `src_elems` are read, the rest of the
    /// 16 bytes are zero-filled. Returns the copy's token.
    pub fn nvgpu_async_copy(&mut self, src: &Reg, si: &Reg, dst: &Reg, di: &Reg, elems: i64, src_elems: &Reg) -> Reg {
        self.def(
            Ty::AsyncToken,
            format!(
                "nvgpu.device_async_copy {src}[{si}], {dst}[{di}], {elems}, {src_elems} {{bypassL1}} : {} to {}",
                src.ty.text(),
                dst.ty.text()
            ),
        )
    }

    /// `nvgpu.device_async_create_group`: commits the copies of `tokens` as one group.
    pub fn nvgpu_async_group(&mut self, tokens: &[Reg]) -> Reg {
        let names: Vec<&str> = tokens.iter().map(|t| &*t.name).collect();
        self.def(Ty::AsyncToken, format!("nvgpu.device_async_create_group {}", names.join(", ")))
    }

    /// `nvgpu.device_async_wait`: waits until at most `pending` groups are in flight.
    pub fn nvgpu_async_wait(&mut self, group: &Reg, pending: u32) {
        self.line(format!("nvgpu.device_async_wait {group} {{numGroups = {pending} : i32}}"));
    }

    pub fn barrier(&mut self) {
        self.barrier_in_turn |= self.turn_open;
        match self.named_barrier {
            Some(n) => {
                let (id, count) = (self.ci32(1), self.ci32(i64::from(n)));
                self.line(format!("nvvm.barrier id = {id} number_of_threads = {count}"));
            }
            None => self.line("nvvm.barrier0"),
        }
    }

    /// `x` through a PTX `mov` LLVM cannot see into (no side effects: it may move, merge or
    /// vanish like any pure op): LLVM knows nothing of the result's bits, so a constant added
    /// to it stays an add — one the NVPTX back end folds into an address's immediate — instead
    /// of an `or` merged into whatever computed `x`. ptxas removes the `mov`.
    pub fn opaque_i32(&mut self, x: &Reg) -> Reg {
        self.def(Ty::I32, format_args!("llvm.inline_asm \"mov.b32 $0, $1;\", \"=r,r\" {x} : (i32) -> i32"))
    }

    /// Inline PTX (see `ptx_asm`): `has_side_effects` keeps it in place.
    pub fn inline_asm(&mut self, asm: &str, constraints: &str, args: &[&Reg], ret: Option<Ty>) -> Option<Reg> {
        let (names, tys) = list(args);
        let sep = if names.is_empty() { "" } else { " " };
        match ret {
            Some(ty) => {
                let t = self.ty_str(&ty);
                Some(self.def(
                    ty,
                    format_args!(
                        "llvm.inline_asm has_side_effects \"{asm}\", \"{constraints}\"{sep}{names} : ({tys}) -> {t}"
                    ),
                ))
            }
            None => {
                self.line(format!(
                    "llvm.inline_asm has_side_effects \"{asm}\", \"{constraints}\"{sep}{names} : ({tys}) -> ()"
                ));
                None
            }
        }
    }

    // --- control flow ---------------------------------------------------------------------

    pub fn new_block(&mut self) -> String {
        self.blocks += 1;
        format!("^bb{}", self.blocks)
    }

    /// `llvm.br ^block(args)`.
    pub fn br(&mut self, block: &str, args: &[Reg]) {
        self.flush_chunks();
        if args.is_empty() {
            self.line(format!("llvm.br {block}"));
        } else {
            let refs: Vec<&Reg> = args.iter().collect();
            let (names, tys) = list(&refs);
            self.line(format!("llvm.br {block}({names} : {tys})"));
        }
    }

    pub fn cond_br(&mut self, c: &Reg, then_block: &str, else_block: &str) {
        self.flush_chunks();
        self.line(format!("llvm.cond_br {c}, {then_block}, {else_block}"));
    }

    /// The label of a block with its arguments.
    pub fn label(&mut self, block: &str, args: &[Reg]) {
        self.flush_chunks();
        self.labels += 1;
        if args.is_empty() {
            let _ = writeln!(self.body, "  {block}:");
        } else {
            let a: Vec<String> = args.iter().map(|r| format!("{}: {}", r.name, r.ty.text())).collect();
            let _ = writeln!(self.body, "  {block}({}):", a.join(", "));
        }
    }
}

/// An integer constant's literal in a `dense<…>` of `ty` (`i1`'s as `true`/`false`).
fn int_lit(ty: &Ty, v: i64) -> String {
    match (ty, v) {
        (Ty::I1, 0) => "false".into(),
        (Ty::I1, _) => "true".into(),
        _ => v.to_string(),
    }
}

/// `a, b, c` and `ta, tb, tc`.
fn list(args: &[&Reg]) -> (String, String) {
    let names: Vec<&str> = args.iter().map(|a| &*a.name).collect();
    let tys: Vec<String> = args.iter().map(|a| a.ty.text()).collect();
    (names.join(", "), tys.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_hoisted_once_and_ops_carry_their_types() {
        let mut e = Emitter::new();
        let a = e.ci32(3);
        let b = e.ci32(3);
        assert_eq!(a, b);
        let x = e.cf32(0.5);
        let y = e.fadd(&x, &x);
        let c = e.icmp(ICmp::Ult, &a, &b);
        let s = e.select(&c, &y, &x);
        assert_eq!(s.ty, Ty::F32);
        let (pro, body) = e.finish();
        assert_eq!(pro.matches("llvm.mlir.constant").count(), 2, "{pro}");
        assert!(body.contains("llvm.fadd %v2, %v2 : f32"), "{body}");
        assert!(body.contains("llvm.icmp \"ult\" %v1, %v1 : i32"), "{body}");
        assert!(body.contains("llvm.select %v4, %v3, %v2 : i1, f32"), "{body}");
    }

    #[test]
    fn type_text() {
        assert_eq!(Ty::Struct(vec![Ty::I32, Ty::I32]).text(), "!llvm.struct<(i32, i32)>");
        assert_eq!(Ty::Vector(2, Box::new(Ty::F16)).text(), "vector<2xf16>");
        assert_eq!(Ty::Ptr(3).text(), "!llvm.ptr<3>");
    }

    /// Integer ops on constants give the constant the type holds (wrapped, sign-extended as
    /// `cint` writes it); an identity gives the other operand; what LLVM would call poison, an
    /// i1 and floats are written as ops.
    #[test]
    fn integer_ops_on_constants_and_identities_are_folded() {
        let mut em = Emitter::new();
        let x = em.sreg("tid.x");
        let folded = |em: &mut Emitter, op: &str, a: i64, b: i64, ty: Ty| {
            let (ca, cb) = (em.cint(a, ty.clone()), em.cint(b, ty.clone()));
            em.bin(op, &ca, &cb).value
        };
        assert_eq!(folded(&mut em, "add", 100, 100, Ty::I8), Some(-56));
        assert_eq!(folded(&mut em, "mul", 1 << 20, 1 << 12, Ty::I32), Some(0));
        assert_eq!(folded(&mut em, "sub", i64::MIN, 1, Ty::I64), Some(i64::MAX));
        assert_eq!(folded(&mut em, "lshr", -1, 28, Ty::I32), Some(15));
        assert_eq!(folded(&mut em, "ashr", -16, 2, Ty::I32), Some(-4));
        assert_eq!(folded(&mut em, "shl", 3, 30, Ty::I32), Some(-1 << 30));
        assert_eq!(folded(&mut em, "xor", 0x0f, -1, Ty::I16), Some(-16));
        // A shift by the width is poison: left to LLVM, as is any i1.
        assert_eq!(folded(&mut em, "shl", 1, 32, Ty::I32), None);
        assert_eq!(folded(&mut em, "lshr", 1, -1, Ty::I64), None);
        assert_eq!(folded(&mut em, "and", 1, 1, Ty::I1), None);
        let (zero, one, ones) = (em.ci32(0), em.ci32(1), em.ci32(-1));
        for (op, a, b) in
            [("add", &x, &zero), ("add", &zero, &x), ("mul", &one, &x), ("lshr", &x, &zero), ("and", &ones, &x)]
        {
            assert_eq!(em.bin(op, a, b), x, "{op}");
        }
        assert_eq!(em.bin("mul", &x, &zero), zero);
        assert_eq!(em.bin("sub", &zero, &x).value, None, "0 - x is not x");
        let before = em.body.len();
        let f = em.cf32(0.0);
        let y = em.bitcast(&x, Ty::F32);
        assert_ne!(em.fadd(&y, &f), y, "x + 0.0 is not x for x = -0.0");
        assert!(em.body.len() > before);
    }
}
