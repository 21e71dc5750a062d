//! The tensor-core kernels: matmul, bmm, grouped GEMM, FMHA and the tutorial steps, MLA
//! (prefill and decode), grouped-query and paged decode attention.

use crate::inputs::{normal_tensor, numel, poisoned, tensor, values};
use crate::{storage_tolerance, Arg, Case, Class, Spec};
use rand::Rng;
use std::collections::BTreeMap;
use tilec_core::DType;
use tilec_frontend::ConstArg;
use tilec_interp::reference;

fn t_const(c: &Case) -> BTreeMap<String, ConstArg> {
    BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype))])
}

fn no_peer(_: &Case) -> Option<String> {
    None
}

fn dtype_word(d: DType) -> &'static str {
    match d {
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        _ => d.name(),
    }
}

/// Matmul case dims: `[M, N, K]`.
fn mnk(c: &Case) -> (usize, usize, usize) {
    (c.dims[0] as usize, c.dims[1] as usize, c.dims[2] as usize)
}

/// C = A · B (kernels/matmul.tile). Case dims `[M, N, K]`.
pub const MATMUL: Spec = Spec {
    name: "matmul",
    file: "matmul.tile",
    kernel: "matmul",
    class: Class::Gemm,
    peer_kernel: "gemm",
    interp_cases: || {
        vec![Case::new(DType::F16, &[70, 90, 100])
            .with("TILE_M", 32)
            .with("TILE_N", 32)
            .with("TILE_K", 32)
            .with("GROUP_M", 2)]
    },
    gpu_cases: || {
        let mut v = vec![];
        for d in [DType::F16, DType::BF16] {
            v.push(Case::new(d, &[1000, 1000, 1000]));
            v.push(Case::new(d, &[1, 4096, 4096]));
            v.push(Case::new(d, &[512, 256, 8]));
            v.push(Case::new(d, &[4096, 4096, 4096]));
        }
        v
    },
    bench_cases: |quick| {
        let sizes: &[i64] = if quick { &[4096] } else { &[2048, 4096, 8192] };
        let mut v = vec![];
        for d in [DType::F16, DType::BF16] {
            v.extend(sizes.iter().map(|&n| Case::new(d, &[n, n, n])));
        }
        v
    },
    consts: t_const,
    inputs: |c, rng| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
        vec![
            normal_tensor(rng, c.dtype, &[m, k], 1.0),
            normal_tensor(rng, c.dtype, &[k, n], 1.0),
            poisoned(c.dtype, &[m, n]),
        ]
    },
    outputs: &[2],
    exact: &[],
    reference: |c, a| {
        let (m, n, k) = mnk(c);
        vec![reference::matmul(&values(a, 0), &values(a, 1), m, k, n)]
    },
    tolerance: storage_tolerance,
    bytes: |c| {
        let (m, n, k) = (c.dims[0], c.dims[1], c.dims[2]);
        (m * k + k * n + m * n) as f64 * f64::from(c.dtype.bytes())
    },
    flops: Some(|c| 2.0 * c.dims.iter().map(|&d| d as f64).product::<f64>()),
    case_for: |dims, dtype| match dims {
        [m, n, k] if *m >= 1 && *n >= 1 && *k >= 1 && matches!(dtype, DType::F16 | DType::BF16) => {
            Ok(Case::new(dtype, dims))
        }
        [n] if *n >= 1 && matches!(dtype, DType::F16 | DType::BF16) => Ok(Case::new(dtype, &[*n, *n, *n])),
        _ => Err(format!("matmul takes MxNxK (or N for N³) in f16 or bf16, not {dims:?} {dtype}")),
    },
    peer_config: |c| {
        let [m, n, k] = c.dims[..] else { return None };
        (m == n && n == k).then(|| format!("M=N=K={m} {}", dtype_word(c.dtype)))
    },
};

