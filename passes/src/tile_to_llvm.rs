//! `tile-to-llvm`: lowers a kernel whose tiles all have layouts (tilegpu) to the `llvm` and
//! `nvvm` dialects.
//!
//! Needs: `tile-layout` (every tile typed with a `#blocked` or `#slice` layout).
//!
//! Does: each tile becomes the list of scalar SSA values one thread holds, in the register
//! order of its layout; every elementwise op (arithmetic, casts, comparisons, `where`, math)
//! is expanded per register. Memory:
//! - `load`/`store` compute one base coordinate per thread (from `tid`) and a constant
//!   offset per register; registers contiguous along the fastest dim are moved as one
//!   predicated 16-byte (or narrower) access (`@p ld.global.v4.b32`) when the tensor
//!   parameter is specialised as 16-byte aligned (unit last stride, and extents and other
//!   strides multiples of 16 bytes), else one element at a time. Out-of-bounds lanes load
//!   the padding value and store nothing. Sliced tiles (rows to broadcast) are loaded by
//!   every thread that holds them.
//! - `reduce` combines in-thread (a tree), then across lanes with `shfl.sync.bfly`, then
//!   across warps through a shared-memory scratch region of its own (one barrier, two in a
//!   loop), so every thread ends with the statistic of each row it holds (the `#slice`).
//! - `convert_layout`, `permute` and reshapes that move elements between threads go through
//!   shared memory: write at the element's linear index, barrier, read in the new layout
//!   (scalar accesses, no swizzle yet).
//! - `for` and run-time `if` become blocks with the carried registers as block arguments.
//! - `rand` is Philox 4x32-10 (mul.hi/mul.lo rounds, keys computed once per op); offsets
//!   known to be `base + c` with consecutive `c` (arange, splats and their sums) share the
//!   Philox blocks they span, with the word picked by `base mod 4` at run time.
//! - Math: `exp2` is `ex2.approx.f32` (≤ 2 ulp); `exp(x)` is `ex2.approx(x·log2 e)` with the
//!   rounding error of the product corrected by a factor `1 + e·ln 2` (overflow stays inf,
//!   never NaN); `sqrt` is `sqrt.rn`; `rsqrt` is
//!   `1 / sqrt.rn` (`rsqrt.approx` with `rounding="approx"`); `log2`/`log` use `lg2.approx`;
//!   `truediv` is `div.rn` (`div.approx` with `rounding="approx"`). f16/bf16 math runs in
//!   f32 and rounds once. `sin`/`cos` reduce by 2π (Cody–Waite) then use `sin/cos.approx`;
//!   `tanh` is an odd polynomial below 0.3 and `1 − 2/(e^{2|x|}+1)` above;
//!   `flush_to_zero=true` flushes the f32 operands and result. Not lowered: `mma`, `print`,
//!   transposed loads.
//! - Gathers, scatters and element reads are one predicated scalar access per element
//!   (every index compared unsigned with its extent: negative indices are out of bounds).
//!
//! Guarantees: a module with one `llvm.func` marked `nvvm.kernel`, `nvvm.maxntid` set to the
//! block size, and (with the `occupancy` option) `nvvm.minctasm`; shared memory is one static
//! `@__tilec_smem` array (at most 48 KiB). The parameter ABI is that of `tilec_core::abi`.
//!
//! Options: `arch` (default: the module's `tile.target`), `occupancy`.

use std::collections::BTreeMap;
use std::fmt::Write;
use tilec_core::layout::{Layout, Shared};
use tilec_core::target::Arch;
use tilec_core::tir::{mlir_float, BinOp, Func, LogicOp, Op, OpKind, Padding, ReduceKind, Type, UnOp, ValueId};
use tilec_core::{DType, Diagnostic};

/// Largest static shared memory a kernel may declare (the CUDA static limit).
const STATIC_SMEM_LIMIT: u32 = 48 * 1024;

/// The lowered kernel.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub text: String,
    pub shared_bytes: u32,
    pub block_threads: u32,
}

#[derive(Clone, Debug)]
enum LV {
    Scalar(String),
    Tile(Vec<String>),
    Tensor { ptr: String, dims: Vec<String>, strides: Vec<String>, aligned: bool },
}

/// The LLVM type of a dtype: MLIR's builtin names are LLVM's.
fn llty(d: DType) -> &'static str {
    d.name()
}

fn err(msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error("E0900", msg)
}

struct Em {
    pro: String,
    body: String,
    n: u32,
    blocks: u32,
    consts: BTreeMap<String, String>,
    /// Per-layout thread coordinates, cached: (layout text, dim) → i32 value.
    bases: BTreeMap<(String, usize), String>,
    tid: String,
    lane: String,
    warp: String,
    smem: u32,
    smem_ptr: Option<String>,
    /// Loops around the op being lowered (a reduction in a loop must not let the next
    /// iteration overwrite its shared scratch before every thread has read it).
    loop_depth: u32,
}

impl Em {
    fn fresh(&mut self) -> String {
        self.n += 1;
        format!("%v{}", self.n)
    }

    fn v(&mut self, rhs: impl AsRef<str>) -> String {
        let name = self.fresh();
        let _ = writeln!(self.body, "    {name} = {}", rhs.as_ref());
        name
    }

    fn pv(&mut self, rhs: impl AsRef<str>) -> String {
        let name = self.fresh();
        let _ = writeln!(self.pro, "    {name} = {}", rhs.as_ref());
        name
    }

    fn line(&mut self, s: impl AsRef<str>) {
        let _ = writeln!(self.body, "    {}", s.as_ref());
    }

    fn cint(&mut self, v: i64, ty: &str) -> String {
        let key = format!("{ty}:{v}");
        if let Some(n) = self.consts.get(&key) {
            return n.clone();
        }
        let n = self.pv(format!("llvm.mlir.constant({v} : {ty}) : {ty}"));
        self.consts.insert(key, n.clone());
        n
    }

    fn cfloat(&mut self, v: f64, d: DType) -> String {
        let lit = mlir_float(v, d);
        let ty = llty(d);
        let key = format!("{ty}:{lit}");
        if let Some(n) = self.consts.get(&key) {
            return n.clone();
        }
        let n = self.pv(format!("llvm.mlir.constant({lit} : {ty}) : {ty}"));
        self.consts.insert(key, n.clone());
        n
    }

    fn new_block(&mut self) -> String {
        self.blocks += 1;
        format!("^bb{}", self.blocks)
    }

    /// Per-dimension thread coordinate `(warp_d * tpw_d + lane_d) * spt_d` (i32).
    fn thread_base(&mut self, l: &Layout, d: usize) -> String {
        // A slice holds the sliced dim at coordinate 0 in every thread.
        if matches!(l, Layout::Slice { dim, .. } if *dim == d) {
            return self.cint(0, "i32");
        }
        let key = (Layout::Blocked(l.blocked().clone()).to_mlir(), d);
        if let Some(v) = self.bases.get(&key) {
            return v.clone();
        }
        let b = l.blocked().clone();
        // Lanes and warps split over dims in `order`, fastest first.
        let (mut lane_shift, mut warp_shift) = (0u32, 0u32);
        for &o in &b.order {
            if o == d {
                break;
            }
            lane_shift += b.threads_per_warp[o].trailing_zeros();
            warp_shift += b.warps_per_cta[o].trailing_zeros();
        }
        let (lane, warp) = (self.lane.clone(), self.warp.clone());
        let lane_d = self.coord_bits(&lane, lane_shift, b.threads_per_warp[d]);
        let warp_d = self.coord_bits(&warp, warp_shift, b.warps_per_cta[d]);
        let tpw = self.cint(b.threads_per_warp[d], "i32");
        let spt = self.cint(b.size_per_thread[d], "i32");
        let wt = self.pv(format!("llvm.mul {warp_d}, {tpw} : i32"));
        let s = self.pv(format!("llvm.add {wt}, {lane_d} : i32"));
        let r = self.pv(format!("llvm.mul {s}, {spt} : i32"));
        self.bases.insert(key, r.clone());
        r
    }

    fn coord_bits(&mut self, id: &str, shift: u32, extent: i64) -> String {
        if extent == 1 {
            return self.cint(0, "i32");
        }
        let sh = self.cint(i64::from(shift), "i32");
        let mask = self.cint(extent - 1, "i32");
        let s = self.pv(format!("llvm.lshr {id}, {sh} : i32"));
        self.pv(format!("llvm.and {s}, {mask} : i32"))
    }

    fn smem_base(&mut self) -> String {
        if let Some(p) = &self.smem_ptr {
            return p.clone();
        }
        let p = self.pv("llvm.mlir.addressof @__tilec_smem : !llvm.ptr<3>");
        self.smem_ptr = Some(p.clone());
        p
    }

    fn bitcast(&mut self, v: &str, from: &str, to: &str) -> String {
        if from == to {
            return v.to_string();
        }
        self.v(format!("llvm.bitcast {v} : {from} to {to}"))
    }

