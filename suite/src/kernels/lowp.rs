//! The low-precision tensor-core kernels (issue 29): fp8 GEMMs with per-tensor, per-row and
//! per-column, and DeepGEMM's block scales (kernels/matmul_fp8.tile). Case dims `[M, N, K]`,
//! the case dtype the operands' (f8e4m3 or f8e5m2), the output bf16. The references compute
//! in f64 from the fp8 values as launched and the scales, so the check measures the kernel's
//! f32 accumulation and its bf16 rounding only.

use crate::inputs::{normal_tensor, poisoned, tensor, values};
use crate::{storage_tolerance, Arg, Case, Class, Spec};
use rand::Rng;
use std::collections::BTreeMap;
use tilec_core::DType;
use tilec_frontend::ConstArg;

/// The output dtype of the fp8 GEMMs' checks and benchmarks.
const OUT: DType = DType::BF16;

fn consts(c: &Case) -> BTreeMap<String, ConstArg> {
    BTreeMap::from([
        ("T".to_string(), ConstArg::DType(c.dtype)),
        ("TB".to_string(), ConstArg::DType(c.dtype)),
        ("O".to_string(), ConstArg::DType(OUT)),
    ])
}

fn mnk(c: &Case) -> (usize, usize, usize) {
    (c.dims[0] as usize, c.dims[1] as usize, c.dims[2] as usize)
}

/// A (M×K) and B (N×K) in fp8 (normal samples rounded to the format), C poisoned.
fn operands(c: &Case, rng: &mut rand::rngs::StdRng) -> Vec<Arg> {
    let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
    vec![normal_tensor(rng, c.dtype, &[m, k], 1.0), normal_tensor(rng, c.dtype, &[n, k], 1.0), poisoned(OUT, &[m, n])]
}

/// `Σ_k A[i, k] · B[j, k] · scale(i, j, k / 128)` over the fp8 values as launched.
fn scaled_product(a: &[Arg], c: &Case, scale: impl Fn(usize, usize, usize) -> f64) -> Vec<f64> {
    let (m, n, k) = mnk(c);
    let (av, bv) = (values(a, 0), values(a, 1));
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for kb in 0..k.div_ceil(128) {
                let part: f64 = (kb * 128..((kb + 1) * 128).min(k)).map(|x| av[i * k + x] * bv[j * k + x]).sum();
                s += part * scale(i, j, kb);
            }
            out[i * n + j] = s;
        }
    }
    out
}

fn interp_cases() -> Vec<Case> {
    vec![Case::new(DType::F8E4M3, &[70, 90, 100])
        .with("TILE_M", 32)
        .with("TILE_N", 32)
        .with("TILE_K", 32)
        .with("GROUP_M", 2)]
}

fn gpu_cases() -> Vec<Case> {
    let mut v = vec![];
    for d in [DType::F8E4M3, DType::F8E5M2] {
        v.push(Case::new(d, &[1000, 1000, 1000]));
        v.push(Case::new(d, &[1, 4096, 4096]));
        v.push(Case::new(d, &[512, 256, 160]));
        v.push(Case::new(d, &[4096, 4096, 4096]));
    }
    v
}

fn bench_cases(quick: bool) -> Vec<Case> {
    let sizes: &[i64] = if quick { &[4096] } else { &[4096, 8192] };
    sizes.iter().map(|&n| Case::new(DType::F8E4M3, &[n, n, n])).collect()
}

fn bytes(c: &Case) -> f64 {
    let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
    ((m * k + n * k) + m * n * i64::from(OUT.bytes())) as f64
}

fn flops(c: &Case) -> f64 {
    2.0 * c.dims.iter().map(|&d| d as f64).product::<f64>()
}

fn case_for(dims: &[i64], dtype: DType) -> Result<Case, String> {
    match dims {
        [m, n, k] if *m >= 1 && *n >= 1 && *k >= 1 && dtype.is_fp8() => Ok(Case::new(dtype, dims)),
        [n] if *n >= 1 && dtype.is_fp8() => Ok(Case::new(dtype, &[*n, *n, *n])),
        _ => Err(format!("the fp8 GEMMs take MxNxK (or N for N³) in f8e4m3 or f8e5m2, not {dims:?} {dtype}")),
    }
}