/// Batched matmul (kernels/bmm.tile). Case dims `[batch, M, N, K]`.
pub const BMM: Spec = Spec {
    name: "bmm",
    file: "bmm.tile",
    kernel: "bmm",
    class: Class::Gemm,
    peer_kernel: "bmm",
    interp_cases: || {
        vec![Case::new(DType::BF16, &[2, 40, 30, 50]).with("TILE_M", 32).with("TILE_N", 32).with("TILE_K", 32)]
    },
    gpu_cases: || vec![Case::new(DType::F16, &[3, 1000, 1000, 1000]), Case::new(DType::BF16, &[8, 512, 256, 72])],
    bench_cases: |_| vec![Case::new(DType::F16, &[16, 1024, 1024, 1024])],
    consts: t_const,
    inputs: |c, rng| {
        let [b, m, n, k] = c.dims[..] else { return vec![] };
        vec![
            normal_tensor(rng, c.dtype, &[b, m, k], 1.0),
            normal_tensor(rng, c.dtype, &[b, k, n], 1.0),
            poisoned(c.dtype, &[b, m, n]),
        ]
    },
    outputs: &[2],
    exact: &[],
    reference: |c, a| {
        let [b, m, n, k] = c.dims[..].iter().map(|&x| x as usize).collect::<Vec<_>>()[..] else { return vec![] };
        let (av, bv) = (values(a, 0), values(a, 1));
        let mut want = vec![];
        for i in 0..b {
            want.extend(reference::matmul(&av[i * m * k..(i + 1) * m * k], &bv[i * k * n..(i + 1) * k * n], m, k, n));
        }
        vec![want]
    },
    tolerance: storage_tolerance,
    bytes: |c| {
        let [b, m, n, k] = c.dims[..] else { return 0.0 };
        (b * (m * k + k * n + m * n)) as f64 * f64::from(c.dtype.bytes())
    },
    flops: Some(|c| 2.0 * c.dims.iter().map(|&d| d as f64).product::<f64>()),
    case_for: |dims, dtype| match dims {
        [b, m, n, k] if *b >= 1 && *m >= 1 && *n >= 1 && *k >= 1 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("bmm takes BxMxNxK, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Grouped GEMM (kernels/group_gemm.tile). Case dims `[rows, groups, K, N]`: the rows are
/// split unevenly between the groups (quadratically: with few rows, most groups empty or of
/// one or two rows and the last ones larger, as a decode step routes), with group 1 empty
/// when there are three or more.
pub const GROUP_GEMM: Spec = Spec {
    name: "group_gemm",
    file: "group_gemm.tile",
    kernel: "group_gemm",
    class: Class::Gemm,
    peer_kernel: "group_gemm",
    interp_cases: || {
        vec![
            Case::new(DType::F16, &[40, 3, 48, 40]).with("TILE_M", 16).with("TILE_N", 32).with("TILE_K", 16),
            Case::new(DType::BF16, &[7, 8, 32, 24])
                .with("TILE_M", 16)
                .with("TILE_N", 16)
                .with("TILE_K", 16)
                .with("GP", 8),
        ]
    },
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[3000, 8, 1024, 512]),
            Case::new(DType::BF16, &[333, 4, 200, 72]),
            Case::new(DType::F16, &[96, 64, 512, 384]).with("TILE_M", 16),
            Case::new(DType::BF16, &[6, 64, 2048, 256]).with("TILE_M", 16),
            Case::new(DType::F16, &[700, 64, 256, 136]),
        ]
    },
    // DeepSeek-V2-Lite's experts (hidden 2048, intermediate 1408: gate/up 2048 → 2816, down
    // 1408 → 2048) at a decode step of batch 16 and 1 (96 and 6 routed rows, 16-row tiles),
    // and a prefill's share.
    bench_cases: |quick| {
        let mut v = vec![
            Case::new(DType::BF16, &[96, 64, 2048, 2816]).with("TILE_M", 16),
            Case::new(DType::BF16, &[96, 64, 1408, 2048]).with("TILE_M", 16),
            Case::new(DType::BF16, &[6, 64, 2048, 2816]).with("TILE_M", 16),
        ];
        if !quick {
            v.push(Case::new(DType::BF16, &[96, 64, 2048, 2816]));
            v.push(Case::new(DType::BF16, &[3072, 64, 2048, 2816]));
        }
        v
    },
    consts: t_const,
    inputs: |c, rng| {
        let [rows, g, k, n] = c.dims[..] else { return vec![] };
        let offsets = group_offsets(g, rows);
        vec![
            normal_tensor(rng, c.dtype, &[rows, k], 1.0),
            normal_tensor(rng, c.dtype, &[g, k, n], 1.0),
            poisoned(c.dtype, &[rows, n]),
            tensor(DType::I32, &[g + 1], &offsets.iter().map(|&o| o as f64).collect::<Vec<_>>()),
        ]
    },
    outputs: &[2],
    exact: &[],
    reference: |c, a| {
        let [rows, g, k, n] = c.dims[..].iter().map(|&x| x as usize).collect::<Vec<_>>()[..] else { return vec![] };
        let offsets = group_offsets(g as i64, rows as i64);
        let (xv, wv) = (values(a, 0), values(a, 1));
        let mut want = vec![];
        for gi in 0..g {
            let (s, e) = (offsets[gi] as usize, offsets[gi + 1] as usize);
            let wg = &wv[gi * k * n..(gi + 1) * k * n];
            want.extend(reference::matmul(&xv[s * k..e * k], wg, e - s, k, n));
        }
        vec![want]
    },
    tolerance: storage_tolerance,
    // The weights of the groups with rows: an empty group's are never read.
    bytes: |c| {
        let [rows, g, k, n] = c.dims[..] else { return 0.0 };
        let used = group_offsets(g, rows).windows(2).filter(|w| w[1] > w[0]).count() as i64;
        (rows * k + used * k * n + rows * n) as f64 * f64::from(c.dtype.bytes())
    },
    flops: Some(|c| 2.0 * (c.dims[0] * c.dims[2] * c.dims[3]) as f64),
    case_for: |dims, dtype| match dims {
        [rows, g, k, n] if *rows >= 0 && *g >= 1 && *k >= 1 && *n >= 1 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("group_gemm takes ROWSxGxKxN, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// group_gemm_aligned (kernels/group_gemm.tile): case dims `[rows, groups, K, N]`, the rows
/// split as group_gemm's and each group padded to a multiple of TILE_M (which the case sets),
/// then one more tile of rows past the last group, which the kernel must leave alone (Y
/// starts at zero). The padding rows are products like the others.
pub const GROUP_GEMM_ALIGNED: Spec = Spec {
    name: "group_gemm_aligned",
    kernel: "group_gemm_aligned",
    peer_kernel: "",
    // group_gemm's interpreter cases (TILE_M set in each: the padding follows it).
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[3000, 8, 1024, 512]).with("TILE_M", 128),
            Case::new(DType::BF16, &[333, 4, 200, 72]).with("TILE_M", 64),
            Case::new(DType::F16, &[96, 64, 512, 384]).with("TILE_M", 16),
            Case::new(DType::BF16, &[6, 64, 2048, 256]).with("TILE_M", 16),
            Case::new(DType::F16, &[700, 64, 256, 136]).with("TILE_M", 64),
        ]
    },
    bench_cases: |quick| {
        let mut v = vec![
            Case::new(DType::BF16, &[96, 64, 2048, 2816]).with("TILE_M", 16),
            Case::new(DType::BF16, &[96, 64, 1408, 2048]).with("TILE_M", 16),
            Case::new(DType::BF16, &[6, 64, 2048, 2816]).with("TILE_M", 16),
        ];
        if !quick {
            v.push(Case::new(DType::BF16, &[3072, 64, 2048, 2816]).with("TILE_M", 64));
            v.push(Case::new(DType::BF16, &[3072, 64, 2048, 2816]).with("TILE_M", 128));
        }
        v
    },
    consts: |c| {
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("TILE_M".to_string(), ConstArg::Int(c.konst("TILE_M", 64))),
        ])
    },
    inputs: |c, rng| {
        let [_, g, k, n] = c.dims[..] else { return vec![] };
        let (offsets, r) = aligned_offsets(c);
        vec![
            normal_tensor(rng, c.dtype, &[r, k], 1.0),
            normal_tensor(rng, c.dtype, &[g, k, n], 1.0),
            tensor(c.dtype, &[r, n], &vec![0.0; (r * n) as usize]),
            tensor(DType::I32, &[g + 1], &offsets.iter().map(|&o| o as f64).collect::<Vec<_>>()),
        ]
    },
    reference: |c, a| {
        let [_, g, k, n] = c.dims[..].iter().map(|&x| x as usize).collect::<Vec<_>>()[..] else { return vec![] };
        let (offsets, r) = aligned_offsets(c);
        let (xv, wv) = (values(a, 0), values(a, 1));
        let mut want = vec![0.0; r as usize * n];
        for gi in 0..g {
            let (s, e) = (offsets[gi] as usize, offsets[gi + 1] as usize);
            let y = reference::matmul(&xv[s * k..e * k], &wv[gi * k * n..(gi + 1) * k * n], e - s, k, n);
            want[s * n..e * n].copy_from_slice(&y);
        }
        vec![want]
    },
    bytes: |c| {
        let [rows, g, k, n] = c.dims[..] else { return 0.0 };
        let used = group_offsets(g, rows).windows(2).filter(|w| w[1] > w[0]).count() as i64;
        let (offsets, _) = aligned_offsets(c);
        let padded = offsets.last().copied().unwrap_or(0);
        (padded * (k + n) + used * k * n) as f64 * f64::from(c.dtype.bytes())
    },
    flops: Some(|c| 2.0 * (aligned_offsets(c).0.last().copied().unwrap_or(0) * c.dims[2] * c.dims[3]) as f64),
    case_for: |dims, dtype| match dims {
        [rows, g, k, n] if *rows >= 0 && *g >= 1 && *k >= 1 && *n >= 1 => {
            Ok(Case::new(dtype, dims).with("TILE_M", 128))
        }
        _ => Err(format!("group_gemm_aligned takes ROWSxGxKxN, not {dims:?}")),
    },
    ..GROUP_GEMM
};

