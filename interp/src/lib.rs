//! tilec-interp: a CPU interpreter of the `tile` dialect, the reference oracle of the tests.
//!
//! Contract: [`run`] executes a kernel ([`tilec_core::tir::Func`], as the frontend emits it)
//! for every block of a grid, block after block, over host tensors. A tile is a dense array
//! of values; every op rounds its result to the op's dtype (f16 and bf16 round to nearest
//! even, f32 likewise, integers wrap), which are the rounding points of the lowering: a GPU
//! f16 add rounds once, and so does the interpreter. Integers (and bools) are held as
//! integers, exact at every width up to i64 — an i64 above 2^53 is never a float on the way —
//! and floats as f64; the dtype of a value says which. Where the GPU's exact bits are not
//! defined the interpreter is correctly rounded instead and says so:
//! - `exp2`/`exp` and the math list: the f64 function rounded once (the GPU's `ex2.approx`
//!   is within 2 ulp of that);
//! - reductions accumulate in f64 and round once (the GPU rounds each partial in its
//!   layout's tree order);
//! - `mma` computes each dot product in f64 and rounds once (tensor cores accumulate in
//!   f32 with their own rounding).
//!
//! `rand` is Philox 4x32-10 bit for bit ([`philox4x32_10`], checked against the Random123
//! known-answer vectors): offset `o` (as u32) takes output word `o % 4` of counter
//! `(o / 4, 0, 0, 0)` with key `(seed, 0)`, → `(w >> 8) · 2⁻²⁴`, a float in [0, 1); four
//! consecutive offsets share one Philox call. The GPU lowering must produce the same bits.
//!
//! Out-of-bounds semantics match the language: loads and gathers read the padding value,
//! stores and scatters skip the element, element reads give 0.

use std::collections::BTreeMap;
use tilec_core::host::HostTensor;
pub mod reference;

use tilec_core::tir::{AtomicOp, BinOp, Func, LogicOp, Op, OpKind, ReduceKind, Type, UnOp, ValueId};
use tilec_core::DType;

/// A launch argument of the interpreter.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Tensor(HostTensor),
    I32(i32),
    I64(i64),
    F32(f32),
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum InterpError {
    #[error("kernel `{kernel}` takes {expected} arguments, {given} given")]
    ArgCount { kernel: String, expected: usize, given: usize },
    #[error("argument `{name}`: {reason}")]
    BadArgument { name: String, reason: String },
    #[error("the interpreter met an ill-formed kernel: {0}")]
    IllFormed(String),
    #[error("the interpreter stopped: {0}")]
    Limit(String),
}

/// What one run may use, so that no input runs for hours or exhausts memory; each limit is
/// an error naming itself (and `tilec run` has a flag to raise it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Work units over the whole grid, weighted by what they cost the interpreter: a tile op
    /// counts the elements it produces, a scalar op [`SCALAR_WORK`] (an op's dispatch costs
    /// about that many elements), an `mma` its M·N·K multiply-adds, a `print` the bytes it
    /// writes. The default, 2^31, is about 10 s of the slowest kind on the 2-core machine
    /// (tile ops ~180 M elements/s, scalar loops ~37 M ops/s).
    pub work: u64,
    /// Elements one block may hold in live values at once.
    pub live_elements: u64,
    /// Bytes of `print` output.
    pub print_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { work: 1 << 31, live_elements: 1 << 27, print_bytes: 1 << 20 }
    }
}

/// The work a scalar op counts (see [`Limits::work`]).
pub const SCALAR_WORK: u64 = 8;

/// Work and memory spent so far against the [`Limits`].
#[derive(Debug)]
struct Budget {
    limits: Limits,
    work: u64,
    live: u64,
    printed: usize,
    truncated: bool,
}

impl Budget {
    fn spend(&mut self, elements: u64) -> Result<(), InterpError> {
        self.work += elements.max(1);
        if self.work > self.limits.work {
            return Err(InterpError::Limit(format!(
                "more than {} units of work (raise the limit with --max-work)",
                self.limits.work
            )));
        }
        Ok(())
    }
}

fn elements(v: &V) -> u64 {
    match v {
        V::Tile(t) => t.len() as u64,
        _ => 1,
    }
}

/// The work binding `v` counts (see [`Limits::work`]).
fn work(v: &V) -> u64 {
    match v {
        V::Tile(t) => t.len() as u64,
        _ => SCALAR_WORK,
    }
}

/// One element: an integer or bool exactly (wrapped to its dtype's width, unsigned types
/// zero-extended), or a float (rounded to its dtype).
#[derive(Clone, Copy, Debug, PartialEq)]
enum N {
    F(f64),
    I(i64),
}

impl N {
    fn f(self) -> f64 {
        match self {
            N::F(x) => x,
            N::I(i) => i as f64,
        }
    }

    /// The integer; a float truncates toward zero and saturates (NaN is 0).
    fn i(self) -> i64 {
        match self {
            N::I(i) => i,
            N::F(x) => x as i64,
        }
    }

    fn truthy(self) -> bool {
        match self {
            N::F(x) => x != 0.0,
            N::I(i) => i != 0,
        }
    }

    /// This value as dtype `d` holds it: floats rounded, integers wrapped.
    fn to(self, d: DType) -> N {
        match self {
            _ if d.is_float() => N::F(d.round(self.f())),
            N::F(x) if d == DType::I1 => N::I(i64::from(x != 0.0)),
            n => N::I(d.wrap(n.i())),
        }
    }

    /// The element of `d` for a float value (constants, padding).
    fn of(x: f64, d: DType) -> N {
        N::F(x).to(d)
    }
}

impl std::fmt::Display for N {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            N::F(x) => write!(f, "{x}"),
            N::I(i) => write!(f, "{i}"),
        }
    }
}

#[derive(Clone, Debug)]
enum V {
    Scalar(N),
    Tile(Vec<N>),
    Tensor(usize),
    /// Stage `index` of the ring of buffers `ring` (whose value is the `Tile` of every
    /// stage, one after the other): copies into it write the ring in place.
    Stage {
        ring: ValueId,
        index: usize,
    },
}

/// Rounds `v` to what dtype `d` can hold (round to nearest even; ints wrap).
pub fn round_to(v: f64, d: DType) -> f64 {
    d.round(v)
}

/// Flush f32 subnormals to zero (the `flush_to_zero` option).
fn ftz(v: f64) -> f64 {
    if v != 0.0 && v.abs() < f64::from(f32::MIN_POSITIVE) {
        0.0f64.copysign(v)
    } else {
        v
    }
}

/// The launch grid of a kernel for these arguments (its signature's grid expressions).
pub fn grid(sig: &tilec_core::abi::Signature, args: &[Arg]) -> Result<[u32; 3], String> {
    struct A<'a>(&'a [Arg]);
    impl tilec_core::abi::HostArgs for A<'_> {
        fn dim(&self, p: usize, axis: usize) -> Option<i64> {
            match self.0.get(p)? {
                Arg::Tensor(t) => t.shape.get(axis).copied(),
                _ => None,
            }
        }
        fn int_arg(&self, p: usize) -> Option<i64> {
            match self.0.get(p)? {
                Arg::I32(v) => Some(i64::from(*v)),
                Arg::I64(v) => Some(*v),
                _ => None,
            }
        }
    }
    tilec_core::abi::check_extents(&sig.params, |i| match args.get(i)? {
        Arg::Tensor(t) => Some(t.shape.as_slice()),
        _ => None,
    })
    .map_err(|(i, why)| format!("argument `{}`: {why}", sig.params[i].name()))?;
    tilec_core::abi::check_requirements(sig, &A(args))?;
    let mut grid = [1u32; 3];
    for (i, g) in sig.grid.iter().enumerate().take(3) {
        let v = g.eval(&A(args))?;
        grid[i] = u32::try_from(v).map_err(|_| format!("grid dimension {i} is {v}"))?;
    }
    Ok(grid)
}

