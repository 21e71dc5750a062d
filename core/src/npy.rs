//! NumPy's `.npy` format (versions 1–3), for tensors that come from or go to Python
//! (`tilec run --arg @x.npy`, `--save-out DIR`).
//!
//! Read: little-endian `float16`, `float32`, `int32`, `int64` and `bool`, C order. Refused with
//! the reason: Fortran order, big-endian data, other dtypes (`float64` says to cast to
//! `float32`), a size that does not match the shape. Write: C order, version 1.0, the header
//! padded to 64 bytes as NumPy does; `bf16` tensors (NumPy has no such dtype) are written as
//! `float32`, which holds every bf16 value exactly.

use crate::host::{contiguous_strides, HostTensor};
use crate::DType;

const MAGIC: &[u8] = b"\x93NUMPY";

fn descr_dtype(descr: &str) -> Result<DType, String> {
    Ok(match descr {
        "<f2" => DType::F16,
        "<f4" => DType::F32,
        "<i4" => DType::I32,
        "<i8" => DType::I64,
        "|b1" => DType::I1,
        "<f8" => return Err("float64 tensors are not supported: cast to float32 (`x.astype(np.float32)`)".into()),
        d if d.starts_with('>') => return Err(format!("big-endian data (`{d}`) is not supported")),
        d => return Err(format!("dtype `{d}` is not supported (float16, float32, int32, int64, bool)")),
    })
}

/// The value of `'key': …` in the header dict, up to the next top-level comma or brace.
fn header_field<'h>(header: &'h str, key: &str) -> Result<&'h str, String> {
    let pat = format!("'{key}':");
    let at = header.find(&pat).ok_or_else(|| format!("the header has no '{key}'"))? + pat.len();
    let rest = header[at..].trim_start();
    let end = if rest.starts_with('(') { rest.find(')').map(|i| i + 1) } else { rest.find([',', '}']) }
        .ok_or_else(|| format!("the header's '{key}' is not terminated"))?;
    Ok(rest[..end].trim())
}

/// A tensor from the bytes of a `.npy` file.
pub fn read(bytes: &[u8]) -> Result<HostTensor, String> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("not a .npy file (no \\x93NUMPY magic)".into());
    }
    let (header_len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10usize),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        v => return Err(format!(".npy version {v} is not supported")),
    };
    let header = bytes.get(start..start.saturating_add(header_len)).ok_or("the .npy header is truncated")?;
    let header = std::str::from_utf8(header).map_err(|_| "the .npy header is not text")?;
    let descr = header_field(header, "descr")?.trim_matches(['\'', '"']);
    let dtype = descr_dtype(descr)?;
    if header_field(header, "fortran_order")? != "False" {
        return Err("Fortran-order arrays are not supported: save `np.ascontiguousarray(x)`".into());
    }
    let shape_text = header_field(header, "shape")?;
    let inner = shape_text.strip_prefix('(').and_then(|s| s.strip_suffix(')')).ok_or("the shape is not a tuple")?;
    let mut shape = vec![];
    for d in inner.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let n: i64 =
            d.parse().ok().filter(|n| *n >= 0).ok_or_else(|| format!("the shape entry `{d}` is not a size"))?;
        shape.push(n);
    }
    let numel = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d)).ok_or("the shape overflows")?;
    let want = (numel as u128) * u128::from(dtype.bytes());
    let data = &bytes[start + header_len..];
    if data.len() as u128 != want {
        return Err(format!("the data holds {} bytes, the shape {shape:?} of {descr} needs {want}", data.len()));
    }
    Ok(HostTensor { dtype, strides: contiguous_strides(&shape), shape, data: data.to_vec() })
}

/// The `.npy` bytes of a tensor (C order).
pub fn write(t: &HostTensor) -> Vec<u8> {
    let contiguous = t.strides == contiguous_strides(&t.shape) && t.data.len() == t.numel() * t.dtype.bytes() as usize;
    let (descr, data) = match t.dtype {
        DType::BF16 => ("<f4", HostTensor::from_f64(DType::F32, &t.shape, &t.to_f64()).data),
        d => {
            let descr = match d {
                DType::F16 => "<f2",
                DType::F32 => "<f4",
                DType::I32 => "<i4",
                DType::I64 => "<i8",
                _ => "|b1",
            };
            let data = if contiguous { t.data.clone() } else { HostTensor::from_f64(d, &t.shape, &t.to_f64()).data };
            (descr, data)
        }
    };
    let dims: Vec<String> = t.shape.iter().map(i64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic, version, length, header and its newline: a multiple of 64 bytes.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips() {
        for d in [DType::F16, DType::F32, DType::I32, DType::I64, DType::I1] {
            let t = HostTensor::from_f64(d, &[2, 3], &[0.0, 1.0, -2.0, 3.0, 0.5, 1.0]);
            assert_eq!(read(&write(&t)).unwrap(), t, "{d}");
        }
        let v = HostTensor::from_f64(DType::F32, &[5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(read(&write(&v)).unwrap(), v);
        let s = HostTensor::from_f64(DType::F32, &[], &[7.0]);
        assert_eq!(read(&write(&s)).unwrap(), s);
        // bf16 comes back as the same values in float32.
        let b = HostTensor::from_f64(DType::BF16, &[2], &[1.5, -3.0]);
        let r = read(&write(&b)).unwrap();
        assert_eq!((r.dtype, r.to_f64()), (DType::F32, vec![1.5, -3.0]));
    }

    #[test]
    fn the_header_is_numpys() {
        let t = HostTensor::from_f64(DType::F16, &[2, 3], &[0.0; 6]);
        let b = write(&t);
        // What `np.save` writes for `np.zeros((2, 3), np.float16)`.
        let want = "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }";
        assert_eq!(&b[..8], b"\x93NUMPY\x01\x00");
        let len = usize::from(u16::from_le_bytes([b[8], b[9]]));
        assert_eq!((10 + len) % 64, 0);
        assert!(std::str::from_utf8(&b[10..10 + len]).unwrap().starts_with(want));
        assert_eq!(b[10 + len - 1], b'\n');
    }

    /// `b` with the first `from` replaced by `to` (same length).
    fn patched(b: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
        let at = b.windows(from.len()).position(|w| w == from).unwrap();
        let mut out = b.to_vec();
        out[at..at + to.len()].copy_from_slice(to);
        out
    }

    #[test]
    fn bad_files_say_why() {
        let t = write(&HostTensor::from_f64(DType::F32, &[4], &[1.0; 4]));
        assert!(read(&t[..t.len() - 1]).unwrap_err().contains("needs 16"));
        assert!(read(b"hello").unwrap_err().contains("not a .npy"));
        assert!(read(&patched(&t, b"<f4", b"<f8")).unwrap_err().contains("cast to float32"));
        assert!(read(&patched(&t, b"False", b"True ")).unwrap_err().contains("Fortran"));
        assert!(read(&patched(&t, b"<f4", b">f4")).unwrap_err().contains("big-endian"));
        assert!(read(&patched(&t, b"(4,)", b"(x,)")).unwrap_err().contains("not a size"));
        let square = write(&HostTensor::from_f64(DType::F32, &[1, 1], &[1.0]));
        assert!(read(&patched(&square, b"(1, 1)", b"(-1,-1)")).unwrap_err().contains("not a size"));
    }
}