/// group_gemm_aligned's offsets for a case (group_gemm's groups, each padded to a multiple
/// of TILE_M) and its row count (one tile more than the groups fill).
fn aligned_offsets(c: &Case) -> (Vec<i64>, i64) {
    let tm = c.konst("TILE_M", 64);
    let (mut offsets, mut end) = (vec![0], 0);
    for w in group_offsets(c.dims[1], c.dims[0]).windows(2) {
        end += (w[1] - w[0] + tm - 1) / tm * tm;
        offsets.push(end);
    }
    (offsets, end + tm)
}

/// Group boundaries over `rows` rows: uneven, and group 1 empty when there are 3 or more.
fn group_offsets(groups: i64, rows: i64) -> Vec<i64> {
    let mut cuts: Vec<i64> = (1..groups).map(|i| (rows * i * i) / (groups * groups)).collect();
    if groups >= 3 {
        cuts[1] = cuts[0];
    }
    let mut v = vec![0];
    v.extend(cuts);
    v.push(rows);
    v
}

/// Attention over `[B, H, S, D]` queries and `[B, H / group, S, D]` keys and values, per
/// (batch, head): query head h reads K/V head h / group.
fn mha(q: &[f64], k: &[f64], v: &[f64], dims: &[usize], group: usize, scale: f64, causal: bool) -> Vec<f64> {
    let [b, h, s, d] = dims[..] else { return vec![] };
    let hk = h / group.max(1);
    let mut out = vec![0.0; b * h * s * d];
    // One (batch, head) per row of `out`, on every core.
    reference::par_rows(&mut out, s * d, |bh, head| {
        let r = bh * s * d..(bh + 1) * s * d;
        let kvh = (bh / h) * hk + (bh % h) / group.max(1);
        let kr = kvh * s * d..(kvh + 1) * s * d;
        head.copy_from_slice(&reference::attention(&q[r], &k[kr.clone()], &v[kr], s, s, d, scale, causal));
    });
    out
}

/// The case's `GROUP` (query heads per K/V head), 1 when it has none.
fn group(c: &Case) -> usize {
    c.konst("GROUP", 1).max(1) as usize
}

/// The shape of K and V: `H / GROUP` heads.
fn kv_dims(c: &Case) -> Vec<i64> {
    let mut d = c.dims.clone();
    d[1] /= group(c) as i64;
    d
}

fn fmha_dims(c: &Case) -> Vec<usize> {
    c.dims.iter().map(|&x| x as usize).collect()
}

/// FMHA forward (kernels/fmha.tile). Case dims `[B, H, S, D]`; constant `CAUSAL` (0 or 1).
pub const FMHA: Spec = Spec {
    name: "fmha",
    file: "fmha.tile",
    kernel: "fmha",
    class: Class::Fmha,
    peer_kernel: "fmha",
    interp_cases: || {
        // 80 is not a multiple of TILE_N: the last key tile is masked.
        let mut v = [0, 1]
            .map(|causal| {
                Case::new(DType::F16, &[1, 2, 80, 64]).with("TILE_M", 32).with("TILE_N", 32).with("CAUSAL", causal)
            })
            .to_vec();
        // Grouped-query attention: 6 query heads over 2 K/V heads.
        v.push(
            Case::new(DType::F16, &[1, 6, 40, 64])
                .with("TILE_M", 32)
                .with("TILE_N", 32)
                .with("CAUSAL", 1)
                .with("GROUP", 3),
        );
        // sm_103a's two query tiles a block (its default at D = 128): 80 rows are two blocks of
        // 2 x 32, the second one's tile A ragged and its tile B past the rows; in the order of
        // mma.sync and, with AHEAD (tcgen05's), with the scores a key tile ahead (the last
        // iteration's of the key tile past the end).
        for causal in [0, 1] {
            for ahead in [0, 1] {
                v.push(
                    Case::new(DType::F16, &[1, 2, 80, 64])
                        .with("TILE_M", 32)
                        .with("TILE_N", 32)
                        .with("CAUSAL", causal)
                        .with("OVERLAP", 1)
                        .with("Q_TILES", 2)
                        .with("AHEAD", ahead),
                );
            }
            // sm_103a's tcgen05 order: one query tile (there 256 rows, a warpgroup a 128-row
            // block) with the scores a key tile ahead; 80 rows are a 64-row block and a ragged one.
            // And its two key tiles an iteration (D = 64's): 80 keys are three 32-key tiles, the
            // last iteration's second one past the keys (all masked); 128 keys are four.
            for (seq, key_tiles) in [(80, 1), (80, 2), (128, 2)] {
                v.push(
                    Case::new(DType::F16, &[1, 2, seq, 64])
                        .with("TILE_M", 64)
                        .with("TILE_N", 32)
                        .with("CAUSAL", causal)
                        .with("OVERLAP", 1)
                        .with("Q_TILES", 1)
                        .with("AHEAD", 1)
                        .with("KEY_TILES", key_tiles),
                );
            }
        }
        v
    },
    gpu_cases: || {
        let mut v = vec![];
        for d in [DType::F16, DType::BF16] {
            for causal in [0, 1] {
                v.push(Case::new(d, &[1, 2, 1024, 128]).with("CAUSAL", causal));
                v.push(Case::new(d, &[2, 4, 1024, 64]).with("CAUSAL", causal));
                v.push(Case::new(d, &[1, 2, 1000, 128]).with("CAUSAL", causal));
                v.push(Case::new(d, &[1, 2, 3001, 64]).with("CAUSAL", causal));
            }
        }
        v.push(Case::new(DType::F16, &[1, 1, 17, 64]).with("CAUSAL", 1));
        v.push(Case::new(DType::F16, &[4, 32, 4096, 128]));
        // Qwen2-7B's prefill: 28 query heads over 4 K/V heads.
        v.push(Case::new(DType::F16, &[2, 28, 512, 128]).with("CAUSAL", 1).with("GROUP", 7));
        v.push(Case::new(DType::BF16, &[1, 28, 1000, 128]).with("CAUSAL", 1).with("GROUP", 7));
        v
    },
    bench_cases: |quick| {
        let seqs: &[i64] = if quick { &[4096] } else { &[1024, 2048, 4096, 8192, 16384] };
        let mut v = vec![];
        for d in [128, 64] {
            for causal in [0, 1] {
                v.extend(seqs.iter().map(|&s| Case::new(DType::F16, &[4, 32, s, d]).with("CAUSAL", causal)));
            }
        }
        v
    },
    consts: |c| {
        let mut m = t_const(c);
        m.insert("H".into(), ConstArg::Int(c.dims[1]));
        m.insert("TILE_D".into(), ConstArg::Int(c.dims[3]));
        m.insert("CAUSAL".into(), ConstArg::Bool(c.konst("CAUSAL", 0) != 0));
        if c.consts.iter().any(|(n, _)| n == "OVERLAP") {
            m.insert("OVERLAP".into(), ConstArg::Bool(c.konst("OVERLAP", 0) != 0));
        }
        m
    },
    inputs: |c, rng| {
        let d = c.dims[3];
        vec![
            normal_tensor(rng, c.dtype, &c.dims, 1.0),
            normal_tensor(rng, c.dtype, &kv_dims(c), 1.0),
            normal_tensor(rng, c.dtype, &kv_dims(c), 1.0),
            poisoned(c.dtype, &c.dims),
            Arg::F32(1.0 / (d as f32).sqrt()),
        ]
    },
    outputs: &[3],
    exact: &[],
    reference: |c, a| {
        let scale = 1.0 / (c.dims[3] as f64).sqrt();
        let causal = c.konst("CAUSAL", 0) != 0;
        vec![mha(&values(a, 0), &values(a, 1), &values(a, 2), &fmha_dims(c), group(c), scale, causal)]
    },
    tolerance: storage_tolerance,
    bytes: |c| 4.0 * numel(&c.dims) as f64 * f64::from(c.dtype.bytes()),
    flops: Some(|c| {
        let [b, h, s, d] = c.dims[..] else { return 0.0 };
        let causal = if c.konst("CAUSAL", 0) != 0 { 0.5 } else { 1.0 };
        4.0 * (b * h * s * s * d) as f64 * causal
    }),
    case_for: |dims, dtype| match dims {
        [b, h, s, d] if *b >= 1 && *h >= 1 && *s >= 1 && (*d == 64 || *d == 128) => Ok(Case::new(dtype, dims)),
        _ => Err(format!("fmha takes BxHxSxD with D 64 or 128, not {dims:?}")),
    },
    peer_config: |c| {
        let [b, h, s, d] = c.dims[..] else { return None };
        (c.dtype == DType::F16).then(|| format!("B{b} H{h} S{s} D{d} causal={}", c.konst("CAUSAL", 0)))
    },
};