    /// `a op b` on scalars of dtype `d`.
    fn binop(&mut self, op: BinOp, a: &str, b: &str, d: DType) -> String {
        let t = llty(d);
        if d.is_float() {
            return match op {
                BinOp::Add => self.v(format!("llvm.fadd {a}, {b} : {t}")),
                BinOp::Sub => self.v(format!("llvm.fsub {a}, {b} : {t}")),
                BinOp::Mul => self.v(format!("llvm.fmul {a}, {b} : {t}")),
                BinOp::Div => self.v(format!("llvm.fdiv {a}, {b} : {t}")),
                BinOp::Rem => self.v(format!("llvm.frem {a}, {b} : {t}")),
                BinOp::Max => self.v(format!("llvm.intr.maximum({a}, {b}) : ({t}, {t}) -> {t}")),
                BinOp::Min => self.v(format!("llvm.intr.minimum({a}, {b}) : ({t}, {t}) -> {t}")),
            };
        }
        match op {
            BinOp::Add => self.v(format!("llvm.add {a}, {b} : {t}")),
            BinOp::Sub => self.v(format!("llvm.sub {a}, {b} : {t}")),
            BinOp::Mul => self.v(format!("llvm.mul {a}, {b} : {t}")),
            BinOp::Max => self.v(format!("llvm.intr.smax({a}, {b}) : ({t}, {t}) -> {t}")),
            BinOp::Min => self.v(format!("llvm.intr.smin({a}, {b}) : ({t}, {t}) -> {t}")),
            BinOp::Div | BinOp::Rem => {
                // Floor division and modulo (Python semantics): adjust truncating results
                // when the remainder is non-zero and its sign differs from the divisor's.
                let q = self.v(format!("llvm.sdiv {a}, {b} : {t}"));
                let r = self.v(format!("llvm.srem {a}, {b} : {t}"));
                let zero = self.cint(0, t);
                let nz = self.v(format!("llvm.icmp \"ne\" {r}, {zero} : {t}"));
                let x = self.v(format!("llvm.xor {r}, {b} : {t}"));
                let neg = self.v(format!("llvm.icmp \"slt\" {x}, {zero} : {t}"));
                let adj = self.v(format!("llvm.and {nz}, {neg} : i1"));
                if op == BinOp::Div {
                    let one = self.cint(1, t);
                    let q1 = self.v(format!("llvm.sub {q}, {one} : {t}"));
                    self.v(format!("llvm.select {adj}, {q1}, {q} : i1, {t}"))
                } else {
                    let r1 = self.v(format!("llvm.add {r}, {b} : {t}"));
                    self.v(format!("llvm.select {adj}, {r1}, {r} : i1, {t}"))
                }
            }
        }
    }

    fn extend_f32(&mut self, v: &str, d: DType) -> String {
        if d == DType::F32 {
            v.to_string()
        } else {
            self.v(format!("llvm.fpext {v} : {} to f32", llty(d)))
        }
    }

    fn round_from_f32(&mut self, v: &str, d: DType) -> String {
        if d == DType::F32 {
            v.to_string()
        } else {
            self.v(format!("llvm.fptrunc {v} : f32 to {}", llty(d)))
        }
    }

    fn ex2(&mut self, x: &str) -> String {
        self.v(format!("llvm.call_intrinsic \"llvm.nvvm.ex2.approx.f32\"({x}) : (f32) -> f32"))
    }

    /// Flushes an f32 subnormal to a zero of its sign.
    fn ftz32(&mut self, v: &str) -> String {
        let ax = self.v(format!("llvm.intr.fabs({v}) : (f32) -> f32"));
        let min = self.cfloat(f64::from(f32::MIN_POSITIVE), DType::F32);
        let zero = self.cfloat(0.0, DType::F32);
        let sub = self.v(format!("llvm.fcmp \"olt\" {ax}, {min} : f32"));
        let z = self.v(format!("llvm.fmul {v}, {zero} : f32"));
        self.v(format!("llvm.select {sub}, {z}, {v} : i1, f32"))
    }

    fn unop(&mut self, op: UnOp, a: &str, d: DType, approx: bool) -> Result<String, Diagnostic> {
        Ok(match op {
            UnOp::Neg => self.v(format!("llvm.fneg {a} : {}", llty(d))),
            UnOp::Abs => self.v(format!("llvm.intr.fabs({a}) : ({}) -> {}", llty(d), llty(d))),
            UnOp::Exp2 => {
                let x = self.extend_f32(a, d);
                let r = self.ex2(&x);
                self.round_from_f32(&r, d)
            }
            UnOp::Sqrt | UnOp::Rsqrt | UnOp::Log2 | UnOp::Log => {
                let x = self.extend_f32(a, d);
                let r = match (op, approx) {
                    // sqrt.rn: correctly rounded.
                    (UnOp::Sqrt, _) => self.v(format!("llvm.intr.sqrt({x}) : (f32) -> f32")),
                    (UnOp::Rsqrt, true) => {
                        self.v(format!("llvm.call_intrinsic \"llvm.nvvm.rsqrt.approx.f\"({x}) : (f32) -> f32"))
                    }
                    // 1 / sqrt.rn(x) with div.rn: within 1 ulp of the exact value.
                    (UnOp::Rsqrt, false) => {
                        let s = self.v(format!("llvm.intr.sqrt({x}) : (f32) -> f32"));
                        let one = self.cfloat(1.0, DType::F32);
                        self.v(format!("llvm.fdiv {one}, {s} : f32"))
                    }
                    // lg2.approx (max error 2^-22 relative away from 1); ln x = lg2 x · ln 2.
                    _ => {
                        let l = self.v(format!("llvm.call_intrinsic \"llvm.nvvm.lg2.approx.f\"({x}) : (f32) -> f32"));
                        if op == UnOp::Log {
                            let ln2 = self.cfloat(std::f64::consts::LN_2, DType::F32);
                            self.v(format!("llvm.fmul {l}, {ln2} : f32"))
                        } else {
                            l
                        }
                    }
                };
                self.round_from_f32(&r, d)
            }
            UnOp::Sin | UnOp::Cos => {
                // x - k·2π with k = rint(x / 2π) (2π split in two for an exact product),
                // then sin.approx/cos.approx (absolute error 2^-20.5 on the reduced range).
                let x = self.extend_f32(a, d);
                let tau = std::f64::consts::TAU;
                let (inv, hi) = (self.cfloat(1.0 / tau, DType::F32), self.cfloat(f64::from(tau as f32), DType::F32));
                let lo = self.cfloat(tau - f64::from(tau as f32), DType::F32);
                let q = self.v(format!("llvm.fmul {x}, {inv} : f32"));
                let k = self.v(format!("llvm.intr.rint({q}) : (f32) -> f32"));
                let nk = self.v(format!("llvm.fneg {k} : f32"));
                let r1 = self.v(format!("llvm.intr.fma({nk}, {hi}, {x}) : (f32, f32, f32) -> f32"));
                let r = self.v(format!("llvm.intr.fma({nk}, {lo}, {r1}) : (f32, f32, f32) -> f32"));
                let name = if op == UnOp::Sin { "sin" } else { "cos" };
                let y = self.v(format!("llvm.call_intrinsic \"llvm.nvvm.{name}.approx.f\"({r}) : (f32) -> f32"));
                self.round_from_f32(&y, d)
            }
            UnOp::Tanh => {
                // |x| < 0.3: the odd Taylor polynomial to x^11 (truncation < 2e-8 relative);
                // else sign(x)·(1 − 2 / (exp(2|x|) + 1)), which loses under 2 bits there.
                let x = self.extend_f32(a, d);
                let ax = self.v(format!("llvm.intr.fabs({x}) : (f32) -> f32"));
                let x2 = self.v(format!("llvm.fmul {x}, {x} : f32"));
                let coeffs = [-1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0, -1382.0 / 155_925.0];
                let mut p = self.cfloat(coeffs[4], DType::F32);
                for c in coeffs[..4].iter().rev() {
                    let cc = self.cfloat(*c, DType::F32);
                    p = self.v(format!("llvm.intr.fma({p}, {x2}, {cc}) : (f32, f32, f32) -> f32"));
                }
                let px = self.v(format!("llvm.fmul {p}, {x2} : f32"));
                let small = self.v(format!("llvm.intr.fma({px}, {x}, {x}) : (f32, f32, f32) -> f32"));
                let two = self.cfloat(2.0, DType::F32);
                let one = self.cfloat(1.0, DType::F32);
                let t = self.v(format!("llvm.fmul {ax}, {two} : f32"));
                let e = self.unop(UnOp::Exp, &t, DType::F32, approx)?;
                let e1 = self.v(format!("llvm.fadd {e}, {one} : f32"));
                let q = self.v(format!("llvm.fdiv {two}, {e1} : f32"));
                let big = self.v(format!("llvm.fsub {one}, {q} : f32"));
                let signed = self.v(format!("llvm.intr.copysign({big}, {x}) : (f32, f32) -> f32"));
                let cut = self.cfloat(0.3, DType::F32);
                let is_small = self.v(format!("llvm.fcmp \"olt\" {ax}, {cut} : f32"));
                let r = self.v(format!("llvm.select {is_small}, {small}, {signed} : i1, f32"));
                self.round_from_f32(&r, d)
            }
            UnOp::Exp => {
                let x = self.extend_f32(a, d);
                // t = x·log2(e) rounded; e = the rounding error of that product, exactly
                // (fma), plus the low part of log2(e); exp(x) = 2^t · 2^e ≈ 2^t · (1 + e·ln 2).
                // e is clamped so that ±inf inputs (e = NaN) still give 0 and inf, and the
                // correction is a factor (never 0) so that an overflowed 2^t stays inf.
                let hi = self.cfloat(f64::from(std::f32::consts::LOG2_E), DType::F32);
                let lo = self.cfloat(std::f64::consts::LOG2_E - f64::from(std::f32::consts::LOG2_E), DType::F32);
                let ln2 = self.cfloat(std::f64::consts::LN_2, DType::F32);
                let (m1, p1) = (self.cfloat(-1.0, DType::F32), self.cfloat(1.0, DType::F32));
                let t = self.v(format!("llvm.fmul {x}, {hi} : f32"));
                let nt = self.v(format!("llvm.fneg {t} : f32"));
                let e0 = self.v(format!("llvm.intr.fma({x}, {hi}, {nt}) : (f32, f32, f32) -> f32"));
                let e1 = self.v(format!("llvm.intr.fma({x}, {lo}, {e0}) : (f32, f32, f32) -> f32"));
                let e2 = self.v(format!("llvm.intr.maxnum({e1}, {m1}) : (f32, f32) -> f32"));
                let e3 = self.v(format!("llvm.intr.minnum({e2}, {p1}) : (f32, f32) -> f32"));
                let y = self.ex2(&t);
                let f = self.v(format!("llvm.intr.fma({e3}, {ln2}, {p1}) : (f32, f32, f32) -> f32"));
                let r = self.v(format!("llvm.fmul {y}, {f} : f32"));
                self.round_from_f32(&r, d)
            }
        })
    }

