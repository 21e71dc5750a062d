//! The GPU test and benchmark suite: each kernel of `kernels/` with a GPU test, its cases,
//! inputs, reference and byte count. `tilec check` runs the cases against the reference;
//! `tilec bench` times the bench cases after checking them (a wrong kernel is never timed).

use crate::compiler::{compile, CompileOptions};
use crate::reference;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use tilec_core::{DType, Source};
use tilec_frontend::ConstArg;
use tilec_runtime::{ArgDesc, Device, HostTensor};

/// One shape/dtype/config of a kernel.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub dtype: DType,
    pub dims: Vec<i64>,
    /// Extra constants (besides those the kernel derives from the shape).
    pub consts: Vec<(String, i64)>,
}

impl Case {
    pub fn label(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(|d| d.to_string()).collect();
        let mut s = dims.join("x");
        for (k, v) in &self.consts {
            s.push_str(&format!(" {k}={v}"));
        }
        s
    }
}

/// A kernel of the library with a GPU test.
pub trait GpuKernel {
    fn name(&self) -> &'static str;
    /// Path under the kernels folder.
    fn file(&self) -> &'static str;
    /// The kernel of the file that runs `c` (a file may hold variants).
    fn kernel(&self, _c: &Case) -> &'static str {
        self.name()
    }
    /// Scalar arguments, after the tensors in parameter order.
    fn scalars(&self, _c: &Case) -> Vec<ArgDesc> {
        vec![]
    }
    /// Outputs (indices into `inputs`) that must equal the reference exactly (a keep mask).
    fn exact_outputs(&self) -> Vec<usize> {
        vec![]
    }
    /// The kernel name anchors.py uses for the same problem.
    fn peer_kernel(&self) -> &'static str {
        self.name()
    }
    fn cases(&self) -> Vec<Case>;
    fn bench_cases(&self, quick: bool) -> Vec<Case>;
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg>;
    /// Every tensor argument in parameter order; outputs poisoned.
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor>;
    /// Indices (into `inputs`) of the outputs.
    fn outputs(&self) -> Vec<usize>;
    /// Expected values of each output, from the inputs as stored.
    fn reference(&self, c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>>;
    /// Relative L2 tolerance: f32 outputs well under 1e-5, f16/bf16 storage with f32
    /// accumulation under 1e-2.
    fn tolerance(&self, c: &Case) -> f64 {
        if c.dtype == DType::F32 {
            1e-5
        } else {
            1e-2
        }
    }
    /// Minimum bytes moved (each input read once, each output written once).
    fn bytes(&self, c: &Case) -> f64;
    /// Floating-point operations (compute-bound kernels; `None` for memory-bound ones),
    /// counted as in `../shared/bench/README.md`.
    fn flops(&self, _c: &Case) -> Option<f64> {
        None
    }
    /// The class the benchmark plots group kernels by (`membound`, `gemm`, `fmha`).
    fn class(&self) -> &'static str {
        "membound"
    }
    /// The case for a user-given shape (`tilec bench --shapes`), or why it cannot be run.
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String>;
    /// The `config` string anchors.py uses for the same problem, when the peers run it.
    fn peer_config(&self, c: &Case) -> Option<String>;
}

/// Widest row `softmax` holds in one tile; wider rows run `softmax_online`.
const SOFTMAX_MAX_TILE: i64 = 32768;

/// Row softmax (kernels/softmax.tile): one tile per row, up to 32768 columns (32 warps).
#[derive(Debug)]
pub struct Softmax;

impl GpuKernel for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }
    fn file(&self) -> &'static str {
        "softmax.tile"
    }
    fn cases(&self) -> Vec<Case> {
        let c = |dtype, m, n, rows: i64| Case { dtype, dims: vec![m, n], consts: vec![("ROWS".into(), rows)] };
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
    }
    fn bench_cases(&self, quick: bool) -> Vec<Case> {
        let c = |dtype, m, n, rows: i64| Case { dtype, dims: vec![m, n], consts: vec![("ROWS".into(), rows)] };
        let mut v = vec![c(DType::F16, 16384, 4096, 1)];
        if !quick {
            v.push(c(DType::F32, 16384, 4096, 1));
            v.push(c(DType::F16, 65536, 1024, 4));
            v.push(c(DType::F16, 4096, 32768, 1));
        }
        v
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        let rows = case_const(c, "ROWS", 1);
        // A tile needs at least 32 elements (one per lane).
        let block_n = (c.dims[1].max(1) as u64).next_power_of_two().max((32 / rows.max(1)) as u64) as i64;
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("BLOCK_N".to_string(), ConstArg::Int(block_n)),
            ("ROWS".to_string(), ConstArg::Int(rows)),
        ])
    }
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor> {
        let n = (c.dims[0] * c.dims[1]) as usize;
        // Normal-ish values with a spread that exercises exp over a wide range.
        let x: Vec<f64> = (0..n).map(|_| normal(rng) * 3.0).collect();
        vec![HostTensor::from_f64(c.dtype, &c.dims, &x), HostTensor::poisoned(c.dtype, &c.dims)]
    }
    fn outputs(&self) -> Vec<usize> {
        vec![1]
    }
    fn reference(&self, c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        vec![reference::softmax(&inputs[0].to_f64(), c.dims[0] as usize, c.dims[1] as usize)]
    }
    fn bytes(&self, c: &Case) -> f64 {
        2.0 * (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes())
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [m, n] if *m >= 0 && (1..=SOFTMAX_MAX_TILE).contains(n) && dtype.is_float() => {
                Ok(Case { dtype, dims: vec![*m, *n], consts: vec![("ROWS".into(), 1)] })
            }
            _ => Err(format!(
                "softmax takes MxN with N in 1..={SOFTMAX_MAX_TILE} (softmax_online beyond) and a float dtype, not {dims:?} {dtype}"
            )),
        }
    }
    fn peer_config(&self, c: &Case) -> Option<String> {
        Some(format!("M={} N={} {}", c.dims[0], c.dims[1], c.dtype))
    }
}

