//! The small kernels a decoder's layers need around the big ones (kernels/bias_add.tile,
//! kernels/residual_add.tile, kernels/kv_append.tile, the split-K epilogues, and the fused
//! glue of a decode step): exact against plain Rust where the kernel only moves or adds.

use crate::inputs::{normal, normal_tensor, numel, poisoned, pow2_clamped, randn, tensor, values};
use crate::{storage_tolerance, Arg, Case, Class, Spec};
use rand::Rng;
use std::collections::BTreeMap;
use tilec_core::DType;
use tilec_frontend::ConstArg;
use tilec_interp::reference;

use super::membound::RMS_EPS;

fn no_peer(_: &Case) -> Option<String> {
    None
}

fn no_bench(_: bool) -> Vec<Case> {
    vec![]
}

fn row_consts(c: &Case) -> BTreeMap<String, ConstArg> {
    BTreeMap::from([
        ("T".to_string(), ConstArg::DType(c.dtype)),
        ("BLOCK_N".to_string(), ConstArg::Int(pow2_clamped(c.dims[1], 16, 4096))),
    ])
}

fn mn(dims: &[i64], dtype: DType, name: &str) -> Result<Case, String> {
    match dims {
        [m, n] if *m >= 1 && *n >= 1 && dtype.is_float() && !dtype.is_storage_only() => Ok(Case::new(dtype, dims)),
        _ => Err(format!("{name} takes MxN and a float dtype, not {dims:?} {dtype}")),
    }
}

fn mn_cases() -> Vec<Case> {
    vec![
        Case::new(DType::F32, &[1, 1]),
        Case::new(DType::F16, &[7, 33]),
        Case::new(DType::BF16, &[16, 3584]),
        Case::new(DType::F16, &[8192, 3584]),
        Case::new(DType::F32, &[333, 4097]),
    ]
}

/// `x + other` (inputs 0 and 1), each sum through `round`: `other` is a row broadcast over
/// x's rows (a bias) or has x's shape (a residual) — its index modulo its length serves both.
fn sum_of(a: &[Arg], round: impl Fn(f64) -> f64) -> Vec<f64> {
    let (x, o) = (values(a, 0), values(a, 1));
    x.iter().enumerate().map(|(i, v)| round(v + o[i % o.len()])).collect()
}

/// bias_add's and residual_add's result: the f32 sum of two T values is exact, one rounding.
fn add_reference(c: &Case, a: &[Arg]) -> Vec<Vec<f64>> {
    vec![sum_of(a, |v| tilec_interp::round_to(v, c.dtype))]
}

/// The split-K epilogues' results: the accumulator cleared, and the sum rounded as the kernel
/// rounds it — the f32 addition, then the store to T (one rounding is not the same for bf16,
/// whose sums of an f32 and a bf16 often need more than 24 bits).
fn acc_add_reference(c: &Case, a: &[Arg]) -> Vec<Vec<f64>> {
    let round = |v| tilec_interp::round_to(tilec_interp::round_to(v, DType::F32), c.dtype);
    vec![vec![0.0; numel(&c.dims)], sum_of(a, round)]
}

/// `y = x + bias` over the rows.
pub const BIAS_ADD: Spec = Spec {
    name: "bias_add",
    file: "bias_add.tile",
    kernel: "bias_add",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F32, &[7, 50]).with("ROWS", 2), Case::new(DType::F16, &[3, 40])],
    gpu_cases: || {
        let mut v = mn_cases();
        v.push(Case::new(DType::F16, &[1000, 512]).with("ROWS", 4));
        v
    },
    bench_cases: no_bench,
    consts: row_consts,
    inputs: |c, rng| {
        vec![
            tensor(c.dtype, &c.dims, &randn(rng, numel(&c.dims), 1.0)),
            tensor(c.dtype, &[c.dims[1]], &randn(rng, c.dims[1] as usize, 1.0)),
            poisoned(c.dtype, &c.dims),
        ]
    },
    outputs: &[2],
    exact: &[2],
    reference: add_reference,
    tolerance: |_| 0.0,
    bytes: |c| (2 * c.dims[0] * c.dims[1] + c.dims[1]) as f64 * f64::from(c.dtype.bytes()),
    flops: None,
    case_for: |dims, dtype| mn(dims, dtype, "bias_add"),
    peer_config: no_peer,
};

/// `y = x + residual`.
pub const RESIDUAL_ADD: Spec = Spec {
    name: "residual_add",
    file: "residual_add.tile",
    kernel: "residual_add",
    interp_cases: || vec![Case::new(DType::F32, &[7, 50]), Case::new(DType::BF16, &[3, 40])],
    gpu_cases: mn_cases,
    inputs: |c, rng| {
        vec![
            tensor(c.dtype, &c.dims, &randn(rng, numel(&c.dims), 1.0)),
            tensor(c.dtype, &c.dims, &randn(rng, numel(&c.dims), 1.0)),
            poisoned(c.dtype, &c.dims),
        ]
    },
    bytes: |c| (3 * c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes()),
    case_for: |dims, dtype| mn(dims, dtype, "residual_add"),
    ..BIAS_ADD
};