/// The seed tutorial's steps (kernels/tutorial/): the same problem as [`FMHA`].
/// What the tutorial's steps share with [`FMHA`]: its cases less the grouped-query ones,
/// those of two query tiles a block and those of the scores a key tile ahead (the steps
/// predate `GROUP`, `Q_TILES` and `AHEAD`).
const FMHA_STEP: Spec =
    Spec { interp_cases: || ungrouped((FMHA.interp_cases)()), gpu_cases: || ungrouped((FMHA.gpu_cases)()), ..FMHA };

fn ungrouped(cases: Vec<Case>) -> Vec<Case> {
    cases.into_iter().filter(|c| group(c) == 1 && c.konst("Q_TILES", 1) == 1 && c.konst("AHEAD", 0) == 0).collect()
}

pub const FMHA_STEPS: [Spec; 6] = [
    Spec {
        name: "fmha_step2_mma",
        file: "tutorial/fmha_step2_mma.tile",
        kernel: "fmha_step2_mma",
        bench_cases: |_| vec![],
        ..FMHA_STEP
    },
    Spec {
        name: "fmha_step3_exp2",
        file: "tutorial/fmha_step3_exp2.tile",
        kernel: "fmha_step3_exp2",
        bench_cases: |_| vec![],
        ..FMHA_STEP
    },
    Spec {
        name: "fmha_step4_load_order",
        file: "tutorial/fmha_step4_load_order.tile",
        kernel: "fmha_step4_load_order",
        bench_cases: |_| vec![],
        ..FMHA_STEP
    },
    Spec {
        name: "fmha_step5_latency",
        file: "tutorial/fmha_step5_latency.tile",
        kernel: "fmha_step5_latency",
        bench_cases: |_| vec![],
        ..FMHA_STEP
    },
    Spec {
        name: "fmha_step6_occupancy",
        file: "tutorial/fmha_step6_occupancy.tile",
        kernel: "fmha_step6_occupancy",
        bench_cases: |_| vec![],
        ..FMHA_STEP
    },
    Spec {
        name: "fmha_step7_approx_div",
        file: "tutorial/fmha_step7_approx_div.tile",
        kernel: "fmha_step7_approx_div",
        bench_cases: |_| vec![],
        ..FMHA_STEP
    },
];

/// The floating-point operations of an MLA prefill case `[B, H, S, D, DR]` (`mla`,
/// `mla_fp8`): the scores over D + DR, P·V over D, half of each under `CAUSAL` (its default).
pub(crate) fn mla_flops(c: &Case) -> f64 {
    let [b, h, s, d, dr] = c.dims[..] else { return 0.0 };
    let causal = if c.konst("CAUSAL", 1) != 0 { 0.5 } else { 1.0 };
    2.0 * (b * h * s * s * (2 * d + dr)) as f64 * causal
}