/// `y = silu(a) · b` (kernels/silu_mul.tile) and `out = silu(gate) · up`
/// (kernels/swiglu.tile): the same function, written as two kernels of the library.
#[derive(Debug)]
pub struct SiluMul {
    pub swiglu: bool,
}

impl GpuKernel for SiluMul {
    fn name(&self) -> &'static str {
        if self.swiglu {
            "swiglu"
        } else {
            "silu_mul"
        }
    }
    fn file(&self) -> &'static str {
        if self.swiglu {
            "swiglu.tile"
        } else {
            "silu_mul.tile"
        }
    }
    fn cases(&self) -> Vec<Case> {
        // silu_mul has no ROWS constant: one row per block.
        let sw = self.swiglu;
        let c = |dtype, m, n, rows: i64| Case {
            dtype,
            dims: vec![m, n],
            consts: if sw { vec![("ROWS".into(), rows)] } else { vec![] },
        };
        let mut v = vec![
            c(DType::F32, 1, 1, 1),
            c(DType::F16, 7, 33, 1),
            c(DType::F16, 1000, 1000, 1),
            c(DType::F32, 333, 4097, 1),
            c(DType::F16, 16384, 4096, 1),
        ];
        if self.swiglu {
            v.push(c(DType::F16, 1025, 100, 4));
            v.push(c(DType::F32, 129, 2048, 2));
        }
        v
    }
    fn bench_cases(&self, quick: bool) -> Vec<Case> {
        let dtypes: &[DType] = if quick { &[DType::F16] } else { &[DType::F16, DType::F32] };
        dtypes.iter().filter_map(|d| self.case_for(&[16384, 4096], *d).ok()).collect()
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        let rows = case_const(c, "ROWS", 1);
        let mut m = BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype))]);
        if self.swiglu {
            // ROWS rows of up to 4096 columns per block (16 elements per thread with 8 warps, measured
            // 2% faster than 2048 on the H100); at least 32 elements per tile.
            let bn = (c.dims[1].max(1) as u64).next_power_of_two().clamp((32 / rows.max(1)) as u64, 4096) as i64;
            m.insert("ROWS".into(), ConstArg::Int(rows));
            m.insert("BLOCK_N".into(), ConstArg::Int(bn));
        } else {
            let bn = (c.dims[1].max(1) as u64).next_power_of_two().clamp(32, 4096) as i64;
            m.insert("BLOCK_N".into(), ConstArg::Int(bn));
        }
        m
    }
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor> {
        let n = (c.dims[0] * c.dims[1]) as usize;
        let mut a: Vec<f64> = (0..n).map(|_| normal(rng) * 2.0).collect();
        // Inputs where exp(-a) overflows or vanishes: silu must stay finite there (in large
        // cases only: silu(-100) is an f32 subnormal, which alone would make the relative
        // error of a one-element case meaningless).
        if n >= 1024 {
            for (x, v) in a.iter_mut().zip([-100.0, 100.0, -90.0, 90.0]) {
                *x = v;
            }
        }
        let b: Vec<f64> = (0..n).map(|_| normal(rng)).collect();
        vec![
            HostTensor::from_f64(c.dtype, &c.dims, &a),
            HostTensor::from_f64(c.dtype, &c.dims, &b),
            HostTensor::poisoned(c.dtype, &c.dims),
        ]
    }
    fn outputs(&self) -> Vec<usize> {
        vec![2]
    }
    fn reference(&self, _c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        vec![reference::silu_mul(&inputs[0].to_f64(), &inputs[1].to_f64())]
    }
    fn bytes(&self, c: &Case) -> f64 {
        3.0 * (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes())
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [m, n] if *m >= 0 && *n >= 1 && dtype.is_float() => {
                let consts = if self.swiglu { vec![("ROWS".into(), 1)] } else { vec![] };
                Ok(Case { dtype, dims: vec![*m, *n], consts })
            }
            _ => Err(format!("{} takes MxN and a float dtype, not {dims:?} {dtype}", self.name())),
        }
    }
    fn peer_config(&self, c: &Case) -> Option<String> {
        // anchors.py times silu_mul on [M, 2N] → [M, N]: the same bytes and arithmetic.
        (!self.swiglu).then(|| format!("M={} N={} {} (in 2N)", c.dims[0], c.dims[1], c.dtype))
    }
}