/// KV-cache append: dims are [B, H, N, D, S] (N new rows per sequence, a cache of S rows).
pub const KV_APPEND: Spec = Spec {
    name: "kv_append",
    file: "kv_append.tile",
    kernel: "kv_append",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F16, &[2, 2, 3, 8, 6]), Case::new(DType::F32, &[3, 1, 1, 5, 4])],
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 1, 1, 1, 1]),
            Case::new(DType::F16, &[16, 4, 1, 128, 1024]),
            Case::new(DType::F16, &[16, 4, 512, 128, 1024]),
            Case::new(DType::BF16, &[3, 2, 5, 96, 7]),
        ]
    },
    bench_cases: no_bench,
    consts: |c| {
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("D_TILE".to_string(), ConstArg::Int(pow2_clamped(c.dims[3], 1, 1024))),
        ])
    },
    inputs: |c, rng| {
        let (b, h, n, d, s) = (c.dims[0], c.dims[1], c.dims[2], c.dims[3], c.dims[4]);
        // Positions that fit, and for the last sequence one whose tail falls off the cache.
        let pos: Vec<f64> = (0..b)
            .map(|i| if i == b - 1 && b > 1 { (s - 1) as f64 } else { rng.gen_range(0..=(s - n).max(0)) as f64 })
            .collect();
        vec![
            tensor(c.dtype, &[b, h, n, d], &randn(rng, (b * h * n * d) as usize, 1.0)),
            tensor(c.dtype, &[b, h, s, d], &vec![-3.0; (b * h * s * d) as usize]),
            tensor(DType::I32, &[b], &pos),
        ]
    },
    outputs: &[1],
    exact: &[1],
    reference: |c, a| {
        let [b, h, n, d, s] = [0, 1, 2, 3, 4].map(|i| c.dims[i] as usize);
        let (new, pos) = (values(a, 0), values(a, 2));
        let mut cache = vec![-3.0; b * h * s * d];
        for (bi, p) in pos.iter().enumerate() {
            for hi in 0..h {
                for t in 0..n {
                    let row = *p as usize + t;
                    if row < s {
                        let (src, dst) = (((bi * h + hi) * n + t) * d, ((bi * h + hi) * s + row) * d);
                        cache[dst..dst + d].copy_from_slice(&new[src..src + d]);
                    }
                }
            }
        }
        vec![cache]
    },
    tolerance: |_| 0.0,
    bytes: |c| (2 * c.dims[0] * c.dims[1] * c.dims[2] * c.dims[3]) as f64 * f64::from(c.dtype.bytes()),
    flops: None,
    case_for: |dims, dtype| match dims {
        [b, h, n, d, s] if [*b, *h, *n, *d, *s].iter().all(|x| *x >= 1) && n <= s => Ok(Case::new(dtype, dims)),
        _ => Err(format!("kv_append takes BxHxNxDxS (N new rows, a cache of S), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Split-K GEMM into an f32 C (kernels/matmul_splitk.tile): dims [M, N, K]. The partial
/// products arrive in any order; with the inputs on a grid of quarters every sum is exact.
pub const MATMUL_SPLITK: Spec = Spec {
    name: "matmul_splitk",
    file: "matmul_splitk.tile",
    kernel: "matmul_splitk",
    class: Class::Gemm,
    peer_kernel: "",
    interp_cases: || {
        vec![Case::new(DType::F16, &[16, 200, 300]), Case::new(DType::BF16, &[20, 40, 70]).with("SPLIT", 3)]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 8, 16]),
            Case::new(DType::F16, &[16, 3584, 3584]),
            Case::new(DType::BF16, &[16, 4608, 3584]).with("SPLIT", 2),
            Case::new(DType::F16, &[16, 3584, 18944]).with("SPLIT", 16),
            Case::new(DType::F16, &[33, 1000, 700]).with("SPLIT", 3),
        ]
    },
    bench_cases: |_| {
        vec![
            Case::new(DType::F16, &[16, 4608, 3584]),
            Case::new(DType::F16, &[16, 3584, 3584]),
            Case::new(DType::F16, &[16, 3584, 18944]).with("SPLIT", 16),
        ]
    },
    consts: |c| BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype))]),
    inputs: |c, rng| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
        // Quarters: every product a multiple of 1/16 and every partial sum exact in f32, so
        // the blocks may add in any order (the interpreter runs them both ways).
        let q = |v: Vec<f64>| v.into_iter().map(|x| (x * 2.0).round().clamp(-8.0, 8.0) / 4.0).collect::<Vec<_>>();
        vec![
            tensor(c.dtype, &[m, k], &q(randn(rng, (m * k) as usize, 1.0))),
            tensor(c.dtype, &[k, n], &q(randn(rng, (k * n) as usize, 1.0))),
            tensor(DType::F32, &[m, n], &vec![0.0; (m * n) as usize]),
        ]
    },
    outputs: &[2],
    exact: &[2],
    reference: |c, a| {
        let [m, n, k] = [0, 1, 2].map(|i| c.dims[i] as usize);
        vec![tilec_interp::reference::matmul(&values(a, 0), &values(a, 1), m, k, n)]
    },
    tolerance: |_| 0.0,
    bytes: |c| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
        ((m * k + k * n) * i64::from(c.dtype.bytes()) + 2 * m * n * 4) as f64
    },
    flops: Some(|c| 2.0 * (c.dims[0] * c.dims[1] * c.dims[2]) as f64),
    case_for: |dims, dtype| match dims {
        [m, n, k] if *m >= 1 && *n >= 1 && *k >= 1 && matches!(dtype, DType::F16 | DType::BF16) => {
            Ok(Case::new(dtype, dims))
        }
        _ => Err(format!("matmul_splitk takes MxNxK in f16 or bf16, not {dims:?} {dtype}")),
    },
    peer_config: no_peer,
};