/// Philox 4x32 with 10 rounds (Salmon et al., Random123).
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    const W0: u32 = 0x9E37_79B9;
    const W1: u32 = 0xBB67_AE85;
    let (mut c, mut k) = (counter, key);
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(W0);
            k[1] = k[1].wrapping_add(W1);
        }
        let p0 = M0 * u64::from(c[0]);
        let p1 = M1 * u64::from(c[2]);
        c = [((p1 >> 32) as u32) ^ c[1] ^ k[0], p1 as u32, ((p0 >> 32) as u32) ^ c[3] ^ k[1], p0 as u32];
    }
    c
}

/// The uniform float of `rand(seed, offset)` for one element.
pub fn rand_uniform(seed: u32, offset: u32) -> f32 {
    let w = philox4x32_10([offset / 4, 0, 0, 0], [seed, 0])[(offset % 4) as usize];
    (w >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// One stage's two mbarriers as the GPU would see them, in program order: the *full* one
/// completes a phase per TMA fill, the *empty* one a phase per release. The interpreter runs
/// copies at once, so a wrong phase would not change its numbers — but on the GPU a wait on
/// the wrong parity hangs or passes before the bytes land. Every `stage_wait`,
/// `stage_acquire` and `stage_release` is checked against these counts, which makes the
/// interpreter a checker of `tile-pipeline`'s phase arithmetic (across the tiles of a
/// persistent kernel too).
#[derive(Clone, Copy, Debug, Default)]
struct Mbarriers {
    fills: i64,
    releases: i64,
}

struct Machine<'a> {
    func: &'a Func,
    vals: BTreeMap<ValueId, V>,
    budget: &'a mut Budget,
    tensors: &'a mut [HostTensor],
    bid: [i64; 3],
    /// This CTA's rank in its block's cluster (`tile.cluster`; 0 in a kernel of one CTA a block).
    rank: i64,
    nblocks: [i64; 3],
    /// The grid the launch stands for (`num_tiles`): `nblocks` but for a persistent kernel.
    ntiles: [i64; 3],
    /// The mbarriers of the block's TMA rings, per (ring, stage): fills issued and releases
    /// (see [`Mbarriers`]).
    mbar: BTreeMap<(ValueId, usize), Mbarriers>,
    prints: &'a mut dyn FnMut(String),
}

fn ill(msg: impl Into<String>) -> InterpError {
    InterpError::IllFormed(msg.into())
}

fn strides_of(shape: &[i64]) -> Vec<i64> {
    tilec_core::host::contiguous_strides(shape)
}

use tilec_core::host::unravel;

impl Machine<'_> {
    fn ty(&self, v: ValueId) -> &Type {
        self.func.ty(v)
    }

    fn get(&self, v: ValueId) -> Result<&V, InterpError> {
        self.vals.get(&v).ok_or_else(|| ill(format!("%{} used before definition", v.0)))
    }

    fn scalar(&self, v: ValueId) -> Result<N, InterpError> {
        match self.get(v)? {
            V::Scalar(x) => Ok(*x),
            _ => Err(ill(format!("%{} is not a scalar", v.0))),
        }
    }

    fn tile(&self, v: ValueId) -> Result<&[N], InterpError> {
        match self.get(v)? {
            V::Tile(t) => Ok(t),
            _ => Err(ill(format!("%{} is not a tile", v.0))),
        }
    }

    /// The elements of a shared buffer: a tile, or one stage of a ring.
    fn buffer(&self, v: ValueId) -> Result<Vec<N>, InterpError> {
        match self.get(v)? {
            V::Tile(t) => Ok(t.clone()),
            V::Stage { ring, index } => {
                let per: i64 = self.ty(v).shape().iter().product();
                let (a, b) = (*index * per as usize, (*index + 1) * per as usize);
                self.tile(*ring)?.get(a..b).map(<[N]>::to_vec).ok_or_else(|| ill("a stage past its ring"))
            }
            _ => Err(ill(format!("%{} is not a shared buffer", v.0))),
        }
    }

    /// Writes `vals` (rounded to the ring's dtype) into the stage view `v`.
    fn write_stage(&mut self, v: ValueId, vals: Vec<N>) -> Result<(), InterpError> {
        let V::Stage { ring, index } = *self.get(v)? else {
            return Err(ill(format!("%{} is not a stage of a ring", v.0)));
        };
        let d = self.ty(ring).dtype();
        let per = vals.len();
        match self.vals.get_mut(&ring) {
            Some(V::Tile(t)) if t.len() >= (index + 1) * per => {
                for (slot, x) in t[index * per..(index + 1) * per].iter_mut().zip(vals) {
                    *slot = x.to(d);
                }
                Ok(())
            }
            _ => Err(ill("a stage past its ring")),
        }
    }

    fn tensor(&self, v: ValueId) -> Result<usize, InterpError> {
        match self.get(v)? {
            V::Tensor(i) => Ok(*i),
            _ => Err(ill(format!("%{} is not a tensor", v.0))),
        }
    }

    /// Elementwise over one or two operands of the same shape (scalars or tiles).
    fn map2(&self, a: ValueId, b: ValueId, f: impl Fn(N, N) -> N) -> Result<V, InterpError> {
        Ok(match (self.get(a)?, self.get(b)?) {
            (V::Scalar(x), V::Scalar(y)) => V::Scalar(f(*x, *y)),
            (V::Tile(x), V::Tile(y)) if x.len() == y.len() => {
                V::Tile(x.iter().zip(y).map(|(p, q)| f(*p, *q)).collect())
            }
            _ => return Err(ill("operands of mismatched kinds")),
        })
    }

    fn map1(&self, a: ValueId, f: impl Fn(N) -> N) -> Result<V, InterpError> {
        Ok(match self.get(a)? {
            V::Scalar(x) => V::Scalar(f(*x)),
            V::Tile(x) => V::Tile(x.iter().map(|p| f(*p)).collect()),
            V::Tensor(_) | V::Stage { .. } => return Err(ill("elementwise op on a tensor or a shared buffer")),
        })
    }

    fn element_offset(t: &HostTensor, coords: &[i64]) -> Option<usize> {
        if coords.len() != t.shape.len() || coords.iter().zip(&t.shape).any(|(c, s)| *c < 0 || c >= s) {
            return None;
        }
        Some(coords.iter().zip(&t.strides).map(|(c, s)| c * s).sum::<i64>() as usize)
    }

    fn read(t: &HostTensor, off: usize) -> N {
        let b = t.dtype.bytes() as usize;
        let bytes = &t.data[off * b..off * b + b];
        match t.dtype.decode_int(bytes) {
            Some(i) => N::I(i),
            None => N::F(t.dtype.decode(bytes)),
        }
    }

    fn write(t: &mut HostTensor, off: usize, v: N) {
        let b = t.dtype.bytes() as usize;
        let out = &mut t.data[off * b..off * b + b];
        match v {
            N::I(i) if !t.dtype.is_float() => t.dtype.encode_int(i, out),
            v => t.dtype.encode(v.f(), out),
        }
    }

    /// The integer scalars of `index` (tile coordinates, element coordinates).
    fn ints(&self, index: &[ValueId]) -> Result<Vec<i64>, InterpError> {
        index.iter().map(|i| self.scalar(*i).map(N::i)).collect()
    }

    fn exec(&mut self, ops: &[Op]) -> Result<(), InterpError> {
        for op in ops {
            self.step(op)?;
        }
        Ok(())
    }

    fn set(&mut self, op: &Op, v: V) -> Result<(), InterpError> {
        let r = op.result.ok_or_else(|| ill("op without result"))?;
        let v = match (v, self.ty(r).dtype()) {
            (V::Scalar(x), d) => V::Scalar(x.to(d)),
            (V::Tile(t), d) => V::Tile(t.into_iter().map(|x| x.to(d)).collect()),
            (v, _) => v,
        };
        self.bind(r, v)
    }

    /// Binds a value, counting its work and the elements held live.
    fn bind(&mut self, r: ValueId, v: V) -> Result<(), InterpError> {
        let n = elements(&v);
        self.budget.spend(work(&v))?;
        let old = self.vals.insert(r, v).map(|o| elements(&o)).unwrap_or(0);
        self.budget.live = (self.budget.live + n).saturating_sub(old);
        if self.budget.live > self.budget.limits.live_elements {
            return Err(InterpError::Limit(format!(
                "a block holds more than {} live elements (raise the limit with --max-memory)",
                self.budget.limits.live_elements
            )));
        }
        Ok(())
    }

    fn rty(&self, op: &Op) -> Result<Type, InterpError> {
        op.result.map(|r| self.ty(r).clone()).ok_or_else(|| ill("op without result"))
    }

    fn step(&mut self, op: &Op) -> Result<(), InterpError> {
        match &op.kind {
            OpKind::Bid { axis } => self.set(op, V::Scalar(N::I(self.bid[*axis as usize % 3]))),
            OpKind::NumBlocks { axis } => self.set(op, V::Scalar(N::I(self.nblocks[*axis as usize % 3]))),
            OpKind::ClusterRank => self.set(op, V::Scalar(N::I(self.rank))),
            OpKind::NumTiles { axis } => self.set(op, V::Scalar(N::I(self.ntiles[*axis as usize % 3]))),
            OpKind::Dim { tensor, axis } => {
                let t = &self.tensors[self.tensor(*tensor)?];
                let d = t.shape.get(*axis as usize).copied().ok_or_else(|| ill("dim axis out of range"))?;
                self.set(op, V::Scalar(N::I(d)))
            }
            OpKind::ConstInt(v) => self.set(op, V::Scalar(N::I(*v))),
            OpKind::ConstFloat(v) => self.set(op, V::Scalar(N::F(*v))),
            OpKind::Splat(s) => {
                let x = self.scalar(*s)?;
                let n: i64 = self.rty(op)?.shape().iter().product();
                self.set(op, V::Tile(vec![x; n as usize]))
            }
            OpKind::Binary { op: BinOp::Div, lhs, rhs, flags } if !flags.is_default() => {
                let f = *flags;
                let v = self.map2(*lhs, *rhs, |p, q| {
                    let (p, q) = (p.f(), q.f());
                    N::F(if f.ftz { ftz(ftz(p) / ftz(q)) } else { p / q })
                })?;
                self.set(op, v)
            }
            OpKind::Binary { op: b, lhs: x, rhs: y, .. } => {
                let d = self.ty(*x).dtype();
                let v = self.map2(*x, *y, |p, q| binop(*b, p, q, d))?;
                self.set(op, v)
            }
            OpKind::Fma { a, b, c } => {
                let (a, b, c) = (self.get(*a)?.clone(), self.get(*b)?.clone(), self.get(*c)?.clone());
                // f32 operands: the f64 product is exact and the f64 sum rounds once more than
                // a true fma, which can differ in the last bit only for sums that cancel to
                // below 2^-29 of the product; mul_add rounds once, exactly as fma.
                let f = |x: N, y: N, z: N| N::F(x.f().mul_add(y.f(), z.f()));
                let v = match (a, b, c) {
                    (V::Scalar(x), V::Scalar(y), V::Scalar(z)) => V::Scalar(f(x, y, z)),
                    (V::Tile(x), V::Tile(y), V::Tile(z)) => {
                        V::Tile(x.iter().zip(&y).zip(&z).map(|((x, y), z)| f(*x, *y, *z)).collect())
                    }
                    _ => return Err(ill("fma of mismatched kinds")),
                };
                self.set(op, v)
            }
            OpKind::Unary { op: u, value: x, flags } => {
                let flags = *flags;
                let v = self.map1(*x, |p| match p {
                    N::I(i) => int_unop(*u, i),
                    N::F(p) => {
                        let p = if flags.ftz { ftz(p) } else { p };
                        let r = unop(*u, p);
                        N::F(if flags.ftz { ftz(r) } else { r })
                    }
                })?;
                self.set(op, v)
            }
            OpKind::Cast(x) => {
                let to = self.rty(op)?.dtype();
                let v = self.map1(*x, |p| convert(p, to))?;
                self.set(op, v)
            }
            OpKind::Cmp(p, x, y) => {
                let pred = *p;
                let v = self.map2(*x, *y, |a, b| {
                    N::I(i64::from(match (a, b) {
                        (N::I(a), N::I(b)) => pred.holds(a, b),
                        (a, b) => pred.holds(a.f(), b.f()),
                    }))
                })?;
                self.set(op, v)
            }
            OpKind::Logic(l, x, y) => {
                let l = *l;
                let v = self.map2(*x, *y, |a, b| {
                    let (a, b) = (a.i(), b.i());
                    N::I(match l {
                        LogicOp::And => a & b,
                        LogicOp::Or => a | b,
                        LogicOp::Xor => a ^ b,
                    })
                })?;
                self.set(op, v)
            }
            OpKind::Select { cond, a, b } => {
                let v = match (self.get(*cond)?, self.get(*a)?, self.get(*b)?) {
                    (V::Scalar(c), V::Scalar(x), V::Scalar(y)) => V::Scalar(if c.truthy() { *x } else { *y }),
                    (V::Tile(c), V::Tile(x), V::Tile(y)) => {
                        V::Tile(c.iter().zip(x).zip(y).map(|((c, x), y)| if c.truthy() { *x } else { *y }).collect())
                    }
                    _ => return Err(ill("select of mismatched kinds")),
                };
                self.set(op, v)
            }
            OpKind::Broadcast(x) => {
                let src_shape = self.ty(*x).shape().to_vec();
                let shape = self.rty(op)?.shape().to_vec();
                let src = self.tile(*x)?;
                let ss = strides_of(&src_shape);
                let n: i64 = shape.iter().product();
                let out = (0..n)
                    .map(|i| {
                        let c = unravel(i, &shape);
                        let off: i64 =
                            c.iter().zip(&src_shape).zip(&ss).map(|((c, e), s)| if *e == 1 { 0 } else { c * s }).sum();
                        src[off as usize]
                    })
                    .collect();
                self.set(op, V::Tile(out))
            }
            OpKind::Reshape(x)
            | OpKind::ConvertLayout { value: x, .. }
            | OpKind::LocalAlloc { value: x }
            | OpKind::MmaWait { value: x, .. } => {
                let t = self.tile(*x)?.to_vec();
                self.set(op, V::Tile(t))
            }
            OpKind::LocalLoad { buf, trans } => {
                let mut t = self.buffer(*buf)?;
                if *trans {
                    let &[rows, cols] = self.ty(*buf).shape() else {
                        return Err(ill("a transposed read of a buffer that is not 2-D"));
                    };
                    let (rows, cols) = (rows as usize, cols as usize);
                    t = (0..rows * cols).map(|i| t[(i % rows) * cols + i / rows]).collect();
                }
                self.set(op, V::Tile(t))
            }
            OpKind::Item(x) => {
                let t = self.tile(*x)?;
                let v = *t.first().ok_or_else(|| ill("the item of an empty tile"))?;
                self.set(op, V::Scalar(v))
            }
            OpKind::StagesAlloc => {
                // Undefined until copied into: NaN shows a read of a stage never filled (an
                // integer ring has no NaN and starts at 0).
                let n: i64 = self.rty(op)?.shape().iter().product();
                // Made again (a ring inside a loop): its mbarriers are initialised again.
                if let Some(r) = op.result {
                    self.mbar.retain(|(ring, _), _| *ring != r);
                }
                self.set(op, V::Tile(vec![N::F(f64::NAN); n as usize]))
            }
            OpKind::Stage { buf, index } => {
                let stages = self.ty(*buf).shape().first().copied().unwrap_or(0);
                let i = self.scalar(*index)?.i();
                if !(0..stages).contains(&i) {
                    return Err(ill(format!("stage {i} of a ring of {stages}")));
                }
                if !matches!(self.get(*buf)?, V::Tile(_)) {
                    return Err(ill(format!("%{} is not a ring of buffers", buf.0)));
                }
                self.set(op, V::Stage { ring: *buf, index: i as usize })
            }
            OpKind::Concat { values, axis } => {
                let shape = self.rty(op)?.shape().to_vec();
                let ax = *axis as usize;
                // Each element from the input whose range along `axis` holds it.
                let mut parts = vec![];
                let mut start = 0;
                for v in values {
                    let s = self.ty(*v).shape().to_vec();
                    parts.push((start, strides_of(&s), self.tile(*v)?.to_vec()));
                    start += s[ax];
                }
                let n: i64 = shape.iter().product();
                let out = (0..n)
                    .map(|i| {
                        let mut c = unravel(i, &shape);
                        let k = parts.iter().rposition(|p| p.0 <= c[ax]).unwrap_or(0);
                        c[ax] -= parts[k].0;
                        let off: i64 = c.iter().zip(&parts[k].1).map(|(c, s)| c * s).sum();
                        parts[k].2[off as usize]
                    })
                    .collect();
                self.set(op, V::Tile(out))
            }
            OpKind::Sort { value, axis, descending, k, indices } => {
                let src_shape = self.ty(*value).shape().to_vec();
                let shape = self.rty(op)?.shape().to_vec();
                let src = self.tile(*value)?.to_vec();
                let ss = strides_of(&src_shape);
                let ax = *axis as usize;
                let len = src_shape[ax];
                // Ascending order of keys, NaN above everything; descending reverses the keys,
                // not the positions: ties keep the lower position first either way (torch's
                // stable sort).
                let before = |a: N, b: N| -> std::cmp::Ordering {
                    let (x, y) = (a.f(), b.f());
                    let o = match (x.is_nan(), y.is_nan()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        _ => match (a, b) {
                            (N::I(p), N::I(q)) => p.cmp(&q),
                            _ => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
                        },
                    };
                    if *descending {
                        o.reverse()
                    } else {
                        o
                    }
                };
                let n: i64 = shape.iter().product();
                let mut out = vec![N::I(0); n as usize];
                // One line along the axis per position of the other dims.
                let mut lines = src_shape.clone();
                lines[ax] = 1;
                let count: i64 = lines.iter().product();
                let rs = strides_of(&shape);
                for l in 0..count {
                    let c = unravel(l, &lines);
                    let base: i64 = c.iter().zip(&ss).map(|(c, s)| c * s).sum();
                    let rbase: i64 = c.iter().zip(&rs).map(|(c, s)| c * s).sum();
                    let mut order: Vec<i64> = (0..len).collect();
                    // `sort_by` is stable: equal keys keep the lower position first.
                    order
                        .sort_by(|&p, &q| before(src[(base + p * ss[ax]) as usize], src[(base + q * ss[ax]) as usize]));
                    for (j, &p) in order.iter().take(*k as usize).enumerate() {
                        out[(rbase + j as i64 * rs[ax]) as usize] =
                            if *indices { N::I(p) } else { src[(base + p * ss[ax]) as usize] };
                    }
                }
                self.set(op, V::Tile(out))
            }
            OpKind::Slice { value, offsets } => {
                let ss = strides_of(self.ty(*value).shape());
                let shape = self.rty(op)?.shape().to_vec();
                let src = self.tile(*value)?;
                let n: i64 = shape.iter().product();
                let out = (0..n)
                    .map(|i| {
                        let c = unravel(i, &shape);
                        let off: i64 = c.iter().zip(offsets).zip(&ss).map(|((c, o), s)| (c + o) * s).sum();
                        src[off as usize]
                    })
                    .collect();
                self.set(op, V::Tile(out))
            }
            OpKind::Permute { value, perm } => {
                let src_shape = self.ty(*value).shape().to_vec();
                let shape = self.rty(op)?.shape().to_vec();
                let src = self.tile(*value)?;
                let ss = strides_of(&src_shape);
                let n: i64 = shape.iter().product();
                let out = (0..n)
                    .map(|i| {
                        let c = unravel(i, &shape);
                        let off: i64 = c.iter().zip(perm).map(|(c, p)| c * ss[*p as usize]).sum();
                        src[off as usize]
                    })
                    .collect();
                self.set(op, V::Tile(out))
            }
            OpKind::Arange => {
                let n: i64 = self.rty(op)?.shape().iter().product();
                self.set(op, V::Tile((0..n).map(N::I).collect()))
            }
            OpKind::Reduce { kind, axis, value } => {
                let shape = self.ty(*value).shape().to_vec();
                let d = self.ty(*value).dtype();
                let src = self.tile(*value)?;
                let ax = *axis as usize;
                let out_shape = self.rty(op)?.shape().to_vec();
                let st = strides_of(&shape);
                let n: i64 = out_shape.iter().product();
                let mut out = Vec::with_capacity(n as usize);
                for i in 0..n {
                    let c = unravel(i, &out_shape);
                    let base: i64 = c.iter().zip(&st).map(|(c, s)| c * s).sum();
                    let items = (0..shape[ax]).map(|k| src[(base + k * st[ax]) as usize]);
                    out.push(reduce(*kind, items, d));
                }
                self.set(op, V::Tile(out))
            }
            OpKind::Scan { op: sop, axis, value } => {
                // In order along the axis, each partial rounded to the dtype (the GPU combines
                // in a tree: sums of floats may differ in the last bits).
                let shape = self.ty(*value).shape().to_vec();
                let d = self.ty(*value).dtype();
                let mut out = self.tile(*value)?.to_vec();
                let st = strides_of(&shape);
                let ax = *axis as usize;
                for i in 0..out.len() as i64 {
                    let c = unravel(i, &shape);
                    if c[ax] == 0 {
                        continue;
                    }
                    let prev = out[(i - st[ax]) as usize];
                    let cur = out[i as usize];
                    out[i as usize] = binop(*sop, prev, cur, d).to(d);
                }
                self.set(op, V::Tile(out))
            }
            OpKind::Mma { a, b, acc, scales: Some((sa, sb)) } => {
                // (a · sa)(b · sb) + acc: the products exact, summed over the whole K in f64,
                // one rounding to f32 (the caller's); packed fp4 elements are two K elements.
                let (ta, tsa) = (self.ty(*a).clone(), self.ty(*sa).clone());
                let (m, ka, n, ks) = (
                    ta.shape()[0] as usize,
                    ta.shape()[1] as usize,
                    self.ty(*b).shape()[1] as usize,
                    tsa.shape()[1] as usize,
                );
                let pack = if ta.dtype() == DType::F4E2M1X2 { 2 } else { 1 };
                let k = ka * pack;
                let block = k / ks.max(1);
                self.budget.spend((m * n * k.saturating_sub(1)) as u64)?;
                let (xa, xb, xc) = (self.tile(*a)?, self.tile(*b)?, self.tile(*acc)?);
                let (ya, yb) = (self.tile(*sa)?, self.tile(*sb)?);
                // The value of K element `kk` of an operand element.
                let val = |x: N, kk: usize| match x {
                    N::I(byte) => tilec_core::dtype::from_fp4((byte as u8) >> (4 * (kk % 2))),
                    N::F(v) => v,
                };
                let mut out = xc.to_vec();
                for i in 0..m {
                    for j in 0..n {
                        let s: f64 = (0..k)
                            .map(|kk| {
                                let (e, q) = (kk / pack, kk / block);
                                val(xa[i * ka + e], kk)
                                    * ya[i * ks + q].f()
                                    * val(xb[e * n + j], kk)
                                    * yb[q * n + j].f()
                            })
                            .sum();
                        out[i * n + j] = N::F(xc[i * n + j].f() + s);
                    }
                }
                self.set(op, V::Tile(out))
            }
            OpKind::Mma { a, b, acc, scales: None } => {
                let (sa, sb) = (self.ty(*a).shape().to_vec(), self.ty(*b).shape().to_vec());
                let (m, k, n) = (sa[0] as usize, sa[1] as usize, sb[1] as usize);
                // The multiply-adds beyond the M·N the result's binding counts.
                self.budget.spend((m * n * k.saturating_sub(1)) as u64)?;
                let (ta, tb, tc) = (self.tile(*a)?, self.tile(*b)?, self.tile(*acc)?);
                let mut out = tc.to_vec();
                for i in 0..m {
                    for j in 0..n {
                        let c = &mut out[i * n + j];
                        *c = match *c {
                            // Integer products (i8 operands) accumulate exactly, wrapping.
                            N::I(acc) => {
                                N::I((0..k).fold(acc, |s, x| {
                                    s.wrapping_add(ta[i * k + x].i().wrapping_mul(tb[x * n + j].i()))
                                }))
                            }
                            N::F(acc) => N::F(acc + (0..k).map(|x| ta[i * k + x].f() * tb[x * n + j].f()).sum::<f64>()),
                        };
                    }
                }
                self.set(op, V::Tile(out))
            }
            OpKind::Load { tensor, index, padding, order, .. }
            | OpKind::AsyncCopy { tensor, index, padding, order, .. } => {
                let ti = self.tensor(*tensor)?;
                let idx = self.ints(index)?;
                // An async copy's buffer holds the tile without its unit dims: the same
                // elements in the same row-major order.
                let shape = match &op.kind {
                    OpKind::AsyncCopy { tile, .. } => tile.clone(),
                    _ => self.rty(op)?.shape().to_vec(),
                };
                let t = &self.tensors[ti];
                let n: i64 = shape.iter().product();
                let pad = N::of(padding.value(), t.dtype);
                let out = (0..n)
                    .map(|i| {
                        let e = unravel(i, &shape);
                        // View coordinate d is tensor dim order[d].
                        let mut c = vec![0i64; shape.len()];
                        for d in 0..shape.len() {
                            c[order[d] as usize] = idx[d] * shape[d] + e[d];
                        }
                        Self::element_offset(t, &c).map(|o| Self::read(t, o)).unwrap_or(pad)
                    })
                    .collect();
                match &op.kind {
                    OpKind::AsyncCopy { dst: Some(d), tma, .. } => {
                        if *tma {
                            if let V::Stage { ring, index } = *self.get(*d)? {
                                self.mbar.entry((ring, index)).or_default().fills += 1;
                            }
                        }
                        self.write_stage(*d, out)
                    }
                    _ => self.set(op, V::Tile(out)),
                }
            }
            OpKind::Store { tensor, index, tile, mask } => {
                let ti = self.tensor(*tensor)?;
                let idx = self.ints(index)?;
                let shape = self.ty(*tile).shape().to_vec();
                let vals = self.tile(*tile)?.to_vec();
                let keep = match mask {
                    Some(m) => Some(self.tile(*m)?.to_vec()),
                    None => None,
                };
                let t = &mut self.tensors[ti];
                for (i, v) in vals.iter().enumerate() {
                    if keep.as_ref().is_some_and(|k| k.get(i).is_none_or(|m| !m.truthy())) {
                        continue;
                    }
                    let e = unravel(i as i64, &shape);
                    let c: Vec<i64> = (0..shape.len()).map(|d| idx[d] * shape[d] + e[d]).collect();
                    if let Some(o) = Self::element_offset(t, &c) {
                        Self::write(t, o, *v);
                    }
                }
                Ok(())
            }
            OpKind::Atomic { op: aop, tensor, index, tile, cmp, mask, at, .. } => {
                // Blocks run one after the other, so an atomic is its read-modify-write; the
                // elements of one tile go in row-major order.
                let ti = self.tensor(*tensor)?;
                // Tile coordinates, or (`at`) one index tile per tensor dim.
                let (idx, at_idx) = if *at {
                    let tiles =
                        index.iter().map(|i| self.tile(*i).map(|t| t.to_vec())).collect::<Result<Vec<_>, _>>()?;
                    (vec![], Some(tiles))
                } else {
                    (self.ints(index)?, None)
                };
                let shape = self.ty(*tile).shape().to_vec();
                let d = self.ty(*tile).dtype();
                let vals = self.tile(*tile)?.to_vec();
                let keep = self.tile(*mask)?.to_vec();
                let cmps = match cmp {
                    Some(c) => Some(self.tile(*c)?.to_vec()),
                    None => None,
                };
                let aop = *aop;
                let t = &mut self.tensors[ti];
                let mut old = vec![N::of(0.0, d); vals.len()];
                for (i, v) in vals.iter().enumerate() {
                    if keep.get(i).is_none_or(|m| !m.truthy()) {
                        continue;
                    }
                    let c: Vec<i64> = match &at_idx {
                        Some(tiles) => tiles.iter().map(|v| v[i].i()).collect(),
                        None => {
                            let e = unravel(i as i64, &shape);
                            (0..shape.len()).map(|k| idx[k] * shape[k] + e[k]).collect()
                        }
                    };
                    let Some(o) = Self::element_offset(t, &c) else { continue };
                    let was = Self::read(t, o);
                    old[i] = was;
                    let new = match aop {
                        AtomicOp::Add => binop(BinOp::Add, was, *v, d).to(d),
                        AtomicOp::Max => binop(BinOp::Max, was, *v, d),
                        AtomicOp::Min => binop(BinOp::Min, was, *v, d),
                        AtomicOp::Cas => match &cmps {
                            Some(cs) if cs.get(i) == Some(&was) => *v,
                            _ => was,
                        },
                    };
                    Self::write(t, o, new);
                }
                self.set(op, V::Tile(old))
            }
            OpKind::Gather { tensor, index, padding } => {
                let ti = self.tensor(*tensor)?;
                let idx = index.iter().map(|i| self.tile(*i).map(|t| t.to_vec())).collect::<Result<Vec<_>, _>>()?;
                let n = idx.first().map(|v| v.len()).unwrap_or(0);
                let t = &self.tensors[ti];
                let pad = N::of(padding.value(), t.dtype);
                let out = (0..n)
                    .map(|i| {
                        let c: Vec<i64> = idx.iter().map(|v| v[i].i()).collect();
                        Self::element_offset(t, &c).map(|o| Self::read(t, o)).unwrap_or(pad)
                    })
                    .collect();
                self.set(op, V::Tile(out))
            }
            OpKind::Scatter { tensor, index, tile } => {
                let ti = self.tensor(*tensor)?;
                let idx = index.iter().map(|i| self.tile(*i).map(|t| t.to_vec())).collect::<Result<Vec<_>, _>>()?;
                let vals = self.tile(*tile)?.to_vec();
                let t = &mut self.tensors[ti];
                for (i, v) in vals.iter().enumerate() {
                    let c: Vec<i64> = idx.iter().map(|x| x[i].i()).collect();
                    if let Some(o) = Self::element_offset(t, &c) {
                        Self::write(t, o, *v);
                    }
                }
                Ok(())
            }
            OpKind::Element { tensor, index } => {
                let ti = self.tensor(*tensor)?;
                let c = self.ints(index)?;
                let t = &self.tensors[ti];
                let v = Self::element_offset(t, &c).map(|o| Self::read(t, o)).unwrap_or(N::of(0.0, t.dtype));
                self.set(op, V::Scalar(v))
            }
            OpKind::Rand { seed, offsets } => {
                let s = self.scalar(*seed)?.i() as u32;
                let v = self.map1(*offsets, |o| N::F(f64::from(rand_uniform(s, o.i() as u32))))?;
                self.set(op, v)
            }
            // Copies complete at once on the CPU; the mbarrier phases are checked.
            OpKind::StageWait { ring, slot, phase } => {
                let (s, p) = (self.scalar(*slot)?.i(), self.scalar(*phase)?.i());
                let m = self.mbar.get(&(*ring, s as usize)).copied().unwrap_or_default();
                if m.fills == 0 || p != (m.fills - 1).rem_euclid(2) {
                    return Err(ill(format!(
                        "stage_wait on phase {p} of stage {s} of ring %{}, filled {} times: on the GPU this waits for a fill that never comes or passes before its bytes land",
                        ring.0, m.fills
                    )));
                }
                Ok(())
            }
            OpKind::StageAcquire { ring, slot, phase } => {
                let (s, p) = (self.scalar(*slot)?.i(), self.scalar(*phase)?.i());
                let m = self.mbar.get(&(*ring, s as usize)).copied().unwrap_or_default();
                // Before fill f the stage's f earlier fills must be released; the wait is on
                // the parity of the empty barrier's phase f - 1 (1 on a fresh barrier, which
                // passes at once).
                if m.releases != m.fills || p != (m.fills + 1).rem_euclid(2) {
                    return Err(ill(format!(
                        "stage_acquire on phase {p} of stage {s} of ring %{}, filled {} times and released {}: on the GPU the refill would wait forever or overwrite a stage still read",
                        ring.0, m.fills, m.releases
                    )));
                }
                Ok(())
            }
            OpKind::StageRelease { ring, slot } => {
                let s = self.scalar(*slot)?.i();
                let m = self.mbar.entry((*ring, s as usize)).or_default();
                m.releases += 1;
                if m.releases > m.fills {
                    return Err(ill(format!(
                        "stage_release of stage {s} of ring %{}, released more often ({}) than filled ({})",
                        ring.0, m.releases, m.fills
                    )));
                }
                Ok(())
            }
            OpKind::AsyncWait { .. } | OpKind::Turn { .. } | OpKind::GridDependencyWait | OpKind::Prefetch { .. } => {
                Ok(())
            }
            OpKind::Print { prefix, values } => {
                let mut line = prefix.clone();
                for v in values {
                    match self.get(*v)? {
                        V::Scalar(x) => line.push_str(&format!(" {x}")),
                        V::Tile(t) => {
                            let items: Vec<String> = t
                                .iter()
                                .map(|x| match x {
                                    N::F(x) => format!("{x:?}"),
                                    N::I(i) => i.to_string(),
                                })
                                .collect();
                            line.push_str(&format!(" [{}]", items.join(", ")));
                        }
                        V::Tensor(_) => line.push_str(" <tensor>"),
                        V::Stage { index, .. } => line.push_str(&format!(" <stage {index}>")),
                    }
                }
                let line = format!("block {:?}: {line}", self.bid);
                // Formatting a line costs what its bytes cost, printed or not.
                self.budget.spend(line.len() as u64)?;
                if self.budget.printed + line.len() > self.budget.limits.print_bytes {
                    self.budget.truncated = true;
                } else {
                    self.budget.printed += line.len();
                    (self.prints)(line);
                }
                Ok(())
            }
            OpKind::For { lb, ub, step, iv, init, iters, body, yields, results } => {
                let (lo, hi, st) = (self.scalar(*lb)?.i(), self.scalar(*ub)?.i(), self.scalar(*step)?.i());
                if st <= 0 {
                    return Err(ill("for loop with a non-positive step"));
                }
                let mut cur: Vec<V> = init.iter().map(|v| self.get(*v).cloned()).collect::<Result<_, _>>()?;
                let mut i = lo;
                while i < hi {
                    self.bind(*iv, V::Scalar(N::I(i)))?;
                    for (it, v) in iters.iter().zip(&cur) {
                        self.bind(*it, v.clone())?;
                    }
                    self.exec(body)?;
                    cur = yields.iter().map(|v| self.get(*v).cloned()).collect::<Result<_, _>>()?;
                    // A bound near i64::MAX ends the loop instead of wrapping it around.
                    match i.checked_add(st) {
                        Some(next) => i = next,
                        None => break,
                    }
                }
                for (r, v) in results.iter().zip(cur) {
                    self.vals.insert(*r, v);
                }
                Ok(())
            }
            OpKind::If { cond, then_ops, then_yields, else_ops, else_yields, results } => {
                let (ops, ys) =
                    if self.scalar(*cond)?.truthy() { (then_ops, then_yields) } else { (else_ops, else_yields) };
                self.exec(ops)?;
                let out: Vec<V> = ys.iter().map(|v| self.get(*v).cloned()).collect::<Result<_, _>>()?;
                for (r, v) in results.iter().zip(out) {
                    self.vals.insert(*r, v);
                }
                Ok(())
            }
        }
    }
}