/// Online softmax (kernels/softmax_online.tile) for rows of any width.
#[derive(Debug)]
pub struct SoftmaxOnline;

impl GpuKernel for SoftmaxOnline {
    fn name(&self) -> &'static str {
        "softmax_online"
    }
    fn file(&self) -> &'static str {
        "softmax_online.tile"
    }
    fn peer_kernel(&self) -> &'static str {
        "softmax"
    }
    fn cases(&self) -> Vec<Case> {
        let c = |dtype, m, n| Case { dtype, dims: vec![m, n], consts: vec![] };
        vec![
            c(DType::F32, 3, 5),
            c(DType::F16, 7, 4097),
            c(DType::F16, 64, 32768),
            c(DType::F16, 5, 100_000),
            c(DType::F32, 33, 20000),
            c(DType::BF16, 17, 9000),
            c(DType::F16, 4096, 16384),
        ]
    }
    fn bench_cases(&self, quick: bool) -> Vec<Case> {
        let mut v = vec![Case { dtype: DType::F16, dims: vec![4096, 32768], consts: vec![] }];
        if !quick {
            v.push(Case { dtype: DType::F16, dims: vec![16384, 4096], consts: vec![] });
        }
        v
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype)), ("BLOCK_N".to_string(), ConstArg::Int(4096))])
    }
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor> {
        Softmax.inputs(c, rng)
    }
    fn outputs(&self) -> Vec<usize> {
        vec![1]
    }
    fn reference(&self, c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        Softmax.reference(c, inputs)
    }
    fn bytes(&self, c: &Case) -> f64 {
        Softmax.bytes(c)
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [m, n] if *m >= 0 && *n >= 1 && dtype.is_float() => Ok(Case { dtype, dims: dims.to_vec(), consts: vec![] }),
            _ => Err(format!("softmax_online takes MxN and a float dtype, not {dims:?} {dtype}")),
        }
    }
    fn peer_config(&self, c: &Case) -> Option<String> {
        Softmax.peer_config(c)
    }
}

/// Matrix transpose (kernels/transpose.tile): exercises the shared-memory exchange that
/// permutes and layout conversions use.
#[derive(Debug)]
pub struct Transpose;

impl GpuKernel for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }
    fn file(&self) -> &'static str {
        "transpose.tile"
    }
    fn cases(&self) -> Vec<Case> {
        let c = |dtype, m, n| Case { dtype, dims: vec![m, n], consts: vec![] };
        vec![c(DType::F16, 1, 1), c(DType::F16, 70, 33), c(DType::F32, 1000, 999), c(DType::BF16, 4096, 4096)]
    }
    fn bench_cases(&self, _quick: bool) -> Vec<Case> {
        vec![Case { dtype: DType::F16, dims: vec![16384, 4096], consts: vec![] }]
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype))])
    }
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor> {
        let x: Vec<f64> = (0..c.dims[0] * c.dims[1]).map(|_| normal(rng)).collect();
        vec![HostTensor::from_f64(c.dtype, &c.dims, &x), HostTensor::poisoned(c.dtype, &[c.dims[1], c.dims[0]])]
    }
    fn outputs(&self) -> Vec<usize> {
        vec![1]
    }
    fn exact_outputs(&self) -> Vec<usize> {
        vec![1]
    }
    fn reference(&self, c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        let x = inputs[0].to_f64();
        vec![(0..n * m).map(|i| x[(i % m) * n + i / m]).collect()]
    }
    fn bytes(&self, c: &Case) -> f64 {
        2.0 * (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes())
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [m, n] if *m >= 1 && *n >= 1 => Ok(Case { dtype, dims: dims.to_vec(), consts: vec![] }),
            _ => Err(format!("transpose takes MxN, not {dims:?}")),
        }
    }
    fn peer_config(&self, _c: &Case) -> Option<String> {
        None
    }
}

/// Embedding lookup (kernels/embedding.tile): an element read and a gather per row. Case
/// dims: `[tokens, rows of the table, D]`; some ids are out of range (zero rows).
#[derive(Debug)]
pub struct Embedding;

