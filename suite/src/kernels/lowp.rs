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

/// `Σ_k A[i, k] · B[j, k] · scale(i, j, k / 128)` over the fp8 values as launched (rows on
/// every core: the 4096³ cases are 7e10 multiply-adds).
fn scaled_product(a: &[Arg], c: &Case, scale: impl Fn(usize, usize, usize) -> f64 + Sync) -> Vec<f64> {
    let (m, n, k) = mnk(c);
    let (av, bv) = (values(a, 0), values(a, 1));
    let mut out = vec![0.0; m * n];
    tilec_interp::reference::par_rows(&mut out, n, |i, row| {
        for (j, o) in row.iter_mut().enumerate() {
            let mut s = 0.0;
            for kb in 0..k.div_ceil(128) {
                let part: f64 = (kb * 128..((kb + 1) * 128).min(k)).map(|x| av[i * k + x] * bv[j * k + x]).sum();
                s += part * scale(i, j, kb);
            }
            *o = s;
        }
    });
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

/// The microscaling format of a `matmul_mx` case: the case dtype is the operands'
/// (`f4e2m1x2` or fp8), the constant `BLOCK` the K elements a scale covers (fp4: 16 → NVFP4's
/// ue4m3 scales, 32 → MXFP4's ue8m0; fp8: 32, MXFP8). Returns (scale dtype, BLOCK, PACK).
fn mx_format(c: &Case) -> (DType, i64, i64) {
    let packed = c.dtype == DType::F4E2M1X2;
    let block = c.consts.iter().find(|(n, _)| n == "BLOCK").map_or(if packed { 16 } else { 32 }, |(_, v)| *v);
    let scale = if packed && block == 16 { DType::UE4M3 } else { DType::UE8M0 };
    (scale, block, if packed { 2 } else { 1 })
}

/// The K values of operand row `r` (K wide; packed fp4 unpacked, low nibble first).
fn mx_row(v: &[f64], d: DType, r: usize, k: usize) -> Vec<f64> {
    if d == DType::F4E2M1X2 {
        (0..k).map(|x| tilec_core::dtype::from_fp4((v[r * k / 2 + x / 2] as u8) >> (4 * (x % 2)))).collect()
    } else {
        v[r * k..(r + 1) * k].to_vec()
    }
}

/// The block-scaled GEMM of the microscaling formats (`kernels/matmul_mx.tile`), dims
/// `[M, N, K]` (K in elements: even for fp4). No GPU here runs its block-scaled `mma.sync`
/// (sm_120a/sm_121a only): it is checked by the interpreter against this reference, by
/// `tilec_core::layout::blockscale`'s model of the instruction's scale registers, by ptxas
/// and the SASS on sm_121a, and on an H100 by `tilec check --emulate sm_121a matmul_mx`
/// (the GPU cases: sm_121a's code with the instruction emulated — fp8 products times the
/// factors read from the lanes the instruction reads; elsewhere the check skips it, E0900).
pub const MATMUL_MX: Spec = Spec {
    name: "matmul_mx",
    file: "matmul_mx.tile",
    kernel: "matmul_mx",
    class: Class::Gemm,
    peer_kernel: "",
    interp_cases: || {
        vec![
            // NVFP4: ragged M, N, K (K not a multiple of the tile, its last scale block short).
            Case::new(DType::F4E2M1X2, &[70, 90, 200])
                .with("TILE_M", 32)
                .with("TILE_N", 32)
                .with("TILE_K", 64)
                .with("GROUP_M", 2),
            // MXFP4.
            Case::new(DType::F4E2M1X2, &[33, 40, 256])
                .with("BLOCK", 32)
                .with("TILE_M", 32)
                .with("TILE_N", 32)
                .with("TILE_K", 64),
            // MXFP8, e5m2.
            Case::new(DType::F8E5M2, &[70, 90, 100]).with("TILE_M", 32).with("TILE_N", 32).with("TILE_K", 32),
        ]
    },
    gpu_cases: || {
        let fp4 = |d: &[i64]| Case::new(DType::F4E2M1X2, d);
        vec![
            fp4(&[1000, 1000, 1000]),
            fp4(&[1, 4096, 4096]),
            fp4(&[512, 256, 160]),
            fp4(&[777, 333, 202]),
            fp4(&[1000, 1000, 1000]).with("BLOCK", 32),
            fp4(&[300, 200, 96]).with("BLOCK", 32),
            Case::new(DType::F8E4M3, &[1000, 1000, 1000]),
            Case::new(DType::F8E4M3, &[512, 256, 160]),
            Case::new(DType::F8E5M2, &[70, 90, 100]),
        ]
    },
    bench_cases: |_| vec![],
    consts: |c| {
        let (scale, block, pack) = mx_format(c);
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("S".to_string(), ConstArg::DType(scale)),
            ("BLOCK".to_string(), ConstArg::Int(block)),
            ("PACK".to_string(), ConstArg::Int(pack)),
            // 128 bytes of each operand row a K step.
            ("TILE_K".to_string(), ConstArg::Int(128 * pack)),
            ("O".to_string(), ConstArg::DType(OUT)),
        ])
    },
    inputs: |c, rng| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
        let (scale, block, pack) = mx_format(c);
        let ks = (k + block - 1) / block;
        let operand = |rng: &mut rand::rngs::StdRng, rows: i64| {
            if pack == 2 {
                let v: Vec<f64> = (0..rows * k / 2)
                    .map(|_| {
                        let (lo, hi) = (2.0 * crate::inputs::normal(rng), 2.0 * crate::inputs::normal(rng));
                        f64::from(tilec_core::dtype::pack_fp4(lo, hi))
                    })
                    .collect();
                tensor(DType::F4E2M1X2, &[rows, k / 2], &v)
            } else {
                normal_tensor(rng, c.dtype, &[rows, k], 1.0)
            }
        };
        // Scale factors between 1/8 and 8: powers of two for ue8m0, any ue4m3 value.
        let scales = |rng: &mut rand::rngs::StdRng, rows: i64| {
            let v: Vec<f64> =
                (0..rows * ks)
                    .map(|_| {
                        if scale == DType::UE8M0 {
                            2f64.powi(rng.gen_range(-3..=3))
                        } else {
                            rng.gen_range(0.125..8.0)
                        }
                    })
                    .collect();
            tensor(scale, &[rows, ks], &v)
        };
        let (a, b) = (operand(rng, m), operand(rng, n));
        let (sa, sb) = (scales(rng, m), scales(rng, n));
        vec![a, b, sa, sb, poisoned(OUT, &[m, n]), Arg::F32(rng.gen_range(0.5..2.0))]
    },
    outputs: &[4],
    exact: &[],
    reference: |c, a| {
        let (m, n, k) = mnk(c);
        let (_, block, _) = mx_format(c);
        let (block, ks) = (block as usize, k.div_ceil(block as usize));
        let (av, bv, sa, sb) = (values(a, 0), values(a, 1), values(a, 2), values(a, 3));
        let alpha = match a.get(5) {
            Some(Arg::F32(x)) => f64::from(*x),
            _ => f64::NAN,
        };
        let rows_b: Vec<Vec<f64>> = (0..n).map(|j| mx_row(&bv, c.dtype, j, k)).collect();
        let mut out = vec![0.0; m * n];
        tilec_interp::reference::par_rows(&mut out, n, |i, row| {
            let ra = mx_row(&av, c.dtype, i, k);
            for (o, (j, rb)) in row.iter_mut().zip(rows_b.iter().enumerate()) {
                let dot: f64 = (0..k).map(|x| ra[x] * sa[i * ks + x / block] * rb[x] * sb[j * ks + x / block]).sum();
                *o = alpha * dot;
            }
        });
        vec![out]
    },
    tolerance: storage_tolerance,
    bytes: |c| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
        let (_, block, pack) = mx_format(c);
        ((m + n) * (k / pack + k / block) + m * n * i64::from(OUT.bytes())) as f64
    },
    flops: Some(flops),
    case_for: |dims, dtype| match dims {
        [m, n, k] if *m >= 1 && *n >= 1 && *k >= 2 && (dtype.is_fp8() || dtype == DType::F4E2M1X2 && k % 2 == 0) => {
            Ok(Case::new(dtype, dims))
        }
        _ => Err(format!(
            "matmul_mx takes MxNxK (K even for f4e2m1x2) in f4e2m1x2, f8e4m3 or f8e5m2, not {dims:?} {dtype}"
        )),
    },
    peer_config: |_| None,
};

