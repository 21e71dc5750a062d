//! The memory-bound kernels: softmax (one tile and online), SiLU·mul and SwiGLU, RMSNorm (per
//! row and persistent), RoPE and its tables, dropout, transpose, embedding, GELU.

use crate::inputs::{normal, normal_tensor, numel, poisoned, pow2_clamped, randn, tensor, values};
use crate::{storage_tolerance, Arg, Case, Class, Spec};
use rand::rngs::StdRng;
use rand::Rng;
use std::collections::BTreeMap;
use tilec_core::DType;
use tilec_frontend::ConstArg;
use tilec_interp::reference;

fn t_const(c: &Case) -> BTreeMap<String, ConstArg> {
    BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype))])
}

fn mn_bytes(c: &Case, passes: f64) -> f64 {
    passes * (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes())
}

fn mn_peer(c: &Case) -> Option<String> {
    Some(format!("M={} N={} {}", c.dims[0], c.dims[1], c.dtype))
}

fn no_peer(_: &Case) -> Option<String> {
    None
}

fn no_bench(_: bool) -> Vec<Case> {
    vec![]
}

/// Widest row `softmax` holds in one tile; wider rows run `softmax_online`.
const SOFTMAX_MAX_TILE: i64 = 32768;

fn softmax_inputs(c: &Case, rng: &mut StdRng) -> Vec<Arg> {
    // A spread that exercises exp over a wide range; the last element of the first row is
    // the row's maximum, so online softmax meets its max in its last chunk.
    let n = numel(&c.dims);
    let mut x = randn(rng, n, 3.0);
    if c.dims[1] > 1 {
        x[(c.dims[1] - 1) as usize] = 12.0;
    }
    vec![tensor(c.dtype, &c.dims, &x), poisoned(c.dtype, &c.dims)]
}

fn softmax_reference(c: &Case, a: &[Arg]) -> Vec<Vec<f64>> {
    vec![reference::softmax(&values(a, 0), c.dims[0] as usize, c.dims[1] as usize)]
}

/// Row softmax (kernels/softmax.tile): one tile per row, up to 32768 columns (32 warps).
pub const SOFTMAX: Spec = Spec {
    name: "softmax",
    file: "softmax.tile",
    kernel: "softmax",
    class: Class::Membound,
    peer_kernel: "softmax",
    interp_cases: || {
        vec![
            Case::new(DType::F32, &[5, 37]).with("ROWS", 2),
            Case::new(DType::F16, &[3, 100]),
            Case::new(DType::BF16, &[9, 8]).with("ROWS", 4).with("BLOCK_N", 32),
        ]
    },
    gpu_cases: || {
        let c = |d, m, n, rows| Case::new(d, &[m, n]).with("ROWS", rows);
        vec![
            c(DType::F32, 1, 1, 1),
            c(DType::F16, 7, 33, 1),
            c(DType::F32, 3, 5, 2),
            c(DType::F16, 1000, 1000, 1),
            c(DType::F16, 1025, 100, 4),
            c(DType::F32, 333, 8192, 1),
            c(DType::F16, 129, 8192, 1),
            c(DType::BF16, 257, 2048, 2),
            c(DType::F32, 4097, 768, 8),
            c(DType::F16, 16384, 4096, 1),
            c(DType::F16, 64, 32768, 1),
            c(DType::F32, 33, 20000, 1),
            c(DType::BF16, 17, 9000, 1),
        ]
    },
    bench_cases: |quick| {
        let c = |d, m, n, rows| Case::new(d, &[m, n]).with("ROWS", rows);
        let mut v = vec![c(DType::F16, 16384, 4096, 1)];
        if !quick {
            v.push(c(DType::F32, 16384, 4096, 1));
            v.push(c(DType::F16, 65536, 1024, 4));
            v.push(c(DType::F16, 4096, 32768, 1));
        }
        v
    },
    consts: |c| {
        let rows = c.konst("ROWS", 1).max(1);
        // A tile needs at least 32 elements (one per lane).
        let block_n = pow2_clamped(c.dims[1], 32 / rows, i64::MAX);
        let mut m = t_const(c);
        m.insert("BLOCK_N".into(), ConstArg::Int(block_n));
        m.insert("ROWS".into(), ConstArg::Int(rows));
        m
    },
    inputs: softmax_inputs,
    outputs: &[1],
    exact: &[],
    reference: softmax_reference,
    tolerance: storage_tolerance,
    bytes: |c| mn_bytes(c, 2.0),
    flops: None,
    case_for: |dims, dtype| {
        match dims {
        [m, n] if *m >= 0 && (1..=SOFTMAX_MAX_TILE).contains(n) && dtype.is_float() => {
            Ok(Case::new(dtype, &[*m, *n]).with("ROWS", 1))
        }
        _ => Err(format!(
            "softmax takes MxN with N in 1..={SOFTMAX_MAX_TILE} (softmax_online beyond) and a float dtype, not {dims:?} {dtype}"
        )),
    }
    },
    peer_config: mn_peer,
};

