//! Greedy `argmax` over a vocabulary (kernels/argmax.tile), and the language's conformance
//! kernels (kernels/lang/): integer and bit operations, the math functions, masks and bool
//! tensors — each checked on the GPU against plain Rust on ragged shapes with the edge values
//! (the most negative i32, shifts past the width, ±inf, NaN, division by 0 and by -1).

use crate::inputs::{numel, poisoned, pow2_clamped, randn, tensor, values};
use crate::{storage_tolerance, Arg, Case, Class, Spec};
use rand::rngs::StdRng;
use rand::Rng;
use std::collections::BTreeMap;
use tilec_core::host::HostTensor;
use tilec_core::DType;
use tilec_frontend::ConstArg;

fn t_const(c: &Case) -> BTreeMap<String, ConstArg> {
    BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype))])
}

fn no_peer(_: &Case) -> Option<String> {
    None
}

fn no_bench(_: bool) -> Vec<Case> {
    vec![]
}

/// The first NaN's index, else the first maximum's (NumPy's `argmax`).
pub fn argmax_row(row: &[f64]) -> usize {
    if let Some(i) = row.iter().position(|x| x.is_nan()) {
        return i;
    }
    let mut best = 0;
    for (i, x) in row.iter().enumerate() {
        if *x > row[best] {
            best = i;
        }
    }
    best
}