/// Gate/up product with the SwiGLU epilogue (kernels/matmul_splitk.tile's `matmul_swiglu`):
/// dims [M, N, K], out = silu(A · Bg) · (A · Bu) with Bg, Bu [K, N].
pub const MATMUL_SWIGLU: Spec = Spec {
    name: "matmul_swiglu",
    file: "matmul_splitk.tile",
    kernel: "matmul_swiglu",
    class: Class::Gemm,
    peer_kernel: "",
    interp_cases: || {
        vec![Case::new(DType::F16, &[16, 70, 200]), Case::new(DType::BF16, &[20, 200, 70]).with("TILE_N", 128)]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 8, 16]),
            Case::new(DType::F16, &[16, 18944, 3584]),
            Case::new(DType::BF16, &[16, 512, 3584]).with("TILE_N", 128).with("NUM_WARPS", 8),
            Case::new(DType::F16, &[33, 1000, 700]),
        ]
    },
    bench_cases: |_| vec![Case::new(DType::F16, &[16, 18944, 3584])],
    consts: |c| BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype))]),
    inputs: |c, rng| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
        // Products of about unit size: silu's both sides exercised.
        let s = 1.0 / (k as f64).sqrt();
        vec![
            tensor(c.dtype, &[m, k], &randn(rng, (m * k) as usize, 1.0)),
            tensor(c.dtype, &[k, n], &randn(rng, (k * n) as usize, 2.0 * s)),
            tensor(c.dtype, &[k, n], &randn(rng, (k * n) as usize, s)),
            poisoned(c.dtype, &[m, n]),
        ]
    },
    outputs: &[3],
    exact: &[],
    reference: |c, a| {
        let [m, n, k] = [0, 1, 2].map(|i| c.dims[i] as usize);
        let g = tilec_interp::reference::matmul(&values(a, 0), &values(a, 1), m, k, n);
        let u = tilec_interp::reference::matmul(&values(a, 0), &values(a, 2), m, k, n);
        vec![g.iter().zip(&u).map(|(g, u)| g / (1.0 + (-g).exp()) * u).collect()]
    },
    tolerance: storage_tolerance,
    bytes: |c| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
        ((m * k + 2 * k * n + m * n) * i64::from(c.dtype.bytes())) as f64
    },
    flops: Some(|c| 4.0 * (c.dims[0] * c.dims[1] * c.dims[2]) as f64),
    case_for: |dims, dtype| match dims {
        [m, n, k] if *m >= 1 && *n >= 1 && *k >= 1 && matches!(dtype, DType::F16 | DType::BF16) => {
            Ok(Case::new(dtype, dims))
        }
        _ => Err(format!("matmul_swiglu takes MxNxK in f16 or bf16, not {dims:?} {dtype}")),
    },
    peer_config: no_peer,
};

fn acc_consts(c: &Case) -> BTreeMap<String, ConstArg> {
    BTreeMap::from([
        ("T".to_string(), ConstArg::DType(c.dtype)),
        ("BLOCK_N".to_string(), ConstArg::Int(pow2_clamped(c.dims[1], 16, 1024))),
    ])
}

/// The split-K epilogues' shapes: a decode step's projections (16 rows) and ragged ones.
fn acc_cases() -> Vec<Case> {
    vec![
        Case::new(DType::F16, &[1, 1]),
        Case::new(DType::F16, &[16, 4608]),
        Case::new(DType::BF16, &[16, 3584]),
        Case::new(DType::F16, &[33, 1000]),
        Case::new(DType::F32, &[5, 18944]),
    ]
}

fn acc_bytes(c: &Case, t_tensors: i64) -> f64 {
    let mn = (c.dims[0] * c.dims[1]) as f64;
    mn * (8.0 + t_tensors as f64 * f64::from(c.dtype.bytes()))
}

/// Split-K epilogue `y = acc + bias; acc = 0` (kernels/splitk_epilogue.tile).
pub const ACC_BIAS: Spec = Spec {
    name: "acc_bias",
    file: "splitk_epilogue.tile",
    kernel: "acc_bias",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F16, &[3, 40]), Case::new(DType::BF16, &[2, 1030])],
    gpu_cases: acc_cases,
    bench_cases: no_bench,
    consts: acc_consts,
    inputs: |c, rng| {
        vec![
            tensor(DType::F32, &c.dims, &randn(rng, numel(&c.dims), 4.0)),
            tensor(c.dtype, &[c.dims[1]], &randn(rng, c.dims[1] as usize, 1.0)),
            poisoned(c.dtype, &c.dims),
        ]
    },
    outputs: &[0, 2],
    exact: &[0, 2],
    reference: acc_add_reference,
    tolerance: |_| 0.0,
    bytes: |c| acc_bytes(c, 1),
    flops: None,
    case_for: |dims, dtype| mn(dims, dtype, "acc_bias"),
    peer_config: no_peer,
};

/// Split-K epilogue `y = acc + residual; acc = 0`.
pub const ACC_RESIDUAL: Spec = Spec {
    name: "acc_residual",
    kernel: "acc_residual",
    interp_cases: || vec![Case::new(DType::F16, &[3, 40]), Case::new(DType::F32, &[2, 1030])],
    inputs: |c, rng| {
        vec![
            tensor(DType::F32, &c.dims, &randn(rng, numel(&c.dims), 4.0)),
            tensor(c.dtype, &c.dims, &randn(rng, numel(&c.dims), 1.0)),
            poisoned(c.dtype, &c.dims),
        ]
    },
    bytes: |c| acc_bytes(c, 2),
    case_for: |dims, dtype| mn(dims, dtype, "acc_residual"),
    ..ACC_BIAS
};