/// `p << q` / `p >> q` on a `bits`-bit integer (held sign-extended), the amount read as
/// unsigned and clamped to the width (PTX `shl`/`shr.s`): 0 or the sign fill once every bit
/// is shifted out.
fn shift(left: bool, x: i64, amount: i64, bits: u32) -> i64 {
    let amount = if bits == 64 { amount as u64 } else { (amount as u64) & ((1u64 << bits) - 1) };
    if left {
        if amount >= u64::from(bits) {
            0
        } else {
            x << amount
        }
    } else {
        x >> amount.min(u64::from(bits) - 1)
    }
}

/// `pow(x, y)` as the lowering defines it (IEEE `pow` on the special cases it names).
fn pow(x: f64, y: f64) -> f64 {
    x.powf(y)
}

/// A binary op on two elements of dtype `d` (the result is rounded or wrapped by the caller).
fn binop(b: BinOp, p: N, q: N, d: DType) -> N {
    if d.is_float() {
        N::F(float_binop(b, p.f(), q.f()))
    } else {
        N::I(int_binop(b, p.i(), q.i(), d))
    }
}

/// Integer arithmetic in i64, wrapping; the caller wraps to the dtype's width, which is
/// exact for `+ - * << and min/max` and for floor division and modulo of sign-extended
/// operands (`MIN // -1` wraps to `MIN`, the documented wrapped negation).
fn int_binop(b: BinOp, p: i64, q: i64, d: DType) -> i64 {
    match b {
        BinOp::Shl | BinOp::Shr => shift(b == BinOp::Shl, p, q, d.bits()),
        BinOp::Add => p.wrapping_add(q),
        BinOp::Sub => p.wrapping_sub(q),
        BinOp::Mul => p.wrapping_mul(q),
        // Python's floor division and modulo; by 0 both give 0.
        BinOp::Div if q == 0 => 0,
        BinOp::Rem if q == 0 => 0,
        BinOp::Div => {
            let (quot, r) = (p.wrapping_div(q), p.wrapping_rem(q));
            if r != 0 && ((r < 0) != (q < 0)) {
                quot - 1
            } else {
                quot
            }
        }
        BinOp::Rem => {
            let r = p.wrapping_rem(q);
            if r != 0 && ((r < 0) != (q < 0)) {
                r + q
            } else {
                r
            }
        }
        BinOp::Max => p.max(q),
        BinOp::Min => p.min(q),
        // Not an integer operation of the language: through floats, as a cast would.
        BinOp::Pow => pow(p as f64, q as f64) as i64,
    }
}