/// Online softmax (kernels/softmax_online.tile) for rows of any width.
pub const SOFTMAX_ONLINE: Spec = Spec {
    name: "softmax_online",
    file: "softmax_online.tile",
    kernel: "softmax_online",
    peer_kernel: "softmax",
    interp_cases: || {
        // Rows of 1, 3 and 5 chunks, ragged last chunk.
        vec![
            Case::new(DType::F32, &[3, 30]).with("BLOCK_N", 32),
            Case::new(DType::F16, &[2, 150]).with("BLOCK_N", 32),
            Case::new(DType::BF16, &[4, 257]).with("BLOCK_N", 64),
        ]
    },
    gpu_cases: || {
        let c = |d, m, n| Case::new(d, &[m, n]);
        vec![
            c(DType::F32, 3, 5),
            c(DType::F16, 7, 4097),
            c(DType::F16, 64, 32768),
            c(DType::F16, 5, 100_000),
            c(DType::F32, 33, 20000),
            c(DType::BF16, 17, 9000),
            c(DType::F16, 4096, 16384),
        ]
    },
    bench_cases: |quick| {
        let mut v = vec![Case::new(DType::F16, &[4096, 32768])];
        if !quick {
            v.push(Case::new(DType::F16, &[16384, 4096]));
        }
        v
    },
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_N".into(), ConstArg::Int(4096));
        m
    },
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 0 && *n >= 1 && dtype.is_float() => Ok(Case::new(dtype, dims)),
        _ => Err(format!("softmax_online takes MxN and a float dtype, not {dims:?} {dtype}")),
    },
    ..SOFTMAX
};

fn silu_inputs(c: &Case, rng: &mut StdRng) -> Vec<Arg> {
    let n = numel(&c.dims);
    let mut a = randn(rng, n, 2.0);
    // Inputs where exp(-a) overflows or vanishes: silu must stay finite there (in large
    // cases only: silu(-100) is an f32 subnormal, which alone would make the relative error
    // of a one-element case meaningless).
    if n >= 1024 {
        for (x, v) in a.iter_mut().zip([-100.0, 100.0, -90.0, 90.0]) {
            *x = v;
        }
    }
    vec![tensor(c.dtype, &c.dims, &a), normal_tensor(rng, c.dtype, &c.dims, 1.0), poisoned(c.dtype, &c.dims)]
}