/// The fp8 attention's case dims `[B, H, S, D]`; constants `CAUSAL` (0 or 1) and `GROUP`.
fn fa_dims(c: &Case) -> (usize, usize, usize, usize, usize) {
    let g = c.konst("GROUP", 1).max(1) as usize;
    (c.dims[0] as usize, c.dims[1] as usize, c.dims[2] as usize, c.dims[3] as usize, g)
}

/// fp8 attention as the kernel computes it, but with P quantized against each row's final
/// maximum (the kernel quantizes against the running maximum of the tiles seen so far):
/// scores from the descaled fp8 Q and K, `P = e4m3(exp(s − max))`, the normaliser from the
/// unquantized P, `O = Σ P·V / l` with V descaled. `extra(bh, i, j)` adds to the raw score of
/// query `i` and key `j` of head `bh` before the descale (MLA's rope part; 0 for FMHA).
#[allow(clippy::too_many_arguments)]
fn fp8_attention(
    q: &[f64],
    k: &[f64],
    vt: &[f64],
    dims: (usize, usize, usize, usize, usize),
    scale: f64,
    ds: [f64; 3],
    causal: bool,
    extra: impl Fn(usize, usize, usize) -> f64 + Sync,
) -> Vec<f64> {
    let (b, h, s, d, g) = dims;
    let hk = h / g;
    let mut out = vec![0.0; b * h * s * d];
    tilec_interp::reference::par_rows(&mut out, s * d, |bh, head| {
        let qb = bh * s * d;
        let kvh = (bh / h) * hk + (bh % h) / g;
        let (kb, vb) = (kvh * s * d, kvh * d * s);
        for i in 0..s {
            let n = if causal { i + 1 } else { s };
            let sc: Vec<f64> = (0..n)
                .map(|j| {
                    let qk: f64 = (0..d).map(|x| q[qb + i * d + x] * k[kb + j * d + x]).sum();
                    (qk + extra(bh, i, j)) * ds[0] * ds[1] * scale
                })
                .collect();
            let mx = sc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let p: Vec<f64> = sc.iter().map(|x| (x - mx).exp()).collect();
            let l: f64 = p.iter().sum();
            for c in 0..d {
                let o: f64 = (0..n).map(|j| DType::F8E4M3.round(p[j]) * vt[vb + c * s + j]).sum();
                head[i * d + c] = o * ds[2] / l;
            }
        }
    });
    out
}