/// MLA prefill (kernels/mla.tile). Case dims `[B, H, S, D, DR]`; constant `CAUSAL`.
pub const MLA: Spec = Spec {
    name: "mla",
    file: "mla.tile",
    kernel: "mla",
    class: Class::Fmha,
    peer_kernel: "mla",
    interp_cases: || {
        [1, 0]
            .map(|causal| {
                Case::new(DType::BF16, &[1, 2, 64, 32, 16]).with("TILE_M", 32).with("TILE_N", 32).with("CAUSAL", causal)
            })
            .into_iter()
            // A sequence that is not a multiple of TILE_N: the last key tile is masked.
            .chain([Case::new(DType::BF16, &[1, 2, 72, 32, 16])
                .with("TILE_M", 32)
                .with("TILE_N", 32)
                .with("CAUSAL", 0)])
            // sm_103a's order (the scores a key tile ahead, P·V of the previous one beside
            // them, the conditional rescale): 72 rows a 64-row block and a ragged one.
            .chain([1, 0].map(|causal| {
                Case::new(DType::BF16, &[1, 2, 72, 32, 16])
                    .with("TILE_M", 64)
                    .with("TILE_N", 32)
                    .with("CAUSAL", causal)
                    .with("AHEAD", 1)
            }))
            .collect()
    },
    gpu_cases: || {
        // And sequences that are not a multiple of the key tiles (the last one masked).
        let mut v = vec![Case::new(DType::BF16, &[1, 16, 1024, 128, 64]).with("CAUSAL", 1)];
        v.extend([0, 1].map(|causal| Case::new(DType::BF16, &[2, 16, 1000, 128, 64]).with("CAUSAL", causal)));
        v
    },
    // DeepSeek-V2-Lite's prefill heads (mla_fp8's case in 16 bits).
    bench_cases: |_| vec![Case::new(DType::BF16, &[4, 16, 4096, 128, 64]).with("CAUSAL", 1)],
    consts: |c| {
        let mut m = t_const(c);
        m.insert("H".into(), ConstArg::Int(c.dims[1]));
        m.insert("D".into(), ConstArg::Int(c.dims[3]));
        m.insert("DR".into(), ConstArg::Int(c.dims[4]));
        m.insert("CAUSAL".into(), ConstArg::Bool(c.konst("CAUSAL", 1) != 0));
        m
    },
    inputs: |c, rng| {
        let [b, h, s, d, dr] = c.dims[..] else { return vec![] };
        vec![
            normal_tensor(rng, c.dtype, &[b, h, s, d], 1.0),
            normal_tensor(rng, c.dtype, &[b, h, s, dr], 1.0),
            normal_tensor(rng, c.dtype, &[b, h, s, d], 1.0),
            normal_tensor(rng, c.dtype, &[b, s, dr], 1.0),
            normal_tensor(rng, c.dtype, &[b, h, s, d], 1.0),
            poisoned(c.dtype, &[b, h, s, d]),
            Arg::F32(1.0 / ((d + dr) as f32).sqrt()),
        ]
    },
    outputs: &[5],
    exact: &[],
    reference: |c, a| {
        let [b, h, s, d, dr] = c.dims[..].iter().map(|&x| x as usize).collect::<Vec<_>>()[..] else { return vec![] };
        let causal = c.konst("CAUSAL", 1) != 0;
        let scale = 1.0 / ((d + dr) as f64).sqrt();
        let (qv, qrv, kv, krv, vv) = (values(a, 0), values(a, 1), values(a, 2), values(a, 3), values(a, 4));
        let mut want = vec![0.0; b * h * s * d];
        reference::par_rows(&mut want, s * d, |bh, head| {
            let bi = bh / h;
            let r = bh * s * d..(bh + 1) * s * d;
            let qrh = &qrv[bh * s * dr..(bh + 1) * s * dr];
            let krb = &krv[bi * s * dr..(bi + 1) * s * dr];
            let extra = |i: usize, j: usize| (0..dr).map(|x| qrh[i * dr + x] * krb[j * dr + x]).sum::<f64>();
            head.copy_from_slice(&reference::attention_split(
                &qv[r.clone()],
                &kv[r.clone()],
                &vv[r],
                s,
                s,
                d,
                d,
                scale,
                causal,
                extra,
            ));
        });
        vec![want]
    },
    tolerance: storage_tolerance,
    bytes: |c| {
        let [b, h, s, d, dr] = c.dims[..] else { return 0.0 };
        (b * s * (h * (4 * d + dr) + dr)) as f64 * f64::from(c.dtype.bytes())
    },
    flops: Some(mla_flops),
    case_for: |dims, dtype| match dims {
        [_, _, _, _, _] => Ok(Case::new(dtype, dims)),
        _ => Err(format!("mla takes BxHxSxDxDR, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Decode reference: for each sequence and query head, attention over the first `n` keys
/// of the KV head it shares (`k(b, kv_head, j, x)`).
#[allow(clippy::too_many_arguments)]
fn decode_reference(
    q: &[f64],
    k: &dyn Fn(usize, usize, usize, usize) -> f64,
    v: &dyn Fn(usize, usize, usize, usize) -> f64,
    lens: &[f64],
    hq: usize,
    g: usize,
    d: usize,
    scale: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; lens.len() * hq * d];
    for (bi, &n) in lens.iter().enumerate() {
        let n = n as usize;
        // No key to attend to: the output is defined as zeros.
        if n == 0 {
            continue;
        }
        for h in 0..hq {
            let kh = h / g;
            let qh = &q[(bi * hq + h) * d..(bi * hq + h + 1) * d];
            let kk: Vec<f64> = (0..n).flat_map(|j| (0..d).map(move |x| (j, x))).map(|(j, x)| k(bi, kh, j, x)).collect();
            let vv: Vec<f64> = (0..n).flat_map(|j| (0..d).map(move |x| (j, x))).map(|(j, x)| v(bi, kh, j, x)).collect();
            let o = reference::attention(qh, &kk, &vv, 1, n, d, scale, false);
            out[(bi * hq + h) * d..(bi * hq + h + 1) * d].copy_from_slice(&o);
        }
    }
    out
}

/// Sequence lengths of a decode case: uneven, the last one the longest (`smax`); all `smax`
/// for a [`Case::full_lengths`] case.
fn seq_lens(c: &Case, b: i64, smax: i64) -> Vec<f64> {
    if c.full_lengths {
        return vec![smax as f64; b.max(0) as usize];
    }
    (0..b).map(|i| (smax - (b - 1 - i) * smax / (2 * b.max(1))).max(1) as f64).collect()
}

/// [`seq_lens`] with the edge lengths first where the batch has room: 0 (no key: the output
/// is zeros), 1 and 17 (a partial first tile).
fn seq_lens_edges(c: &Case, b: i64, smax: i64) -> Vec<f64> {
    let mut lens = seq_lens(c, b, smax);
    // The last sequence keeps the longest length.
    let n = lens.len().saturating_sub(1);
    if !c.full_lengths {
        for (l, e) in lens[..n].iter_mut().zip([0.0f64, 1.0, 17.0]) {
            *l = e.min(smax as f64);
        }
    }
    lens
}

/// The outputs of a split grouped decode case (its dims as [`decode_dims`] reads them): every
/// query head's attention over its sequence's rows of its KV head (`k` and `v` read the
/// cache in its own addressing), and the counters, back at zero.
fn split_decode_outputs(
    c: &Case,
    a: &[Arg],
    k: &dyn Fn(usize, usize, usize, usize) -> f64,
    v: &dyn Fn(usize, usize, usize, usize) -> f64,
) -> Vec<Vec<f64>> {
    let Some(dims) = decode_dims(c) else { return vec![] };
    let [b, hq, hkv, smax, d, _] = dims.map(|x| x as usize);
    let lens = seq_lens_edges(c, b as i64, smax as i64);
    vec![decode_reference(&values(a, 0), k, v, &lens, hq, hq / hkv, d, 1.0 / (d as f64).sqrt()), vec![0.0; b * hkv]]
}

/// A split decode case's five dims (grouped and paged: `[B, HQ, HKV, SMAX, D]`; MLA:
/// `[B, H, SMAX, DC, DR]`) and the most splits `P` (the kernel's `SPLITS` and its workspace's
/// extent; a sixth dim, 32 when absent, 1 never splits).
fn decode_dims(c: &Case) -> Option<[i64; 6]> {
    match c.dims[..] {
        [a, b, c2, d, e] => Some([a, b, c2, d, e, 32]),
        [a, b, c2, d, e, p] => Some([a, b, c2, d, e, p]),
        _ => None,
    }
}

/// The query rows a grouped decode block holds: G padded to a power of two, at least 16.
fn decode_gp(c: &Case, hq: i64, hkv: i64) -> i64 {
    c.konst("GP", decode_gs(c, hq, hkv).max(16))
}

/// The rows of a split's partial in the workspace: G padded to a power of two.
fn decode_gs(c: &Case, hq: i64, hkv: i64) -> i64 {
    c.konst("GS", ((hq / hkv.max(1)).max(1) as u64).next_power_of_two() as i64)
}

/// Issue 30's decode points, (B, L): B = 1, 4, 16, 64 by L = 1k, 4k, 16k, 32k, every sequence
/// at the full length (bench/peers.py's DECODE_POINTS and MLA_POINTS are the same list);
/// `quick`: B1 and B16 at 4k.
fn decode_points(quick: bool) -> Vec<(i64, i64)> {
    if quick {
        return vec![(1, 4096), (16, 4096)];
    }
    [1, 4, 16, 64].into_iter().flat_map(|b| [1024, 4096, 16384, 32768].map(|l| (b, l))).collect()
}

/// Grouped-query decode attention (kernels/attention_decode_grouped.tile). Case dims
/// `[B, HQ, HKV, SMAX, D]`.
pub const DECODE_GROUPED: Spec = Spec {
    name: "attention_decode_grouped",
    file: "attention_decode_grouped.tile",
    kernel: "attention_decode_grouped",
    class: Class::Decode,
    peer_kernel: "decode",
    // Split over the key length (3 chunks of one 32-key tile, the lengths 0, 1, 17, ragged),
    // and with a workspace of one split (each block writes its output).
    interp_cases: || {
        vec![
            Case::new(DType::F16, &[4, 8, 2, 80, 64]).with("TILE_N", 32).with("MIN_TILES", 1),
            Case::new(DType::F16, &[3, 8, 2, 80, 64, 1]).with("TILE_N", 32),
        ]
    },
    // Qwen2-7B: 28 query and 4 KV heads of dim 128; B = 1 splits the most (9 chunks, the
    // last one ragged), B = 3 and 5 into 2 and 3, B = 16 not at all.
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[3, 28, 4, 1000, 128]),
            Case::new(DType::F16, &[1, 28, 4, 4097, 128]),
            Case::new(DType::F16, &[16, 28, 4, 4096, 128]),
            Case::new(DType::BF16, &[5, 28, 4, 3333, 128]),
            Case::new(DType::F16, &[4, 28, 4, 2000, 128, 1]),
        ]
    },
    // The peers' workload (bench/peers.py's DECODE_POINTS): every sequence at the full
    // length, B = 1, 4, 16, 64 by L = 1k, 4k, 16k, 32k.
    bench_cases: |quick| {
        let mut v = vec![];
        for (b, l) in decode_points(quick) {
            v.push(Case::new(DType::F16, &[b, 28, 4, l, 128]).full_lengths());
        }
        v
    },
    consts: |c| {
        let Some([_, hq, hkv, _, d, p]) = decode_dims(c) else { return t_const(c) };
        let mut m = t_const(c);
        m.insert("G".into(), ConstArg::Int(hq / hkv.max(1)));
        m.insert("GP".into(), ConstArg::Int(decode_gp(c, hq, hkv)));
        m.insert("D".into(), ConstArg::Int(d));
        m.insert("SPLITS".into(), ConstArg::Int(p));
        m
    },
    inputs: |c, rng| {
        let Some([b, hq, hkv, smax, d, p]) = decode_dims(c) else { return vec![] };
        let gs = decode_gs(c, hq, hkv);
        vec![
            normal_tensor(rng, c.dtype, &[b, hq, d], 1.0),
            normal_tensor(rng, c.dtype, &[b, hkv, smax, d], 1.0),
            normal_tensor(rng, c.dtype, &[b, hkv, smax, d], 1.0),
            poisoned(c.dtype, &[b, hq, d]),
            tensor(DType::I32, &[b], &seq_lens_edges(c, b, smax)),
            // The workspace: whatever it holds on entry must not matter.
            poisoned(DType::F32, &[b, hkv, p, gs, d]),
            poisoned(DType::F32, &[b, hkv, p, 2, gs]),
            tensor(DType::I32, &[b, hkv], &vec![0.0; (b * hkv).max(0) as usize]),
            Arg::F32(1.0 / (d as f32).sqrt()),
        ]
    },
    // The output, and the counters, back to zero for the next launch.
    outputs: &[3, 7],
    exact: &[7],
    reference: |c, a| {
        let Some(dims) = decode_dims(c) else { return vec![] };
        let [_, _, hkv, smax, d, _] = dims.map(|x| x as usize);
        let (kv, vv) = (values(a, 1), values(a, 2));
        let at = |x: &Vec<f64>, bi: usize, h: usize, j: usize, e: usize| x[((bi * hkv + h) * smax + j) * d + e];
        split_decode_outputs(c, a, &|bi, h, j, e| at(&kv, bi, h, j, e), &|bi, h, j, e| at(&vv, bi, h, j, e))
    },
    tolerance: storage_tolerance,
    // K and V of the rows the sequences hold, read once, plus q and the output.
    bytes: |c| {
        let Some([b, hq, hkv, smax, d, _]) = decode_dims(c) else { return 0.0 };
        let rows: i64 = seq_lens_edges(c, b, smax).iter().sum::<f64>() as i64;
        (2 * rows * hkv * d + 2 * b * hq * d) as f64 * f64::from(c.dtype.bytes())
    },
    flops: None,
    case_for: |dims, dtype| {
        match dims {
        // Timed as the peers run it: every sequence at the full length.
        [_, hq, hkv, _, _] | [_, hq, hkv, _, _, _] if *hkv >= 1 && hq % hkv == 0 => {
            Ok(Case::new(dtype, dims).full_lengths())
        }
        _ => Err(format!(
            "attention_decode_grouped takes BxHQxHKVxSxD (and the workspace's splits P) with HKV dividing HQ, not {dims:?}"
        )),
    }
    },
    peer_config: |c| {
        let [b, hq, hkv, l, d, _] = decode_dims(c)?;
        Some(format!("B{b} Hq{hq} Hkv{hkv} L{l} D{d} f16"))
    },
};