fn float_binop(b: BinOp, p: f64, q: f64) -> f64 {
    match b {
        BinOp::Shl | BinOp::Shr => f64::NAN,
        BinOp::Pow => pow(p, q),
        BinOp::Add => p + q,
        BinOp::Sub => p - q,
        BinOp::Mul => p * q,
        BinOp::Div => p / q,
        // Python's `%`: the remainder takes the divisor's sign.
        BinOp::Rem => {
            let r = p % q;
            if r != 0.0 && (r < 0.0) != (q < 0.0) {
                r + q
            } else {
                r
            }
        }
        BinOp::Max => {
            if p.is_nan() || q.is_nan() {
                f64::NAN
            } else {
                p.max(q)
            }
        }
        BinOp::Min => {
            if p.is_nan() || q.is_nan() {
                f64::NAN
            } else {
                p.min(q)
            }
        }
    }
}

/// A unary op on an integer: negation wraps, `abs` keeps the most negative value, floor and
/// ceil are the value itself; the float functions go through f64.
fn int_unop(u: UnOp, i: i64) -> N {
    match u {
        UnOp::Neg => N::I(i.wrapping_neg()),
        UnOp::Abs => N::I(i.wrapping_abs()),
        UnOp::Floor | UnOp::Ceil | UnOp::RoundEven | UnOp::Trunc => N::I(i),
        u => N::F(unop(u, i as f64)),
    }
}