/// fp8 flash attention (`kernels/fmha_fp8.tile`). Case dims `[B, H, S, D]`, V given
/// transposed (`[B, H/GROUP, D, S]`).
pub const FMHA_FP8: Spec = Spec {
    name: "fmha_fp8",
    file: "fmha_fp8.tile",
    kernel: "fmha_fp8",
    class: Class::Fmha,
    peer_kernel: "fmha_fp8",
    interp_cases: || {
        // And sm_103a's tcgen05 order (AHEAD: the scores a key tile ahead, P·V of the previous
        // key tile beside them, the conditional rescale), 80 rows a 64-row block and a ragged one.
        [0, 1]
            .into_iter()
            .flat_map(|causal| {
                let c = Case::new(DType::F8E4M3, &[1, 2, 80, 64]).with("TILE_N", 32).with("CAUSAL", causal);
                [c.clone().with("TILE_M", 32), c.with("TILE_M", 64).with("AHEAD", 1)]
            })
            .collect()
    },
    gpu_cases: || {
        let mut v = vec![];
        for causal in [0, 1] {
            v.push(Case::new(DType::F8E4M3, &[2, 4, 1024, 64]).with("CAUSAL", causal));
            v.push(Case::new(DType::F8E4M3, &[1, 2, 1000, 128]).with("CAUSAL", causal));
            v.push(Case::new(DType::F8E4M3, &[1, 2, 3001, 64]).with("CAUSAL", causal));
        }
        v.push(Case::new(DType::F8E4M3, &[1, 1, 17, 128]).with("CAUSAL", 1));
        v.push(Case::new(DType::F8E4M3, &[2, 28, 512, 128]).with("CAUSAL", 1).with("GROUP", 7));
        v
    },
    bench_cases: |quick| {
        let seqs: &[i64] = if quick { &[4096] } else { &[4096, 8192, 16384] };
        let mut v = vec![];
        for d in [128, 64] {
            for causal in [0, 1] {
                v.extend(seqs.iter().map(|&s| Case::new(DType::F8E4M3, &[4, 32, s, d]).with("CAUSAL", causal)));
            }
        }
        v
    },
    consts: |c| {
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("O".to_string(), ConstArg::DType(OUT)),
            ("H".to_string(), ConstArg::Int(c.dims[1])),
            ("TILE_D".to_string(), ConstArg::Int(c.dims[3])),
            ("CAUSAL".to_string(), ConstArg::Bool(c.konst("CAUSAL", 0) != 0)),
            ("GROUP".to_string(), ConstArg::Int(c.konst("GROUP", 1))),
        ])
    },
    inputs: |c, rng| {
        let (b, h, s, d, g) = (c.dims[0], c.dims[1], c.dims[2], c.dims[3], c.konst("GROUP", 1).max(1));
        vec![
            normal_tensor(rng, c.dtype, &[b, h, s, d], 1.0),
            normal_tensor(rng, c.dtype, &[b, h / g, s, d], 1.0),
            normal_tensor(rng, c.dtype, &[b, h / g, d, s], 1.0),
            poisoned(OUT, &[b, h, s, d]),
            Arg::F32(1.0 / (d as f32).sqrt()),
            Arg::F32(rng.gen_range(0.5..1.5)),
            Arg::F32(rng.gen_range(0.5..1.5)),
            Arg::F32(rng.gen_range(0.5..1.5)),
        ]
    },
    outputs: &[3],
    exact: &[],
    reference: |c, a| {
        let f = |i: usize| match a.get(i) {
            Some(Arg::F32(x)) => f64::from(*x),
            _ => f64::NAN,
        };
        let causal = c.konst("CAUSAL", 0) != 0;
        let (q, k, vt) = (values(a, 0), values(a, 1), values(a, 2));
        vec![fp8_attention(&q, &k, &vt, fa_dims(c), f(4), [f(5), f(6), f(7)], causal, |_, _, _| 0.0)]
    },
    // P is quantized to e4m3 (3 mantissa bits) against the running maximum, the reference's
    // against the final one: the two differ in the tiles before a row's maximum.
    tolerance: |_| 4e-2,
    bytes: |c| {
        let n = c.dims.iter().product::<i64>() as f64;
        3.0 * n + n * f64::from(OUT.bytes())
    },
    flops: Some(|c| {
        let [b, h, s, d] = c.dims[..] else { return 0.0 };
        let causal = if c.konst("CAUSAL", 0) != 0 { 0.5 } else { 1.0 };
        4.0 * (b * h * s * s * d) as f64 * causal
    }),
    case_for: |dims, dtype| match dims {
        [b, h, s, d] if *b >= 1 && *h >= 1 && *s >= 1 && (*d == 64 || *d == 128) && dtype.is_fp8() => {
            Ok(Case::new(dtype, dims))
        }
        _ => Err(format!("fmha_fp8 takes BxHxSxD with D 64 or 128 in f8e4m3, not {dims:?} {dtype}")),
    },
    peer_config: |_| None,
};