/// Paged decode attention (kernels/paged_attention_decode.tile). Case dims
/// `[B, HQ, HKV, SMAX, D]`, constant `PAGE`; the pages of the sequences are shuffled through
/// the cache, with a few spare pages.
pub const PAGED_DECODE: Spec = Spec {
    name: "paged_attention_decode",
    file: "paged_attention_decode.tile",
    kernel: "paged_attention_decode",
    // Split into 5 chunks of one page (lengths 0, 1, 17, 80), and not split.
    interp_cases: || {
        vec![
            Case::new(DType::F16, &[4, 8, 2, 80, 64]).with("GP", 16).with("PAGE", 16).with("MIN_PAGES", 1),
            Case::new(DType::F16, &[3, 8, 2, 80, 64, 1]).with("GP", 16).with("PAGE", 16),
        ]
    },
    // Split into 2 and 9 chunks, and not at all (a workspace of one split).
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[3, 28, 4, 1000, 128]).with("PAGE", 16),
            Case::new(DType::BF16, &[1, 28, 4, 4097, 128]).with("PAGE", 16),
            Case::new(DType::F16, &[4, 28, 4, 2000, 128, 1]).with("PAGE", 16),
        ]
    },
    bench_cases: |quick| {
        decode_points(quick)
            .into_iter()
            .map(|(b, l)| Case::new(DType::F16, &[b, 28, 4, l, 128]).with("PAGE", 16).full_lengths())
            .collect()
    },
    consts: |c| {
        let mut m = (DECODE_GROUPED.consts)(c);
        m.insert("PAGE".into(), ConstArg::Int(c.konst("PAGE", 16)));
        m
    },
    inputs: |c, rng| {
        let Some([b, hq, hkv, smax, d, p]) = decode_dims(c) else { return vec![] };
        let gs = decode_gs(c, hq, hkv);
        let page = c.konst("PAGE", 16);
        let pages_per_seq = (smax + page - 1) / page;
        let num_pages = b * pages_per_seq + 3;
        let mut order: Vec<i64> = (0..num_pages).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.gen_range(0..=i));
        }
        let table: Vec<f64> = order[..(b * pages_per_seq) as usize].iter().map(|&p| p as f64).collect();
        let shape = [num_pages, page, hkv, d];
        vec![
            normal_tensor(rng, c.dtype, &[b, hq, d], 1.0),
            normal_tensor(rng, c.dtype, &shape, 1.0),
            normal_tensor(rng, c.dtype, &shape, 1.0),
            tensor(DType::I32, &[b, pages_per_seq], &table),
            tensor(DType::I32, &[b], &seq_lens_edges(c, b, smax)),
            poisoned(c.dtype, &[b, hq, d]),
            // The workspace: whatever it holds on entry must not matter.
            poisoned(DType::F32, &[b, hkv, p, gs, d]),
            poisoned(DType::F32, &[b, hkv, p, 2, gs]),
            tensor(DType::I32, &[b, hkv], &vec![0.0; (b * hkv).max(0) as usize]),
            Arg::F32(1.0 / (d as f32).sqrt()),
        ]
    },
    // The output, and the counters, back to zero for the next launch.
    outputs: &[5, 8],
    exact: &[8],
    reference: |c, a| {
        let Some(dims) = decode_dims(c) else { return vec![] };
        let [_, _, hkv, smax, d, _] = dims.map(|x| x as usize);
        let page = c.konst("PAGE", 16) as usize;
        let pages_per_seq = smax.div_ceil(page);
        let (kp, vp, table) = (values(a, 1), values(a, 2), values(a, 3));
        let at = |x: &Vec<f64>, bi: usize, h: usize, j: usize, e: usize| {
            let phys = table[bi * pages_per_seq + j / page] as usize;
            x[((phys * page + j % page) * hkv + h) * d + e]
        };
        split_decode_outputs(c, a, &|bi, h, j, e| at(&kp, bi, h, j, e), &|bi, h, j, e| at(&vp, bi, h, j, e))
    },
    peer_config: no_peer,
    ..DECODE_GROUPED
};