    fn cast(&mut self, v: &str, from: DType, to: DType) -> String {
        let (f, t) = (llty(from), llty(to));
        let op = match (from.is_float(), to.is_float()) {
            (true, true) if to.bits() > from.bits() => "llvm.fpext",
            (true, true) if from == DType::F16 && to == DType::BF16 || from == DType::BF16 && to == DType::F16 => {
                let x = self.v(format!("llvm.fpext {v} : {f} to f32"));
                return self.v(format!("llvm.fptrunc {x} : f32 to {t}"));
            }
            (true, true) => "llvm.fptrunc",
            (false, true) => "llvm.sitofp",
            (true, false) => "llvm.fptosi",
            (false, false) if to.bits() > from.bits() => "llvm.sext",
            (false, false) => "llvm.trunc",
        };
        self.v(format!("{op} {v} : {f} to {t}"))
    }

    /// Philox 4x32-10 of counter `(ctr, 0, 0, 0)` with the precomputed round `keys`: the
    /// four output words.
    fn philox(&mut self, ctr: &str, keys: &[(String, String)]) -> [String; 4] {
        let zero = self.cint(0, "i32");
        let mut c = [ctr.to_string(), zero.clone(), zero.clone(), zero];
        for (k0, k1) in keys {
            // mul.hi.u32 and mul.lo.u32 (the 64-bit product form lets LLVM widen the xors
            // into 64-bit arithmetic, which is slower).
            let wide = |em: &mut Em, x: &str, m: i64| -> (String, String) {
                let mc = em.cint(m as i32 as i64, "i32");
                let hi = em.v(format!("llvm.call_intrinsic \"llvm.nvvm.mulhi.ui\"({x}, {mc}) : (i32, i32) -> i32"));
                (hi, em.v(format!("llvm.mul {x}, {mc} : i32")))
            };
            let (hi0, lo0) = wide(self, &c[0], PHILOX_M[0]);
            let (hi1, lo1) = wide(self, &c[2], PHILOX_M[1]);
            let a = self.v(format!("llvm.xor {hi1}, {} : i32", c[1]));
            let n0 = self.v(format!("llvm.xor {a}, {k0} : i32"));
            let b = self.v(format!("llvm.xor {hi0}, {} : i32", c[3]));
            let n2 = self.v(format!("llvm.xor {b}, {k1} : i32"));
            c = [n0, lo1, n2, lo0];
        }
        c
    }

    /// `(w >> 8) · 2⁻²⁴`.
    fn word_to_uniform(&mut self, w: &str) -> String {
        let c8 = self.cint(8, "i32");
        let s = self.v(format!("llvm.lshr {w}, {c8} : i32"));
        let f = self.v(format!("llvm.uitofp {s} : i32 to f32"));
        let scale = self.cfloat(1.0 / 16_777_216.0, DType::F32);
        self.v(format!("llvm.fmul {f}, {scale} : f32"))
    }

    /// `candidates[s]` for a run-time `s` in 0..candidates.len() (a select chain).
    fn pick(&mut self, s: &str, candidates: &[String]) -> String {
        let mut r = candidates[0].clone();
        for (i, c) in candidates.iter().enumerate().skip(1) {
            let ci = self.cint(i as i64, "i32");
            let is = self.v(format!("llvm.icmp \"eq\" {s}, {ci} : i32"));
            r = self.v(format!("llvm.select {is}, {c}, {r} : i1, i32"));
        }
        r
    }

