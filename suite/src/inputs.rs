//! Random inputs: standard normal samples (Box–Muller) and tensors of them.

use crate::Arg;
use rand::rngs::StdRng;
use rand::Rng;
use tilec_core::host::HostTensor;
use tilec_core::DType;

/// One standard normal sample.
pub fn normal(rng: &mut StdRng) -> f64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    let v: f64 = rng.gen_range(0.0..1.0);
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// `n` normal samples times `scale`.
pub fn randn(rng: &mut StdRng, n: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|_| normal(rng) * scale).collect()
}

/// Elements of a shape (0 for a negative extent).
pub fn numel(shape: &[i64]) -> usize {
    shape.iter().map(|&d| d.max(0) as usize).product()
}

/// Tensors past this many elements repeat a block of [`PERIOD`] normal samples instead of
/// drawing each: the decode benchmarks' K/V caches (a billion elements at B64 L32k) would take
/// minutes of Box–Muller and their f64 buffer tens of GB. No checked case is that large.
pub const LARGE: usize = 1 << 27;
/// The block a large tensor repeats (not a multiple of any row length the suite uses).
pub const PERIOD: usize = (1 << 22) + 7;

/// A tensor argument of normal samples times `scale`, rounded to `dtype` (see [`LARGE`]).
pub fn normal_tensor(rng: &mut StdRng, dtype: DType, shape: &[i64], scale: f64) -> Arg {
    let n = numel(shape);
    if n > LARGE {
        let block = randn(rng, PERIOD, scale);
        return Arg::Tensor(HostTensor::from_fn(dtype, shape, |i| block[i % PERIOD]));
    }
    Arg::Tensor(HostTensor::from_f64(dtype, shape, &randn(rng, n, scale)))
}

/// A tensor argument of the given values.
pub fn tensor(dtype: DType, shape: &[i64], values: &[f64]) -> Arg {
    Arg::Tensor(HostTensor::from_f64(dtype, shape, values))
}

/// An output argument, poisoned (NaN, or a pattern for integers).
pub fn poisoned(dtype: DType, shape: &[i64]) -> Arg {
    Arg::Tensor(HostTensor::poisoned(dtype, shape))
}

/// The values of tensor argument `i` as f64 (empty for a scalar).
pub fn values(args: &[Arg], i: usize) -> Vec<f64> {
    match args.get(i) {
        Some(Arg::Tensor(t)) => t.to_f64(),
        _ => vec![],
    }
}

/// Next power of two of `n` (at least 1), clamped to `lo..=hi`.
pub fn pow2_clamped(n: i64, lo: i64, hi: i64) -> i64 {
    ((n.max(1) as u64).next_power_of_two() as i64).clamp(lo, hi)
}