/// `mla_decode`'s most splits (its `SPLITS`: the case's sixth dim, else the kernel's 64) and
/// its groups of chunks (`NG`: `GROUP`, 8 unless the case sets it, chunks a group).
fn mla_decode_splits(c: &Case) -> (i64, i64) {
    let p = if c.dims.len() == 6 { c.dims[5] } else { 64 };
    let g = c.konst("GROUP", 8).max(1);
    (p, (p + g - 1) / g)
}

/// `mla_decode`'s workspace slots: twice the most SMs of the targets (B300's 148), enough
/// for every target's `SMS` (the kernel requires `W >= 2 * SMS`).
const MLA_DECODE_SLOTS: i64 = 2 * 148;

/// MLA decode over the latent cache (kernels/mla_decode.tile). Case dims `[B, H, SMAX, DC, DR]`
/// and the most splits (a sixth dim: [`mla_decode_splits`]).
pub const MLA_DECODE: Spec = Spec {
    name: "mla_decode",
    file: "mla_decode.tile",
    kernel: "mla_decode",
    class: Class::Decode,
    peer_kernel: "mla_decode",
    // Split over the key length (3 chunks of one tile; lengths 0, 1, 17, 70), combined in one
    // group and in two of 2 and 1 chunks.
    interp_cases: || {
        let case = Case::new(DType::F16, &[4, 32, 70, 64, 16]).with("HB", 16).with("TILE_N", 32).with("MIN_TILES", 1);
        vec![case.clone(), case.with("GROUP", 2)]
    },
    // DeepSeek-V2-Lite: kv_lora_rank 512, rope dim 64, 16 heads; split into 4, 17 (three
    // groups), 8 and 64 (eight groups) chunks, 20 for each of four (head block, sequence)
    // pairs (32 heads: two head blocks), and not at all (at most one split).
    gpu_cases: || {
        vec![
            Case::new(DType::F16, &[4, 16, 1000, 512, 64]),
            Case::new(DType::F16, &[1, 16, 4097, 512, 64]),
            Case::new(DType::BF16, &[16, 16, 2048, 512, 64]),
            Case::new(DType::F16, &[1, 16, 16384, 512, 64]),
            Case::new(DType::F16, &[2, 32, 5000, 512, 64]),
            Case::new(DType::F16, &[3, 16, 700, 512, 64, 1]),
        ]
    },
    bench_cases: |quick| {
        decode_points(quick)
            .into_iter()
            .map(|(b, l)| Case::new(DType::F16, &[b, 16, l, 512, 64]).full_lengths())
            .collect()
    },
    consts: |c| {
        let mut m = t_const(c);
        let Some([_, _, _, dc, dr, _]) = decode_dims(c) else { return m };
        m.insert("DC".into(), ConstArg::Int(dc));
        m.insert("DR".into(), ConstArg::Int(dr));
        m.insert("SPLITS".into(), ConstArg::Int(mla_decode_splits(c).0));
        m
    },
    inputs: |c, rng| {
        let Some([b, h, smax, dc, dr, _]) = decode_dims(c) else { return vec![] };
        let hb = c.konst("HB", 16);
        let nhb = (h + hb - 1) / hb.max(1);
        let ng = mla_decode_splits(c).1;
        vec![
            normal_tensor(rng, c.dtype, &[b, h, dc], 1.0),
            normal_tensor(rng, c.dtype, &[b, h, dr], 1.0),
            normal_tensor(rng, c.dtype, &[b, smax, dc], 1.0),
            normal_tensor(rng, c.dtype, &[b, smax, dr], 1.0),
            tensor(DType::I32, &[b], &seq_lens_edges(c, b, smax)),
            poisoned(c.dtype, &[b, h, dc]),
            // The workspace: whatever it holds on entry must not matter (partials in the
            // kernel's T, statistics in f32).
            poisoned(c.dtype, &[MLA_DECODE_SLOTS, hb, dc]),
            poisoned(DType::F32, &[MLA_DECODE_SLOTS, 2, hb]),
            tensor(DType::I32, &[b, nhb, 1 + ng], &vec![0.0; (b * nhb * (1 + ng)).max(0) as usize]),
            Arg::F32(1.0 / ((dc + dr) as f32).sqrt()),
        ]
    },
    // The output, and the counters, back to zero for the next launch.
    outputs: &[5, 8],
    exact: &[8],
    reference: |c, a| {
        let Some(dims) = decode_dims(c) else { return vec![] };
        let [b, h, smax, dc, dr, _] = dims.map(|x| x as usize);
        let hb = c.konst("HB", 16) as usize;
        let lens = seq_lens_edges(c, b as i64, smax as i64);
        let scale = 1.0 / ((dc + dr) as f64).sqrt();
        let (qv, qrv, cv, crv) = (values(a, 0), values(a, 1), values(a, 2), values(a, 3));
        let mut want = vec![];
        for bi in 0..b {
            let n = lens[bi] as usize;
            // No key to attend to: the output is defined as zeros.
            if n == 0 {
                want.extend(std::iter::repeat_n(0.0, h * dc));
                continue;
            }
            let lat = &cv[bi * smax * dc..(bi * smax + n) * dc];
            for hh in 0..h {
                let qh = &qv[(bi * h + hh) * dc..(bi * h + hh + 1) * dc];
                let qrh = &qrv[(bi * h + hh) * dr..(bi * h + hh + 1) * dr];
                let extra = |_: usize, j: usize| (0..dr).map(|x| qrh[x] * crv[(bi * smax + j) * dr + x]).sum::<f64>();
                want.extend(reference::attention_split(qh, lat, lat, 1, n, dc, dc, scale, false, extra));
            }
        }
        let ng = mla_decode_splits(c).1 as usize;
        vec![want, vec![0.0; b * h.div_ceil(hb.max(1)) * (1 + ng)]]
    },
    tolerance: storage_tolerance,
    // The latent and rope rows the sequences hold, read once, plus q and the output.
    bytes: |c| {
        let Some([b, h, smax, dc, dr, _]) = decode_dims(c) else { return 0.0 };
        let rows = seq_lens_edges(c, b, smax).iter().sum::<f64>() as i64;
        (rows * (dc + dr) + 2 * b * h * (dc + dr)) as f64 * f64::from(c.dtype.bytes())
    },
    flops: None,
    // Timed as decode is served: every sequence at the full length.
    case_for: |dims, dtype| match dims {
        [_, _, _, _, _] | [_, _, _, _, _, _] => Ok(Case::new(dtype, dims).full_lengths()),
        _ => Err(format!("mla_decode takes BxHxSxDCxDR (and the workspace's splits P), not {dims:?}")),
    },
    // bench/peers.py's SDPA over the latent cache, at the same points.
    peer_config: |c| {
        let [b, h, l, dc, dr, _] = decode_dims(c)?;
        Some(format!("B{b} H{h} L{l} DC{dc} DR{dr} f16"))
    },
};