/// `astype`, element by element (the caller rounds to `to`): float → int truncates and
/// saturates (NaN → 0), int → float rounds once to nearest even, int → int wraps (the
/// caller's wrap; an unsigned source is held zero-extended, so it widens unsigned), number →
/// bool is `!= 0`, float → fp8 goes through f32 as the GPU's `cvt` does.
fn convert(v: N, to: DType) -> N {
    match v {
        _ if to == DType::I1 => N::I(i64::from(v.truthy())),
        // Float → float is core's rule (through f32 to the 8-bit floats, as the GPU converts).
        N::F(x) if to.is_float() => N::F(tilec_core::dtype::convert(x, DType::F32, to)),
        N::I(i) if to.is_float() => N::F(int_to_float(i, to)),
        N::F(x) => N::I(match to {
            DType::I8 => i64::from(x as i8),
            DType::I32 => i64::from(x as i32),
            DType::U8 => i64::from(x as u8),
            DType::U32 => i64::from(x as u32),
            _ => x as i64,
        }),
        n @ N::I(_) => n,
    }
}

/// An integer as an f64 from which rounding to `to` is rounding `i` once: exact below 2^53;
/// above, rounded to odd (the dropped bits OR-ed into the last kept one), which makes a
/// second rounding to any float of at most 51 significant bits correct.
fn int_to_float(i: i64, to: DType) -> f64 {
    let a = i.unsigned_abs();
    if to == DType::F64 || a < (1u64 << 53) {
        return i as f64;
    }
    let dropped = 64 - a.leading_zeros() - 53;
    let kept = (a >> dropped) | u64::from(a & ((1u64 << dropped) - 1) != 0);
    let v = kept as f64 * f64::from(1u32 << dropped);
    if i < 0 {
        -v
    } else {
        v
    }
}