/// `y = silu(a) · b` (kernels/silu_mul.tile): one row per block.
pub const SILU_MUL: Spec = Spec {
    name: "silu_mul",
    file: "silu_mul.tile",
    kernel: "silu_mul",
    class: Class::Membound,
    peer_kernel: "silu_mul",
    interp_cases: || {
        vec![Case::new(DType::F32, &[7, 50]).with("BLOCK_N", 32), Case::new(DType::F16, &[7, 50]).with("BLOCK_N", 32)]
    },
    gpu_cases: || {
        let c = |d, m, n| Case::new(d, &[m, n]);
        vec![
            c(DType::F32, 1, 1),
            c(DType::F16, 7, 33),
            c(DType::F16, 1000, 1000),
            c(DType::F32, 333, 4097),
            c(DType::F16, 16384, 4096),
        ]
    },
    bench_cases: |quick| {
        let dtypes: &[DType] = if quick { &[DType::F16] } else { &[DType::F16, DType::F32] };
        dtypes.iter().map(|d| Case::new(*d, &[16384, 4096])).collect()
    },
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_N".into(), ConstArg::Int(pow2_clamped(c.dims[1], 32, 4096)));
        m
    },
    inputs: silu_inputs,
    outputs: &[2],
    exact: &[],
    reference: |_, a| vec![reference::silu_mul(&values(a, 0), &values(a, 1))],
    tolerance: storage_tolerance,
    bytes: |c| mn_bytes(c, 3.0),
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 0 && *n >= 1 && dtype.is_float() => Ok(Case::new(dtype, dims)),
        _ => Err(format!("silu_mul takes MxN and a float dtype, not {dims:?} {dtype}")),
    },
    // anchors.py times silu_mul on [M, 2N] → [M, N]: the same bytes and arithmetic.
    peer_config: |c| Some(format!("M={} N={} {} (in 2N)", c.dims[0], c.dims[1], c.dtype)),
};

/// `out = silu(gate) · up` (kernels/swiglu.tile): ROWS rows per block.
pub const SWIGLU: Spec = Spec {
    name: "swiglu",
    file: "swiglu.tile",
    kernel: "swiglu",
    peer_kernel: "swiglu",
    interp_cases: || {
        vec![
            Case::new(DType::F32, &[7, 50]).with("ROWS", 2).with("BLOCK_N", 16),
            Case::new(DType::F16, &[7, 50]).with("ROWS", 2).with("BLOCK_N", 16),
        ]
    },
    gpu_cases: || {
        let c = |d, m, n, rows| Case::new(d, &[m, n]).with("ROWS", rows);
        vec![
            c(DType::F32, 1, 1, 1),
            c(DType::F16, 7, 33, 1),
            c(DType::F16, 1000, 1000, 1),
            c(DType::F32, 333, 4097, 1),
            c(DType::F16, 16384, 4096, 1),
            c(DType::F16, 1025, 100, 4),
            c(DType::F32, 129, 2048, 2),
        ]
    },
    bench_cases: |quick| {
        let dtypes: &[DType] = if quick { &[DType::F16] } else { &[DType::F16, DType::F32] };
        dtypes.iter().map(|d| Case::new(*d, &[16384, 4096]).with("ROWS", 1)).collect()
    },
    consts: |c| {
        let rows = c.konst("ROWS", 1).max(1);
        // ROWS rows of up to 4096 columns per block (16 elements per thread with 8 warps,
        // measured 2% faster than 2048 on the H100); at least 32 elements per tile.
        let mut m = t_const(c);
        m.insert("ROWS".into(), ConstArg::Int(rows));
        m.insert("BLOCK_N".into(), ConstArg::Int(pow2_clamped(c.dims[1], 32 / rows, 4096)));
        m
    },
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 0 && *n >= 1 && dtype.is_float() => Ok(Case::new(dtype, dims).with("ROWS", 1)),
        _ => Err(format!("swiglu takes MxN and a float dtype, not {dims:?} {dtype}")),
    },
    peer_config: no_peer,
    ..SILU_MUL
};

/// The epsilon of the RMSNorm tests (as anchors.py), the fused ones' too.
pub(crate) const RMS_EPS: f32 = 1e-6;