/// Quantization as the kernels compute it, in f32: per block of `br` rows × `bc` columns
/// (`bc = 0`: the whole row), `scale = max(absmax, 1e-12) / 448` and `q = e4m3(x / scale)`,
/// saturating. Returns (q, scales row-major over the blocks).
fn quantize(x: &[f64], m: usize, n: usize, br: usize, bc: usize) -> (Vec<f64>, Vec<f64>) {
    let bc = if bc == 0 { n } else { bc };
    let (mb, nb) = (m.div_ceil(br), n.div_ceil(bc));
    let mut q = vec![0.0; m * n];
    let mut s = vec![0.0; mb * nb];
    for a in 0..mb {
        for b in 0..nb {
            let rows = a * br..((a + 1) * br).min(m);
            let cols = b * bc..((b + 1) * bc).min(n);
            let amax = rows
                .clone()
                .flat_map(|i| cols.clone().map(move |j| (i, j)))
                .fold(0f32, |acc, (i, j)| acc.max((x[i * n + j] as f32).abs()));
            let scale = amax.max(1e-12) / 448.0;
            s[a * nb + b] = f64::from(scale);
            for i in rows.clone() {
                for j in cols.clone() {
                    q[i * n + j] = DType::F8E4M3.round(f64::from(x[i * n + j] as f32 / scale));
                }
            }
        }
    }
    (q, s)
}