fn unop(u: UnOp, p: f64) -> f64 {
    match u {
        UnOp::Neg => -p,
        UnOp::Exp => p.exp(),
        UnOp::Exp2 => p.exp2(),
        UnOp::Log => p.ln(),
        UnOp::Log2 => p.log2(),
        UnOp::Sqrt => p.sqrt(),
        UnOp::Rsqrt => 1.0 / p.sqrt(),
        UnOp::Tanh => p.tanh(),
        UnOp::Sin => p.sin(),
        UnOp::Cos => p.cos(),
        UnOp::Abs => p.abs(),
        UnOp::Floor => p.floor(),
        UnOp::Ceil => p.ceil(),
        UnOp::RoundEven => p.round_ties_even(),
        UnOp::Trunc => p.trunc(),
        UnOp::Erf => libm::erf(p),
    }
}

fn reduce(kind: ReduceKind, items: impl Iterator<Item = N>, d: DType) -> N {
    let v: Vec<N> = items.collect();
    if matches!(kind, ReduceKind::Argmax | ReduceKind::Argmin) {
        // The first NaN, else the first maximum (minimum): NumPy's answer.
        if let Some(i) = v.iter().position(|x| x.f().is_nan()) {
            return N::I(i as i64);
        }
        let mut best = 0usize;
        for (i, x) in v.iter().enumerate() {
            let better = match (x, &v[best]) {
                (N::I(a), N::I(b)) => (kind == ReduceKind::Argmax && a > b) || (kind == ReduceKind::Argmin && a < b),
                (a, b) => {
                    (kind == ReduceKind::Argmax && a.f() > b.f()) || (kind == ReduceKind::Argmin && a.f() < b.f())
                }
            };
            if better {
                best = i;
            }
        }
        return N::I(best as i64);
    }
    if !d.is_float() {
        // Exact and wrapping: the caller wraps the i64 sum to the dtype's width.
        let ints = v.iter().map(|x| x.i());
        return N::I(match kind {
            ReduceKind::Sum => ints.fold(0i64, i64::wrapping_add),
            ReduceKind::Max => ints.max().unwrap_or(i64::MIN),
            _ => ints.min().unwrap_or(i64::MAX),
        });
    }
    let f: Vec<f64> = v.iter().map(|x| x.f()).collect();
    let nan = f.iter().any(|x| x.is_nan());
    N::F(match kind {
        ReduceKind::Sum => f.iter().sum(),
        _ if nan => f64::NAN,
        ReduceKind::Max => f.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        _ => f.iter().copied().fold(f64::INFINITY, f64::min),
    })
}