/// RMSNorm (kernels/rmsnorm.tile), ROWS rows per block.
pub const RMSNORM: Spec = Spec {
    name: "rmsnorm",
    file: "rmsnorm.tile",
    kernel: "rmsnorm",
    class: Class::Membound,
    peer_kernel: "rmsnorm",
    interp_cases: || {
        vec![
            Case::new(DType::F16, &[7, 300]).with("BLOCK_N", 512).with("ROWS", 2),
            Case::new(DType::BF16, &[7, 300]).with("BLOCK_N", 512).with("ROWS", 2),
        ]
    },
    gpu_cases: || {
        let c = |d, m, n| Case::new(d, &[m, n]);
        vec![
            c(DType::F16, 7, 33),
            c(DType::BF16, 1000, 1000),
            c(DType::F16, 333, 4096),
            c(DType::BF16, 129, 8192),
            c(DType::F16, 3, 5000),
            c(DType::F16, 16384, 4096),
        ]
    },
    bench_cases: |quick| {
        let mut v = vec![Case::new(DType::F16, &[16384, 4096])];
        if !quick {
            v.push(Case::new(DType::BF16, &[16384, 4096]));
        }
        v
    },
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_N".into(), ConstArg::Int(pow2_clamped(c.dims[1], 32, i64::MAX)));
        m
    },
    inputs: |c, rng| {
        let n = c.dims[1];
        let w: Vec<f64> = (0..n).map(|_| 1.0 + 0.5 * normal(rng)).collect();
        vec![
            normal_tensor(rng, c.dtype, &c.dims, 1.0),
            tensor(c.dtype, &[n], &w),
            poisoned(c.dtype, &c.dims),
            Arg::F32(RMS_EPS),
        ]
    },
    outputs: &[2],
    exact: &[],
    reference: |c, a| {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        vec![reference::rmsnorm(&values(a, 0), &values(a, 1), m, n, f64::from(RMS_EPS))]
    },
    tolerance: storage_tolerance,
    bytes: |c| (2 * c.dims[0] * c.dims[1] + c.dims[1]) as f64 * f64::from(c.dtype.bytes()),
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 0 && (1..=8192).contains(n) && dtype.is_float() => Ok(Case::new(dtype, dims)),
        _ => Err(format!("rmsnorm takes MxN with N in 1..=8192 and a float dtype, not {dims:?} {dtype}")),
    },
    peer_config: mn_peer,
};

/// Persistent RMSNorm: a few blocks per SM walking the rows.
pub const RMSNORM_PERSISTENT: Spec = Spec {
    name: "rmsnorm_persistent",
    kernel: "rmsnorm_persistent",
    interp_cases: || {
        vec![
            Case::new(DType::F16, &[7, 300]).with("BLOCK_N", 512).with("BLOCKS", 3),
            Case::new(DType::BF16, &[7, 300]).with("BLOCK_N", 512).with("BLOCKS", 3),
        ]
    },
    ..RMSNORM
};