impl GpuKernel for Embedding {
    fn name(&self) -> &'static str {
        "embedding"
    }
    fn file(&self) -> &'static str {
        "embedding.tile"
    }
    fn cases(&self) -> Vec<Case> {
        let c = |dtype, n, v, d| Case { dtype, dims: vec![n, v, d], consts: vec![] };
        vec![
            c(DType::F16, 1, 1, 1),
            c(DType::F16, 100, 50, 33),
            c(DType::F32, 77, 10, 3000),
            c(DType::BF16, 1000, 32000, 128),
        ]
    }
    fn bench_cases(&self, _quick: bool) -> Vec<Case> {
        vec![Case { dtype: DType::F16, dims: vec![16384, 32000, 4096], consts: vec![] }]
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        let bd = (c.dims[2].max(1) as u64).next_power_of_two().clamp(32, 1024) as i64;
        BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype)), ("BLOCK_D".to_string(), ConstArg::Int(bd))])
    }
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor> {
        let [n, v, d] = c.dims[..] else { return vec![] };
        // One id in 16 is out of range (negative or past the table).
        let ids: Vec<f64> = (0..n)
            .map(|i| match i % 16 {
                7 => -1.0,
                11 => v as f64,
                _ => rng.gen_range(0..v) as f64,
            })
            .collect();
        let table: Vec<f64> = (0..v * d).map(|_| normal(rng)).collect();
        vec![
            HostTensor::from_f64(DType::I32, &[n], &ids),
            HostTensor::from_f64(c.dtype, &[v, d], &table),
            HostTensor::poisoned(c.dtype, &[n, d]),
        ]
    }
    fn outputs(&self) -> Vec<usize> {
        vec![2]
    }
    fn exact_outputs(&self) -> Vec<usize> {
        vec![2]
    }
    fn reference(&self, c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        let (v, d) = (c.dims[1], c.dims[2] as usize);
        let (ids, table) = (inputs[0].to_f64(), inputs[1].to_f64());
        let mut out = Vec::with_capacity(ids.len() * d);
        for id in ids {
            let ok = id >= 0.0 && (id as i64) < v;
            out.extend((0..d).map(|j| if ok { table[id as usize * d + j] } else { 0.0 }));
        }
        vec![out]
    }
    fn bytes(&self, c: &Case) -> f64 {
        // Each gathered row read once and written once; the ids read once.
        (2 * c.dims[0] * c.dims[2]) as f64 * f64::from(c.dtype.bytes()) + 4.0 * c.dims[0] as f64
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [n, v, d] if *n >= 1 && *v >= 1 && *d >= 1 => Ok(Case { dtype, dims: dims.to_vec(), consts: vec![] }),
            _ => Err(format!("embedding takes NxVxD (tokens, table rows, width), not {dims:?}")),
        }
    }
    fn peer_config(&self, _c: &Case) -> Option<String> {
        None
    }
}

/// GELU, tanh approximation (kernels/gelu.tile).
#[derive(Debug)]
pub struct Gelu;

impl GpuKernel for Gelu {
    fn name(&self) -> &'static str {
        "gelu"
    }
    fn file(&self) -> &'static str {
        "gelu.tile"
    }
    fn cases(&self) -> Vec<Case> {
        let c = |dtype, m, n| Case { dtype, dims: vec![m, n], consts: vec![] };
        vec![c(DType::F32, 1, 1), c(DType::F16, 7, 33), c(DType::F32, 333, 4097), c(DType::BF16, 1000, 1000)]
    }
    fn bench_cases(&self, _quick: bool) -> Vec<Case> {
        vec![Case { dtype: DType::F16, dims: vec![16384, 4096], consts: vec![] }]
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        let bn = (c.dims[1].max(1) as u64).next_power_of_two().clamp(32, 4096) as i64;
        BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype)), ("BLOCK_N".to_string(), ConstArg::Int(bn))])
    }
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor> {
        let x: Vec<f64> = (0..c.dims[0] * c.dims[1]).map(|_| normal(rng) * 3.0).collect();
        vec![HostTensor::from_f64(c.dtype, &c.dims, &x), HostTensor::poisoned(c.dtype, &c.dims)]
    }
    fn outputs(&self) -> Vec<usize> {
        vec![1]
    }
    fn reference(&self, _c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        vec![reference::gelu_tanh(&inputs[0].to_f64())]
    }
    fn bytes(&self, c: &Case) -> f64 {
        2.0 * (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes())
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [m, n] if *m >= 0 && *n >= 1 && dtype.is_float() => Ok(Case { dtype, dims: dims.to_vec(), consts: vec![] }),
            _ => Err(format!("gelu takes MxN and a float dtype, not {dims:?} {dtype}")),
        }
    }
    fn peer_config(&self, _c: &Case) -> Option<String> {
        None
    }
}

/// The RoPE cos/sin tables (kernels/rope.tile, `rope_table`). Case dims: `[positions, HALF]`.
#[derive(Debug)]
pub struct RopeTable;

impl GpuKernel for RopeTable {
    fn name(&self) -> &'static str {
        "rope_table"
    }
    fn file(&self) -> &'static str {
        "rope.tile"
    }
    fn cases(&self) -> Vec<Case> {
        let c = |dtype, s, half| Case { dtype, dims: vec![s, half], consts: vec![] };
        // f32 only for short tables: the f32 angle s·θ (lg2/ex2.approx inside θ) drifts by
        // ~s·2⁻²² rad, which the f64 reference does not have.
        vec![c(DType::F16, 1, 32), c(DType::F16, 100, 64), c(DType::F16, 4096, 64), c(DType::F32, 16, 64)]
    }
    fn bench_cases(&self, _quick: bool) -> Vec<Case> {
        vec![]
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype)), ("HALF".to_string(), ConstArg::Int(c.dims[1]))])
    }
    fn scalars(&self, _c: &Case) -> Vec<ArgDesc> {
        vec![ArgDesc::F32(10000.0)]
    }
    fn inputs(&self, c: &Case, _rng: &mut StdRng) -> Vec<HostTensor> {
        vec![HostTensor::poisoned(c.dtype, &c.dims), HostTensor::poisoned(c.dtype, &c.dims)]
    }
    fn outputs(&self) -> Vec<usize> {
        vec![0, 1]
    }
    fn reference(&self, c: &Case, _inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        let (cos, sin) = reference::rope_table(c.dims[0] as usize, c.dims[1] as usize, 10000.0);
        vec![cos, sin]
    }
    fn bytes(&self, c: &Case) -> f64 {
        2.0 * (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes())
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [s, h] if *s >= 1 && *h >= 32 && dtype.is_float() => {
                Ok(Case { dtype, dims: dims.to_vec(), consts: vec![] })
            }
            _ => Err(format!("rope_table takes positions x HALF (HALF >= 32), not {dims:?}")),
        }
    }
    fn peer_config(&self, _c: &Case) -> Option<String> {
        None
    }
}