/// Split-K epilogue `out = silu(gate) · up; gate = up = 0`.
pub const ACC_SWIGLU: Spec = Spec {
    name: "acc_swiglu",
    file: "splitk_epilogue.tile",
    kernel: "acc_swiglu",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F16, &[3, 40]), Case::new(DType::F32, &[2, 1030])],
    gpu_cases: acc_cases,
    bench_cases: no_bench,
    consts: acc_consts,
    inputs: |c, rng| {
        vec![
            tensor(DType::F32, &c.dims, &randn(rng, numel(&c.dims), 3.0)),
            tensor(DType::F32, &c.dims, &randn(rng, numel(&c.dims), 1.0)),
            poisoned(c.dtype, &c.dims),
        ]
    },
    outputs: &[0, 1, 2],
    exact: &[0, 1],
    reference: |_, a| {
        let (g, u) = (values(a, 0), values(a, 1));
        let out = g.iter().zip(&u).map(|(g, u)| g / (1.0 + (-g).exp()) * u).collect();
        vec![vec![0.0; g.len()], vec![0.0; g.len()], out]
    },
    tolerance: storage_tolerance,
    bytes: |c| {
        let mn = (c.dims[0] * c.dims[1]) as f64;
        mn * (16.0 + f64::from(c.dtype.bytes()))
    },
    flops: None,
    case_for: |dims, dtype| mn(dims, dtype, "acc_swiglu"),
    peer_config: no_peer,
};

/// Split-K epilogue fused with the next RMSNorm: `y = acc + residual; normed = rmsnorm(y) · w;
/// acc = 0` (kernels/splitk_epilogue.tile). Dims `[M, N]`.
pub const ACC_RESIDUAL_RMSNORM: Spec = Spec {
    name: "acc_residual_rmsnorm",
    file: "splitk_epilogue.tile",
    kernel: "acc_residual_rmsnorm",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F16, &[3, 40]), Case::new(DType::BF16, &[2, 1030])],
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 1]),
            Case::new(DType::F16, &[16, 3584]),
            Case::new(DType::BF16, &[16, 3584]),
            Case::new(DType::F16, &[7, 33]),
            Case::new(DType::F32, &[33, 4097]),
            Case::new(DType::F16, &[5, 8192]),
        ]
    },
    bench_cases: no_bench,
    consts: |c| {
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("BLOCK_N".to_string(), ConstArg::Int(pow2_clamped(c.dims[1], 16, 8192))),
        ])
    },
    inputs: |c, rng| {
        let n = c.dims[1];
        let w: Vec<f64> = (0..n).map(|_| 1.0 + 0.5 * normal(rng)).collect();
        vec![
            tensor(DType::F32, &c.dims, &randn(rng, numel(&c.dims), 4.0)),
            tensor(c.dtype, &c.dims, &randn(rng, numel(&c.dims), 1.0)),
            tensor(c.dtype, &[n], &w),
            poisoned(c.dtype, &c.dims),
            poisoned(c.dtype, &c.dims),
            Arg::F32(RMS_EPS),
        ]
    },
    outputs: &[0, 3, 4],
    exact: &[0, 3],
    reference: |c, a| {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        let [acc, y] = &acc_add_reference(c, a)[..] else { return vec![] };
        let normed = reference::rmsnorm(y, &values(a, 2), m, n, f64::from(RMS_EPS));
        vec![acc.clone(), y.clone(), normed]
    },
    tolerance: storage_tolerance,
    bytes: |c| acc_bytes(c, 3) + (c.dims[1] * i64::from(c.dtype.bytes())) as f64,
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 1 && (1..=8192).contains(n) && dtype.is_float() && !dtype.is_storage_only() => {
            Ok(Case::new(dtype, dims))
        }
        _ => Err(format!("acc_residual_rmsnorm takes MxN with N in 1..=8192 and a float dtype, not {dims:?} {dtype}")),
    },
    peer_config: no_peer,
};

/// What `rope_kv_append` computes for case dims `[B, S, H, HK, D, SC]`: q rotated at table row
/// p = pos[b] + s (zeros past the table), the rotated k and v written into the caches `kc`,
/// `vc` at row p where p < SC. Returns (q, k cache, v cache).
#[allow(clippy::too_many_arguments)]
fn rope_append(
    c: &Case,
    q: &[f64],
    k: &[f64],
    v: &[f64],
    cos: &[f64],
    sin: &[f64],
    mut kc: Vec<f64>,
    mut vc: Vec<f64>,
    pos: &[f64],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let [b, s, h, hk, d, sc] = [0, 1, 2, 3, 4, 5].map(|i| c.dims[i] as usize);
    let half = d / 2;
    let mut qo = q.to_vec();
    let zeros = vec![0.0; half];
    for (bi, &start) in pos.iter().enumerate().take(b) {
        for si in 0..s {
            let p = start as usize + si;
            let (cs, sn) = if p < sc {
                (&cos[p * half..(p + 1) * half], &sin[p * half..(p + 1) * half])
            } else {
                (&zeros[..], &zeros[..])
            };
            for hh in 0..h {
                let o = ((bi * s + si) * h + hh) * d;
                qo[o..o + d].copy_from_slice(&reference::rope(&q[o..o + d], cs, sn));
            }
            if p >= sc {
                continue;
            }
            for hh in 0..hk {
                let (src, dst) = (((bi * s + si) * hk + hh) * d, ((bi * hk + hh) * sc + p) * d);
                kc[dst..dst + d].copy_from_slice(&reference::rope(&k[src..src + d], cs, sn));
                vc[dst..dst + d].copy_from_slice(&v[src..src + d]);
            }
        }
    }
    (qo, kc, vc)
}