fn quant_case_for(dims: &[i64], dtype: DType) -> Result<Case, String> {
    match dims {
        [m, n] if *m >= 1 && *n >= 1 && matches!(dtype, DType::BF16 | DType::F16 | DType::F32) => {
            Ok(Case::new(dtype, dims))
        }
        _ => Err(format!("the fp8 quantizers take MxN in bf16, f16 or f32, not {dims:?} {dtype}")),
    }
}

fn quant_consts(c: &Case) -> BTreeMap<String, ConstArg> {
    BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype))])
}

fn quant_gpu_cases() -> Vec<Case> {
    let mut v = vec![];
    for d in [DType::BF16, DType::F16] {
        v.push(Case::new(d, &[1000, 1000]));
        v.push(Case::new(d, &[4096, 7168]));
        v.push(Case::new(d, &[3, 130]));
    }
    v
}

fn quant_bench_cases(_quick: bool) -> Vec<Case> {
    vec![Case::new(DType::BF16, &[8192, 7168])]
}

fn quant_bytes(c: &Case) -> f64 {
    let n = (c.dims[0] * c.dims[1]) as f64;
    n * f64::from(c.dtype.bytes()) + n
}

/// Inputs of a quantizer: X with a wide dynamic range (normal samples times a per-row
/// magnitude), Q and S poisoned.
fn quant_inputs(c: &Case, rng: &mut rand::rngs::StdRng, scales: &[i64]) -> Vec<Arg> {
    let (m, n) = (c.dims[0], c.dims[1]);
    let mut x = crate::inputs::randn(rng, (m * n) as usize, 1.0);
    for (i, row) in x.chunks_mut(n as usize).enumerate() {
        let mag = 10f64.powi((i % 7) as i32 - 3);
        row.iter_mut().for_each(|v| *v *= mag);
    }
    vec![tensor(c.dtype, &[m, n], &x), poisoned(DType::F8E4M3, &[m, n]), poisoned(DType::F32, scales)]
}

macro_rules! quant_spec {
    ($name:literal, $br:expr, $bc:expr, $scales:expr, $interp:expr) => {
        Spec {
            name: $name,
            file: "quant_fp8.tile",
            kernel: $name,
            class: Class::Membound,
            peer_kernel: "",
            interp_cases: || $interp,
            gpu_cases: quant_gpu_cases,
            bench_cases: quant_bench_cases,
            consts: quant_consts,
            inputs: |c, rng| {
                let f: fn(i64, i64) -> Vec<i64> = $scales;
                quant_inputs(c, rng, &f(c.dims[0], c.dims[1]))
            },
            outputs: &[1, 2],
            // The kernels compute in f32 exactly as the reference does (IEEE division, one
            // saturating rounding to e4m3): bit for bit on an H200.
            exact: &[1, 2],
            reference: |c, a| {
                let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
                let (q, s) = quantize(&values(a, 0), m, n, $br, $bc);
                vec![q, s]
            },
            tolerance: |_| 0.0,
            bytes: quant_bytes,
            flops: None,
            case_for: quant_case_for,
            peer_config: |_| None,
        }
    };
}