fn peer_config(c: &Case) -> Option<String> {
    let [m, n, k] = c.dims[..] else { return None };
    (m == n && n == k && c.dtype == DType::F8E4M3).then(|| format!("M=N=K={m} fp8"))
}

/// Per-tensor scales (`matmul_fp8`).
pub const MATMUL_FP8: Spec = Spec {
    name: "matmul_fp8",
    file: "matmul_fp8.tile",
    kernel: "matmul_fp8",
    class: Class::Gemm,
    peer_kernel: "gemm_fp8",
    interp_cases,
    gpu_cases,
    bench_cases,
    consts,
    inputs: |c, rng| {
        let mut v = operands(c, rng);
        v.push(Arg::F32(rng.gen_range(0.25..2.0)));
        v.push(Arg::F32(rng.gen_range(0.25..2.0)));
        v
    },
    outputs: &[2],
    exact: &[],
    reference: |c, a| {
        let s = match (&a[3], &a[4]) {
            (Arg::F32(x), Arg::F32(y)) => f64::from(*x) * f64::from(*y),
            _ => f64::NAN,
        };
        vec![scaled_product(a, c, |_, _, _| s)]
    },
    tolerance: storage_tolerance,
    bytes,
    flops: Some(flops),
    case_for,
    peer_config,
};

/// Per-row scales of A and per-column scales of B (`matmul_fp8_rowwise`).
pub const MATMUL_FP8_ROWWISE: Spec = Spec {
    name: "matmul_fp8_rowwise",
    file: "matmul_fp8.tile",
    kernel: "matmul_fp8_rowwise",
    class: Class::Gemm,
    peer_kernel: "gemm_fp8_rowwise",
    interp_cases,
    gpu_cases,
    bench_cases,
    consts,
    inputs: |c, rng| {
        let (m, n) = (c.dims[0], c.dims[1]);
        let mut v = operands(c, rng);
        let sa: Vec<f64> = (0..m).map(|_| rng.gen_range(0.25..2.0)).collect();
        let sb: Vec<f64> = (0..n).map(|_| rng.gen_range(0.25..2.0)).collect();
        v.push(tensor(DType::F32, &[m], &sa));
        v.push(tensor(DType::F32, &[n], &sb));
        v
    },
    outputs: &[2],
    exact: &[],
    reference: |c, a| {
        let (sa, sb) = (values(a, 3), values(a, 4));
        vec![scaled_product(a, c, |i, j, _| sa[i] * sb[j])]
    },
    tolerance: storage_tolerance,
    bytes,
    flops: Some(flops),
    case_for,
    peer_config: |_| None,
};

/// A scaled per row and 128-wide K block, B per 128×128 block (`matmul_fp8_blockwise`).
pub const MATMUL_FP8_BLOCKWISE: Spec = Spec {
    name: "matmul_fp8_blockwise",
    file: "matmul_fp8.tile",
    kernel: "matmul_fp8_blockwise",
    class: Class::Gemm,
    peer_kernel: "gemm_fp8_blockwise",
    interp_cases: || vec![Case::new(DType::F8E4M3, &[70, 200, 300]).with("TILE_M", 32).with("GROUP_M", 2)],
    gpu_cases,
    bench_cases,
    consts,
    inputs: |c, rng| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
        let (nb, kb) = ((n + 127) / 128, (k + 127) / 128);
        let mut v = operands(c, rng);
        let sa: Vec<f64> = (0..m * kb).map(|_| rng.gen_range(0.25..2.0)).collect();
        let sb: Vec<f64> = (0..nb * kb).map(|_| rng.gen_range(0.25..2.0)).collect();
        v.push(tensor(DType::F32, &[m, kb], &sa));
        v.push(tensor(DType::F32, &[nb, kb], &sb));
        v
    },
    outputs: &[2],
    exact: &[],
    reference: |c, a| {
        let kb = (c.dims[2] as usize).div_ceil(128);
        let (sa, sb) = (values(a, 3), values(a, 4));
        vec![scaled_product(a, c, |i, j, b| sa[i * kb + b] * sb[(j / 128) * kb + b])]
    },
    tolerance: storage_tolerance,
    bytes,
    flops: Some(flops),
    case_for,
    peer_config: |_| None,
};