/// Inputs of the rope/append specs: the new rows (`new` makes each of q, k, v), the tables of
/// SC positions, the caches of -3, and the positions — in which the last sequence's tail falls
/// off the cache (rows not written, q rotated by the zeros past the table).
fn rope_append_inputs(
    c: &Case,
    rng: &mut rand::rngs::StdRng,
    new: &mut dyn FnMut(&mut rand::rngs::StdRng, &[i64]) -> Arg,
) -> Vec<Arg> {
    let [b, s, h, hk, d, sc] = c.dims[..] else { return vec![] };
    let half = d / 2;
    let angle = |i: i64| (i / half) as f64 * 10000f64.powf(-((i % half) as f64) / half as f64);
    let cos: Vec<f64> = (0..sc * half).map(|i| angle(i).cos()).collect();
    let sin: Vec<f64> = (0..sc * half).map(|i| angle(i).sin()).collect();
    let pos: Vec<f64> =
        (0..b).map(|i| if i == b - 1 && b > 1 { (sc - 1) as f64 } else { rng.gen_range(0..=sc - s) as f64 }).collect();
    vec![
        new(rng, &[b, s, h, d]),
        new(rng, &[b, s, hk, d]),
        new(rng, &[b, s, hk, d]),
        tensor(c.dtype, &[sc, half], &cos),
        tensor(c.dtype, &[sc, half], &sin),
        tensor(c.dtype, &[b, hk, sc, d], &vec![-3.0; (b * hk * sc * d) as usize]),
        tensor(c.dtype, &[b, hk, sc, d], &vec![-3.0; (b * hk * sc * d) as usize]),
        tensor(DType::I32, &[b], &pos),
    ]
}

/// The case of the rope/append specs' dims `[B, S, H, HK, D, SC]`, or why not.
fn rope_append_case(name: &str, dims: &[i64], dtype: DType) -> Result<Case, String> {
    match dims {
        [b, s, h, hk, d, sc]
            if [*b, *s, *h, *hk, *sc].iter().all(|x| *x >= 1)
                && [8, 16, 64, 128].contains(d)
                && s <= sc
                && *h <= 256
                && *hk <= 256
                && dtype.is_float()
                && !dtype.is_storage_only() =>
        {
            Ok(Case::new(dtype, dims))
        }
        _ => Err(format!(
            "{name} takes BxSxHxHKxDxSC (S <= SC, D 8, 16, 64 or 128) in a float dtype, not {dims:?} {dtype}"
        )),
    }
}

/// RoPE fused with the KV-cache append (kernels/rope.tile's `rope_kv_append`). Dims
/// `[B, S, H, HK, D, SC]`: S new positions of B sequences, H query and HK KV heads, a cache of
/// SC rows (and a table of SC positions).
pub const ROPE_KV_APPEND: Spec = Spec {
    name: "rope_kv_append",
    file: "rope.tile",
    kernel: "rope_kv_append",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F16, &[2, 3, 4, 2, 16, 5]), Case::new(DType::F32, &[3, 1, 3, 1, 8, 4])],
    gpu_cases: || {
        let c = |b, s, h, hk, d, sc| Case::new(DType::F16, &[b, s, h, hk, d, sc]);
        vec![
            c(1, 1, 1, 1, 64, 1),
            c(16, 1, 28, 4, 128, 600),
            c(2, 37, 28, 4, 128, 64),
            c(3, 5, 4, 2, 64, 7),
            Case::new(DType::BF16, &[4, 2, 16, 16, 128, 33]),
        ]
    },
    bench_cases: no_bench,
    consts: |c| {
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("H".to_string(), ConstArg::Int(pow2_clamped(c.dims[2], 1, 256))),
            ("HK".to_string(), ConstArg::Int(pow2_clamped(c.dims[3], 1, 256))),
            ("HALF".to_string(), ConstArg::Int(c.dims[4] / 2)),
        ])
    },
    inputs: |c, rng| rope_append_inputs(c, rng, &mut |rng, shape| normal_tensor(rng, c.dtype, shape, 1.0)),
    outputs: &[0, 1, 5, 6],
    exact: &[1, 6],
    reference: |c, a| {
        let [q, k, v, cos, sin, kc, vc, pos] = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| values(a, i));
        let (qo, kc, vc) = rope_append(c, &q, &k, &v, &cos, &sin, kc, vc, &pos);
        vec![qo, k, kc, vc]
    },
    tolerance: storage_tolerance,
    bytes: |c| {
        let [b, s, h, hk, d, _] = c.dims[..] else { return 0.0 };
        // q read and written, k and v read, their cache rows written; the table rows read.
        (b * s * (2 * h + 4 * hk) * d + b * s * d) as f64 * f64::from(c.dtype.bytes())
    },
    flops: None,
    case_for: |dims, dtype| rope_append_case("rope_kv_append", dims, dtype),
    peer_config: no_peer,
};