/// The value of a `Case` constant (`ROWS`, …) or `default`.
fn case_const(c: &Case, name: &str, default: i64) -> i64 {
    c.consts.iter().find(|(k, _)| k == name).map(|(_, v)| *v).unwrap_or(default)
}

/// RMSNorm (kernels/rmsnorm.tile), one row per block or persistent (a few blocks per SM
/// walking the rows).
#[derive(Debug)]
pub struct Rmsnorm {
    pub persistent: bool,
}

/// The epsilon of the RMSNorm tests (as anchors.py).
const RMS_EPS: f32 = 1e-6;

impl GpuKernel for Rmsnorm {
    fn name(&self) -> &'static str {
        if self.persistent {
            "rmsnorm_persistent"
        } else {
            "rmsnorm"
        }
    }
    fn file(&self) -> &'static str {
        "rmsnorm.tile"
    }
    fn peer_kernel(&self) -> &'static str {
        "rmsnorm"
    }
    fn cases(&self) -> Vec<Case> {
        let c = |dtype, m, n| Case { dtype, dims: vec![m, n], consts: vec![] };
        vec![
            c(DType::F16, 7, 33),
            c(DType::BF16, 1000, 1000),
            c(DType::F16, 333, 4096),
            c(DType::BF16, 129, 8192),
            c(DType::F16, 3, 5000),
            c(DType::F16, 16384, 4096),
        ]
    }
    fn bench_cases(&self, quick: bool) -> Vec<Case> {
        let mut v = vec![Case { dtype: DType::F16, dims: vec![16384, 4096], consts: vec![] }];
        if !quick {
            v.push(Case { dtype: DType::BF16, dims: vec![16384, 4096], consts: vec![] });
        }
        v
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        let bn = (c.dims[1].max(1) as u64).next_power_of_two().max(32) as i64;
        BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype)), ("BLOCK_N".to_string(), ConstArg::Int(bn))])
    }
    fn scalars(&self, _c: &Case) -> Vec<ArgDesc> {
        vec![ArgDesc::F32(RMS_EPS)]
    }
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor> {
        let (m, n) = (c.dims[0], c.dims[1]);
        let x: Vec<f64> = (0..m * n).map(|_| normal(rng)).collect();
        let w: Vec<f64> = (0..n).map(|_| 1.0 + 0.5 * normal(rng)).collect();
        vec![
            HostTensor::from_f64(c.dtype, &c.dims, &x),
            HostTensor::from_f64(c.dtype, &[n], &w),
            HostTensor::poisoned(c.dtype, &c.dims),
        ]
    }
    fn outputs(&self) -> Vec<usize> {
        vec![2]
    }
    fn reference(&self, c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        let (m, n) = (c.dims[0] as usize, c.dims[1] as usize);
        vec![reference::rmsnorm(&inputs[0].to_f64(), &inputs[1].to_f64(), m, n, f64::from(RMS_EPS))]
    }
    fn bytes(&self, c: &Case) -> f64 {
        (2 * c.dims[0] * c.dims[1] + c.dims[1]) as f64 * f64::from(c.dtype.bytes())
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [m, n] if *m >= 0 && (1..=8192).contains(n) && dtype.is_float() => {
                Ok(Case { dtype, dims: vec![*m, *n], consts: vec![] })
            }
            _ => Err(format!("{} takes MxN with N in 1..=8192 and a float dtype, not {dims:?} {dtype}", self.name())),
        }
    }
    fn peer_config(&self, c: &Case) -> Option<String> {
        Some(format!("M={} N={} {}", c.dims[0], c.dims[1], c.dtype))
    }
}

/// RoPE, half rotation, Q and K in place in one launch (kernels/rope.tile). Case dims:
/// `[B, S, H, HK, D]`.
#[derive(Debug)]
pub struct Rope;