    /// `rand` of a tile of offsets: offset o is word `o % 4` of Philox block `o / 4`.
    /// Registers known to be `base + c` for consecutive `c` share the blocks they span
    /// (8 consecutive offsets need 3 blocks, whatever `base` is); others pay one block each.
    fn rand_tile(
        &mut self,
        offsets: &[String],
        aff: Option<&[(String, i64)]>,
        keys: &[(String, String)],
    ) -> Vec<String> {
        let (c2, c3) = (self.cint(2, "i32"), self.cint(3, "i32"));
        let mut out = vec![String::new(); offsets.len()];
        // Runs of registers: (first register index, length), consecutive constants on one base.
        let mut runs: Vec<Vec<usize>> = vec![];
        match aff {
            Some(a) if a.len() == offsets.len() => {
                let mut order: Vec<usize> = (0..a.len()).collect();
                order.sort_by(|&i, &j| (&a[i].0, a[i].1).cmp(&(&a[j].0, a[j].1)));
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
            let q0 = self.v(format!("llvm.lshr {v0}, {c2} : i32"));
            let s = self.v(format!("llvm.and {v0}, {c3} : i32"));
            let blocks = (run.len() + 3).div_ceil(4);
            let mut words = vec![];
            for k in 0..blocks {
                let ctr = if k == 0 {
                    q0.clone()
                } else {
                    // (v0 + 4k) / 4 as u32: wraps to 0 past 2^30, like the offsets past 2^32.
                    let kc = self.cint(k as i64, "i32");
                    let mask = self.cint(0x3FFF_FFFF, "i32");
                    let q = self.v(format!("llvm.add {q0}, {kc} : i32"));
                    self.v(format!("llvm.and {q}, {mask} : i32"))
                };
                words.extend(self.philox(&ctr, keys));
            }
            for (j, &reg) in run.iter().enumerate() {
                let cands: Vec<String> = (0..4).map(|t| words[j + t].clone()).collect();
                let w = self.pick(&s, &cands);
                out[reg] = self.word_to_uniform(&w);
            }
        }
        out
    }

    /// A butterfly shuffle of a 16- or 32-bit scalar.
    fn shfl_bfly(&mut self, v: &str, d: DType, offset: i64) -> String {
        let all = self.cint(-1, "i32");
        let off = self.cint(offset, "i32");
        let clamp = self.cint(31, "i32");
        match d.bits() {
            32 => self.v(format!("nvvm.shfl.sync bfly {all}, {v}, {off}, {clamp} : {} -> {}", llty(d), llty(d))),
            16 => {
                let i = self.bitcast(v, llty(d), "i16");
                let w = self.v(format!("llvm.zext {i} : i16 to i32"));
                let s = self.v(format!("nvvm.shfl.sync bfly {all}, {w}, {off}, {clamp} : i32 -> i32"));
                let t = self.v(format!("llvm.trunc {s} : i32 to i16"));
                self.bitcast(&t, "i16", llty(d))
            }
            _ => {
                let lo = self.v(format!("llvm.trunc {v} : i64 to i32"));
                let c32 = self.cint(32, "i64");
                let h = self.v(format!("llvm.lshr {v}, {c32} : i64"));
                let hi = self.v(format!("llvm.trunc {h} : i64 to i32"));
                let slo = self.v(format!("nvvm.shfl.sync bfly {all}, {lo}, {off}, {clamp} : i32 -> i32"));
                let shi = self.v(format!("nvvm.shfl.sync bfly {all}, {hi}, {off}, {clamp} : i32 -> i32"));
                let zl = self.v(format!("llvm.zext {slo} : i32 to i64"));
                let zh = self.v(format!("llvm.zext {shi} : i32 to i64"));
                let sh = self.v(format!("llvm.shl {zh}, {c32} : i64"));
                self.v(format!("llvm.or {sh}, {zl} : i64"))
            }
        }
    }
}

fn combine_op(k: ReduceKind) -> Result<BinOp, Diagnostic> {
    match k {
        ReduceKind::Max => Ok(BinOp::Max),
        ReduceKind::Min => Ok(BinOp::Min),
        ReduceKind::Sum => Ok(BinOp::Add),
        ReduceKind::Argmax | ReduceKind::Argmin => Err(err("argmax/argmin is not lowered yet")),
    }
}

/// Bit pattern of the padding of one element, as `u64`.
fn pad_bits(p: Padding, d: DType) -> u64 {
    let v = p.value();
    if d.is_float() {
        d.float_bits(v)
    } else {
        (v as i64 as u64) & if d.bits() >= 64 { u64::MAX } else { (1u64 << d.bits()) - 1 }
    }
}

/// Lowers a kernel with layouts to the `llvm`/`nvvm` dialects.
pub fn run(func: &Func, arch: &Arch, occupancy: Option<u32>) -> Result<Lowered, Diagnostic> {
    // The pass's precondition, checked once here rather than where each op meets it.
    let mut unlaid = false;
    func.walk(&mut |op| unlaid |= op.result.is_some_and(|r| matches!(func.ty(r), Type::Tile { layout: None, .. })));
    if unlaid {
        return Err(Diagnostic::error(
            "E0904",
            "`tile-to-llvm` needs every tile laid out: run `tile-layout` before it",
        ));
    }
    let threads = func.num_warps * 32;
    let mut em = Em {
        pro: String::new(),
        body: String::new(),
        n: 0,
        blocks: 0,
        consts: BTreeMap::new(),
        bases: BTreeMap::new(),
        tid: String::new(),
        lane: String::new(),
        warp: String::new(),
        smem: 0,
        smem_ptr: None,
        loop_depth: 0,
    };
    em.tid = em.pv("nvvm.read.ptx.sreg.tid.x : i32");
    let c31 = em.cint(31, "i32");
    let c5 = em.cint(5, "i32");
    em.lane = em.pv(format!("llvm.and {}, {c31} : i32", em.tid));
    em.warp = em.pv(format!("llvm.lshr {}, {c5} : i32", em.tid));

    // Parameters.
    let mut args: Vec<String> = vec![];
    let mut vals: BTreeMap<ValueId, LV> = BTreeMap::new();
    for p in &func.params {
        match func.ty(p.value) {
            Type::Tensor { rank, .. } => {
                let ptr = format!("%{}", p.name);
                args.push(format!("{ptr}: !llvm.ptr<1>"));
                let dims: Vec<String> = (0..*rank).map(|d| format!("%{}_dim{d}", p.name)).collect();
                let strides: Vec<String> = (0..*rank).map(|d| format!("%{}_stride{d}", p.name)).collect();
                args.extend(dims.iter().map(|d| format!("{d}: i64")));
                args.extend(strides.iter().map(|s| format!("{s}: i64")));
                vals.insert(p.value, LV::Tensor { ptr, dims, strides, aligned: p.divisibility >= 16 });
            }
            Type::Scalar(d) => {
                let name = format!("%{}", p.name);
                args.push(format!("{name}: {}", llty(*d)));
                vals.insert(p.value, LV::Scalar(name));
            }
            Type::Tile { .. } => return Err(err("a kernel parameter cannot be a tile")),
        }
    }
    let mut lw = Lw { func, em, vals, aff: BTreeMap::new(), base_sums: BTreeMap::new() };
    lw.ops(&func.ops)?;
    let em = lw.em;

    if em.smem > STATIC_SMEM_LIMIT {
        return Err(Diagnostic::error(
            "E0020",
            format!("the kernel needs {} bytes of shared memory; the static limit is {STATIC_SMEM_LIMIT}", em.smem),
        ));
    }
    if em.smem > arch.smem_per_block {
        return Err(Diagnostic::error(
            "E0020",
            format!("the kernel needs {} bytes of shared memory; {} has {}", em.smem, arch.name, arch.smem_per_block),
        ));
    }
    let mut s = String::new();
    let _ = writeln!(s, "module attributes {{tile.target = \"{}\"}} {{", arch.name);
    if em.smem > 0 {
        let _ = writeln!(
            s,
            "  llvm.mlir.global internal @__tilec_smem() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<{} x i8>",
            em.smem
        );
    }
    let mut attrs = format!("nvvm.kernel, nvvm.maxntid = array<i32: {threads}, 1, 1>");
    if let Some(o) = occupancy {
        let _ = write!(attrs, ", nvvm.minctasm = {o} : i32");
    }
    let _ = writeln!(s, "  llvm.func @{}({}) attributes {{{attrs}}} {{", func.name, args.join(", "));
    s.push_str(&em.pro);
    s.push_str(&em.body);
    let _ = writeln!(s, "    llvm.return\n  }}\n}}");
    Ok(Lowered { text: s, shared_bytes: em.smem, block_threads: threads })
}

/// Philox 4x32-10 multipliers and key increments (as the interpreter).
const PHILOX_M: [i64; 2] = [0xD251_1F53, 0xCD9E_8D57];
const PHILOX_W: [i64; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// The lowering of one kernel's ops: the emitter and the lowered value of each tile-IR value.
struct Lw<'f> {
    func: &'f Func,
    em: Em,
    vals: BTreeMap<ValueId, LV>,
    /// For i32 tiles known to be affine in the register: register r = `base + c` with `base`
    /// an SSA value and `c` a constant (arange, splats and their sums). `rand` uses it to
    /// share one Philox call between consecutive offsets.
    aff: BTreeMap<ValueId, Vec<(String, i64)>>,
    /// Sums of two bases already emitted.
    base_sums: BTreeMap<(String, String), String>,
}

impl Lw<'_> {
    fn get(&self, v: ValueId) -> Result<LV, Diagnostic> {
        self.vals.get(&v).cloned().ok_or_else(|| err(format!("value %{} used before definition", v.0)))
    }

    fn scalar(&self, v: ValueId) -> Result<String, Diagnostic> {
        match self.get(v)? {
            LV::Scalar(s) => Ok(s),
            _ => Err(err(format!("value %{} is not a scalar", v.0))),
        }
    }

    fn tile(&self, v: ValueId) -> Result<Vec<String>, Diagnostic> {
        match self.get(v)? {
            LV::Tile(r) => Ok(r),
            _ => Err(err(format!("value %{} is not a tile", v.0))),
        }
    }

    /// The operands of each register of an op whose operands are all scalars or all tiles of
    /// one layout (a scalar among tiles stands for each register): one list per register,
    /// and whether the operands were tiles at all.
    fn registers(&self, operands: &[ValueId]) -> Result<(Vec<Vec<String>>, bool), Diagnostic> {
        let lvs = operands.iter().map(|v| self.get(*v)).collect::<Result<Vec<_>, _>>()?;
        let n = lvs.iter().find_map(|l| if let LV::Tile(r) = l { Some(r.len()) } else { None });
        let pick = |l: &LV, i: usize| -> Result<String, Diagnostic> {
            match l {
                LV::Scalar(s) => Ok(s.clone()),
                LV::Tile(r) if r.len() == n.unwrap_or(0) => Ok(r[i].clone()),
                LV::Tile(_) => Err(err("elementwise operands of different layouts")),
                LV::Tensor { .. } => Err(err("elementwise op on a tensor")),
            }
        };
        let regs = (0..n.unwrap_or(1))
            .map(|i| lvs.iter().map(|l| pick(l, i)).collect::<Result<Vec<_>, _>>())
            .collect::<Result<Vec<_>, _>>()?;
        Ok((regs, n.is_some()))
    }

    /// Applies `f` register by register (see [`Lw::registers`]).
    fn elementwise(
        &mut self,
        operands: &[ValueId],
        mut f: impl FnMut(&mut Em, &[String]) -> Result<String, Diagnostic>,
    ) -> Result<LV, Diagnostic> {
        let (regs, tile) = self.registers(operands)?;
        let mut out = regs.iter().map(|xs| f(&mut self.em, xs)).collect::<Result<Vec<_>, _>>()?;
        Ok(match (tile, out.pop()) {
            (false, Some(x)) => LV::Scalar(x),
            (_, last) => {
                out.extend(last);
                LV::Tile(out)
            }
        })
    }

    /// The registers (or the scalar) of values, flattened, with their LLVM types.
    fn flatten(&self, vs: &[ValueId]) -> Result<(Vec<String>, Vec<&'static str>), Diagnostic> {
        let (mut names, mut tys) = (vec![], vec![]);
        for v in vs {
            let t = llty(self.func.ty(*v).dtype());
            match self.get(*v)? {
                LV::Scalar(s) => {
                    names.push(s);
                    tys.push(t);
                }
                LV::Tile(r) => {
                    tys.extend(std::iter::repeat_n(t, r.len()));
                    names.extend(r);
                }
                LV::Tensor { .. } => return Err(err("a tensor cannot be loop-carried")),
            }
        }
        Ok((names, tys))
    }

    /// An i32 (a loop's induction variable) followed by the flattened `vs`.
    fn flatten_after(&self, first: String, vs: &[ValueId]) -> Result<(Vec<String>, Vec<&'static str>), Diagnostic> {
        let (names, tys) = self.flatten(vs)?;
        Ok((std::iter::once(first).chain(names).collect(), std::iter::once("i32").chain(tys).collect()))
    }