/// The result of a run: the tensors as the kernel left them, and what it printed.
#[derive(Clone, Debug)]
pub struct Output {
    pub tensors: Vec<HostTensor>,
    pub prints: Vec<String>,
}

/// The order in which the interpreter runs the blocks of a grid. A correct kernel gives
/// the same result in every order (blocks of one launch are independent on a GPU); running
/// it both ways exposes blocks that write what other blocks write or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockOrder {
    Forward,
    Reverse,
}

/// The blocks along x the interpreter runs a persistent kernel on (see [`run_streaming`]).
pub const PERSISTENT_BLOCKS: i64 = 3;

/// Runs `func` on every block of `grid`, in order, with `args` in parameter order.
pub fn run(func: &Func, grid: [u32; 3], args: Vec<Arg>) -> Result<Output, InterpError> {
    run_ordered(func, grid, args, BlockOrder::Forward)
}

/// [`run`] with a chosen block order.
pub fn run_ordered(func: &Func, grid: [u32; 3], args: Vec<Arg>, order: BlockOrder) -> Result<Output, InterpError> {
    run_with(func, grid, args, order, Limits::default())
}

/// A short description of an argument for messages (never its data).
fn describe(a: &Arg) -> String {
    match a {
        Arg::Tensor(t) => format!("a {} tensor of shape {:?}", t.dtype, t.shape),
        Arg::I32(v) => format!("the i32 {v}"),
        Arg::I64(v) => format!("the i64 {v}"),
        Arg::F32(v) => format!("the f32 {v}"),
    }
}

/// Checks arguments against a kernel's parameters (count, kinds, dtypes, ranks, and that
/// every element a tensor's shape and strides address lies in its data) before anything
/// reads them: the grid's host expressions included.
pub fn check_args(func: &Func, args: &[Arg]) -> Result<(), InterpError> {
    if args.len() != func.params.len() {
        return Err(InterpError::ArgCount {
            kernel: func.name.clone(),
            expected: func.params.len(),
            given: args.len(),
        });
    }
    for (p, a) in func.params.iter().zip(args) {
        let bad = |reason: String| InterpError::BadArgument { name: p.name.clone(), reason };
        match (func.ty(p.value), a) {
            (Type::Tensor { dtype, rank }, Arg::Tensor(t)) => {
                if t.dtype != *dtype || t.shape.len() != *rank || t.strides.len() != *rank {
                    return Err(bad(format!("expected a rank-{rank} {dtype} tensor, got {}", describe(a))));
                }
                // Every element the shape and strides address must lie in the data.
                if t.shape.iter().chain(&t.strides).any(|&x| x < 0) {
                    return Err(bad(format!(
                        "negative extent or stride: shape {:?}, strides {:?}",
                        t.shape, t.strides
                    )));
                }
                if t.shape.iter().all(|&d| d > 0) {
                    let last = t
                        .shape
                        .iter()
                        .zip(&t.strides)
                        .try_fold(0i64, |acc, (d, s)| acc.checked_add((d - 1).checked_mul(*s)?));
                    let need =
                        last.and_then(|l| l.checked_add(1)).and_then(|n| n.checked_mul(i64::from(t.dtype.bytes())));
                    if need.is_none_or(|n| n as u64 > t.data.len() as u64) {
                        return Err(bad(format!(
                            "shape {:?} with strides {:?} addresses more than its {} bytes",
                            t.shape,
                            t.strides,
                            t.data.len()
                        )));
                    }
                }
            }
            (Type::Scalar(DType::I32), Arg::I32(_))
            | (Type::Scalar(DType::I64), Arg::I64(_))
            | (Type::Scalar(DType::F32), Arg::F32(_)) => {}
            (Type::Tensor { dtype, rank }, a) => {
                return Err(bad(format!("expected a rank-{rank} {dtype} tensor, got {}", describe(a))))
            }
            (Type::Scalar(d), a) => return Err(bad(format!("expected an {d} scalar, got {}", describe(a)))),
            (t, _) => return Err(bad(format!("a parameter of type {} cannot be passed", t.to_mlir()))),
        }
    }
    Ok(())
}