impl GpuKernel for Rope {
    fn name(&self) -> &'static str {
        "rope"
    }
    fn file(&self) -> &'static str {
        "rope.tile"
    }
    fn cases(&self) -> Vec<Case> {
        let c = |b, s, h, hk, d| Case { dtype: DType::F16, dims: vec![b, s, h, hk, d], consts: vec![] };
        vec![c(1, 1, 1, 1, 64), c(2, 7, 4, 2, 64), c(3, 33, 32, 8, 128), c(1, 1000, 16, 16, 128), c(4, 512, 32, 8, 128)]
    }
    fn bench_cases(&self, _quick: bool) -> Vec<Case> {
        vec![Case { dtype: DType::F16, dims: vec![16, 4096, 32, 8, 128], consts: vec![] }]
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        BTreeMap::from([
            ("T".to_string(), ConstArg::DType(c.dtype)),
            ("H".to_string(), ConstArg::Int(c.dims[2])),
            ("HK".to_string(), ConstArg::Int(c.dims[3])),
            ("HALF".to_string(), ConstArg::Int(c.dims[4] / 2)),
        ])
    }
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor> {
        let [b, s, h, hk, d] = c.dims[..] else { return vec![] };
        let q: Vec<f64> = (0..b * s * h * d).map(|_| normal(rng)).collect();
        let k: Vec<f64> = (0..b * s * hk * d).map(|_| normal(rng)).collect();
        let half = d / 2;
        let angle = |i: i64| (i / half) as f64 * 10000f64.powf(-((i % half) as f64) / half as f64);
        let cos: Vec<f64> = (0..s * half).map(|i| angle(i).cos()).collect();
        let sin: Vec<f64> = (0..s * half).map(|i| angle(i).sin()).collect();
        vec![
            HostTensor::from_f64(c.dtype, &[b, s, h, d], &q),
            HostTensor::from_f64(c.dtype, &[b, s, hk, d], &k),
            HostTensor::from_f64(c.dtype, &[s, half], &cos),
            HostTensor::from_f64(c.dtype, &[s, half], &sin),
        ]
    }
    fn outputs(&self) -> Vec<usize> {
        vec![0, 1]
    }
    fn reference(&self, c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        let [b, s, h, hk, d] = c.dims[..].iter().map(|x| *x as usize).collect::<Vec<_>>()[..] else { return vec![] };
        let half = d / 2;
        let (cos, sin) = (inputs[2].to_f64(), inputs[3].to_f64());
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
        vec![rot(&inputs[0].to_f64(), h), rot(&inputs[1].to_f64(), hk)]
    }
    fn bytes(&self, c: &Case) -> f64 {
        let [b, s, h, hk, d] = c.dims[..] else { return 0.0 };
        // q and k read and written once; the cos/sin tables read once.
        (2 * b * s * (h + hk) * d + s * d) as f64 * f64::from(c.dtype.bytes())
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [b, s, h, hk, d]
                if dtype == DType::F16 && *b >= 1 && *s >= 1 && (*d == 64 || *d == 128) && *h >= 1 && *hk >= 1 =>
            {
                Ok(Case { dtype, dims: dims.to_vec(), consts: vec![] })
            }
            _ => {
                Err(format!("rope takes BxSxHxHKxD (D 64 or 128, H and HK powers of two) in f16, not {dims:?} {dtype}"))
            }
        }
    }
    fn peer_config(&self, c: &Case) -> Option<String> {
        // anchors.py rotates q only; tilec rotates q and k (counted in the bytes).
        Some(format!("B{} S{} H{} D{} {}", c.dims[0], c.dims[1], c.dims[2], c.dims[4], c.dtype))
    }
}

/// Dropout forward with its keep mask (kernels/dropout.tile); the mask must equal the
/// interpreter's Philox bit for bit.
#[derive(Debug)]
pub struct Dropout;

/// Drop probability, seed and offset of the dropout tests.
const DROPOUT: (f32, i32, i32) = (0.1, 1234, 99);