/// RoPE, half rotation, Q and K in place in one launch (kernels/rope.tile). Case dims:
/// `[B, S, H, HK, D]`.
pub const ROPE: Spec = Spec {
    name: "rope",
    file: "rope.tile",
    kernel: "rope",
    class: Class::Membound,
    peer_kernel: "rope",
    interp_cases: || vec![Case::new(DType::F16, &[2, 3, 4, 2, 64])],
    gpu_cases: || {
        let c = |b, s, h, hk, d| Case::new(DType::F16, &[b, s, h, hk, d]);
        vec![c(1, 1, 1, 1, 64), c(2, 7, 4, 2, 64), c(3, 33, 32, 8, 128), c(1, 1000, 16, 16, 128), c(4, 512, 32, 8, 128)]
    },
    bench_cases: |_| vec![Case::new(DType::F16, &[16, 4096, 32, 8, 128])],
    consts: |c| {
        let mut m = t_const(c);
        m.insert("H".into(), ConstArg::Int(c.dims[2]));
        m.insert("HK".into(), ConstArg::Int(c.dims[3]));
        m.insert("HALF".into(), ConstArg::Int(c.dims[4] / 2));
        m
    },
    inputs: |c, rng| {
        let [b, s, h, hk, d] = c.dims[..] else { return vec![] };
        let half = d / 2;
        let angle = |i: i64| (i / half) as f64 * 10000f64.powf(-((i % half) as f64) / half as f64);
        let cos: Vec<f64> = (0..s * half).map(|i| angle(i).cos()).collect();
        let sin: Vec<f64> = (0..s * half).map(|i| angle(i).sin()).collect();
        vec![
            normal_tensor(rng, c.dtype, &[b, s, h, d], 1.0),
            normal_tensor(rng, c.dtype, &[b, s, hk, d], 1.0),
            tensor(c.dtype, &[s, half], &cos),
            tensor(c.dtype, &[s, half], &sin),
        ]
    },
    outputs: &[0, 1],
    exact: &[],
    reference: |c, a| {
        let [b, s, h, hk, d] = c.dims[..].iter().map(|x| *x as usize).collect::<Vec<_>>()[..] else { return vec![] };
        let half = d / 2;
        let (cos, sin) = (values(a, 2), values(a, 3));
        let rot = |x: &[f64], heads: usize| -> Vec<f64> {
            let mut out = Vec::with_capacity(x.len());
            for bs in 0..b * s {
                let si = bs % s;
                for hh in 0..heads {
                    let o = (bs * heads + hh) * d;
                    let (cs, sn) = (&cos[si * half..(si + 1) * half], &sin[si * half..(si + 1) * half]);
                    out.extend(reference::rope(&x[o..o + d], cs, sn));
                }
            }
            out
        };
        vec![rot(&values(a, 0), h), rot(&values(a, 1), hk)]
    },
    tolerance: storage_tolerance,
    bytes: |c| {
        let [b, s, h, hk, d] = c.dims[..] else { return 0.0 };
        // q and k read and written once; the cos/sin tables read once.
        (2 * b * s * (h + hk) * d + s * d) as f64 * f64::from(c.dtype.bytes())
    },
    flops: None,
    case_for: |dims, dtype| match dims {
        [b, s, h, hk, d]
            if dtype == DType::F16 && *b >= 1 && *s >= 1 && (*d == 64 || *d == 128) && *h >= 1 && *hk >= 1 =>
        {
            Ok(Case::new(dtype, dims))
        }
        _ => Err(format!("rope takes BxSxHxHKxD (D 64 or 128, H and HK powers of two) in f16, not {dims:?} {dtype}")),
    },
    // anchors.py rotates q only; tilec rotates q and k (counted in the bytes).
    peer_config: |c| Some(format!("B{} S{} H{} D{} {}", c.dims[0], c.dims[1], c.dims[2], c.dims[4], c.dtype)),
};