/// Greedy next tokens: the argmax of each row of a [B, V] tensor of logits.
pub const ARGMAX: Spec = Spec {
    name: "argmax",
    file: "argmax.tile",
    kernel: "argmax",
    class: Class::Membound,
    peer_kernel: "argmax",
    interp_cases: || {
        vec![
            Case::new(DType::F32, &[4, 1000]).with("BLOCK_N", 256),
            Case::new(DType::F16, &[3, 33]).with("BLOCK_N", 16),
            Case::new(DType::BF16, &[2, 100]),
        ]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 1]),
            Case::new(DType::F32, &[7, 1000]).with("BLOCK_N", 256),
            Case::new(DType::BF16, &[5, 33]).with("BLOCK_N", 32),
            Case::new(DType::F32, &[3, 70001]),
            Case::new(DType::F16, &[16, 152_064]),
        ]
    },
    bench_cases: |_| vec![Case::new(DType::F16, &[16, 152_064]), Case::new(DType::F32, &[64, 152_064])],
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_N".into(), ConstArg::Int(pow2_clamped(c.dims[1], 16, 4096)));
        m
    },
    inputs: |c, rng| {
        let (b, v) = (c.dims[0] as usize, c.dims[1] as usize);
        // Logits on a grid of quarters, so that rows hold ties; row 1 holds two NaNs, row 2
        // is all -inf (the answer is 0), row 3 has its maximum at the last column.
        let mut x: Vec<f64> = randn(rng, b * v, 3.0).into_iter().map(|z| (z * 4.0).round() / 4.0).collect();
        if b > 1 && v > 2 {
            x[v + v / 2] = f64::NAN;
            x[v + v - 1] = f64::NAN;
        }
        if b > 2 {
            x[2 * v..3 * v].fill(f64::NEG_INFINITY);
        }
        if b > 3 {
            x[4 * v - 1] = 100.0;
        }
        vec![tensor(c.dtype, &c.dims, &x), poisoned(DType::I32, &[c.dims[0], 1])]
    },
    outputs: &[1],
    exact: &[1],
    reference: |c, a| {
        let v = c.dims[1] as usize;
        vec![values(a, 0).chunks(v.max(1)).map(|r| argmax_row(r) as f64).collect()]
    },
    tolerance: |_| 0.0,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes()) + c.dims[0] as f64 * 4.0,
    flops: None,
    case_for: |dims, dtype| match dims {
        [b, v] if *b >= 1 && *v >= 1 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("argmax takes BxV, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// The reference rows of kernels/lang/bits.tile for one element (i32 wrapping semantics).
fn bits_rows(x: i32, y: i32, f: f64) -> [i32; 10] {
    let s = (y & 0x3F) as u32;
    let floordiv = |a: i32, b: i32| match b {
        0 => 0,
        -1 => a.wrapping_neg(),
        _ => a.div_euclid(b) - i32::from(b < 0 && a.rem_euclid(b) != 0),
    };
    let modulo = |a: i32, b: i32| match b {
        0 | -1 => 0,
        _ => a.wrapping_sub(floordiv(a, b).wrapping_mul(b)),
    };
    let d = y.wrapping_abs().max(1);
    [
        if s >= 32 { 0 } else { x.wrapping_shl(s) },
        x >> s.min(31),
        (x & y) ^ (!x | 7),
        floordiv(x, y),
        modulo(x, y),
        floordiv(x.wrapping_add(d - 1), d),
        x.clamp(-1000, 1000).wrapping_add(x.min(y)).wrapping_sub(x.max(y)),
        x.wrapping_abs() ^ (x >> 31),
        f as f32 as i32,
        10,
    ]
}

/// Integer and bit operations (kernels/lang/bits.tile), exact.
pub const BITS: Spec = Spec {
    name: "lang_bits",
    file: "lang/bits.tile",
    kernel: "bits",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::I32, &[300]), Case::new(DType::I32, &[17]).with("BLOCK", 16)],
    gpu_cases: || vec![Case::new(DType::I32, &[1]), Case::new(DType::I32, &[1000]), Case::new(DType::I32, &[100_003])],
    bench_cases: no_bench,
    consts: |_| BTreeMap::new(),
    inputs: |c, rng| {
        let n = c.dims[0] as usize;
        let edge_a = [i32::MIN, i32::MAX, 0, -1, 1, -7, 7, 1 << 30];
        let edge_b = [0, -1, 1, 31, 32, 63, 64, -64, i32::MIN + 1, 100];
        let edge_f = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 3e9, -3e9, -2.5, 2.5, -0.5, 0.99, -2_147_483_648.0];
        let pick = |i: usize, edge: &[f64], rng: &mut StdRng, lo: f64, hi: f64| {
            if i.is_multiple_of(5) {
                edge[(i / 5) % edge.len()]
            } else {
                rng.gen_range(lo..hi).round()
            }
        };
        let ea: Vec<f64> = edge_a.iter().map(|&v| f64::from(v)).collect();
        let eb: Vec<f64> = edge_b.iter().map(|&v| f64::from(v)).collect();
        let a: Vec<f64> = (0..n).map(|i| pick(i, &ea, rng, -100_000.0, 100_000.0)).collect();
        let b: Vec<f64> = (0..n).map(|i| pick(i, &eb, rng, -40.0, 40.0)).collect();
        let f: Vec<f64> = (0..n)
            .map(|i| if i.is_multiple_of(3) { edge_f[(i / 3) % edge_f.len()] } else { rng.gen_range(-1e4..1e4) })
            .collect();
        vec![
            tensor(DType::I32, &c.dims, &a),
            tensor(DType::I32, &c.dims, &b),
            tensor(DType::F32, &c.dims, &f),
            poisoned(DType::I32, &[10, c.dims[0]]),
        ]
    },
    outputs: &[3],
    exact: &[3],
    reference: |c, a| {
        let n = c.dims[0] as usize;
        let (x, y, f) = (values(a, 0), values(a, 1), values(a, 2));
        let mut out = vec![0.0; 10 * n];
        for i in 0..n {
            for (k, v) in bits_rows(x[i] as i32, y[i] as i32, f[i]).iter().enumerate() {
                out[k * n + i] = f64::from(*v);
            }
        }
        vec![out]
    },
    tolerance: |_| 0.0,
    bytes: |c| c.dims[0] as f64 * 52.0,
    flops: None,
    case_for: |dims, _| match dims {
        [n] if *n >= 1 => Ok(Case::new(DType::I32, dims)),
        _ => Err(format!("lang_bits takes N, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Python's float `%` (the remainder with the divisor's sign).
fn py_mod(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

/// `pow` with the encoding of kernels/lang/math.tile (NaN → -777, ±inf → 1e4).
fn encoded_pow(a: f64, b: f64, d: DType) -> f64 {
    let p = tilec_interp::round_to(a.powf(b), d);
    if p.is_nan() {
        -777.0
    } else if p.is_infinite() {
        1e4
    } else {
        p
    }
}

/// The math functions (kernels/lang/math.tile): `exact` bit for bit, `approx` within the
/// functions' bounds (the storage tolerance).
pub const MATH: Spec = Spec {
    name: "lang_math",
    file: "lang/math.tile",
    kernel: "math",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F32, &[300]), Case::new(DType::F16, &[40]).with("BLOCK", 32)],
    gpu_cases: || {
        vec![
            Case::new(DType::F32, &[1]),
            Case::new(DType::F32, &[4099]),
            Case::new(DType::F16, &[1000]),
            Case::new(DType::BF16, &[777]),
            Case::new(DType::F32, &[200_000]),
        ]
    },
    bench_cases: no_bench,
    consts: t_const,
    inputs: |c, rng| {
        let n = numel(&c.dims);
        let edge_x = [0.0, -0.0, 0.5, -0.5, 2.5, -2.5, 1.0, -1.0, 3.0, -3.0, 0.1, 9.75];
        let edge_y = [2.0, 3.0, -2.0, -3.0, 0.5, 1.0, -1.0, 0.25, 0.75, 2.5];
        let x: Vec<f64> = (0..n)
            .map(|i| {
                if i.is_multiple_of(4) {
                    edge_x[(i / 4) % edge_x.len()]
                } else {
                    // Magnitudes from 0.1 to 10: pow stays finite in f16.
                    let m: f64 = rng.gen_range(0.1..10.0);
                    if rng.gen_bool(0.5) {
                        -m
                    } else {
                        m
                    }
                }
            })
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| {
                if i.is_multiple_of(3) {
                    edge_y[(i / 3) % edge_y.len()]
                } else {
                    // |y| from 0.25 (quotients stay below 40) to 3, and some in [0, 1) whose
                    // floor is 0 (the division by zero of row 5).
                    let m: f64 = rng.gen_range(0.25..3.0);
                    if rng.gen_bool(0.5) {
                        -m
                    } else {
                        m
                    }
                }
            })
            .collect();
        vec![
            tensor(c.dtype, &c.dims, &x),
            tensor(c.dtype, &c.dims, &y),
            poisoned(c.dtype, &[10, c.dims[0]]),
            poisoned(c.dtype, &[3, c.dims[0]]),
        ]
    },
    outputs: &[2, 3],
    exact: &[2],
    reference: |c, a| {
        let d = c.dtype;
        let n = c.dims[0] as usize;
        let (x, y) = (values(a, 0), values(a, 1));
        let r = |v: f64| tilec_interp::round_to(v, d);
        let mut exact = vec![0.0; 10 * n];
        let mut approx = vec![0.0; 3 * n];
        for i in 0..n {
            let (p, q) = (x[i], y[i]);
            let quotient = r(p / q);
            let by_floor = r(p / q.floor());
            let code = if by_floor.is_nan() {
                -777.0
            } else if by_floor.is_infinite() {
                if by_floor > 0.0 {
                    1e4
                } else {
                    -1e4
                }
            } else {
                0.0
            };
            let rows = [
                p.floor(),
                p.ceil(),
                p.clamp(-1.5, 2.25),
                quotient.floor(),
                r(py_mod(p, q)),
                code,
                r(py_mod(p.abs(), 0.75)),
                // Halves to even (the inputs hold ±0.5 and ±2.5 exactly), as torch.round.
                p.round_ties_even(),
                p.trunc(),
                r(p * 0.5).round_ties_even(),
            ];
            for (k, v) in rows.iter().enumerate() {
                exact[k * n + i] = r(*v);
            }
            approx[i] = r(libm::erf(p));
            approx[n + i] = encoded_pow(p, q, d);
            approx[2 * n + i] = r(p.mul_add(q, -p));
        }
        vec![exact, approx]
    },
    tolerance: |c| if c.dtype == DType::F32 { 1e-6 } else { storage_tolerance(c) },
    bytes: |c| c.dims[0] as f64 * 15.0 * f64::from(c.dtype.bytes()),
    flops: None,
    case_for: |dims, dtype| match dims {
        [n] if *n >= 1 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("lang_math takes N, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Row lengths of the masked kernel's inputs: 0, N and a spread between.
fn lengths(m: usize, n: i64, rng: &mut StdRng) -> Vec<f64> {
    (0..m)
        .map(|i| match i % 4 {
            0 => 0.0,
            1 => n as f64,
            _ => rng.gen_range(0..=n) as f64,
        })
        .collect()
}

/// Masked loads and stores, bool tensors (kernels/lang/masked.tile).
pub const MASKED: Spec = Spec {
    name: "lang_masked",
    file: "lang/masked.tile",
    kernel: "masked",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![Case::new(DType::F16, &[5, 300]), Case::new(DType::F32, &[3, 40]).with("BLOCK_N", 16).with("ROWS", 1)]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 1]),
            Case::new(DType::F32, &[7, 1000]),
            Case::new(DType::BF16, &[33, 130]).with("ROWS", 4),
            Case::new(DType::F16, &[1001, 4097]).with("BLOCK_N", 1024),
        ]
    },
    bench_cases: no_bench,
    consts: t_const,
    inputs: |c, rng| {
        let (m, n) = (c.dims[0], c.dims[1]);
        let x = randn(rng, numel(&c.dims), 1.0);
        let len = lengths(m as usize, n, rng);
        let given: Vec<f64> = (0..numel(&c.dims)).map(|_| f64::from(u8::from(rng.gen_bool(0.5)))).collect();
        vec![
            tensor(c.dtype, &c.dims, &x),
            tensor(DType::I32, &[m], &len),
            tensor(DType::I1, &c.dims, &given),
            // What the masked store must leave alone.
            tensor(c.dtype, &c.dims, &vec![-3.0; numel(&c.dims)]),
            poisoned(DType::F32, &[m, 1]),
            poisoned(DType::I1, &c.dims),
            poisoned(DType::I32, &c.dims),
        ]
    },
    outputs: &[3, 4, 5, 6],
    exact: &[3, 5, 6],
    reference: |c, a| {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        let (x, len, given) = (values(a, 0), values(a, 1), values(a, 2));
        let (mut y, mut sums, mut keep, mut flags) =
            (vec![-3.0; m * n], vec![0.0; m], vec![0.0; m * n], vec![0.0; m * n]);
        for r in 0..m {
            for col in 0..n {
                let i = r * n + col;
                let k = (col as f64) < len[r];
                if k {
                    y[i] = x[i];
                    sums[r] += x[i];
                }
                keep[i] = f64::from(u8::from(k));
                let g = given[i] != 0.0;
                flags[i] =
                    f64::from(u8::from(g)) + 10.0 * f64::from(u8::from(k)) + 100.0 * f64::from(u8::from(g && !k));
            }
        }
        vec![y, sums, keep, flags]
    },
    tolerance: |c| if c.dtype == DType::F32 { 1e-6 } else { 1e-3 },
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * (2.0 * f64::from(c.dtype.bytes()) + 6.0),
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 1 && *n >= 1 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("lang_masked takes MxN, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Atomics over many blocks (kernels/lang/atomics.tile): the inputs are multiples of 1/8, so
/// that every f32 sum is exact in any order and every output must match bit for bit.
pub const ATOMICS: Spec = Spec {
    name: "lang_atomics",
    file: "lang/atomics.tile",
    kernel: "atomics",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![Case::new(DType::F32, &[100, 300]), Case::new(DType::F32, &[5, 7]).with("ROWS", 2).with("BLOCK_N", 4)]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F32, &[1, 1]),
            Case::new(DType::F32, &[100, 300]),
            Case::new(DType::F32, &[4097, 1000]),
            Case::new(DType::F32, &[65_536, 64]).with("ROWS", 4),
        ]
    },
    bench_cases: no_bench,
    consts: |_| BTreeMap::new(),
    inputs: |c, rng| {
        let n = c.dims[1];
        let mut x: Vec<f64> = randn(rng, numel(&c.dims), 4.0).into_iter().map(|v| (v * 8.0).round() / 8.0).collect();
        if let Some(v) = x.get_mut(1) {
            *v = -0.0;
        }
        vec![
            tensor(DType::F32, &c.dims, &x),
            tensor(DType::F32, &[1, n], &vec![0.0; n as usize]),
            tensor(DType::F32, &[1, n], &vec![f64::NEG_INFINITY; n as usize]),
            tensor(DType::F32, &[1, n], &vec![f64::INFINITY; n as usize]),
            tensor(DType::I32, &[1, n], &vec![0.0; n as usize]),
            tensor(DType::I32, &[1, n], &vec![-1.0; n as usize]),
            tensor(DType::I32, &[1, n], &vec![0.0; n as usize]),
            tensor(DType::I32, &[1, 1], &[0.0]),
        ]
    },
    outputs: &[1, 2, 3, 4, 5, 6, 7],
    exact: &[1, 2, 3, 4, 5, 6, 7],
    reference: |c, a| {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        let rows = c.konst("ROWS", 16).max(1) as usize;
        let x = values(a, 0);
        let x = &x;
        let col = |j: usize| (0..m).map(move |i| x[i * n + j]);
        let sum: Vec<f64> = (0..n).map(|j| col(j).sum()).collect();
        let max: Vec<f64> = (0..n).map(|j| col(j).fold(f64::NEG_INFINITY, f64::max)).collect();
        let min: Vec<f64> = (0..n).map(|j| col(j).fold(f64::INFINITY, f64::min)).collect();
        let pos: Vec<f64> = (0..n).map(|j| col(j).filter(|v| *v > 0.0).count() as f64).collect();
        vec![sum, max, min, pos, vec![0.0; n], vec![1.0; n], vec![m.div_ceil(rows) as f64]]
    },
    tolerance: |_| 0.0,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * 4.0,
    flops: None,
    case_for: |dims, _| match dims {
        [m, n] if *m >= 1 && *n >= 1 => Ok(Case::new(DType::F32, dims)),
        _ => Err(format!("lang_atomics takes MxN, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Histogram of integer keys (kernels/histogram.tile): element-wise atomics at data-dependent
/// addresses. Dims `[N, BINS]`; a tenth of the keys fall outside `[0, BINS)` (skipped), the
/// counts are exact, the weighted sums are integers in f32 (exact in any order of addition).
pub const HISTOGRAM: Spec = Spec {
    name: "histogram",
    file: "histogram.tile",
    kernel: "histogram",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::I32, &[1000, 64]), Case::new(DType::I32, &[17, 5]).with("BLOCK", 8)],
    gpu_cases: || {
        vec![
            Case::new(DType::I32, &[1, 1]),
            Case::new(DType::I32, &[1000, 64]),
            Case::new(DType::I32, &[100_003, 7]),
            Case::new(DType::I32, &[1 << 20, 256]),
            Case::new(DType::I32, &[4097, 4096]).with("BLOCK", 256),
        ]
    },
    bench_cases: no_bench,
    consts: |_| BTreeMap::new(),
    inputs: |c, rng| {
        let (n, bins) = (c.dims[0], c.dims[1]);
        let keys: Vec<f64> = (0..n)
            .map(|_| {
                if rng.gen_bool(0.1) {
                    [-1, -7, bins, bins + 3][rng.gen_range(0..4)] as f64
                } else {
                    rng.gen_range(0..bins) as f64
                }
            })
            .collect();
        let weights: Vec<f64> = (0..n).map(|_| rng.gen_range(-3..=3) as f64).collect();
        vec![
            tensor(DType::I32, &[n], &keys),
            tensor(DType::F32, &[n], &weights),
            tensor(DType::I32, &[bins], &vec![0.0; bins as usize]),
            tensor(DType::F32, &[bins], &vec![0.0; bins as usize]),
        ]
    },
    outputs: &[2, 3],
    exact: &[2, 3],
    reference: |c, a| {
        let bins = c.dims[1] as usize;
        let (keys, weights) = (values(a, 0), values(a, 1));
        let (mut counts, mut sums) = (vec![0.0; bins], vec![0.0; bins]);
        for (k, w) in keys.iter().zip(&weights) {
            if *k >= 0.0 && (*k as usize) < bins {
                counts[*k as usize] += 1.0;
                sums[*k as usize] += w;
            }
        }
        vec![counts, sums]
    },
    tolerance: |_| 0.0,
    bytes: |c| c.dims[0] as f64 * 8.0,
    flops: None,
    case_for: |dims, _| match dims {
        [n, b] if *n >= 1 && *b >= 1 => Ok(Case::new(DType::I32, dims)),
        _ => Err(format!("histogram takes NxBINS, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// FP4 packing (kernels/lang/fp4.tile): dims `[N]` pairs; `pack_fp4` and `unpack_fp4` bit for
/// bit against `tilec_core::dtype`'s conversions, on inputs that include every midpoint
/// between fp4 values (the ties) and the edges of the codes' ranges, ±0, ±6, values past 6,
/// ±inf, NaN and a subnormal.
pub const FP4: Spec = Spec {
    name: "lang_fp4",
    file: "lang/fp4.tile",
    kernel: "fp4_pack",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F32, &[300]), Case::new(DType::F32, &[7]).with("BLOCK", 4)],
    gpu_cases: || vec![Case::new(DType::F32, &[1]), Case::new(DType::F32, &[300]), Case::new(DType::F32, &[100_003])],
    bench_cases: no_bench,
    consts: |_| BTreeMap::new(),
    inputs: |c, rng| {
        let n = c.dims[0];
        const EDGES: [f64; 31] = [
            0.0,
            -0.0,
            0.25,
            -0.25,
            0.75,
            1.25,
            -1.25,
            1.75,
            2.5,
            -2.5,
            3.5,
            5.0,
            -5.0,
            6.0,
            -6.0,
            6.5,
            100.0,
            -1e30,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            0.2500001,
            // Where one range of the codes meets the next (halves below 2, units to 4).
            1.7499999,
            2.0,
            -3.4999998,
            3.5000002,
            4.0,
            4.9999995,
            5.0000005,
            -f64::NAN,
            1e-40,
        ];
        let x: Vec<f64> = (0..2 * n as usize)
            .map(|i| if i < EDGES.len() { EDGES[i] } else { 4.0 * crate::inputs::normal(rng) })
            .collect();
        vec![tensor(DType::F32, &[n, 2], &x), poisoned(DType::F4E2M1X2, &[n]), poisoned(DType::F32, &[n, 2])]
    },
    outputs: &[1, 2],
    exact: &[1, 2],
    reference: |_, a| {
        use tilec_core::dtype::{from_fp4, pack_fp4, to_fp4};
        // The kernel reads f32: the inputs as f32 (0.2500001 stays past the tie).
        let x: Vec<f64> = values(a, 0).iter().map(|v| f64::from(*v as f32)).collect();
        let q = x.chunks(2).map(|p| f64::from(pack_fp4(p[0], p[1]))).collect();
        let y = x.iter().map(|v| from_fp4(to_fp4(*v))).collect();
        vec![q, y]
    },
    tolerance: |_| 0.0,
    bytes: |c| 9.0 * c.dims[0] as f64,
    flops: None,
    case_for: |dims, dtype| match dims {
        [n] if *n >= 1 && dtype == DType::F32 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("lang_fp4 takes N (pairs) in f32, not {dims:?} {dtype}")),
    },
    peer_config: no_peer,
};

/// Tile slicing (kernels/lang/slices.tile): dims `[M, H]` (x is M × 2H), constant `ROWS`;
/// every output is a copy (or an exact doubling) of input elements.
pub const SLICES: Spec = Spec {
    name: "lang_slices",
    file: "lang/slices.tile",
    kernel: "slices",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F32, &[10, 32]), Case::new(DType::F32, &[3, 8]).with("ROWS", 2)],
    gpu_cases: || {
        vec![
            Case::new(DType::F32, &[1, 32]),
            Case::new(DType::F32, &[10, 32]),
            Case::new(DType::F32, &[1001, 64]).with("ROWS", 8),
            Case::new(DType::F32, &[4096, 128]).with("ROWS", 2),
        ]
    },
    bench_cases: no_bench,
    consts: |c| BTreeMap::from([("H".to_string(), ConstArg::Int(c.dims[1]))]),
    inputs: |c, rng| {
        let (m, h) = (c.dims[0], c.dims[1]);
        let rows = c.konst("ROWS", 4);
        let m2 = (m + rows - 1) / rows * (rows / 2);
        vec![
            tensor(DType::F32, &[m, 2 * h], &randn(rng, (m * 2 * h) as usize, 1.0)),
            poisoned(DType::F32, &[m, h]),
            poisoned(DType::F32, &[m, h]),
            poisoned(DType::F32, &[m2, h]),
            poisoned(DType::F32, &[m, 2 * h]),
        ]
    },
    outputs: &[1, 2, 3, 4],
    exact: &[1, 2, 3, 4],
    reference: |c, a| {
        let (m, h) = (c.dims[0] as usize, c.dims[1] as usize);
        let rows = c.konst("ROWS", 4) as usize;
        let x = values(a, 0);
        let at = |r: usize, col: usize| if r < m { x[r * 2 * h + col] } else { 0.0 };
        let left = (0..m * h).map(|i| at(i / h, i % h)).collect();
        let right = (0..m * h).map(|i| at(i / h, h + i % h) * 2.0).collect();
        let m2 = m.div_ceil(rows) * (rows / 2);
        let middle = (0..m2 * h)
            .map(|i| {
                let (r, col) = (i / h, i % h);
                let (block, k) = (r / (rows / 2), r % (rows / 2));
                at(block * rows + rows / 2 + k, h / 2 + col)
            })
            .collect();
        let swapped = (0..m * 2 * h).map(|i| at(i / (2 * h), (i % (2 * h) + h) % (2 * h))).collect();
        vec![left, right, middle, swapped]
    },
    tolerance: |_| 0.0,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * 4.0 * 7.0,
    flops: None,
    case_for: |dims, _| match dims {
        [m, h] if *m >= 1 && *h >= 2 && h.count_ones() == 1 => Ok(Case::new(DType::F32, dims)),
        _ => Err(format!("lang_slices takes MxH (H a power of two), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Element-origin loads and stores (kernels/lang/offsets.tile): dims `[M, N]`, constant `S`
/// (the shift, passed as the scalar `s`; negative reads ahead); exact copies.
pub const OFFSETS: Spec = Spec {
    name: "lang_offsets",
    file: "lang/offsets.tile",
    kernel: "offsets",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F32, &[3, 70, 5]), Case::new(DType::F32, &[2, 40, -7])],
    gpu_cases: || {
        vec![
            Case::new(DType::F32, &[1, 1, 0]),
            Case::new(DType::F32, &[3, 70, 5]),
            Case::new(DType::F32, &[257, 1000, -33]),
            Case::new(DType::F32, &[64, 4097, 100]),
        ]
    },
    bench_cases: no_bench,
    consts: |_| BTreeMap::new(),
    inputs: |c, rng| {
        let (m, n) = (c.dims[0], c.dims[1]);
        vec![
            tensor(DType::F32, &[m, n], &randn(rng, (m * n) as usize, 1.0)),
            tensor(DType::F32, &[m, n], &vec![0.0; (m * n) as usize]),
            Arg::I32(c.dims[2] as i32),
        ]
    },
    outputs: &[1],
    exact: &[1],
    reference: |c, a| {
        let (m, n) = (c.dims[0], c.dims[1]);
        let s = c.dims[2];
        let x = values(a, 0);
        let y = (0..m * n)
            .map(|i| {
                let (r, col) = (i / n, i % n);
                let from = col - s;
                match (col % 3 == 1, (0..n).contains(&from)) {
                    (true, _) => 0.0,
                    (false, true) => x[(r * n + from) as usize] * 2.0,
                    (false, false) => -2.0,
                }
            })
            .collect();
        vec![y]
    },
    tolerance: |_| 0.0,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * 8.0,
    flops: None,
    case_for: |dims, _| match dims {
        [m, n, _] if *m >= 1 && *n >= 1 => Ok(Case::new(DType::F32, dims)),
        _ => Err(format!("lang_offsets takes MxNxS (S the shift), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Scans (kernels/lang/scan.tile): integer outputs exact, float ones within the f32 bound of a
/// tree-ordered sum or product.
pub const SCAN: Spec = Spec {
    name: "lang_scan",
    file: "lang/scan.tile",
    kernel: "scan",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![Case::new(DType::F32, &[20, 200]), Case::new(DType::F32, &[5, 7]).with("BM", 2).with("BN", 8)]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F32, &[1, 1]),
            Case::new(DType::F32, &[20, 200]),
            Case::new(DType::F32, &[1000, 256]).with("BM", 16),
            Case::new(DType::F32, &[33, 1000]).with("BM", 2).with("BN", 1024),
            Case::new(DType::F32, &[4099, 60]).with("BM", 64).with("BN", 64),
        ]
    },
    bench_cases: no_bench,
    consts: |_| BTreeMap::new(),
    inputs: |c, rng| {
        let a: Vec<f64> = (0..numel(&c.dims)).map(|_| f64::from(rng.gen_range(-1000..1000))).collect();
        vec![
            tensor(DType::I32, &c.dims, &a),
            tensor(DType::F32, &c.dims, &randn(rng, numel(&c.dims), 1.0)),
            poisoned(DType::I32, &c.dims),
            poisoned(DType::F32, &c.dims),
            poisoned(DType::F32, &c.dims),
            poisoned(DType::F32, &c.dims),
            poisoned(DType::I32, &c.dims),
        ]
    },
    outputs: &[2, 3, 4, 5, 6],
    exact: &[2, 5, 6],
    reference: |c, a| {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        let bm = c.konst("BM", 8).max(1) as usize;
        let (t, f) = (values(a, 0), values(a, 1));
        let f32r = |v: f64| f64::from(v as f32);
        let (mut isum, mut fsum, mut prod, mut runmax, mut colmin) =
            (vec![0.0; m * n], vec![0.0; m * n], vec![0.0; m * n], vec![0.0; m * n], vec![0.0; m * n]);
        for i in 0..m {
            let (mut s, mut fs, mut p, mut mx) = (0i32, 0.0, 1.0, f64::NEG_INFINITY);
            for j in 0..n {
                let k = i * n + j;
                s = s.wrapping_add(t[k] as i32);
                fs += f[k];
                p *= f32r(1.0 + f32r(f[k] * f64::from(0.01f32)));
                mx = mx.max(f[k]);
                (isum[k], fsum[k], prod[k], runmax[k]) = (f64::from(s), f32r(fs), f32r(p), mx);
                colmin[k] = if i % bm == 0 { t[k] } else { colmin[k - n].min(t[k]) };
            }
        }
        vec![isum, fsum, prod, runmax, colmin]
    },
    tolerance: |_| 1e-5,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * 28.0,
    flops: None,
    case_for: |dims, _| match dims {
        [m, n] if *m >= 1 && *n >= 1 => Ok(Case::new(DType::F32, dims).with("BN", pow2_clamped(*n, 1, 4096))),
        _ => Err(format!("lang_scan takes MxN, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// The first NaN's index, else the first minimum's (NumPy's `argmin`).
pub fn argmin_row(row: &[f64]) -> usize {
    let neg: Vec<f64> = row.iter().map(|x| -x).collect();
    argmax_row(&neg)
}

/// The arg-reductions along a row (kernels/lang/argreduce.tile): f32 argmax/argmin and i32
/// argmax/argmin of each row, exact. Values on a coarse grid (many ties) with NaN and ±inf in
/// the floats, the i32 extremes in the integers; a row of only -inf / i32::MIN and one of
/// only +inf / i32::MAX, whose answers tie the padding past N (index 0 wins).
pub const ARGREDUCE: Spec = Spec {
    name: "lang_argreduce",
    file: "lang/argreduce.tile",
    kernel: "argreduce",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![
            Case::new(DType::F32, &[5, 33]).with("BN", 64),
            Case::new(DType::F32, &[3, 200]).with("BM", 1),
            Case::new(DType::F32, &[9, 16]).with("BM", 8).with("BN", 16),
        ]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F32, &[1, 1]).with("BN", 16),
            Case::new(DType::F32, &[5, 33]).with("BN", 64),
            Case::new(DType::F32, &[7, 1000]).with("BM", 1).with("BN", 1024),
            Case::new(DType::F32, &[130, 256]).with("BM", 8),
            Case::new(DType::F32, &[3, 4093]).with("BM", 1).with("BN", 4096),
        ]
    },
    bench_cases: no_bench,
    consts: |_| BTreeMap::new(),
    inputs: |c, rng| {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        let mut x: Vec<f64> = (0..m * n)
            .map(|_| match rng.gen_range(0..40) {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 => f64::NEG_INFINITY,
                _ => f64::from(rng.gen_range(-8..8)) * 0.25,
            })
            .collect();
        let mut a: Vec<f64> = (0..m * n)
            .map(|_| match rng.gen_range(0..40) {
                0 => f64::from(i32::MIN),
                1 => f64::from(i32::MAX),
                _ => f64::from(rng.gen_range(-5..5)),
            })
            .collect();
        // Row 1 ties the padding everywhere for the maxima, row 2 for the minima.
        if m > 2 {
            x[n..2 * n].fill(f64::NEG_INFINITY);
            a[n..2 * n].fill(f64::from(i32::MIN));
            x[2 * n..3 * n].fill(f64::INFINITY);
            a[2 * n..3 * n].fill(f64::from(i32::MAX));
        }
        vec![tensor(DType::F32, &c.dims, &x), tensor(DType::I32, &c.dims, &a), poisoned(DType::I32, &[c.dims[0], 4])]
    },
    outputs: &[2],
    exact: &[2],
    reference: |c, args| {
        let n = c.dims[1] as usize;
        let (x, a) = (values(args, 0), values(args, 1));
        let rows = x.chunks(n.max(1)).zip(a.chunks(n.max(1)));
        let out = rows.flat_map(|(x, a)| [argmax_row(x), argmin_row(x), argmax_row(a), argmin_row(a)]);
        vec![out.map(|i| i as f64).collect()]
    },
    tolerance: |_| 0.0,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * 8.0 + c.dims[0] as f64 * 16.0,
    flops: None,
    case_for: |dims, _| match dims {
        [m, n] if *m >= 1 && *n >= 1 => Ok(Case::new(DType::F32, dims).with("BN", pow2_clamped(*n, 16, 4096))),
        _ => Err(format!("lang_argreduce takes MxN, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// The storage dtypes and f64 (kernels/lang/dtypes.tile): every conversion bit for bit,
/// fp8 at its ties, subnormals and saturation.
pub const DTYPES: Spec = Spec {
    name: "lang_dtypes",
    file: "lang/dtypes.tile",
    kernel: "dtypes",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F32, &[300]), Case::new(DType::F32, &[17]).with("B", 16)],
    gpu_cases: || vec![Case::new(DType::F32, &[1]), Case::new(DType::F32, &[1000]), Case::new(DType::F32, &[100_003])],
    bench_cases: no_bench,
    consts: |_| BTreeMap::new(),
    inputs: |c, rng| {
        let n = numel(&c.dims);
        let edge_f = [
            1.0625,
            1.1875,
            -1.0625,
            1.125,
            1.375,
            1e6,
            -1e6,
            448.0,
            464.0,
            470.0,
            57344.0,
            61440.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            2f64.powi(-9),
            2f64.powi(-10),
            3.0 * 2f64.powi(-10),
            -0.0,
            2f64.powi(-16),
            2f64.powi(-17),
            -5.0,
            300.0,
            255.9,
            0.5,
        ];
        let f: Vec<f64> = (0..n)
            .map(|i| if i % 3 == 0 { edge_f[(i / 3) % edge_f.len()] } else { rng.gen_range(-600.0..600.0) })
            .collect();
        let a8: Vec<f64> =
            (0..n).map(|i| if i % 7 == 0 { -128.0 } else { f64::from(rng.gen_range(-128..128)) }).collect();
        let b8: Vec<f64> = (0..n).map(|i| if i % 7 == 1 { 255.0 } else { f64::from(rng.gen_range(0..256)) }).collect();
        let edge_w = [0.0, 4_294_967_295.0, 2_147_483_648.0, 16_777_217.0];
        let w: Vec<f64> = (0..n)
            .map(|i| if i % 5 == 0 { edge_w[(i / 5) % 4] } else { rng.gen_range(0.0..4.0e9f64).floor() })
            .collect();
        let d = randn(rng, n, 3.0);
        vec![
            tensor(DType::I8, &c.dims, &a8),
            tensor(DType::U8, &c.dims, &b8),
            tensor(DType::U32, &c.dims, &w),
            tensor(DType::F32, &c.dims, &f),
            tensor(DType::F64, &c.dims, &d),
            poisoned(DType::F8E4M3, &c.dims),
            poisoned(DType::F8E5M2, &c.dims),
            poisoned(DType::F32, &[4, c.dims[0]]),
            poisoned(DType::I32, &[4, c.dims[0]]),
            poisoned(DType::F64, &[2, c.dims[0]]),
        ]
    },
    outputs: &[5, 6, 7, 8, 9],
    exact: &[5, 6, 7, 8],
    reference: |c, a| {
        let n = c.dims[0] as usize;
        let b = c.konst("B", 256).max(1) as usize;
        let (s, u, w, f, d) = (values(a, 0), values(a, 1), values(a, 2), values(a, 3), values(a, 4));
        let q4: Vec<f64> = f.iter().map(|v| DType::F8E4M3.round(*v)).collect();
        let q5: Vec<f64> = f.iter().map(|v| DType::F8E5M2.round(*v)).collect();
        let mut back = vec![0.0; 4 * n];
        let mut ints = vec![0.0; 4 * n];
        let mut wide = vec![0.0; 2 * n];
        for i in 0..n {
            back[i] = q4[i];
            back[n + i] = q5[i];
            back[2 * n + i] = u[i] + s[i];
            back[3 * n + i] = f64::from(w[i] as f32);
            ints[i] = u[i] + s[i];
            ints[n + i] = f64::from((w[i] as u32) >> 4);
            ints[2 * n + i] = f64::from(f[i] as u8);
            ints[3 * n + i] = f64::from((s[i] as i8).wrapping_mul(3));
            wide[i] = d[i] * d[i] + 1.0;
            let blk = i / b * b;
            wide[n + i] = d[blk..(blk + b).min(n)].iter().sum();
        }
        vec![q4, q5, back, ints, wide]
    },
    tolerance: |_| 1e-12,
    bytes: |c| c.dims[0] as f64 * 70.0,
    flops: None,
    case_for: |dims, _| match dims {
        [n] if *n >= 1 => Ok(Case::new(DType::F32, dims)),
        _ => Err(format!("lang_dtypes takes N, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// The edge integers of kernels/lang/ints.tile (wrapped to the case's dtype by the tensor):
/// 0, ±1, the extremes of each width, ±2^53±1 (where an f64 rounds), small values.
const INT_EDGES: [i64; 16] = [
    0,
    1,
    -1,
    i64::MIN,
    i64::MAX,
    i64::MIN + 1,
    i64::MAX - 1,
    (1 << 53) + 1,
    (1 << 53) - 1,
    -(1 << 53) - 1,
    i32::MIN as i64,
    i32::MAX as i64,
    -128,
    127,
    -7,
    1000,
];

/// The float → integer cast edges: ±inf, NaN, ±2^63, past each width, halves.
const FLOAT_EDGES: [f64; 22] = [
    0.0,
    -0.0,
    0.99,
    -1.5,
    127.9,
    128.0,
    -129.0,
    255.5,
    256.0,
    -1.0,
    2_147_483_648.0,
    -2_147_483_649.0,
    3e9,
    4_294_967_296.0,
    9_007_199_254_740_994.0,
    9_223_372_036_854_775_808.0,
    -9_223_372_036_854_775_808.0,
    1e19,
    -1e19,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
];

/// `x` wrapped to a `bits`-bit signed integer.
fn wrap_bits(x: i128, bits: u32) -> i64 {
    let m = 1i128 << bits;
    let r = x.rem_euclid(m);
    (if r >= m / 2 { r - m } else { r }) as i64
}

/// The integer `x` rounded once to a float of `p` significant bits (nearest, ties to even),
/// in integer arithmetic: the model of the int → float casts.
fn int_to_float_bits(x: i64, p: u32) -> f64 {
    let a = x.unsigned_abs();
    let len = 64 - a.leading_zeros();
    let v = if len <= p {
        a as f64
    } else {
        let drop = len - p;
        let (q, r, half) = (a >> drop, a & ((1u64 << drop) - 1), 1u64 << (drop - 1));
        let q = if r > half || (r == half && q & 1 == 1) { q + 1 } else { q };
        q as f64 * 2f64.powi(drop as i32)
    };
    if x < 0 {
        -v
    } else {
        v
    }
}

/// The 26 integer rows of kernels/lang/ints.tile for one element, on `bits`-bit operands,
/// computed in i128 (independently of the interpreter's i64 arithmetic).
fn ints_rows(x: i64, y: i64, g: f64, bits: u32) -> [i64; 26] {
    let w = |v: i128| wrap_bits(v, bits);
    let (xi, yi) = (i128::from(x), i128::from(y));
    let floordiv =
        |a: i128, b: i128| if b == 0 { 0 } else { a.div_euclid(b) - i128::from(b < 0 && a.rem_euclid(b) != 0) };
    let amount = (y as u64) & if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let to_t = match bits {
        8 => i64::from(g as i8),
        32 => i64::from(g as i32),
        _ => g as i64,
    };
    [
        x,
        w(xi + yi),
        w(xi - yi),
        w(xi * yi),
        w(floordiv(xi, yi)),
        w(if yi == 0 { 0 } else { xi - yi * floordiv(xi, yi) }),
        if amount >= u64::from(bits) { 0 } else { w(xi << amount) },
        x >> amount.min(u64::from(bits) - 1),
        x & y,
        x | y,
        x ^ y,
        x.min(y),
        x.max(y),
        w(-xi),
        w(xi.abs()),
        !x,
        i64::from(x == y),
        i64::from(x < y),
        i64::from(x as i8),
        i64::from(x as i32),
        i64::from(x as u8),
        i64::from(x as u32),
        to_t,
        i64::from(g as u8),
        i64::from(g as u32),
        g as i64,
    ]
}

/// Every integer operation and cast on i8, i32 and i64 over edge values, exact
/// (kernels/lang/ints.tile): the interpreter holds integers exactly, the GPU computes them.
pub const INTS: Spec = Spec {
    name: "lang_ints",
    file: "lang/ints.tile",
    kernel: "ints",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![
            Case::new(DType::I64, &[400]),
            Case::new(DType::I32, &[400]),
            Case::new(DType::I8, &[300]).with("BLOCK", 64),
            Case::new(DType::I64, &[17]).with("BLOCK", 16),
        ]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::I64, &[1]),
            Case::new(DType::I64, &[400]),
            Case::new(DType::I32, &[400]),
            Case::new(DType::I8, &[400]),
            Case::new(DType::I64, &[100_003]),
        ]
    },
    bench_cases: no_bench,
    consts: t_const,
    inputs: |c, _| {
        let n = c.dims[0] as usize;
        let bits = c.dtype.bits();
        // Shift amounts: 0, -1, the width and one past it, besides the edges.
        let shifts = [i64::from(bits) - 1, i64::from(bits), i64::from(bits) + 1, 3];
        let eb: Vec<i64> = INT_EDGES.iter().chain(&shifts).copied().collect();
        let a: Vec<i64> = (0..n).map(|i| INT_EDGES[i % INT_EDGES.len()]).collect();
        let b: Vec<i64> = (0..n).map(|i| eb[(i / INT_EDGES.len()) % eb.len()]).collect();
        let g: Vec<f64> = (0..n).map(|i| FLOAT_EDGES[(i * 7) % FLOAT_EDGES.len()]).collect();
        vec![
            Arg::Tensor(HostTensor::from_i64(c.dtype, &c.dims, &a)),
            Arg::Tensor(HostTensor::from_i64(c.dtype, &c.dims, &b)),
            tensor(DType::F64, &c.dims, &g),
            poisoned(DType::I32, &[26, 2, c.dims[0]]),
            poisoned(DType::F64, &[4, c.dims[0]]),
        ]
    },
    outputs: &[3, 4],
    exact: &[3, 4],
    reference: |c, args| {
        let n = c.dims[0] as usize;
        let ints = |i: usize| match args.get(i) {
            Some(Arg::Tensor(t)) => t.to_i64().unwrap_or_default(),
            _ => vec![],
        };
        let (x, y, g) = (ints(0), ints(1), values(args, 2));
        let bits = c.dtype.bits();
        let mut out = vec![0.0; 26 * 2 * n];
        let mut fl = vec![0.0; 4 * n];
        for i in 0..n.min(x.len()).min(y.len()).min(g.len()) {
            for (k, v) in ints_rows(x[i], y[i], g[i], bits).iter().enumerate() {
                out[(2 * k) * n + i] = f64::from((v >> 32) as i32);
                out[(2 * k + 1) * n + i] = f64::from(*v as i32);
            }
            let h = int_to_float_bits(x[i], 11);
            fl[i] = int_to_float_bits(x[i], 24);
            fl[n + i] = int_to_float_bits(x[i], 53);
            fl[2 * n + i] = if h.abs() >= 65520.0 { 1e6f64.copysign(h) } else { h };
            fl[3 * n + i] = int_to_float_bits(x[i], 8);
        }
        vec![out, fl]
    },
    tolerance: |_| 0.0,
    bytes: |c| c.dims[0] as f64 * (2.0 * f64::from(c.dtype.bytes()) + 8.0 + 26.0 * 8.0 + 32.0),
    flops: None,
    case_for: |dims, d| match (dims, d) {
        ([n], DType::I8 | DType::I32 | DType::I64) if *n >= 1 => Ok(Case::new(d, dims)),
        _ => Err(format!("lang_ints takes N and i8, i32 or i64, not {dims:?} {d}")),
    },
    peer_config: no_peer,
};

/// The order `sort`/`argsort`/`topk` promise: `a` before `b` in the descending (or ascending)
/// order of values, NaN the largest, ties by the lower position. Returns the positions of
/// `row` in that order (the stable sort of the row).
pub fn sorted_positions(row: &[f64], descending: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..row.len()).collect();
    order.sort_by(|&p, &q| {
        let (x, y) = (row[p], row[q]);
        let o = match (x.is_nan(), y.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            _ => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
        };
        if descending {
            o.reverse()
        } else {
            o
        }
    });
    order
}

/// `row` padded with `p` to `width` elements: the block's tile of a row shorter than it.
fn padded(row: &[f64], width: usize, p: f64) -> Vec<f64> {
    row.iter().copied().chain(std::iter::repeat_n(p, width - row.len())).collect()
}

/// The constants both kernels of kernels/lang/sort.tile take: `BLOCK_N` (64) and `K` (4).
fn sort_consts(c: &Case) -> BTreeMap<String, ConstArg> {
    BTreeMap::from([
        ("BLOCK_N".to_string(), ConstArg::Int(c.konst("BLOCK_N", 64))),
        ("K".to_string(), ConstArg::Int(c.konst("K", 4))),
    ])
}

/// Sorting within a block (kernels/lang/sort.tile): dims `[M, N]`, constants `BLOCK_N` (N
/// up to it, the rest padded), `K` (top-k), `ROWS`. Values from a few levels (many ties) with
/// NaN, +inf, -inf and -0.0 sprinkled in; every output exact (a NaN written as 4096, a
/// zero as 1/0: -0.0's sign shown).
pub const SORT: Spec = Spec {
    name: "lang_sort",
    file: "lang/sort.tile",
    kernel: "sort_rows",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![
            Case::new(DType::F32, &[5, 64]),
            Case::new(DType::F16, &[3, 13]).with("BLOCK_N", 16).with("K", 2),
            Case::new(DType::BF16, &[4, 1]).with("BLOCK_N", 1).with("K", 1),
        ]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F32, &[1, 1]).with("BLOCK_N", 1).with("K", 1),
            Case::new(DType::F32, &[7, 50]),
            Case::new(DType::F16, &[1000, 256]).with("BLOCK_N", 256).with("K", 8).with("ROWS", 1),
            Case::new(DType::BF16, &[33, 1000]).with("BLOCK_N", 1024).with("K", 2).with("ROWS", 1),
            Case::new(DType::F32, &[4096, 32]).with("BLOCK_N", 32).with("K", 32).with("ROWS", 8),
        ]
    },
    bench_cases: no_bench,
    consts: |c| {
        let mut m = sort_consts(c);
        m.extend(t_const(c));
        m.insert("ROWS".into(), ConstArg::Int(c.konst("ROWS", 2)));
        m
    },
    inputs: |c, rng| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.konst("K", 4));
        let x: Vec<f64> = (0..m * n)
            .map(|_| match rng.gen_range(0..100) {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 => f64::NEG_INFINITY,
                // A tie with 0.0 (`==`), kept in its place by position, its sign kept.
                3 => -0.0,
                _ => f64::from(rng.gen_range(-8i32..8)) / 2.0,
            })
            .collect();
        vec![
            tensor(c.dtype, &[m, n], &x),
            poisoned(c.dtype, &[m, n]),
            poisoned(DType::I32, &[m, n]),
            poisoned(c.dtype, &[m, k]),
            poisoned(DType::I32, &[m, k]),
        ]
    },
    outputs: &[1, 2, 3, 4],
    exact: &[1, 2, 3, 4],
    reference: |c, a| {
        let (n, bn, k) = (c.dims[1] as usize, c.konst("BLOCK_N", 64) as usize, c.konst("K", 4) as usize);
        let x = values(a, 0);
        // As the kernel writes them: NaN as 4096, a zero as 1/0 (its sign as an infinity's).
        let shown = |v: f64| {
            if v.is_nan() {
                4096.0
            } else if v == 0.0 {
                1.0 / v
            } else {
                v
            }
        };
        let (mut desc, mut asc, mut top_v, mut top_i) = (vec![], vec![], vec![], vec![]);
        for row in x.chunks(n) {
            // The block's tile: the row padded to BLOCK_N (-inf, or +inf for the ascending sort).
            let (lo, hi) = (padded(row, bn, f64::NEG_INFINITY), padded(row, bn, f64::INFINITY));
            let d = sorted_positions(&lo, true);
            desc.extend(d.iter().take(n).map(|&p| shown(lo[p])));
            asc.extend(sorted_positions(&hi, false).iter().take(n).map(|&p| p as f64));
            top_v.extend(d.iter().take(k).map(|&p| shown(lo[p])));
            top_i.extend(d.iter().take(k).map(|&p| p as f64));
        }
        vec![desc, asc, top_v, top_i]
    },
    tolerance: |_| 0.0,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * 12.0,
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 1 && *n >= 1 => {
            let bn = pow2_clamped(*n, 1, 1024);
            Ok(Case::new(dtype, dims).with("BLOCK_N", bn).with("K", bn.min(4)))
        }
        _ => Err(format!("lang_sort takes MxN (N up to 1024), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Sorting i32 keys within a block (kernels/lang/sort.tile `sort_int_rows`): dims `[M, N]`,
/// constants `BLOCK_N` (N up to it, the rest padded), `K`. Values from a few levels (ties)
/// and i32's extremes, which tie with the padding; every output exact.
pub const SORT_INT: Spec = Spec {
    name: "lang_sort_int",
    file: "lang/sort.tile",
    kernel: "sort_int_rows",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![Case::new(DType::I32, &[3, 50]), Case::new(DType::I32, &[2, 5]).with("BLOCK_N", 8).with("K", 2)]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::I32, &[1, 1]).with("BLOCK_N", 1).with("K", 1),
            Case::new(DType::I32, &[7, 50]),
            Case::new(DType::I32, &[300, 1000]).with("BLOCK_N", 1024).with("K", 8),
        ]
    },
    bench_cases: no_bench,
    consts: sort_consts,
    inputs: |c, rng| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.konst("K", 4));
        let x: Vec<f64> = (0..m * n)
            .map(|_| match rng.gen_range(0..50) {
                0 => f64::from(i32::MIN),
                1 => f64::from(i32::MAX),
                _ => f64::from(rng.gen_range(-6i32..6) * 1000),
            })
            .collect();
        vec![
            tensor(DType::I32, &[m, n], &x),
            poisoned(DType::I32, &[m, n]),
            poisoned(DType::I32, &[m, n]),
            poisoned(DType::I32, &[m, n]),
            poisoned(DType::I32, &[m, k]),
        ]
    },
    outputs: &[1, 2, 3, 4],
    exact: &[1, 2, 3, 4],
    reference: |c, a| {
        let (n, bn, k) = (c.dims[1] as usize, c.konst("BLOCK_N", 64) as usize, c.konst("K", 4) as usize);
        let x = values(a, 0);
        let (mut asc_v, mut asc_i, mut desc_i, mut top_v) = (vec![], vec![], vec![], vec![]);
        for row in x.chunks(n) {
            let (hi, lo) = (padded(row, bn, f64::from(i32::MAX)), padded(row, bn, f64::from(i32::MIN)));
            let a = sorted_positions(&hi, false);
            asc_v.extend(a.iter().take(n).map(|&p| hi[p]));
            asc_i.extend(a.iter().take(n).map(|&p| p as f64));
            let d = sorted_positions(&lo, true);
            desc_i.extend(d.iter().take(n).map(|&p| p as f64));
            top_v.extend(d.iter().take(k).map(|&p| lo[p]));
        }
        vec![asc_v, asc_i, desc_i, top_v]
    },
    tolerance: |_| 0.0,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * 16.0,
    flops: None,
    case_for: |dims, dtype| match (dims, dtype) {
        ([m, n], DType::I32) if *m >= 1 && *n >= 1 => {
            let bn = pow2_clamped(*n, 1, 1024);
            Ok(Case::new(dtype, dims).with("BLOCK_N", bn).with("K", bn.min(4)))
        }
        _ => Err(format!("lang_sort_int takes MxN (N up to 1024) and i32, not {dims:?} {dtype}")),
    },
    peer_config: no_peer,
};