impl GpuKernel for Dropout {
    fn name(&self) -> &'static str {
        "dropout"
    }
    fn file(&self) -> &'static str {
        "dropout.tile"
    }
    fn cases(&self) -> Vec<Case> {
        let c = |dtype, m, n| Case { dtype, dims: vec![m, n], consts: vec![] };
        vec![c(DType::F16, 7, 33), c(DType::F32, 1000, 1000), c(DType::BF16, 129, 3000), c(DType::F16, 16384, 4096)]
    }
    fn bench_cases(&self, _quick: bool) -> Vec<Case> {
        vec![Case { dtype: DType::F16, dims: vec![16384, 4096], consts: vec![] }]
    }
    fn consts(&self, c: &Case) -> BTreeMap<String, ConstArg> {
        let bn = (c.dims[1].max(1) as u64).next_power_of_two().clamp(32, 1024) as i64;
        BTreeMap::from([("T".to_string(), ConstArg::DType(c.dtype)), ("BLOCK_N".to_string(), ConstArg::Int(bn))])
    }
    fn scalars(&self, _c: &Case) -> Vec<ArgDesc> {
        vec![ArgDesc::F32(DROPOUT.0), ArgDesc::I32(DROPOUT.1), ArgDesc::I32(DROPOUT.2)]
    }
    fn exact_outputs(&self) -> Vec<usize> {
        vec![2]
    }
    fn inputs(&self, c: &Case, rng: &mut StdRng) -> Vec<HostTensor> {
        let x: Vec<f64> = (0..c.dims[0] * c.dims[1]).map(|_| normal(rng)).collect();
        vec![
            HostTensor::from_f64(c.dtype, &c.dims, &x),
            HostTensor::poisoned(c.dtype, &c.dims),
            HostTensor::poisoned(c.dtype, &c.dims),
        ]
    }
    fn outputs(&self) -> Vec<usize> {
        vec![1, 2]
    }
    fn reference(&self, _c: &Case, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
        let (p, seed, offset) = DROPOUT;
        let x = inputs[0].to_f64();
        let keep: Vec<bool> = (0..x.len())
            .map(|i| tilec_interp::rand_uniform(seed as u32, (i as u32).wrapping_add(offset as u32)) >= p)
            .collect();
        let scale = 1.0 / (1.0 - f64::from(p));
        let y = x.iter().zip(&keep).map(|(v, k)| if *k { v * scale } else { 0.0 }).collect();
        let mask = keep.iter().map(|k| f64::from(u8::from(*k))).collect();
        vec![y, mask]
    }
    fn bytes(&self, c: &Case) -> f64 {
        // x read; y and the mask (in x's dtype) written.
        3.0 * (c.dims[0] * c.dims[1]) as f64 * f64::from(c.dtype.bytes())
    }
    fn case_for(&self, dims: &[i64], dtype: DType) -> Result<Case, String> {
        match dims {
            [m, n] if *m >= 0 && *n >= 1 && dtype.is_float() => Ok(Case { dtype, dims: dims.to_vec(), consts: vec![] }),
            _ => Err(format!("dropout takes MxN and a float dtype, not {dims:?} {dtype}")),
        }
    }
    fn peer_config(&self, c: &Case) -> Option<String> {
        Some(format!("M={} N={} {} p={}", c.dims[0], c.dims[1], c.dtype, DROPOUT.0))
    }
}

/// Standard normal sample (Box–Muller).
pub fn normal(rng: &mut StdRng) -> f64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    let v: f64 = rng.gen_range(0.0..1.0);
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// Every kernel with a GPU test.
pub fn all() -> Vec<Box<dyn GpuKernel>> {
    vec![
        Box::new(Softmax),
        Box::new(SoftmaxOnline),
        Box::new(SiluMul { swiglu: false }),
        Box::new(SiluMul { swiglu: true }),
        Box::new(Rmsnorm { persistent: false }),
        Box::new(Rmsnorm { persistent: true }),
        Box::new(Rope),
        Box::new(Dropout),
        Box::new(Transpose),
        Box::new(Embedding),
        Box::new(Gelu),
        Box::new(RopeTable),
    ]
}

/// The outcome of checking one case.
#[derive(Clone, Debug, Serialize)]
pub struct CheckRow {
    pub kernel: String,
    pub shape: String,
    pub dtype: DType,
    pub max_abs: f64,
    pub rel_l2: f64,
    pub tolerance: f64,
    pub pass: bool,
    pub note: String,
}

/// A kernel compiled, loaded and with its arguments on the device.
#[derive(Debug)]
pub struct Prepared {
    pub kernel: tilec_runtime::Kernel,
    pub tensors: Vec<tilec_runtime::DeviceTensor>,
    pub host: Vec<HostTensor>,
    pub args: Vec<ArgDesc>,
    pub report: Vec<String>,
}

/// Compiles `k` for `case` (specialised on the alignment of the actual tensors), uploads
/// fresh random inputs and returns everything needed to launch.
pub fn prepare(
    dev: &Device,
    kernels_dir: &Path,
    k: &dyn GpuKernel,
    case: &Case,
    seed: u64,
) -> Result<Prepared, String> {
    let path = kernels_dir.join(k.file());
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let source = Source::new(path.display().to_string(), text);
    let mut rng = StdRng::seed_from_u64(seed);
    let host = k.inputs(case, &mut rng);
    let tensors = host.iter().map(|h| dev.upload(h)).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
    let mut args: Vec<ArgDesc> = tensors.iter().map(|t| ArgDesc::Tensor(dev.desc(t))).collect();
    args.extend(k.scalars(case));
    let file = tilec_frontend::parse(&source.text).map_err(|d| tilec_core::diag::render(&d, &source))?;
    let name = k.kernel(case);
    let kdecl = file.kernels.iter().find(|d| d.name.name == name).ok_or_else(|| format!("no kernel `{name}`"))?;
    let tensor_names: Vec<String> = kdecl.params.iter().filter(|p| !p.is_const).map(|p| p.name.name.clone()).collect();
    let unaligned: BTreeSet<String> = args
        .iter()
        .zip(&tensor_names)
        .filter(|(a, _)| matches!(a, ArgDesc::Tensor(t) if !t.aligned16()))
        .map(|(_, n)| n.clone())
        .collect();
    let target = dev.target().map_err(|e| e.to_string())?;
    // The case's own constants win over what the kernel derives from the shape.
    let mut consts = k.consts(case);
    for (n, v) in &case.consts {
        consts.insert(n.clone(), ConstArg::Int(*v));
    }
    let opts = CompileOptions {
        arch: target.name.to_string(),
        kernel: Some(name.to_string()),
        consts,
        unaligned,
        opt_level: None,
        until: None,
    };
    let compiled = compile(&source, &opts).map_err(|e| e.render())?;
    let kernel = dev.load(compiled.ptx(), compiled.signature.clone()).map_err(|e| e.to_string())?;
    Ok(Prepared { kernel, tensors, host, args, report: compiled.report })
}