/// One scale per row (`quant_fp8_rowwise`).
pub const QUANT_ROWWISE: Spec = quant_spec!(
    "quant_fp8_rowwise",
    1,
    0,
    |m, _| vec![m],
    vec![Case::new(DType::BF16, &[5, 300]).with("BLOCK_N", 512)]
);
/// One scale per row and 128 columns (`quant_fp8_blockwise`).
pub const QUANT_BLOCKWISE: Spec = quant_spec!(
    "quant_fp8_blockwise",
    1,
    128,
    |m, n| vec![m, (n + 127) / 128],
    vec![Case::new(DType::BF16, &[40, 300]).with("ROWS", 16)]
);
/// One scale per 128×128 block (`quant_fp8_block2d`).
pub const QUANT_BLOCK2D: Spec = quant_spec!(
    "quant_fp8_block2d",
    128,
    128,
    |m, n| vec![(m + 127) / 128, (n + 127) / 128],
    vec![Case::new(DType::BF16, &[130, 200])]
);

/// The microscaling quantizers' format: `(scale type, BLOCK, DIV)` of a case (constant
/// `BLOCK`: 16 → NVFP4's ue4m3 factors, 32 → MX's ue8m0; `MXFP8` marks quant_mxfp8's).
fn mx_quant_format(c: &Case, fp8: bool) -> (DType, usize, f32) {
    match (fp8, c.konst("BLOCK", if fp8 { 32 } else { 16 })) {
        (true, b) => (DType::UE8M0, b as usize, 256.0),
        (false, 16) => (DType::UE4M3, 16, 6.0),
        (false, b) => (DType::UE8M0, b as usize, 4.0),
    }
}

/// The microscaling quantization as the kernels compute it, in f32: per block of `block`
/// elements of a row, `s = SF(absmax / (div · g))`, `q = x / (s · g)` (0 where s · g is 0)
/// rounded by `elem` (fp4 codes or an fp8 value). Returns (q per element, s per block).
fn mx_quantize(
    x: &[f64],
    (m, k): (usize, usize),
    (sf, block, div): (DType, usize, f32),
    g: f32,
) -> (Vec<f64>, Vec<f64>) {
    let ks = k.div_ceil(block);
    let (mut q, mut s) = (vec![0.0; m * k], vec![0.0; m * ks]);
    for i in 0..m {
        for b in 0..ks {
            let cols = b * block..((b + 1) * block).min(k);
            let amax = cols.clone().fold(0f32, |a, j| a.max((x[i * k + j] as f32).abs()));
            let f = sf.round(f64::from(amax / (div * g)));
            s[i * ks + b] = f;
            let sg = f as f32 * g;
            for j in cols {
                q[i * k + j] = if sg > 0.0 { f64::from(x[i * k + j] as f32 / sg) } else { 0.0 };
            }
        }
    }
    (q, s)
}

/// Inputs of a microscaling quantizer: X with per-row magnitudes 10^-1…10^1 (`[M, K/2, 2]`
/// for fp4), Q and S poisoned, and for NVFP4 the per-tensor g = absmax / (6 · 448).
fn mx_quant_inputs(c: &Case, rng: &mut rand::rngs::StdRng, fp8: bool) -> Vec<Arg> {
    let (m, k) = (c.dims[0], c.dims[1]);
    let (sf, block, _) = mx_quant_format(c, fp8);
    let mut x = crate::inputs::randn(rng, (m * k) as usize, 1.0);
    for (i, row) in x.chunks_mut(k as usize).enumerate() {
        let mag = 10f64.powi((i % 3) as i32 - 1);
        row.iter_mut().for_each(|v| *v *= mag);
    }
    let ks = (k + block as i64 - 1) / block as i64;
    if fp8 {
        return vec![tensor(c.dtype, &[m, k], &x), poisoned(DType::F8E4M3, &[m, k]), poisoned(sf, &[m, ks])];
    }
    let amax = x.iter().fold(0f64, |a, v| a.max(c.dtype.round(*v).abs()));
    let g = if sf == DType::UE4M3 { (amax / (6.0 * 448.0)) as f32 } else { 1.0 };
    vec![tensor(c.dtype, &[m, k], &x), poisoned(DType::F4E2M1X2, &[m, k / 2]), poisoned(sf, &[m, ks]), Arg::F32(g)]
}

fn mx_quant_case_for(dims: &[i64], dtype: DType) -> Result<Case, String> {
    match dims {
        [m, k] if *m >= 1 && *k >= 2 && k % 2 == 0 && matches!(dtype, DType::BF16 | DType::F16 | DType::F32) => {
            Ok(Case::new(dtype, dims))
        }
        _ => Err(format!("the microscaling quantizers take MxK (K even) in bf16, f16 or f32, not {dims:?} {dtype}")),
    }
}