/// The RoPE cos/sin tables (kernels/rope.tile, `rope_table`). Case dims: `[positions, HALF]`.
pub const ROPE_TABLE: Spec = Spec {
    name: "rope_table",
    file: "rope.tile",
    kernel: "rope_table",
    class: Class::Membound,
    peer_kernel: "rope_table",
    // The angle is rounded to f32 before cos/sin (as on the GPU): up to ~300 · 2⁻²⁴ rad.
    interp_cases: || vec![Case::new(DType::F32, &[300, 64])],
    // f32 only for short tables: the f32 angle s·θ (lg2/ex2.approx inside θ) drifts by
    // ~s·2⁻²² rad, which the f64 reference does not have.
    gpu_cases: || {
        let c = |d, s, half| Case::new(d, &[s, half]);
        vec![c(DType::F16, 1, 32), c(DType::F16, 100, 64), c(DType::F16, 4096, 64), c(DType::F32, 16, 64)]
    },
    bench_cases: no_bench,
    consts: |c| {
        let mut m = t_const(c);
        m.insert("HALF".into(), ConstArg::Int(c.dims[1]));
        m
    },
    inputs: |c, _| vec![poisoned(c.dtype, &c.dims), poisoned(c.dtype, &c.dims), Arg::F32(10000.0)],
    outputs: &[0, 1],
    exact: &[],
    reference: |c, _| {
        let (cos, sin) = reference::rope_table(c.dims[0] as usize, c.dims[1] as usize, 10000.0);
        vec![cos, sin]
    },
    tolerance: storage_tolerance,
    bytes: |c| mn_bytes(c, 2.0),
    flops: None,
    case_for: |dims, dtype| match dims {
        [s, h] if *s >= 1 && *h >= 32 && dtype.is_float() => Ok(Case::new(dtype, dims)),
        _ => Err(format!("rope_table takes positions x HALF (HALF >= 32), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Drop probability, seed and offset of the dropout tests.
const DROPOUT: (f32, i32, i32) = (0.1, 1234, 99);

/// Dropout forward with its keep mask (kernels/dropout.tile); the mask must equal the
/// interpreter's Philox bit for bit.
pub const DROPOUT_SPEC: Spec = Spec {
    name: "dropout",
    file: "dropout.tile",
    kernel: "dropout",
    class: Class::Membound,
    peer_kernel: "dropout",
    interp_cases: || vec![Case::new(DType::F32, &[5, 100]).with("BLOCK_N", 64)],
    gpu_cases: || {
        let c = |d, m, n| Case::new(d, &[m, n]);
        vec![c(DType::F16, 7, 33), c(DType::F32, 1000, 1000), c(DType::BF16, 129, 3000), c(DType::F16, 16384, 4096)]
    },
    bench_cases: |_| vec![Case::new(DType::F16, &[16384, 4096])],
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_N".into(), ConstArg::Int(pow2_clamped(c.dims[1], 32, 1024)));
        m
    },
    inputs: |c, rng| {
        let (p, seed, offset) = DROPOUT;
        vec![
            normal_tensor(rng, c.dtype, &c.dims, 1.0),
            poisoned(c.dtype, &c.dims),
            poisoned(c.dtype, &c.dims),
            Arg::F32(p),
            Arg::I32(seed),
            Arg::I32(offset),
        ]
    },
    outputs: &[1, 2],
    exact: &[2],
    reference: |_, a| {
        let (p, seed, offset) = DROPOUT;
        let x = values(a, 0);
        let keep: Vec<bool> = (0..x.len())
            .map(|i| tilec_interp::rand_uniform(seed as u32, (i as u32).wrapping_add(offset as u32)) >= p)
            .collect();
        let scale = 1.0 / (1.0 - f64::from(p));
        let y = x.iter().zip(&keep).map(|(v, k)| if *k { v * scale } else { 0.0 }).collect();
        let mask = keep.iter().map(|k| f64::from(u8::from(*k))).collect();
        vec![y, mask]
    },
    tolerance: storage_tolerance,
    // x read; y and the mask (in x's dtype) written.
    bytes: |c| mn_bytes(c, 3.0),
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 0 && *n >= 1 && dtype.is_float() => Ok(Case::new(dtype, dims)),
        _ => Err(format!("dropout takes MxN and a float dtype, not {dims:?} {dtype}")),
    },
    peer_config: |c| Some(format!("M={} N={} {} p={}", c.dims[0], c.dims[1], c.dtype, DROPOUT.0)),
};

/// Matrix transpose (kernels/transpose.tile): exercises the shared-memory exchange that
/// permutes and layout conversions use.
pub const TRANSPOSE: Spec = Spec {
    name: "transpose",
    file: "transpose.tile",
    kernel: "transpose",
    class: Class::Membound,
    peer_kernel: "transpose",
    interp_cases: || {
        vec![
            Case::new(DType::F16, &[70, 33]).with("TILE", 32),
            Case::new(DType::F32, &[5, 100]).with("TILE", 16),
            Case::new(DType::BF16, &[64, 64]).with("TILE", 64),
        ]
    },
    gpu_cases: || {
        let c = |d, m, n| Case::new(d, &[m, n]);
        vec![c(DType::F16, 1, 1), c(DType::F16, 70, 33), c(DType::F32, 1000, 999), c(DType::BF16, 4096, 4096)]
    },
    bench_cases: |_| vec![Case::new(DType::F16, &[16384, 4096])],
    consts: t_const,
    inputs: |c, rng| vec![normal_tensor(rng, c.dtype, &c.dims, 1.0), poisoned(c.dtype, &[c.dims[1], c.dims[0]])],
    outputs: &[1],
    exact: &[1],
    reference: |c, a| {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        let x = values(a, 0);
        vec![(0..n * m).map(|i| x[(i % m) * n + i / m]).collect()]
    },
    tolerance: storage_tolerance,
    bytes: |c| mn_bytes(c, 2.0),
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 1 && *n >= 1 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("transpose takes MxN, not {dims:?}")),
    },
    peer_config: no_peer,
};