/// Runs once and compares every output with the reference.
pub fn check_case(dev: &Device, kernels_dir: &Path, k: &dyn GpuKernel, case: &Case, seed: u64) -> CheckRow {
    let mut row = CheckRow {
        kernel: k.name().to_string(),
        shape: case.label(),
        dtype: case.dtype,
        max_abs: f64::NAN,
        rel_l2: f64::NAN,
        tolerance: k.tolerance(case),
        pass: false,
        note: String::new(),
    };
    let run = || -> Result<(f64, f64), String> {
        let p = prepare(dev, kernels_dir, k, case, seed)?;
        dev.launch(&p.kernel, &p.args).map_err(|e| e.to_string())?;
        dev.synchronize().map_err(|e| e.to_string())?;
        let expected = k.reference(case, &p.host);
        let (mut max_abs, mut rel): (f64, f64) = (0.0, 0.0);
        for (o, want) in k.outputs().into_iter().zip(expected) {
            let got = dev.download(&p.tensors[o]).map_err(|e| e.to_string())?.to_f64();
            if k.exact_outputs().contains(&o) {
                let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
                if bad > 0 || got.len() != want.len() {
                    return Err(format!(
                        "{bad} of {} elements of output {o} differ from the exact reference",
                        want.len()
                    ));
                }
            }
            let (a, r) = reference::errors(&got, &want);
            if a.is_nan() {
                return Ok((f64::NAN, f64::NAN));
            }
            max_abs = max_abs.max(a);
            rel = rel.max(r);
        }
        Ok((max_abs, rel))
    };
    match run() {
        Ok((a, r)) => {
            row.max_abs = a;
            row.rel_l2 = r;
            row.pass = r <= row.tolerance;
            if r.is_nan() {
                row.note = "NaN or unwritten output".into();
            }
        }
        Err(e) => row.note = e,
    }
    row
}

/// One timed configuration.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub kernel: String,
    pub class: String,
    pub shape: String,
    pub dtype: DType,
    /// The anchors.py kernel and config of the same problem, if the peers run it.
    pub peer_kernel: String,
    pub peer_config: Option<String>,
    pub median_ms: f64,
    pub min_ms: f64,
    pub gbps: f64,
    pub tflops: Option<f64>,
    /// The floor time: bytes over the measured copy bandwidth, or FLOPs over the measured
    /// matrix rate (cuBLAS of the same run) when that is larger and known.
    pub floor_ms: f64,
    pub copy_gbps: f64,
    pub rel_l2: f64,
    pub runs: usize,
    pub report: Vec<String>,
}

/// Checks then times one case: 10 warm-up runs, `reps` timed runs with L2 flushed before
/// each (outside the timed region), median reported. `matmul_tflops` is the measured matrix
/// rate (cuBLAS in the same run), for the floor of compute-bound kernels.
pub fn bench_case(
    dev: &Device,
    kernels_dir: &Path,
    k: &dyn GpuKernel,
    case: &Case,
    reps: usize,
    copy_gbps: f64,
    matmul_tflops: Option<f64>,
) -> Result<BenchRow, String> {
    let check = check_case(dev, kernels_dir, k, case, 7);
    if !check.pass {
        return Err(format!(
            "{} {} fails its check (rel L2 {:.3e}) {}: not timed",
            k.name(),
            case.label(),
            check.rel_l2,
            check.note
        ));
    }
    let p = prepare(dev, kernels_dir, k, case, 11)?;
    let plan = tilec_runtime::validate(&p.kernel.signature, &p.args, None).map_err(|e| e.to_string())?;
    let mut scratch = dev.l2_flusher(256 << 20).map_err(|e| e.to_string())?;
    let times = dev
        .time(10, reps, || dev.flush(&mut scratch), || dev.launch_plan(&p.kernel, &plan))
        .map_err(|e| e.to_string())?;
    let med = tilec_runtime::median(&times);
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let bytes = k.bytes(case);
    Ok(BenchRow {
        kernel: k.name().to_string(),
        class: k.class().to_string(),
        shape: case.label(),
        dtype: case.dtype,
        peer_kernel: k.peer_kernel().to_string(),
        peer_config: k.peer_config(case),
        median_ms: med,
        min_ms: min,
        gbps: bytes / (med * 1e-3) / 1e9,
        tflops: k.flops(case).map(|f| f / (med * 1e-3) / 1e12),
        floor_ms: {
            let mem = bytes / (copy_gbps * 1e9) * 1e3;
            match (k.flops(case), matmul_tflops) {
                (Some(f), Some(t)) => mem.max(f / (t * 1e12) * 1e3),
                _ => mem,
            }
        },
        copy_gbps,
        rel_l2: check.rel_l2,
        runs: times.len(),
        report: p.report,
    })
}