fn mx_quant_gpu_cases() -> Vec<Case> {
    vec![
        Case::new(DType::BF16, &[1000, 1000]),
        Case::new(DType::BF16, &[4096, 7168]),
        Case::new(DType::F16, &[3, 130]),
        Case::new(DType::BF16, &[1000, 1000]).with("BLOCK", 32),
        Case::new(DType::F32, &[77, 4098]).with("BLOCK", 32),
    ]
}

/// Packed-fp4 quantization (`quant_fp4` of `kernels/quant_mx.tile`): NVFP4 (ue4m3 per 16,
/// with g) and, at `BLOCK` 32, MXFP4 (ue8m0). Dims `[M, K]`; bit for bit.
pub const QUANT_FP4: Spec = Spec {
    name: "quant_fp4",
    file: "quant_mx.tile",
    kernel: "quant_fp4",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::BF16, &[20, 300]), Case::new(DType::F16, &[5, 132]).with("BLOCK", 32)],
    gpu_cases: mx_quant_gpu_cases,
    bench_cases: |_| vec![Case::new(DType::BF16, &[8192, 7168])],
    consts: |c| {
        let (sf, block, div) = mx_quant_format(c, false);
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("SF".to_string(), ConstArg::DType(sf)),
            ("BLOCK".to_string(), ConstArg::Int(block as i64)),
            ("DIV".to_string(), ConstArg::Float(f64::from(div))),
        ])
    },
    inputs: |c, rng| mx_quant_inputs(c, rng, false),
    outputs: &[1, 2],
    exact: &[1, 2],
    reference: |c, a| {
        let (m, k) = (c.dims[0] as usize, c.dims[1] as usize);
        let g = match a.get(3) {
            Some(Arg::F32(g)) => *g,
            _ => f32::NAN,
        };
        let (q, s) = mx_quantize(&values(a, 0), (m, k), mx_quant_format(c, false), g);
        let bytes = q.chunks(2).map(|p| f64::from(tilec_core::dtype::pack_fp4(p[0], p[1]))).collect();
        vec![bytes, s]
    },
    tolerance: |_| 0.0,
    bytes: |c| {
        let n = (c.dims[0] * c.dims[1]) as f64;
        n * f64::from(c.dtype.bytes()) + n / 2.0 + n / 16.0
    },
    flops: None,
    case_for: mx_quant_case_for,
    peer_config: |_| None,
};

/// MXFP8 quantization (`quant_mxfp8`): e4m3 elements, ue8m0 factors per 32. Bit for bit.
pub const QUANT_MXFP8: Spec = Spec {
    name: "quant_mxfp8",
    file: "quant_mx.tile",
    kernel: "quant_mxfp8",
    class: Class::Membound,
    peer_kernel: "",
    interp_cases: || vec![Case::new(DType::BF16, &[20, 300])],
    gpu_cases: || {
        vec![
            Case::new(DType::BF16, &[1000, 1000]),
            Case::new(DType::BF16, &[4096, 7168]),
            Case::new(DType::F16, &[3, 130]),
        ]
    },
    bench_cases: |_| vec![Case::new(DType::BF16, &[8192, 7168])],
    consts: |c| BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype))]),
    inputs: |c, rng| mx_quant_inputs(c, rng, true),
    outputs: &[1, 2],
    exact: &[1, 2],
    reference: |c, a| {
        let (m, k) = (c.dims[0] as usize, c.dims[1] as usize);
        let (q, s) = mx_quantize(&values(a, 0), (m, k), mx_quant_format(c, true), 1.0);
        vec![q.iter().map(|v| DType::F8E4M3.round(*v)).collect(), s]
    },
    tolerance: |_| 0.0,
    bytes: |c| {
        let n = (c.dims[0] * c.dims[1]) as f64;
        n * f64::from(c.dtype.bytes()) + n + n / 32.0
    },
    flops: None,
    case_for: mx_quant_case_for,
    peer_config: |_| None,
};