/// Embedding lookup (kernels/embedding.tile): an element read and a gather per row. Case
/// dims: `[tokens, rows of the table, D]`; ids 7 and 11 of every 16 are out of range (a
/// negative id and one past the table: zero rows).
pub const EMBEDDING: Spec = Spec {
    name: "embedding",
    file: "embedding.tile",
    kernel: "embedding",
    class: Class::Membound,
    peer_kernel: "embedding",
    interp_cases: || vec![Case::new(DType::F16, &[20, 10, 70]).with("BLOCK_D", 32)],
    gpu_cases: || {
        let c = |d, n, v, w| Case::new(d, &[n, v, w]);
        vec![
            c(DType::F16, 1, 1, 1),
            c(DType::F16, 100, 50, 33),
            c(DType::F32, 77, 10, 3000),
            c(DType::BF16, 1000, 32000, 128),
        ]
    },
    bench_cases: |_| vec![Case::new(DType::F16, &[16384, 32000, 4096])],
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_D".into(), ConstArg::Int(pow2_clamped(c.dims[2], 32, 1024)));
        m
    },
    inputs: |c, rng| {
        let [n, v, d] = c.dims[..] else { return vec![] };
        let ids: Vec<f64> = (0..n)
            .map(|i| match i % 16 {
                7 => -1.0,
                11 => v as f64,
                _ => rng.gen_range(0..v) as f64,
            })
            .collect();
        vec![tensor(DType::I32, &[n], &ids), normal_tensor(rng, c.dtype, &[v, d], 1.0), poisoned(c.dtype, &[n, d])]
    },
    outputs: &[2],
    exact: &[2],
    reference: |c, a| {
        let (v, d) = (c.dims[1], c.dims[2] as usize);
        let (ids, table) = (values(a, 0), values(a, 1));
        let mut out = Vec::with_capacity(ids.len() * d);
        for id in ids {
            let ok = id >= 0.0 && (id as i64) < v;
            out.extend((0..d).map(|j| if ok { table[id as usize * d + j] } else { 0.0 }));
        }
        vec![out]
    },
    tolerance: storage_tolerance,
    // Each gathered row read once and written once; the ids read once.
    bytes: |c| (2 * c.dims[0] * c.dims[2]) as f64 * f64::from(c.dtype.bytes()) + 4.0 * c.dims[0] as f64,
    flops: None,
    case_for: |dims, dtype| match dims {
        [n, v, d] if *n >= 1 && *v >= 1 && *d >= 1 => Ok(Case::new(dtype, dims)),
        _ => Err(format!("embedding takes NxVxD (tokens, table rows, width), not {dims:?}")),
    },
    peer_config: no_peer,
};