/// A decode step's Q/K/V epilogue (kernels/rope.tile's `acc_bias_rope_kv_append`): the f32
/// accumulator plus the bias, rounded to T as `acc_bias` rounds it, then `rope_kv_append`'s
/// work; the accumulator cleared. Dims `[B, S, H, HK, D, SC]`.
pub const ACC_BIAS_ROPE_KV_APPEND: Spec = Spec {
    name: "acc_bias_rope_kv_append",
    kernel: "acc_bias_rope_kv_append",
    interp_cases: || vec![Case::new(DType::F16, &[2, 3, 4, 2, 16, 5]), Case::new(DType::BF16, &[3, 1, 3, 1, 8, 4])],
    inputs: |c, rng| {
        let [_, _, h, hk, d, _] = c.dims[..] else { return vec![] };
        let v = rope_append_inputs(c, rng, &mut |rng, shape| {
            tensor(DType::F32, shape, &randn(rng, shape.iter().product::<i64>() as usize, 2.0))
        });
        let (acc, rest) = v.split_at(3);
        let mut args = acc.to_vec();
        for heads in [h, hk, hk] {
            args.push(tensor(c.dtype, &[heads, d], &randn(rng, (heads * d) as usize, 1.0)));
        }
        let q_shape = [c.dims[0], c.dims[1], h, d];
        args.push(poisoned(c.dtype, &q_shape));
        args.extend_from_slice(rest);
        args
    },
    outputs: &[0, 1, 2, 6, 9, 10],
    exact: &[0, 1, 2, 10],
    reference: |c, a| {
        // y = acc + bias (the bias a row per head), in f32, then rounded to T.
        let round = |x: f64| tilec_interp::round_to(tilec_interp::round_to(x, DType::F32), c.dtype);
        let add = |acc: &[f64], bias: &[f64]| -> Vec<f64> {
            acc.iter().enumerate().map(|(i, x)| round(x + bias[i % bias.len()])).collect()
        };
        let [aq, ak, av, bq, bk, bv] = [0, 1, 2, 3, 4, 5].map(|i| values(a, i));
        let [cos, sin, kc, vc, pos] = [7, 8, 9, 10, 11].map(|i| values(a, i));
        let (q, kc, vc) = rope_append(c, &add(&aq, &bq), &add(&ak, &bk), &add(&av, &bv), &cos, &sin, kc, vc, &pos);
        let zeros = |x: &[f64]| vec![0.0; x.len()];
        vec![zeros(&aq), zeros(&ak), zeros(&av), q, kc, vc]
    },
    bytes: |c| {
        let [b, s, h, hk, d, _] = c.dims[..] else { return 0.0 };
        let t = f64::from(c.dtype.bytes());
        // The accumulator read and cleared, q and the cache rows written, biases and table rows read.
        (b * s * (h + 2 * hk) * d) as f64 * (8.0 + t) + ((h + 2 * hk) * d + b * s * d) as f64 * t
    },
    case_for: |dims, dtype| rope_append_case("acc_bias_rope_kv_append", dims, dtype),
    ..ROPE_KV_APPEND
};