/// fp8 MLA prefill (`kernels/mla_fp8.tile`). Case dims `[B, H, S, D, DR]`; constant
/// `CAUSAL` (default 1). V is given transposed (`[B, H, D, S]`); the reference quantizes P as
/// [`fp8_attention`]'s does.
pub const MLA_FP8: Spec = Spec {
    name: "mla_fp8",
    file: "mla_fp8.tile",
    kernel: "mla_fp8",
    class: Class::Fmha,
    peer_kernel: "mla_fp8",
    interp_cases: || {
        vec![Case::new(DType::F8E4M3, &[1, 2, 72, 32, 32]).with("TILE_M", 32).with("TILE_N", 32).with("CAUSAL", 1)]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F8E4M3, &[1, 16, 1024, 128, 64]).with("CAUSAL", 1),
            Case::new(DType::F8E4M3, &[2, 16, 1000, 128, 64]).with("CAUSAL", 1),
            Case::new(DType::F8E4M3, &[1, 16, 777, 128, 64]).with("CAUSAL", 0),
        ]
    },
    bench_cases: |_| vec![Case::new(DType::F8E4M3, &[4, 16, 4096, 128, 64]).with("CAUSAL", 1)],
    consts: |c| {
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("O".to_string(), ConstArg::DType(OUT)),
            ("H".to_string(), ConstArg::Int(c.dims[1])),
            ("D".to_string(), ConstArg::Int(c.dims[3])),
            ("DR".to_string(), ConstArg::Int(c.dims[4])),
            ("CAUSAL".to_string(), ConstArg::Bool(c.konst("CAUSAL", 1) != 0)),
        ])
    },
    inputs: |c, rng| {
        let [b, h, s, d, dr] = c.dims[..] else { return vec![] };
        vec![
            normal_tensor(rng, c.dtype, &[b, h, s, d], 1.0),
            normal_tensor(rng, c.dtype, &[b, h, s, dr], 1.0),
            normal_tensor(rng, c.dtype, &[b, h, s, d], 1.0),
            normal_tensor(rng, c.dtype, &[b, s, dr], 1.0),
            normal_tensor(rng, c.dtype, &[b, h, d, s], 1.0),
            poisoned(OUT, &[b, h, s, d]),
            Arg::F32(1.0 / ((d + dr) as f32).sqrt()),
            Arg::F32(rng.gen_range(0.5..1.5)),
            Arg::F32(rng.gen_range(0.5..1.5)),
            Arg::F32(rng.gen_range(0.5..1.5)),
        ]
    },
    outputs: &[5],
    exact: &[],
    reference: |c, a| {
        let [b, h, s, d, dr] = c.dims[..].iter().map(|&x| x as usize).collect::<Vec<_>>()[..] else { return vec![] };
        let causal = c.konst("CAUSAL", 1) != 0;
        let f = |i: usize| match a.get(i) {
            Some(Arg::F32(x)) => f64::from(*x),
            _ => f64::NAN,
        };
        let (q, qr, k, kr, vt) = (values(a, 0), values(a, 1), values(a, 2), values(a, 3), values(a, 4));
        // The rope part: head bh's queries against its batch's shared rope keys.
        let rope = |bh: usize, i: usize, j: usize| {
            (0..dr).map(|x| qr[(bh * s + i) * dr + x] * kr[((bh / h) * s + j) * dr + x]).sum::<f64>()
        };
        vec![fp8_attention(&q, &k, &vt, (b, h, s, d, 1), f(6), [f(7), f(8), f(9)], causal, rope)]
    },
    tolerance: |_| 4e-2,
    bytes: |c| {
        let [b, h, s, d, dr] = c.dims[..] else { return 0.0 };
        (b * s * (h * (3 * d + dr) + dr)) as f64 + (b * h * s * d) as f64 * f64::from(OUT.bytes())
    },
    flops: Some(super::compute::mla_flops),
    case_for: |dims, dtype| match dims {
        [_, _, _, _, _] if dtype.is_fp8() => Ok(Case::new(dtype, dims)),
        _ => Err(format!("mla_fp8 takes BxHxSxDxDR in f8e4m3, not {dims:?} {dtype}")),
    },
    peer_config: |_| None,
};