/// GELU, tanh approximation (kernels/gelu.tile).
pub const GELU: Spec = Spec {
    name: "gelu",
    file: "gelu.tile",
    kernel: "gelu",
    class: Class::Membound,
    peer_kernel: "gelu",
    // Inputs across the polynomial/exponential switch of tanh and into saturation.
    interp_cases: || vec![Case::new(DType::F32, &[3, 300]).with("BLOCK_N", 128).with_tolerance(1e-6)],
    gpu_cases: || {
        let c = |d, m, n| Case::new(d, &[m, n]);
        vec![c(DType::F32, 1, 1), c(DType::F16, 7, 33), c(DType::F32, 333, 4097), c(DType::BF16, 1000, 1000)]
    },
    bench_cases: |_| vec![Case::new(DType::F16, &[16384, 4096])],
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_N".into(), ConstArg::Int(pow2_clamped(c.dims[1], 32, 4096)));
        m
    },
    inputs: |c, rng| vec![normal_tensor(rng, c.dtype, &c.dims, 3.0), poisoned(c.dtype, &c.dims)],
    outputs: &[1],
    exact: &[],
    reference: |_, a| vec![reference::gelu_tanh(&values(a, 0))],
    tolerance: storage_tolerance,
    bytes: |c| mn_bytes(c, 2.0),
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 0 && *n >= 1 && dtype.is_float() => Ok(Case::new(dtype, dims)),
        _ => Err(format!("gelu takes MxN and a float dtype, not {dims:?} {dtype}")),
    },
    peer_config: no_peer,
};

/// Row maxima and the maximum per block of ROWS rows (kernels/row_max.tile).
pub const ROW_MAX: Spec = Spec {
    name: "row_max",
    file: "row_max.tile",
    kernel: "row_max",
    class: Class::Membound,
    peer_kernel: "row_max",
    interp_cases: || {
        vec![
            Case::new(DType::F32, &[20, 700]).with("ROWS", 8),
            Case::new(DType::F16, &[5, 33]).with("ROWS", 2).with("BLOCK_N", 64),
            Case::new(DType::BF16, &[3, 16]).with("ROWS", 1).with("BLOCK_N", 16),
        ]
    },
    gpu_cases: || {
        let c = |d, m, n, rows| Case::new(d, &[m, n]).with("ROWS", rows);
        vec![
            c(DType::F32, 1, 1, 1),
            c(DType::F16, 7, 33, 8),
            c(DType::F32, 1000, 999, 8),
            c(DType::BF16, 4097, 1024, 4),
        ]
    },
    bench_cases: no_bench,
    consts: |c| {
        let mut m = t_const(c);
        m.insert("BLOCK_N".into(), ConstArg::Int(pow2_clamped(c.dims[1], 1, i64::MAX)));
        m
    },
    inputs: |c, rng| {
        let rows = c.konst("ROWS", 8).max(1);
        let blocks = (c.dims[0] + rows - 1) / rows;
        vec![
            normal_tensor(rng, c.dtype, &c.dims, 3.0),
            poisoned(c.dtype, &[c.dims[0], 1]),
            poisoned(c.dtype, &[blocks, 1]),
        ]
    },
    outputs: &[1, 2],
    exact: &[1, 2],
    reference: |c, a| {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        let rows = c.konst("ROWS", 8).max(1) as usize;
        let x = values(a, 0);
        let row: Vec<f64> =
            (0..m).map(|i| x[i * n..(i + 1) * n].iter().copied().fold(f64::NEG_INFINITY, f64::max)).collect();
        let block = row.chunks(rows).map(|ch| ch.iter().copied().fold(f64::NEG_INFINITY, f64::max)).collect();
        vec![row, block]
    },
    tolerance: storage_tolerance,
    bytes: |c| (c.dims[0] * c.dims[1] + c.dims[0]) as f64 * f64::from(c.dtype.bytes()),
    flops: None,
    case_for: |dims, dtype| match dims {
        [m, n] if *m >= 1 && *n >= 1 => Ok(Case::new(dtype, dims).with("ROWS", 8)),
        _ => Err(format!("row_max takes MxN, not {dims:?}")),
    },
    peer_config: no_peer,
};