#[cfg(test)]
mod tests {
    use crate::Case;
    use tilec_core::DType;

    #[test]
    fn decode_lengths_are_uneven_and_the_last_fills_the_cache() {
        let ragged = Case::new(DType::F16, &[2, 8, 2, 80, 64]);
        assert_eq!(super::seq_lens(&ragged, 2, 80), vec![60.0, 80.0]);
        let full = ragged.full_lengths();
        assert_eq!(super::seq_lens(&full, 2, 80), vec![80.0, 80.0]);
        // The edge lengths come first, the last sequence keeps the longest; none at full lengths.
        let four = Case::new(DType::F16, &[4, 8, 2, 80, 64]);
        assert_eq!(super::seq_lens_edges(&four, 4, 80), vec![0.0, 1.0, 17.0, 80.0]);
        assert_eq!(super::seq_lens_edges(&four.full_lengths(), 4, 80), vec![80.0; 4]);
        // Decode bytes count the rows the sequences hold: K and V, plus q and the output.
        let full4 = Case::new(DType::F16, &[4, 8, 2, 80, 64]).full_lengths();
        assert_eq!((super::DECODE_GROUPED.bytes)(&full4), ((2 * 320 * 2 * 64 + 2 * 4 * 8 * 64) * 2) as f64);
    }

    #[test]
    fn groups_are_uneven_with_an_empty_one() {
        assert_eq!(super::group_offsets(3, 40), vec![0, 4, 4, 40]);
        assert_eq!(super::group_offsets(1, 7), vec![0, 7]);
    }
}