/// [`run_ordered`] within explicit [`Limits`].
pub fn run_with(
    func: &Func,
    grid: [u32; 3],
    args: Vec<Arg>,
    order: BlockOrder,
    limits: Limits,
) -> Result<Output, InterpError> {
    let mut prints = vec![];
    let tensors = run_streaming(func, grid, args, order, limits, &mut |l| prints.push(l))?;
    Ok(Output { tensors, prints })
}

/// [`run_with`], each `print` line handed to `sink` as the kernel prints it (so that a
/// kernel stopped by a limit has shown what it printed); returns the tensors. Past
/// `print_bytes`, one last line says that output was left out.
pub fn run_streaming(
    func: &Func,
    grid: [u32; 3],
    args: Vec<Arg>,
    order: BlockOrder,
    limits: Limits,
    sink: &mut dyn FnMut(String),
) -> Result<Vec<HostTensor>, InterpError> {
    // A warp-specialized kernel is a `tilegpu` one (its roles keep the program order, which
    // is what the interpreter runs).
    use tilec_core::tir::verify::Level;
    let level = if func.warp_spec.is_some() { Level::TileGpu } else { Level::Tile };
    tilec_core::tir::verify::verify(func, level).map_err(|d| InterpError::IllFormed(d.message))?;
    check_args(func, &args)?;
    let mut tensors = vec![];
    let mut vals = BTreeMap::new();
    for (p, a) in func.params.iter().zip(args) {
        let v = match a {
            Arg::Tensor(t) => {
                tensors.push(t);
                V::Tensor(tensors.len() - 1)
            }
            Arg::I32(v) => V::Scalar(N::I(i64::from(v))),
            Arg::I64(v) => V::Scalar(N::I(v)),
            Arg::F32(v) => V::Scalar(N::F(f64::from(v))),
        };
        vals.insert(p.value, v);
    }
    let mut budget = Budget { limits, work: 0, live: 0, printed: 0, truncated: false };
    let ntiles = grid.map(i64::from);
    // A persistent kernel (one that reads `num_tiles`) may run on any number of blocks along x
    // from 1 to its grid's; the interpreter runs it on at most PERSISTENT_BLOCKS so that every
    // block walks several tiles, as on the GPU.
    let mut nblocks = ntiles;
    let mut persistent = false;
    func.walk(&mut |o| persistent |= matches!(o.kind, OpKind::NumTiles { axis: 0 }));
    if persistent {
        nblocks[0] = nblocks[0].min(PERSISTENT_BLOCKS);
    }
    let total = nblocks[0] * nblocks[1] * nblocks[2];
    for i in 0..total {
        let lin = if order == BlockOrder::Forward { i } else { total - 1 - i };
        let (x, y, z) = (lin % nblocks[0], (lin / nblocks[0]) % nblocks[1], lin / (nblocks[0] * nblocks[1]));
        // A block of a CTA-pair kernel is its CTAs, one after the other (each does its half).
        for rank in 0..i64::from(func.cluster) {
            {
                budget.live = 0;
                let mut m = Machine {
                    func,
                    vals: vals.clone(),
                    budget: &mut budget,
                    tensors: &mut tensors,
                    bid: [x, y, z],
                    rank,
                    nblocks,
                    ntiles,
                    mbar: BTreeMap::new(),
                    prints: &mut *sink,
                };
                m.exec(&func.ops)?;
            }
        }
    }
    if budget.truncated {
        sink(format!("(print output past {} bytes left out)", limits.print_bytes));
    }
    Ok(tensors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn philox_matches_random123_known_answers() {
        // Known-answer vectors of Random123 (kat_vectors, philox4x32_10).
        assert_eq!(philox4x32_10([0, 0, 0, 0], [0, 0]), [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
        assert_eq!(
            philox4x32_10([0xffffffff; 4], [0xffffffff, 0xffffffff]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn uniform_is_in_unit_interval() {
        for o in 0..1000 {
            let u = rand_uniform(42, o);
            assert!((0.0..1.0).contains(&u));
        }
    }

    /// A kernel of one loop of 2^31 - 1 iterations whose body `body` makes from the
    /// induction variable.
    fn runaway_loop(body: impl FnOnce(ValueId) -> Vec<Op>) -> Func {
        let mut f = Func::new("k", "sm_90a", 1);
        let z = f.push(OpKind::ConstInt(0), Type::Scalar(DType::I32), None);
        let big = f.push(OpKind::ConstInt(i64::from(i32::MAX)), Type::Scalar(DType::I32), None);
        let one = f.push(OpKind::ConstInt(1), Type::Scalar(DType::I32), None);
        let iv = f.new_value(Type::Scalar(DType::I32));
        let body = body(iv);
        let (init, iters, yields, results) = (vec![], vec![], vec![], vec![]);
        f.push_void(OpKind::For { lb: z, ub: big, step: one, iv, init, iters, body, yields, results }, None);
        f
    }

    #[test]
    fn runaway_grids_and_loops_stop_at_the_work_limit() {
        let f = runaway_loop(|_| vec![]);
        let small = Limits { work: 1000, ..Limits::default() };
        let e = run_with(&f, [1, 1, 1], vec![], BlockOrder::Forward, small).unwrap_err();
        assert!(matches!(e, InterpError::Limit(_)) && e.to_string().contains("--max-work"), "{e}");
        // A 2^31-block grid of a kernel that does almost nothing stops too.
        let mut g = Func::new("g", "sm_90a", 1);
        g.push(OpKind::Bid { axis: 0 }, Type::Scalar(DType::I32), None);
        assert!(run_with(&g, [u32::MAX, 1, 1], vec![], BlockOrder::Forward, small).is_err());
    }

    /// A runaway loop that prints: every line reaches the sink as it is printed (the ones
    /// before the limit are not lost with the error), and printing counts as work, so that a
    /// loop of prints alone stops too.
    #[test]
    fn prints_stream_out_and_count_as_work() {
        let f = runaway_loop(|iv| {
            vec![Op { kind: OpKind::Print { prefix: "i =".into(), values: vec![iv] }, result: None, span: None }]
        });
        let small = Limits { work: 2000, ..Limits::default() };
        let mut lines = vec![];
        let e = run_streaming(&f, [1, 1, 1], vec![], BlockOrder::Forward, small, &mut |l| lines.push(l)).unwrap_err();
        assert!(matches!(e, InterpError::Limit(_)), "{e}");
        assert_eq!(lines.first().map(String::as_str), Some("block [0, 0, 0]: i = 0"));
        // Each iteration: the induction variable's binding (8) and a line of ~22 bytes.
        assert!((40..=80).contains(&lines.len()), "{} lines before the limit", lines.len());
    }

    #[test]
    fn arguments_are_checked_and_described_briefly() {
        let mut f = Func::new("k", "sm_90a", 1);
        f.add_param("n", Type::Scalar(DType::I32));
        let big = HostTensor::from_f64(DType::F32, &[1000, 1000], &vec![0.0; 1_000_000]);
        let e = run(&f, [1, 1, 1], vec![Arg::Tensor(big)]).unwrap_err().to_string();
        assert!(e.contains("a f32 tensor of shape [1000, 1000]") && e.len() < 200, "{e}");
        let mut g = Func::new("g", "sm_90a", 1);
        g.add_param("x", Type::Tensor { dtype: DType::F32, rank: 1 });
        let mut short = HostTensor::from_f64(DType::F32, &[4], &[0.0; 4]);
        short.shape = vec![100];
        assert!(run(&g, [1, 1, 1], vec![Arg::Tensor(short)]).unwrap_err().to_string().contains("addresses more"));
    }

    #[test]
    fn rounding_points() {
        assert_eq!(round_to(1.0 + 1e-4, DType::F16), 1.0);
        assert_eq!(round_to(65520.0, DType::F16), f64::INFINITY);
        assert_eq!(round_to(-3.7, DType::I32), -3.0);
        assert_eq!(round_to(0.1, DType::F32), f64::from(0.1f32));
    }
}