/// The K largest of `row` (stable: ties by the lower position; NaN the largest): positions.
fn top_positions(row: &[f64], k: usize) -> Vec<usize> {
    sorted_positions(row, true).into_iter().take(k).collect()
}

/// Random row values with ties (f16 levels) and a few infinities.
fn vocab_values(rng: &mut StdRng, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| match rng.gen_range(0..1000) {
            0 => f64::INFINITY,
            1 => f64::NEG_INFINITY,
            _ => f64::from(rng.gen_range(-2000i32..2000)) / 64.0,
        })
        .collect()
}

/// The first pass of the two-pass top-k (kernels/topk.tile `topk_partial`): dims `[M, N]`,
/// constants `BLOCK_N`, `K`; per chunk of BLOCK_N columns its K largest (f32) and their
/// columns. Exact.
pub const TOPK_PARTIAL: Spec = Spec {
    name: "topk_partial",
    file: "topk.tile",
    kernel: "topk_partial",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F16, &[3, 300]).with("BLOCK_N", 64).with("K", 4)],
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 8]),
            Case::new(DType::F16, &[16, 152064]),
            Case::new(DType::BF16, &[3, 100003]).with("K", 2),
            Case::new(DType::F32, &[5, 5000]).with("BLOCK_N", 512).with("K", 16),
        ]
    },
    bench_cases: |_| vec![Case::new(DType::F16, &[16, 152064])],
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_N".into(), ConstArg::Int(c.konst("BLOCK_N", 2048)));
        m.insert("K".into(), ConstArg::Int(c.konst("K", 8)));
        m
    },
    inputs: |c, rng| {
        let (m, n) = (c.dims[0], c.dims[1]);
        let (bn, k) = (c.konst("BLOCK_N", 2048), c.konst("K", 8));
        let parts = (n + bn - 1) / bn * k;
        vec![
            tensor(c.dtype, &[m, n], &vocab_values(rng, (m * n) as usize)),
            poisoned(DType::F32, &[m, parts]),
            poisoned(DType::I32, &[m, parts]),
        ]
    },
    outputs: &[1, 2],
    exact: &[1, 2],
    reference: |c, a| {
        let (n, bn, k) = (c.dims[1] as usize, c.konst("BLOCK_N", 2048) as usize, c.konst("K", 8) as usize);
        let x = values(a, 0);
        let (mut pv, mut pi) = (vec![], vec![]);
        for row in x.chunks(n) {
            for (ci, chunk) in row.chunks(bn).enumerate() {
                let padded = padded(chunk, bn, f64::NEG_INFINITY);
                for p in top_positions(&padded, k) {
                    pv.push(padded[p]);
                    pi.push((ci * bn + p) as f64);
                }
            }
        }
        vec![pv, pi]
    },
    tolerance: |_| 0.0,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes()),
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 1 && *n >= 8 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("topk_partial takes MxN (N at least K = 8), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// The second pass (kernels/topk.tile `topk_merge`): dims `[M, C]` (C partials a row, made
/// here as the first pass would: chunks of K in descending order, columns increasing chunk
/// by chunk), constants `BLOCK_C`, `K`; the K largest with their columns. Exact.
pub const TOPK_MERGE: Spec = Spec {
    name: "topk_merge",
    file: "topk.tile",
    kernel: "topk_merge",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F16, &[3, 40]).with("BLOCK_C", 64).with("K", 4)],
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 8]),
            Case::new(DType::F16, &[16, 600]),
            Case::new(DType::BF16, &[7, 1000]).with("K", 8),
            Case::new(DType::F32, &[5, 160]).with("BLOCK_C", 256).with("K", 16),
        ]
    },
    bench_cases: no_bench,
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_C".into(), ConstArg::Int(c.konst("BLOCK_C", 1024)));
        m.insert("K".into(), ConstArg::Int(c.konst("K", 8)));
        m
    },
    inputs: |c, rng| {
        let (m, cc, k) = (c.dims[0], c.dims[1], c.konst("K", 8));
        let mut pv = vec![];
        let mut pi = vec![];
        for _ in 0..m {
            let mut col = 0i64;
            for chunk in 0..(cc + k - 1) / k {
                let len = k.min(cc - chunk * k) as usize;
                let mut v = vocab_values(rng, len);
                v.sort_by(|a, b| b.partial_cmp(a).unwrap_or(std::cmp::Ordering::Equal));
                for x in v {
                    pv.push(x);
                    col += rng.gen_range(1..50);
                    pi.push(col as f64);
                }
            }
        }
        vec![
            tensor(DType::F32, &[m, cc], &pv),
            tensor(DType::I32, &[m, cc], &pi),
            poisoned(c.dtype, &[m, k]),
            poisoned(DType::I32, &[m, k]),
        ]
    },
    outputs: &[2, 3],
    exact: &[2, 3],
    reference: |c, a| {
        let (cc, k) = (c.dims[1] as usize, c.konst("K", 8) as usize);
        let (pv, pi) = (values(a, 0), values(a, 1));
        let (mut v, mut i) = (vec![], vec![]);
        for (rv, ri) in pv.chunks(cc).zip(pi.chunks(cc)) {
            for p in top_positions(rv, k) {
                v.push(tilec_interp::round_to(rv[p], c.dtype));
                i.push(ri[p]);
            }
        }
        vec![v, i]
    },
    tolerance: |_| 0.0,
    bytes: |c| (c.dims[0] * c.dims[1]) as f64 * 8.0,
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, c] if *m >= 1 && *c >= 8 && *c <= 1024 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("topk_merge takes MxC (8 <= C <= 1024), not {dims:?}")),
    },
    peer_config: no_peer,
};
