//! Host-side tensors: bytes with a dtype, shape and strides, and f64 views for checking.

use crate::DType;

#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<i64>,
    /// In elements.
    pub strides: Vec<i64>,
    pub data: Vec<u8>,
}

impl HostTensor {
    /// A contiguous row-major tensor of `values` rounded to `dtype`.
    pub fn from_f64(dtype: DType, shape: &[i64], values: &[f64]) -> HostTensor {
        HostTensor::encoded(dtype, shape, values, |v, out| dtype.encode(*v, out))
    }

    /// A contiguous row-major tensor of `n` values made by `next` in order and rounded to
    /// `dtype` as they come (no f64 buffer of the whole tensor: for inputs of billions of
    /// elements).
    pub fn from_fn(dtype: DType, shape: &[i64], mut next: impl FnMut(usize) -> f64) -> HostTensor {
        let n: usize = shape.iter().map(|&d| d.max(0) as usize).product();
        let b = dtype.bytes() as usize;
        let mut data = vec![0u8; n * b];
        for (i, out) in data.chunks_mut(b).enumerate() {
            dtype.encode(next(i), out);
        }
        HostTensor { dtype, shape: shape.to_vec(), strides: contiguous_strides(shape), data }
    }

    /// A contiguous row-major tensor of `values`, each written into its bytes by `encode`.
    fn encoded<V>(dtype: DType, shape: &[i64], values: &[V], encode: impl Fn(&V, &mut [u8])) -> HostTensor {
        let b = dtype.bytes() as usize;
        let mut data = vec![0u8; values.len() * b];
        for (v, out) in values.iter().zip(data.chunks_mut(b)) {
            encode(v, out);
        }
        HostTensor { dtype, shape: shape.to_vec(), strides: contiguous_strides(shape), data }
    }

    /// A contiguous tensor filled with NaN (floats) or a recognisable pattern (ints), so an
    /// element the kernel fails to write is caught.
    pub fn poisoned(dtype: DType, shape: &[i64]) -> HostTensor {
        let n: i64 = shape.iter().product();
        let v = if dtype.is_float() { f64::NAN } else { -0x5a5a5a5a as f64 };
        HostTensor::from_f64(dtype, shape, &vec![v; n.max(0) as usize])
    }

    /// A contiguous row-major tensor of integer `values` wrapped to `dtype` (exact for every
    /// i64, unlike [`HostTensor::from_f64`]).
    pub fn from_i64(dtype: DType, shape: &[i64], values: &[i64]) -> HostTensor {
        HostTensor::encoded(dtype, shape, values, |v, out| dtype.encode_int(*v, out))
    }

    /// Elements in row-major order as exact integers (`None` for a float dtype).
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        let b = self.dtype.bytes() as usize;
        self.offsets().map(|o| self.dtype.decode_int(&self.data[o * b..o * b + b])).collect()
    }

    /// The element offsets of the tensor in row-major order.
    fn offsets(&self) -> impl Iterator<Item = usize> + '_ {
        let mut idx = vec![0i64; self.shape.len()];
        (0..self.numel()).map(move |_| {
            let off: i64 = idx.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
            off as usize
        })
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product::<i64>().max(0) as usize
    }

    /// Elements in row-major order as f64 (exact for every dtype but i64 above 2^53).
    pub fn to_f64(&self) -> Vec<f64> {
        let b = self.dtype.bytes() as usize;
        self.offsets().map(|o| self.dtype.decode(&self.data[o * b..o * b + b])).collect()
    }
}

pub fn contiguous_strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1].max(1);
    }
    s
}

/// Multi-index of linear element `i` of a row-major `shape` (extents below 1 count as 1).
pub fn unravel(mut i: i64, shape: &[i64]) -> Vec<i64> {
    let mut c = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let e = shape[d].max(1);
        c[d] = i % e;
        i /= e;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_dtypes() {
        let v = [1.0, -2.5, 0.125, 3.0];
        for d in [DType::F16, DType::BF16, DType::F32] {
            let t = HostTensor::from_f64(d, &[2, 2], &v);
            assert_eq!(t.to_f64(), v);
        }
        assert!(HostTensor::poisoned(DType::F16, &[3]).to_f64().iter().all(|x| x.is_nan()));
        assert_eq!(contiguous_strides(&[4, 5, 6]), vec![30, 6, 1]);
    }
}