/// Mixture-of-experts routing (kernels/moe_route.tile): dims `[M, E]` (tokens, experts),
/// constants `EP` (E padded to a power of two), `TOPK`; each token's softmax over its router
/// logits and its TOPK largest probabilities with their experts, the largest first, ties to
/// the lower expert. The logits are multiples of 1/64 (ties on purpose, distinct values a
/// factor e^(1/64) apart in probability, so that no rounding reorders them); one row is all
/// ties. Experts exact, probabilities within 1e-5; with CLEAR = 1 the logits read back as
/// zeros (else untouched).
pub const MOE_ROUTE: Spec = Spec {
    name: "moe_route",
    file: "moe_route.tile",
    kernel: "moe_route",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![
            Case::new(DType::F16, &[5, 64]),
            Case::new(DType::F32, &[3, 40]).with("TOPK", 8),
            Case::new(DType::BF16, &[17, 7]).with("EP", 8).with("TOPK", 7),
            Case::new(DType::F32, &[21, 64]).with("CLEAR", 1),
        ]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 64]),
            Case::new(DType::F16, &[16, 64]),
            Case::new(DType::BF16, &[8192, 64]),
            Case::new(DType::F32, &[37, 160]).with("EP", 256).with("TOPK", 6),
            Case::new(DType::F16, &[100, 64]).with("TOPK", 8),
            Case::new(DType::F32, &[16, 64]).with("CLEAR", 1),
        ]
    },
    bench_cases: no_bench,
    consts: |c| {
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("EP".to_string(), ConstArg::Int(c.konst("EP", 64))),
            ("TOPK".to_string(), ConstArg::Int(c.konst("TOPK", 6))),
            ("CLEAR".to_string(), ConstArg::Bool(false)),
        ])
    },
    inputs: |c, rng| {
        let (m, e, k) = (c.dims[0], c.dims[1], c.konst("TOPK", 6));
        let logits: Vec<f64> = (0..m * e)
            .map(|i| if i / e == m / 2 { 0.5 } else { f64::from(rng.gen_range(-256i32..256)) / 64.0 })
            .collect();
        vec![tensor(c.dtype, &[m, e], &logits), poisoned(DType::F32, &[m, k]), poisoned(DType::I32, &[m, k])]
    },
    outputs: &[0, 1, 2],
    exact: &[0, 2],
    reference: |c, a| {
        let (m, e, k) = (c.dims[0] as usize, c.dims[1] as usize, c.konst("TOPK", 6) as usize);
        // With CLEAR the logits are zeroed once read; else untouched.
        let logits = if c.konst("CLEAR", 0) != 0 { vec![0.0; m * e] } else { values(a, 0) };
        let (mut w, mut ids) = (vec![], vec![]);
        for probs in reference::softmax(&values(a, 0), m, e).chunks(e) {
            for i in super::lang::sorted_positions(probs, true).into_iter().take(k) {
                w.push(probs[i]);
                ids.push(i as f64);
            }
        }
        vec![logits, w, ids]
    },
    tolerance: |_| 1e-5,
    bytes: |c| {
        (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes()) + (c.dims[0] * c.konst("TOPK", 6) * 8) as f64
    },
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, e] if *m >= 1 && *e >= 6 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("moe_route takes MxE (at least TOPK = 6 experts), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Where kernels/moe_dispatch.tile puts each (token, slot) pair: the experts' offsets (each
/// expert's rows padded to a multiple of `align`), each block's per-expert counts and first
/// positions (blocks of `rows` tokens), and each pair's position (-1 for an id outside
/// [0, e)). Within an expert the pairs keep their order.
struct Dispatch {
    block_counts: Vec<i64>,
    bases: Vec<i64>,
    offsets: Vec<i64>,
    pos: Vec<i64>,
}

fn dispatch(ids: &[f64], k: usize, e: usize, rows: usize, align: i64) -> Dispatch {
    let m = ids.len() / k.max(1);
    let nb = m.div_ceil(rows);
    let expert = |i: usize| Some(ids[i] as i64).filter(|&x| x >= 0 && (x as usize) < e).map(|x| x as usize);
    let mut block_counts = vec![0i64; nb * e];
    for i in 0..ids.len() {
        if let Some(x) = expert(i) {
            block_counts[(i / k / rows) * e + x] += 1;
        }
    }
    let mut offsets = vec![0i64; e + 1];
    for x in 0..e {
        let n = (0..nb).map(|b| block_counts[b * e + x]).sum::<i64>();
        offsets[x + 1] = offsets[x] + (n + align - 1) / align * align;
    }
    let mut bases = vec![0i64; nb * e];
    let mut next = offsets[..e].to_vec();
    for b in 0..nb {
        for x in 0..e {
            bases[b * e + x] = next[x];
            next[x] += block_counts[b * e + x];
        }
    }
    let mut fill = offsets[..e].to_vec();
    let pos = (0..ids.len())
        .map(|i| match expert(i) {
            Some(x) => {
                fill[x] += 1;
                fill[x] - 1
            }
            None => -1,
        })
        .collect();
    Dispatch { block_counts, bases, offsets, pos }
}

/// Expert ids for `m` tokens × `k` slots over `e` experts; with `dropped`, some are -1 or
/// `e` (experts outside this rank).
fn expert_ids(rng: &mut rand::rngs::StdRng, m: i64, k: i64, e: i64, dropped: bool) -> Vec<f64> {
    (0..m * k)
        .map(|i| match i {
            _ if dropped && i % 13 == 5 => -1.0,
            _ if dropped && i % 17 == 3 => e as f64,
            _ => rng.gen_range(0..e) as f64,
        })
        .collect()
}

fn dispatch_consts(c: &Case) -> BTreeMap<String, ConstArg> {
    BTreeMap::from([
        ("EP".to_string(), ConstArg::Int(pow2_clamped(c.dims[1], 1, 1 << 20))),
        ("KP".to_string(), ConstArg::Int(pow2_clamped(c.dims[2], 1, 1 << 20))),
    ])
}

/// The positions of a case's pairs, with its ROWS and ALIGN.
fn dispatch_of(c: &Case, ids: &[f64]) -> Dispatch {
    dispatch(ids, c.dims[2] as usize, c.dims[1] as usize, c.konst("ROWS", 16) as usize, c.konst("ALIGN", 1))
}

fn as_f64(v: &[i64]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// The expert counts and positions of a mixture-of-experts layer (kernels/moe_dispatch.tile's
/// `moe_align`): dims `[M, E, K]` (tokens, experts, slots); ids uniform over the experts, some
/// outside them (dropped). Every output exact; the counter back at zero.
pub const MOE_ALIGN: Spec = Spec {
    name: "moe_align",
    file: "moe_dispatch.tile",
    kernel: "moe_align",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![
            Case::new(DType::I32, &[9, 12, 3]).with("ROWS", 2).with("CHUNK", 2),
            Case::new(DType::I32, &[1, 64, 6]),
            Case::new(DType::I32, &[40, 5, 6]).with("ROWS", 4).with("ALIGN", 16),
        ]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::I32, &[1, 64, 6]),
            Case::new(DType::I32, &[16, 64, 6]).with("ALIGN", 16),
            Case::new(DType::I32, &[8192, 64, 6]).with("ALIGN", 128),
            Case::new(DType::I32, &[37, 160, 6]),
            Case::new(DType::I32, &[1000, 7, 8]).with("ROWS", 4),
        ]
    },
    bench_cases: no_bench,
    consts: dispatch_consts,
    inputs: |c, rng| {
        let [m, e, k] = c.dims[..] else { return vec![] };
        let nb = (m + c.konst("ROWS", 16) - 1) / c.konst("ROWS", 16);
        vec![
            tensor(DType::I32, &[m, k], &expert_ids(rng, m, k, e, true)),
            poisoned(DType::I32, &[nb, e]),
            poisoned(DType::I32, &[nb, e]),
            poisoned(DType::I32, &[e + 1]),
            tensor(DType::I32, &[1], &[0.0]),
        ]
    },
    outputs: &[1, 2, 3, 4],
    exact: &[1, 2, 3, 4],
    reference: |c, a| {
        let d = dispatch_of(c, &values(a, 0));
        vec![as_f64(&d.block_counts), as_f64(&d.bases), as_f64(&d.offsets), vec![0.0]]
    },
    tolerance: |_| 0.0,
    bytes: |c| {
        let [m, e, k] = c.dims[..] else { return 0.0 };
        let nb = (m + 15) / 16;
        (4 * (m * k + 3 * nb * e + e + 1)) as f64
    },
    flops: None,
    case_for: |dims, _| match dims {
        [m, e, k] if *m >= 1 && *e >= 1 && *k >= 1 => Ok(Case::new(DType::I32, dims)),
        _ => Err(format!("moe_align takes MxExK (tokens, experts, slots), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// The token rows in expert order (kernels/moe_dispatch.tile's `moe_permute`): dims
/// `[M, E, K, H]`; the bases as `moe_align` leaves them (padded where ALIGN > 1: the padding
/// rows keep their zeros). Rows and positions exact.
pub const MOE_PERMUTE: Spec = Spec {
    name: "moe_permute",
    file: "moe_dispatch.tile",
    kernel: "moe_permute",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || {
        vec![
            Case::new(DType::F16, &[9, 12, 3, 24]).with("ROWS", 2).with("BLOCK_H", 16),
            Case::new(DType::BF16, &[3, 64, 6, 64]),
            Case::new(DType::F16, &[21, 12, 6, 32]).with("ROWS", 4).with("BLOCK_H", 16).with("ALIGN", 8),
        ]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 64, 6, 2048]),
            Case::new(DType::F16, &[16, 64, 6, 2048]).with("ALIGN", 16),
            Case::new(DType::BF16, &[4096, 64, 6, 2048]).with("ALIGN", 128),
            Case::new(DType::F16, &[37, 160, 6, 200]),
        ]
    },
    bench_cases: no_bench,
    consts: |c| {
        let mut m = dispatch_consts(c);
        m.remove("EP");
        m.insert("T".to_string(), ConstArg::DType(c.dtype));
        m
    },
    inputs: |c, rng| {
        let [m, e, k, h] = c.dims[..] else { return vec![] };
        let ids = expert_ids(rng, m, k, e, false);
        let rows = c.konst("ROWS", 16);
        let d = dispatch_of(c, &ids);
        let p = m * k + e * (c.konst("ALIGN", 1) - 1);
        vec![
            tensor(DType::I32, &[m, k], &ids),
            tensor(DType::I32, &[(m + rows - 1) / rows, e], &as_f64(&d.bases)),
            normal_tensor(rng, c.dtype, &[m, h], 1.0),
            tensor(c.dtype, &[p, h], &vec![0.0; (p * h) as usize]),
            poisoned(DType::I32, &[m, k]),
        ]
    },
    outputs: &[3, 4],
    exact: &[3, 4],
    reference: |c, a| {
        let (k, h) = (c.dims[2] as usize, c.dims[3] as usize);
        let d = dispatch_of(c, &values(a, 0));
        let x = values(a, 2);
        let mut xs = vec![0.0; values(a, 3).len()];
        for (i, &p) in d.pos.iter().enumerate() {
            let (m, p) = (i / k, p as usize);
            xs[p * h..(p + 1) * h].copy_from_slice(&x[m * h..(m + 1) * h]);
        }
        vec![xs, as_f64(&d.pos)]
    },
    tolerance: |_| 0.0,
    bytes: |c| {
        let [m, _, k, h] = c.dims[..] else { return 0.0 };
        ((m + m * k) * h) as f64 * f64::from(c.dtype.bytes()) + (8 * m * k) as f64
    },
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, e, k, h] if *m >= 1 && *e >= 1 && *k >= 1 && *h >= 1 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("moe_permute takes MxExKxH (tokens, experts, slots, hidden), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// The weighted sum of each token's expert rows (kernels/moe_dispatch.tile's `moe_combine`):
/// dims `[M, K, N]`; the positions a permutation of the rows, one pair dropped (-1) where
/// there are four or more; weights in [0, 1).
pub const MOE_COMBINE: Spec = Spec {
    name: "moe_combine",
    file: "moe_dispatch.tile",
    kernel: "moe_combine",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::F16, &[5, 6, 40]).with("BLOCK_N", 16), Case::new(DType::F32, &[2, 3, 8])],
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[1, 6, 2048]),
            Case::new(DType::BF16, &[16, 6, 2048]),
            Case::new(DType::F16, &[8192, 6, 2048]),
            Case::new(DType::F32, &[37, 8, 200]),
        ]
    },
    bench_cases: no_bench,
    consts: |c| {
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("KP".to_string(), ConstArg::Int(pow2_clamped(c.dims[1], 1, 1 << 20))),
        ])
    },
    inputs: |c, rng| {
        let [m, k, n] = c.dims[..] else { return vec![] };
        let p = m * k;
        let mut pos: Vec<i64> = (0..p).collect();
        for i in (1..pos.len()).rev() {
            pos.swap(i, rng.gen_range(0..=i));
        }
        if p >= 4 {
            pos[2] = -1;
        }
        let w: Vec<f64> = (0..p).map(|_| rng.gen_range(0.0..1.0)).collect();
        vec![
            normal_tensor(rng, c.dtype, &[p, n], 1.0),
            tensor(DType::I32, &[m, k], &as_f64(&pos)),
            tensor(DType::F32, &[m, k], &w),
            normal_tensor(rng, c.dtype, &[m, n], 1.0),
            poisoned(c.dtype, &[m, n]),
        ]
    },
    outputs: &[4],
    exact: &[],
    reference: |c, a| {
        let [_, k, n] = c.dims[..].iter().map(|&x| x as usize).collect::<Vec<_>>()[..] else { return vec![] };
        let (ys, pos, w, shared) = (values(a, 0), values(a, 1), values(a, 2), values(a, 3));
        let out = shared
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (m, col) = (i / n, i % n);
                let routed: f64 = (0..k)
                    .filter(|&j| pos[m * k + j] >= 0.0)
                    .map(|j| w[m * k + j] * ys[pos[m * k + j] as usize * n + col])
                    .sum();
                tilec_interp::round_to(routed + s, c.dtype)
            })
            .collect();
        vec![out]
    },
    tolerance: storage_tolerance,
    bytes: |c| {
        let [m, k, n] = c.dims[..] else { return 0.0 };
        ((m * k + 2 * m) * n) as f64 * f64::from(c.dtype.bytes()) + (8 * m * k) as f64
    },
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, k, n] if *m >= 1 && *k >= 1 && *n >= 1 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("moe_combine takes MxKxN (tokens, slots, hidden), not {dims:?}")),
    },
    peer_config: no_peer,
};