    /// Fresh block arguments shaped like `like` (register counts), bound to `vs`.
    fn bind_args(&mut self, vs: &[ValueId], like: &[ValueId]) -> Result<Vec<(String, &'static str)>, Diagnostic> {
        let mut args = vec![];
        for (v, l) in vs.iter().zip(like) {
            let t = llty(self.func.ty(*v).dtype());
            let lv = match self.get(*l)? {
                LV::Scalar(_) => {
                    let a = self.em.fresh();
                    args.push((a.clone(), t));
                    LV::Scalar(a)
                }
                LV::Tile(r) => LV::Tile(
                    r.iter()
                        .map(|_| {
                            let a = self.em.fresh();
                            args.push((a.clone(), t));
                            a
                        })
                        .collect(),
                ),
                LV::Tensor { .. } => return Err(err("a tensor cannot be loop-carried")),
            };
            self.vals.insert(*v, lv);
        }
        Ok(args)
    }

    fn branch(&mut self, block: &str, names: &[String], tys: &[&str]) {
        if names.is_empty() {
            self.em.line(format!("llvm.br {block}"));
        } else {
            self.em.line(format!("llvm.br {block}({} : {})", names.join(", "), tys.join(", ")));
        }
    }

    fn label(&mut self, block: &str, args: &[(String, &'static str)]) {
        if args.is_empty() {
            let _ = writeln!(self.em.body, "  {block}:");
        } else {
            let a: Vec<String> = args.iter().map(|(n, t)| format!("{n}: {t}")).collect();
            let _ = writeln!(self.em.body, "  {block}({}):", a.join(", "));
        }
    }

    /// Records `r = x + y` as affine when both operands are.
    fn affine_sum(&mut self, r: ValueId, x: ValueId, y: ValueId) {
        let (Some(a), Some(b)) = (self.aff.get(&x).cloned(), self.aff.get(&y).cloned()) else { return };
        if a.len() != b.len() {
            return;
        }
        let mut out = vec![];
        for ((ba, ca), (bb, cb)) in a.into_iter().zip(b) {
            let key = (ba.clone(), bb.clone());
            let base = match self.base_sums.get(&key) {
                Some(s) => s.clone(),
                None => {
                    let s = self.em.v(format!("llvm.add {ba}, {bb} : i32"));
                    self.base_sums.insert(key, s.clone());
                    s
                }
            };
            out.push((base, ca + cb));
        }
        self.aff.insert(r, out);
    }

    fn ops(&mut self, ops: &[Op]) -> Result<(), Diagnostic> {
        for op in ops {
            self.op(op).map_err(|d| match (d.labels.is_empty(), op.span) {
                (true, Some(s)) => d.with_primary(s, "while lowering this"),
                _ => d,
            })?;
        }
        Ok(())
    }

    fn op(&mut self, op: &Op) -> Result<(), Diagnostic> {
        let func = self.func;
        let rty = op.result.map(|r| func.ty(r).clone());
        let rdtype = rty.as_ref().map(|t| t.dtype());
        let lv = match &op.kind {
            OpKind::Bid { axis } | OpKind::NumBlocks { axis } => {
                let a = ["x", "y", "z"].get(*axis as usize).ok_or_else(|| err("grid axis out of range"))?;
                let reg = if matches!(op.kind, OpKind::Bid { .. }) { "ctaid" } else { "nctaid" };
                LV::Scalar(self.em.v(format!("nvvm.read.ptx.sreg.{reg}.{a} : i32")))
            }
            OpKind::Dim { tensor, axis } => match self.get(*tensor)? {
                LV::Tensor { dims, .. } => {
                    let d = dims.get(*axis as usize).ok_or_else(|| err("dim axis out of range"))?.clone();
                    LV::Scalar(self.em.v(format!("llvm.trunc {d} : i64 to i32")))
                }
                _ => return Err(err("tile.dim of a non-tensor")),
            },
            OpKind::ConstInt(v) => LV::Scalar(self.em.cint(*v, llty(rdtype.unwrap_or(DType::I32)))),
            OpKind::ConstFloat(v) => LV::Scalar(self.em.cfloat(*v, rdtype.unwrap_or(DType::F32))),
            OpKind::Splat(s) => {
                let s = self.scalar(*s)?;
                let ty = rty.as_ref().ok_or_else(|| err("splat without result"))?;
                let l = ty.layout().ok_or_else(|| err("tile without layout (run tile-layout first)"))?;
                let n = l.regs_per_thread(ty.shape()) as usize;
                if let (Some(r), DType::I32) = (op.result, ty.dtype()) {
                    self.aff.insert(r, vec![(s.clone(), 0); n]);
                }
                LV::Tile(vec![s; n])
            }
            OpKind::Binary(b, x, y) => {
                let d = func.ty(*x).dtype();
                if let (BinOp::Add, Some(r)) = (b, op.result) {
                    self.affine_sum(r, *x, *y);
                }
                self.elementwise(&[*x, *y], |em, a| Ok(em.binop(*b, &a[0], &a[1], d)))?
            }
            OpKind::Unary(u, x) => {
                let d = func.ty(*x).dtype();
                self.elementwise(&[*x], |em, a| em.unop(*u, &a[0], d, false))?
            }
            OpKind::Math { op: u, value, flags } => {
                let d = func.ty(*value).dtype();
                self.elementwise(&[*value], |em, a| {
                    if !flags.ftz {
                        return em.unop(*u, &a[0], d, flags.approx);
                    }
                    // Flush the f32 input and result, as the interpreter does.
                    let x = em.extend_f32(&a[0], d);
                    let x = em.ftz32(&x);
                    let r = em.unop(*u, &x, DType::F32, flags.approx)?;
                    let r = em.ftz32(&r);
                    Ok(em.round_from_f32(&r, d))
                })?
            }
            OpKind::TrueDiv { lhs, rhs, flags } => {
                let d = func.ty(*lhs).dtype();
                self.elementwise(&[*lhs, *rhs], |em, a| {
                    if !flags.approx && !flags.ftz {
                        return Ok(em.binop(BinOp::Div, &a[0], &a[1], d));
                    }
                    let (mut x, mut y) = (em.extend_f32(&a[0], d), em.extend_f32(&a[1], d));
                    if flags.ftz {
                        (x, y) = (em.ftz32(&x), em.ftz32(&y));
                    }
                    let mut q = if flags.approx {
                        em.v(format!("llvm.call_intrinsic \"llvm.nvvm.div.approx.f\"({x}, {y}) : (f32, f32) -> f32"))
                    } else {
                        em.v(format!("llvm.fdiv {x}, {y} : f32"))
                    };
                    if flags.ftz {
                        q = em.ftz32(&q);
                    }
                    Ok(em.round_from_f32(&q, d))
                })?
            }
            OpKind::Cast(x) => {
                let from = func.ty(*x).dtype();
                let to = rdtype.unwrap_or(from);
                self.elementwise(&[*x], |em, a| Ok(em.cast(&a[0], from, to)))?
            }
            OpKind::Cmp(p, x, y) => {
                let d = func.ty(*x).dtype();
                let (op, pred) = if d.is_float() { ("llvm.fcmp", p.mlir(true)) } else { ("llvm.icmp", p.mlir(false)) };
                self.elementwise(&[*x, *y], |em, a| {
                    Ok(em.v(format!("{op} \"{pred}\" {}, {} : {}", a[0], a[1], llty(d))))
                })?
            }
            OpKind::Logic(l, x, y) => {
                let name = match l {
                    LogicOp::And => "llvm.and",
                    LogicOp::Or => "llvm.or",
                    LogicOp::Xor => "llvm.xor",
                };
                self.elementwise(&[*x, *y], |em, a| Ok(em.v(format!("{name} {}, {} : i1", a[0], a[1]))))?
            }
            OpKind::Select { cond, a, b } => {
                let t = llty(func.ty(*a).dtype());
                self.elementwise(&[*cond, *a, *b], |em, x| {
                    Ok(em.v(format!("llvm.select {}, {}, {} : i1, {t}", x[0], x[1], x[2])))
                })?
            }
            OpKind::Reshape(x) => {
                let (xty, ty) = (func.ty(*x).clone(), rty.clone().ok_or_else(|| err("reshape without result"))?);
                let regs = self.tile(*x)?;
                let same = |t: &Type| t.layout().and_then(|l| l.squeezed(t.shape()));
                if same(&xty).is_some() && same(&xty) == same(&ty) {
                    // Only unit dims change: the same registers hold the same elements.
                    if let (Some(a), Some(res)) = (self.aff.get(x).cloned(), op.result) {
                        self.aff.insert(res, a);
                    }
                    LV::Tile(regs)
                } else {
                    // Row-major linear indices are the same in both shapes (no padding here).
                    let buf = Buffer {
                        src_strides: row_major_strides(xty.shape()),
                        dst_strides: row_major_strides(ty.shape()),
                        elems: ty.shape().iter().product(),
                    };
                    LV::Tile(smem_exchange(&mut self.em, &xty, &regs, &buf, &ty)?)
                }
            }
            OpKind::Arange => {
                let ty = rty.clone().ok_or_else(|| err("arange without result"))?;
                let l = ty.layout().ok_or_else(|| err("arange without layout"))?.clone();
                let n = l.regs_per_thread(ty.shape());
                let base = self.em.thread_base(&l, 0);
                let mut out = vec![];
                let mut aff = vec![];
                for r in 0..n {
                    let c = l.reg_offset(ty.shape(), r)[0];
                    let o = self.em.cint(c, "i32");
                    out.push(self.em.v(format!("llvm.add {base}, {o} : i32")));
                    aff.push((base.clone(), c));
                }
                if let Some(r) = op.result {
                    self.aff.insert(r, aff);
                }
                LV::Tile(out)
            }
            OpKind::Rand { seed, offsets } => {
                let seed = self.scalar(*seed)?;
                // The round keys are the same for every element: compute them once.
                let mut keys = vec![(seed.clone(), self.em.cint(0, "i32"))];
                for round in 1..10 {
                    let (k0, k1) = keys[round - 1].clone();
                    let (w0, w1) = (self.em.cint(PHILOX_W[0], "i32"), self.em.cint(PHILOX_W[1], "i32"));
                    let n0 = self.em.v(format!("llvm.add {k0}, {w0} : i32"));
                    let n1 = self.em.v(format!("llvm.add {k1}, {w1} : i32"));
                    keys.push((n0, n1));
                }
                let regs = self.tile(*offsets)?;
                let aff = self.aff.get(offsets).cloned();
                LV::Tile(self.em.rand_tile(&regs, aff.as_deref(), &keys))
            }
            OpKind::Broadcast(x) => {
                let xty = func.ty(*x).clone();
                let ty = rty.clone().ok_or_else(|| err("broadcast without result"))?;
                let (Some(xl), Some(l)) = (xty.layout(), ty.layout()) else {
                    return Err(err("broadcast without layouts"));
                };
                let src = self.tile(*x)?;
                let n = l.regs_per_thread(ty.shape());
                let mut idx = Vec::with_capacity(n as usize);
                for r in 0..n {
                    let mut c = l.reg_coords(ty.shape(), r);
                    for (d, &e) in xty.shape().iter().enumerate() {
                        if e == 1 {
                            c[d] = 0;
                        }
                    }
                    let i = xl.reg_index(xty.shape(), &c) as usize;
                    if i >= src.len() {
                        return Err(err("broadcast register out of range"));
                    }
                    idx.push(i);
                }
                if let (Some(a), Some(res)) = (self.aff.get(x).cloned(), op.result) {
                    self.aff.insert(res, idx.iter().map(|i| a[*i].clone()).collect());
                }
                LV::Tile(idx.iter().map(|i| src[*i].clone()).collect())
            }
            OpKind::Reduce { kind, axis, value } => {
                let xty = func.ty(*value).clone();
                let ty = rty.clone().ok_or_else(|| err("reduce without result"))?;
                let src = self.tile(*value)?;
                LV::Tile(lower_reduce(&mut self.em, *kind, *axis as usize, &xty, &ty, &src)?)
            }
            OpKind::Load { tensor, index, padding, .. } => {
                let t = self.get(*tensor)?;
                let idx = index.iter().map(|i| self.scalar(*i)).collect::<Result<Vec<_>, _>>()?;
                let ty = rty.clone().ok_or_else(|| err("load without result"))?;
                LV::Tile(lower_access(&mut self.em, &t, &idx, &ty, Access::Load(*padding))?)
            }
            OpKind::Store { tensor, index, tile: tv } => {
                let t = self.get(*tensor)?;
                let idx = index.iter().map(|i| self.scalar(*i)).collect::<Result<Vec<_>, _>>()?;
                let ty = func.ty(*tv).clone();
                let regs = self.tile(*tv)?;
                lower_access(&mut self.em, &t, &idx, &ty, Access::Store(regs))?;
                return Ok(());
            }
            OpKind::For { lb, ub, step, iv, init, iters, body, yields, results } => {
                let (lb, ub, step) = (self.scalar(*lb)?, self.scalar(*ub)?, self.scalar(*step)?);
                let (hdr, body_b, exit) = (self.em.new_block(), self.em.new_block(), self.em.new_block());
                let (names, tys) = self.flatten_after(lb, init)?;
                self.branch(&hdr, &names, &tys);
                let ivn = self.em.fresh();
                self.vals.insert(*iv, LV::Scalar(ivn.clone()));
                let mut args = vec![(ivn.clone(), "i32")];
                args.extend(self.bind_args(iters, init)?);
                self.label(&hdr, &args);
                let c = self.em.v(format!("llvm.icmp \"slt\" {ivn}, {ub} : i32"));
                self.em.line(format!("llvm.cond_br {c}, {body_b}, {exit}"));
                self.label(&body_b, &[]);
                self.em.loop_depth += 1;
                self.ops(body)?;
                self.em.loop_depth -= 1;
                let next = self.em.v(format!("llvm.add {ivn}, {step} : i32"));
                let (names, tys) = self.flatten_after(next, yields)?;
                self.branch(&hdr, &names, &tys);
                self.label(&exit, &[]);
                // The header's arguments dominate the exit: they are the final values.
                for (r, it) in results.iter().zip(iters) {
                    let v = self.get(*it)?;
                    self.vals.insert(*r, v);
                }
                return Ok(());
            }
            OpKind::If { cond, then_ops, then_yields, else_ops, else_yields, results } => {
                let c = self.scalar(*cond)?;
                let (tb, eb, join) = (self.em.new_block(), self.em.new_block(), self.em.new_block());
                self.em.line(format!("llvm.cond_br {c}, {tb}, {eb}"));
                self.label(&tb, &[]);
                self.ops(then_ops)?;
                let (n, t) = self.flatten(then_yields)?;
                self.branch(&join, &n, &t);
                self.label(&eb, &[]);
                self.ops(else_ops)?;
                let (n, t) = self.flatten(else_yields)?;
                self.branch(&join, &n, &t);
                let args = self.bind_args(results, then_yields)?;
                self.label(&join, &args);
                return Ok(());
            }
            OpKind::ConvertLayout { value: x, scratch } => {
                let (xty, ty) = (func.ty(*x).clone(), rty.clone().ok_or_else(|| err("convert without result"))?);
                let regs = self.tile(*x)?;
                let st = scratch.strides(ty.shape());
                let buf = Buffer { src_strides: st.clone(), dst_strides: st, elems: scratch.size(ty.shape()) };
                LV::Tile(smem_exchange(&mut self.em, &xty, &regs, &buf, &ty)?)
            }
            OpKind::Permute { value, perm } => {
                let (xty, ty) = (func.ty(*value).clone(), rty.clone().ok_or_else(|| err("permute without result"))?);
                // A padded buffer in the result's shape; source dim perm[i] is result dim i.
                let scratch = Shared::for_exchange(ty.shape(), ty.dtype().bytes());
                let dst = scratch.strides(ty.shape());
                let mut src = vec![0; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    src[p as usize] = dst[i];
                }
                let buf = Buffer { src_strides: src, dst_strides: dst, elems: scratch.size(ty.shape()) };
                let regs = self.tile(*value)?;
                LV::Tile(smem_exchange(&mut self.em, &xty, &regs, &buf, &ty)?)
            }
            OpKind::Gather { tensor, index, padding } => {
                let t = self.get(*tensor)?;
                let d = rdtype.ok_or_else(|| err("gather without result"))?;
                let pad = pad_bits(*padding, d);
                self.elementwise(index, |em, idx| em.element_access(&t, idx, d, ElemAccess::Load(pad)))?
            }
            OpKind::Element { tensor, index } => {
                let t = self.get(*tensor)?;
                let d = rdtype.ok_or_else(|| err("element read without result"))?;
                // Out of bounds reads 0.
                self.elementwise(index, |em, idx| em.element_access(&t, idx, d, ElemAccess::Load(0)))?
            }
            OpKind::Scatter { tensor, index, tile: tv } => {
                let t = self.get(*tensor)?;
                let d = func.ty(*tv).dtype();
                let mut operands = index.clone();
                operands.push(*tv);
                let n = index.len();
                for x in self.registers(&operands)?.0 {
                    self.em.element_access(&t, &x[..n], d, ElemAccess::Store(x[n].clone()))?;
                }
                return Ok(());
            }
            other @ (OpKind::Mma { .. } | OpKind::Print { .. }) => {
                return Err(err(format!("{} is not lowered yet", other.describe())))
            }
        };
        if let Some(r) = op.result {
            self.vals.insert(r, lv);
        }
        Ok(())
    }
}

fn row_major_strides(shape: &[i64]) -> Vec<i64> {
    let mut st = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * shape[d + 1];
    }
    st
}

/// The shared-memory buffer of an exchange: the element strides the source writes with and
/// the destination reads with, and its size in elements.
struct Buffer {
    src_strides: Vec<i64>,
    dst_strides: Vec<i64>,
    elems: i64,
}

/// Moves a tile between layouts through shared memory: every thread writes its registers
/// at `Σ coord·src_strides` (a permutation when they are a permuted shape's strides), one
/// barrier, then reads the elements of `dst`'s layout at `Σ coord·dst_strides`. A slice
/// source writes its replicated elements more than once (the same values).
fn smem_exchange(
    em: &mut Em,
    src: &Type,
    regs: &[String],
    buf: &Buffer,
    dst: &Type,
) -> Result<Vec<String>, Diagnostic> {
    let ls = src.layout().ok_or_else(|| err("layout conversion of a tile without layout"))?.clone();
    let ld = dst.layout().ok_or_else(|| err("layout conversion to a tile without layout"))?.clone();
    let d = dst.dtype();
    let ety = llty(d);
    let bytes = i64::from(d.bytes().max(1));
    let region = (i64::from(em.smem) + 15) / 16 * 16;
    em.smem = u32::try_from(region + buf.elems * bytes).map_err(|_| err("shared memory overflow"))?;
    let base = em.smem_base();
    // Byte address of the elements of `l` over `shape` with `st`: a per-thread part, then a
    // constant per register.
    let addresses = |em: &mut Em, l: &Layout, shape: &[i64], st: &[i64]| -> Vec<String> {
        let mut lin = em.cint(region, "i32");
        for (dd, s) in st.iter().enumerate() {
            let tb = em.thread_base(l, dd);
            let sb = em.cint(s * bytes, "i32");
            let t = em.v(format!("llvm.mul {tb}, {sb} : i32"));
            lin = em.v(format!("llvm.add {lin}, {t} : i32"));
        }
        (0..l.regs_per_thread(shape))
            .map(|r| {
                let off: i64 = l.reg_offset(shape, r).iter().zip(st).map(|(o, s)| o * s).sum::<i64>() * bytes;
                let o = em.cint(off, "i32");
                let a = em.v(format!("llvm.add {lin}, {o} : i32"));
                em.v(format!("llvm.getelementptr {base}[{a}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8"))
            })
            .collect()
    };
    let src_addrs = addresses(em, &ls, src.shape(), &buf.src_strides);
    if src_addrs.len() != regs.len() {
        return Err(err("layout conversion: register count does not match the layout"));
    }
    for (a, v) in src_addrs.iter().zip(regs) {
        em.line(format!("llvm.store {v}, {a} {{alignment = {bytes} : i64}} : {ety}, !llvm.ptr<3>"));
    }
    em.line("nvvm.barrier0");
    let dst_addrs = addresses(em, &ld, dst.shape(), &buf.dst_strides);
    let out = dst_addrs
        .iter()
        .map(|a| em.v(format!("llvm.load {a} {{alignment = {bytes} : i64}} : !llvm.ptr<3> -> {ety}")))
        .collect();
    if em.loop_depth > 0 {
        // The next iteration writes the same scratch: wait until every thread has read.
        em.line("nvvm.barrier0");
    }
    Ok(out)
}

/// One element's access by a gather, scatter or element read.
enum ElemAccess {
    /// Load; out-of-bounds reads these bits.
    Load(u64),
    /// Store this value; out-of-bounds writes nothing.
    Store(String),
}

impl Em {
    /// Reads or writes the element at i32 indices `idx` of a tensor, predicated on every
    /// index being in `0..extent` (one unsigned compare each, so negatives are out).
    fn element_access(&mut self, t: &LV, idx: &[String], d: DType, access: ElemAccess) -> Result<String, Diagnostic> {
        let LV::Tensor { ptr, dims, strides, .. } = t else { return Err(err("element access of a non-tensor")) };
        if idx.len() != dims.len() {
            return Err(err("element access with the wrong number of indices"));
        }
        if d == DType::I1 {
            return Err(err("element access of i1 tensors is not lowered yet"));
        }
        let mut pred: Option<String> = None;
        let mut lin: Option<String> = None;
        for (k, i) in idx.iter().enumerate() {
            let c = self.v(format!("llvm.sext {i} : i32 to i64"));
            let ok = self.v(format!("llvm.icmp \"ult\" {c}, {} : i64", dims[k]));
            pred = Some(match pred {
                None => ok,
                Some(p) => self.v(format!("llvm.and {p}, {ok} : i1")),
            });
            let term = self.v(format!("llvm.mul {c}, {} : i64", strides[k]));
            lin = Some(match lin {
                None => term,
                Some(p) => self.v(format!("llvm.add {p}, {term} : i64")),
            });
        }
        let (Some(pred), Some(lin)) = (pred, lin) else { return Err(err("element access of a rank-0 tensor")) };
        let ety = llty(d);
        let addr = self.v(format!("llvm.getelementptr {ptr}[{lin}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, {ety}"));
        let bits = d.bits();
        let (reg, wty) = match bits {
            16 => ("h", "i16"),
            64 => ("l", "i64"),
            _ => ("r", "i32"),
        };
        Ok(match access {
            ElemAccess::Load(pad) => {
                let asm = format!("mov.b{bits} $0, 0x{pad:X}; @$2 ld.global.b{bits} $0, [$1];");
                let w = self.v(format!(
                    "llvm.inline_asm has_side_effects \"{asm}\", \"={reg},l,b\" {addr}, {pred} : (!llvm.ptr<1>, i1) -> {wty}"
                ));
                self.bitcast(&w, wty, ety)
            }
            ElemAccess::Store(v) => {
                let w = self.bitcast(&v, ety, wty);
                let asm = format!("@$2 st.global.b{bits} [$0], $1;");
                self.line(format!(
                    "llvm.inline_asm has_side_effects \"{asm}\", \"l,{reg},b\" {addr}, {w}, {pred} : (!llvm.ptr<1>, {wty}, i1) -> ()"
                ));
                String::new()
            }
        })
    }
}

enum Access {
    Load(Padding),
    Store(Vec<String>),
}

/// Loads or stores one tile: per-thread base coordinates, constant per-register offsets,
/// predicated vector accesses.
fn lower_access(em: &mut Em, t: &LV, idx: &[String], ty: &Type, access: Access) -> Result<Vec<String>, Diagnostic> {
    let LV::Tensor { ptr, dims, strides, aligned } = t else { return Err(err("load/store of a non-tensor")) };
    let shape = ty.shape().to_vec();
    let d = ty.dtype();
    let l = ty.layout().ok_or_else(|| err("load/store of a tile without layout"))?.clone();
    // A sliced tile (a row broadcast later) is read by every thread that holds it: the
    // duplicate reads hit the same cache lines; a duplicate store writes the same value.
    let rank = shape.len();
    let bytes = i64::from(d.bytes());
    if d == DType::I1 {
        return Err(err("load/store of i1 tiles is not lowered yet"));
    }
    let last = rank - 1;
    let b = l.blocked().clone();
    let contiguous = b.order.first() == Some(&last);
    let chunk = if *aligned && contiguous { b.size_per_thread[last].min(16 / bytes).max(1) } else { 1 };
    // Global coordinate of this thread's first element, per dim (i64).
    let mut g = vec![];
    for dd in 0..rank {
        let s = em.cint(shape[dd], "i32");
        let o = em.v(format!("llvm.mul {}, {s} : i32", idx[dd]));
        let base = em.thread_base(&l, dd);
        let c = em.v(format!("llvm.add {o}, {base} : i32"));
        g.push(em.v(format!("llvm.sext {c} : i32 to i64")));
    }
    let regs = l.regs_per_thread(&shape);
    let mut out = vec![String::new(); if matches!(access, Access::Load(_)) { regs as usize } else { 0 }];
    let ety = llty(d);
    let mut r = 0;
    while r < regs {
        let off = l.reg_offset(&shape, r);
        let mut inb: Option<String> = None;
        let mut lin: Option<String> = None;
        for dd in 0..rank {
            let o = em.cint(off[dd], "i64");
            let c = em.v(format!("llvm.add {}, {o} : i64", g[dd]));
            let ok = em.v(format!("llvm.icmp \"ult\" {c}, {} : i64", dims[dd]));
            inb = Some(match inb {
                None => ok,
                Some(p) => em.v(format!("llvm.and {p}, {ok} : i1")),
            });
            // With the 16-byte specialisation the last stride is 1 (checked at launch).
            let term = if dd == last && *aligned { c } else { em.v(format!("llvm.mul {c}, {} : i64", strides[dd])) };
            lin = Some(match lin {
                None => term,
                Some(p) => em.v(format!("llvm.add {p}, {term} : i64")),
            });
        }
        let (Some(pred), Some(lin)) = (inb, lin) else { return Err(err("rank-0 access")) };
        let addr = em.v(format!("llvm.getelementptr {ptr}[{lin}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, {ety}"));
        let nbytes = chunk * bytes;
        // Access words: 32-bit when the chunk allows, else one 16-bit (or 64-bit) element.
        let wbits = if nbytes >= 4 { (bytes * 8).max(32) } else { nbytes * 8 };
        let nwords = nbytes * 8 / wbits;
        let wty = format!("i{wbits}");
        let reg = match wbits {
            16 => "h",
            64 => "l",
            _ => "r",
        };
        let vsuf = if nwords > 1 { format!(".v{nwords}") } else { String::new() };
        let per_word = (wbits / 8 / bytes).max(1);
        match &access {
            Access::Load(p) => {
                let pb = pad_bits(*p, d);
                let mut pat: u64 = 0;
                for k in 0..per_word {
                    pat |= pb << (k * bytes * 8);
                }
                let outs: Vec<String> = (0..nwords).map(|i| format!("${i}")).collect();
                let movs: String = (0..nwords).map(|i| format!("mov.b{wbits} ${i}, 0x{pat:X}; ")).collect();
                let asm = format!(
                    "{movs}@${} ld.global{vsuf}.b{wbits} {}, [${}];",
                    nwords + 1,
                    if nwords > 1 { format!("{{{}}}", outs.join(", ")) } else { outs[0].clone() },
                    nwords
                );
                let cons = format!("{}l,b", (0..nwords).map(|_| format!("={reg},")).collect::<String>());
                let words: Vec<String> = if nwords > 1 {
                    let sty = format!("!llvm.struct<({})>", vec![wty.as_str(); nwords as usize].join(", "));
                    let s = em.v(format!("llvm.inline_asm has_side_effects \"{asm}\", \"{cons}\" {addr}, {pred} : (!llvm.ptr<1>, i1) -> {sty}"));
                    (0..nwords).map(|i| em.v(format!("llvm.extractvalue {s}[{i}] : {sty}"))).collect()
                } else {
                    vec![em.v(format!("llvm.inline_asm has_side_effects \"{asm}\", \"{cons}\" {addr}, {pred} : (!llvm.ptr<1>, i1) -> {wty}"))]
                };
                let mut k = 0;
                for w in words {
                    if per_word == 1 {
                        out[(r + k) as usize] = em.bitcast(&w, &wty, ety);
                        k += 1;
                    } else {
                        let vty = format!("vector<{per_word}x{ety}>");
                        let v = em.bitcast(&w, &wty, &vty);
                        for e in 0..per_word {
                            let ci = em.cint(e, "i32");
                            out[(r + k) as usize] = em.v(format!("llvm.extractelement {v}[{ci} : i32] : {vty}"));
                            k += 1;
                        }
                    }
                }
            }
            Access::Store(vals) => {
                let mut words = vec![];
                for w in 0..nwords {
                    let first = (r + w * per_word) as usize;
                    if per_word == 1 {
                        words.push(em.bitcast(&vals[first], ety, &wty));
                    } else {
                        let vty = format!("vector<{per_word}x{ety}>");
                        let mut v = em.v(format!("llvm.mlir.undef : {vty}"));
                        for e in 0..per_word {
                            let ci = em.cint(e, "i32");
                            v = em
                                .v(format!("llvm.insertelement {}, {v}[{ci} : i32] : {vty}", vals[first + e as usize]));
                        }
                        words.push(em.bitcast(&v, &vty, &wty));
                    }
                }
                let ins: Vec<String> = (1..=nwords).map(|i| format!("${i}")).collect();
                let asm = format!(
                    "@${} st.global{vsuf}.b{wbits} [$0], {};",
                    nwords + 1,
                    if nwords > 1 { format!("{{{}}}", ins.join(", ")) } else { ins[0].clone() }
                );
                let cons = format!("l,{}b", (0..nwords).map(|_| format!("{reg},")).collect::<String>());
                let tys = vec![wty.as_str(); nwords as usize].join(", ");
                em.line(format!(
                    "llvm.inline_asm has_side_effects \"{asm}\", \"{cons}\" {addr}, {}, {pred} : (!llvm.ptr<1>, {tys}, i1) -> ()",
                    words.join(", ")
                ));
            }
        }
        r += chunk;
    }
    Ok(out)
}

/// Reduces a tile along `axis`: in-thread tree, butterfly shuffles, shared memory across warps.
fn lower_reduce(
    em: &mut Em,
    kind: ReduceKind,
    axis: usize,
    xty: &Type,
    ty: &Type,
    src: &[String],
) -> Result<Vec<String>, Diagnostic> {
    let xl = xty.layout().ok_or_else(|| err("reduce of a tile without layout"))?.clone();
    let Layout::Blocked(b) = &xl else { return Err(err("reduction of a sliced tile is not lowered yet")) };
    let l = ty.layout().ok_or_else(|| err("reduce result without layout"))?.clone();
    let (xs, s) = (xty.shape().to_vec(), ty.shape().to_vec());
    let d = ty.dtype();
    let op = combine_op(kind)?;
    let counts = xl.reg_counts(&xs);
    let n = l.regs_per_thread(&s);
    // 1. In-thread: a balanced tree over the registers along `axis`.
    let mut vals = vec![];
    for sr in 0..n {
        let c = l.reg_coords(&s, sr);
        let mut items: Vec<String> = (0..counts[axis])
            .map(|k| {
                let mut cc = c.clone();
                cc[axis] = k;
                src[xl.reg_index(&xs, &cc) as usize].clone()
            })
            .collect();
        while items.len() > 1 {
            let mut next = vec![];
            for pair in items.chunks(2) {
                next.push(if pair.len() == 2 { em.binop(op, &pair[0], &pair[1], d) } else { pair[0].clone() });
            }
            items = next;
        }
        vals.push(items.pop().ok_or_else(|| err("empty reduction"))?);
    }
    // 2. Across lanes: xor-butterfly over the lane bits of `axis`.
    let mut lane_stride = 1i64;
    for &o in &b.order {
        if o == axis {
            break;
        }
        lane_stride *= b.threads_per_warp[o];
    }
    let mut off = 1;
    while off < b.threads_per_warp[axis] {
        for v in vals.iter_mut() {
            let other = em.shfl_bfly(v, d, off * lane_stride);
            *v = em.binop(op, v, &other, d);
        }
        off *= 2;
    }
    // 3. Across warps: each warp's partials go to shared memory, then every thread combines
    //    the partials of its rows in warp order (deterministic).
    let w = b.warps_per_cta[axis];
    if w > 1 {
        let bytes = i64::from(d.bytes());
        let rows: i64 = s.iter().product();
        let region = (i64::from(em.smem) + 15) / 16 * 16;
        em.smem = u32::try_from(region + rows * w * bytes).map_err(|_| err("shared memory overflow"))?;
        let base = em.smem_base();
        // This thread's coordinate along `axis` among warps, and whether it is lane 0 there.
        let mut warp_shift = 0u32;
        let mut lane_shift = 0u32;
        for &o in &b.order {
            if o == axis {
                break;
            }
            warp_shift += b.warps_per_cta[o].trailing_zeros();
            lane_shift += b.threads_per_warp[o].trailing_zeros();
        }
        let warp = em.warp.clone();
        let lane = em.lane.clone();
        let warp_a = em.coord_bits(&warp, warp_shift, w);
        let lane_a = em.coord_bits(&lane, lane_shift, b.threads_per_warp[axis]);
        let zero = em.cint(0, "i32");
        let writer = em.v(format!("llvm.icmp \"eq\" {lane_a}, {zero} : i32"));
        // Linear row index of each result register (row-major over the result shape).
        let mut row_idx = vec![];
        for sr in 0..n {
            let off = l.reg_offset(&s, sr);
            let mut lin: Option<String> = None;
            let mut stride = 1i64;
            for dd in (0..s.len()).rev() {
                if dd != axis && s[dd] > 1 {
                    let tb = em.thread_base(&l, dd);
                    let o = em.cint(off[dd], "i32");
                    let c = em.v(format!("llvm.add {tb}, {o} : i32"));
                    let st = em.cint(stride, "i32");
                    let term = em.v(format!("llvm.mul {c}, {st} : i32"));
                    lin = Some(match lin {
                        None => term,
                        Some(p) => em.v(format!("llvm.add {p}, {term} : i32")),
                    });
                }
                stride *= s[dd];
            }
            row_idx.push(lin.unwrap_or_else(|| em.cint(0, "i32")));
        }
        let ety = llty(d);
        let wc = em.cint(w, "i32");
        let region_c = em.cint(region, "i32");
        let slot = |em: &mut Em, row: &str, wi: &str| -> String {
            let rw = em.v(format!("llvm.mul {row}, {wc} : i32"));
            let i = em.v(format!("llvm.add {rw}, {wi} : i32"));
            let bsz = em.cint(bytes, "i32");
            let bo = em.v(format!("llvm.mul {i}, {bsz} : i32"));
            let o = em.v(format!("llvm.add {bo}, {region_c} : i32"));
            em.v(format!("llvm.getelementptr {base}[{o}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8"))
        };
        let addrs: Vec<String> = row_idx.iter().map(|ri| slot(em, ri, &warp_a)).collect();
        let (then_b, join_b) = (em.new_block(), em.new_block());
        em.line(format!("llvm.cond_br {writer}, {then_b}, {join_b}"));
        em.body.push_str(&format!("  {then_b}:\n"));
        for (a, v) in addrs.iter().zip(&vals) {
            em.line(format!("llvm.store {v}, {a} {{alignment = {bytes} : i64}} : {ety}, !llvm.ptr<3>"));
        }
        em.line(format!("llvm.br {join_b}"));
        em.body.push_str(&format!("  {join_b}:\n"));
        em.line("nvvm.barrier0");
        let mut out = vec![];
        for ri in &row_idx {
            let mut acc: Option<String> = None;
            for wi in 0..w {
                let wv = em.cint(wi, "i32");
                let a = slot(em, ri, &wv);
                let x = em.v(format!("llvm.load {a} {{alignment = {bytes} : i64}} : !llvm.ptr<3> -> {ety}"));
                acc = Some(match acc {
                    None => x,
                    Some(p) => em.binop(op, &p, &x, d),
                });
            }
            out.push(acc.ok_or_else(|| err("empty cross-warp reduction"))?);
        }
        if em.loop_depth > 0 {
            // The next iteration writes the same scratch: wait until every thread has read.
            em.line("nvvm.barrier0");
        }
        return Ok(out);
    }
    Ok(vals)
}
