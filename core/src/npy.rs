//! NumPy's `.npy` format (versions 1–3), for tensors that come from or go to Python
//! (`tilec run --arg @x.npy`, `--save-out DIR`).
//!
//! Read: little-endian `float16`, `float32`, `float64`, `int8`, `int32`, `int64`, `uint8`,
//! `uint32` and `bool`, C order. Refused with the reason: Fortran order, big-endian data, other
//! dtypes, a size that does not match the shape. Write: C order, version 1.0, the header
//! padded to 64 bytes as NumPy does; `bf16` and fp8 tensors (NumPy has no such dtypes) are
//! written as `float32`, which holds every one of their values exactly (`tilec run` converts
//! them back, with a note, when such a file is given for a bf16 or fp8 parameter).

use crate::host::{contiguous_strides, HostTensor};
use crate::DType;

const MAGIC: &[u8] = b"\x93NUMPY";

fn descr_dtype(descr: &str) -> Result<DType, String> {
    Ok(match descr {
        "<f2" => DType::F16,
        "<f4" => DType::F32,
        "<i4" => DType::I32,
        "<i8" => DType::I64,
        "<f8" => DType::F64,
        "|i1" => DType::I8,
        "|u1" => DType::U8,
        "<u4" => DType::U32,
        "|b1" => DType::I1,
        d if d.starts_with('>') => return Err(format!("big-endian data (`{d}`) is not supported")),
        d => {
            return Err(format!(
                "dtype `{d}` is not supported (float16, float32, float64, int8, int32, int64, uint8, uint32, bool; NumPy has no fp8 dtype)"
            ))
        }
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

/// The array `key` (its name in the archive without `.npy`; `None`: the only one) of a
/// NumPy `.npz` archive — `np.savez` (stored) or `np.savez_compressed` (deflate), zip64
/// included.
pub fn read_npz(bytes: &[u8], key: Option<&str>) -> Result<HostTensor, String> {
    read_npz_bounded(bytes, key, u64::MAX)
}

/// [`read_npz`] of a member whose `.npy` is at most `max_bytes`: the size the archive's
/// directory gives is checked before anything is inflated (an archive of a few megabytes may
/// claim gigabytes).
pub fn read_npz_bounded(bytes: &[u8], key: Option<&str>, max_bytes: u64) -> Result<HostTensor, String> {
    let entries = zip_entries(bytes)?;
    let names: Vec<String> = entries.iter().map(|e| e.name.trim_end_matches(".npy").to_string()).collect();
    let pick = match key {
        Some(k) => names
            .iter()
            .position(|n| n == k)
            .ok_or_else(|| format!("the archive has no array `{k}` (it holds {})", names.join(", ")))?,
        None if entries.len() == 1 => 0,
        None => {
            return Err(format!(
                "the archive holds {} arrays ({}): name one, `@file.npz:NAME`",
                names.len(),
                names.join(", ")
            ))
        }
    };
    let e = &entries[pick];
    if e.size as u64 > max_bytes {
        return Err(format!(
            "`{}` holds {} bytes, more than the {max_bytes} an argument may (checked before inflating it)",
            e.name, e.size
        ));
    }
    let u16_at = |o: usize| bytes.get(o..o.checked_add(2)?).map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])));
    // Offsets read from the file are checked against its length before any arithmetic.
    let lh = e.local_offset;
    if lh > bytes.len() || bytes.get(lh..lh + 4) != Some(&[0x50, 0x4b, 0x03, 0x04][..]) {
        return Err(format!("`{}`: no local header where the directory says", e.name));
    }
    let (n, x) =
        (u16_at(lh + 26).ok_or("a truncated local header")?, u16_at(lh + 28).ok_or("a truncated local header")?);
    let start = lh + 30 + n + x;
    let data =
        bytes.get(start..start.saturating_add(e.compressed)).ok_or_else(|| format!("`{}` is truncated", e.name))?;
    match e.method {
        0 => read(data),
        8 => {
            let inflated = miniz_oxide::inflate::decompress_to_vec_with_limit(data, e.size.max(1))
                .map_err(|err| format!("`{}`: bad deflate data ({:?})", e.name, err.status))?;
            read(&inflated)
        }
        m => Err(format!("`{}` is compressed with method {m} (stored and deflate are supported)", e.name)),
    }
}

/// One member of a zip archive, from its central directory.
struct ZipEntry {
    name: String,
    method: u16,
    compressed: usize,
    size: usize,
    local_offset: usize,
}

/// The members of a zip archive (the central directory, zip64 fields included).
fn zip_entries(b: &[u8]) -> Result<Vec<ZipEntry>, String> {
    let u16_at = |o: usize| b.get(o..o.checked_add(2)?).map(|x| u16::from_le_bytes([x[0], x[1]]));
    let u32_at = |o: usize| b.get(o..o.checked_add(4)?).map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]));
    let u64_at = |o: usize| b.get(o..o.checked_add(8)?).and_then(|x| x.try_into().ok()).map(u64::from_le_bytes);
    let bad = || "not a .npz (zip) archive".to_string();
    // The end-of-directory record, within the last 64 KiB (its comment) of the file.
    let lo = b.len().saturating_sub(22 + 65_535);
    let eocd = (lo..b.len().saturating_sub(21)).rev().find(|&o| u32_at(o) == Some(0x0605_4b50)).ok_or_else(bad)?;
    let mut count = u64::from(u16_at(eocd + 10).ok_or_else(bad)?);
    let mut offset = u64::from(u32_at(eocd + 16).ok_or_else(bad)?);
    if (count == 0xffff || offset == 0xffff_ffff) && eocd >= 20 && u32_at(eocd - 20) == Some(0x0706_4b50) {
        let rec = usize::try_from(u64_at(eocd - 12).ok_or_else(bad)?).map_err(|_| bad())?;
        if rec > b.len() || u32_at(rec) != Some(0x0606_4b50) {
            return Err(bad());
        }
        count = u64_at(rec + 32).ok_or_else(bad)?;
        offset = u64_at(rec + 48).ok_or_else(bad)?;
    }
    // Offsets read from the file are checked against its length before any arithmetic.
    let mut at = usize::try_from(offset).ok().filter(|a| *a <= b.len()).ok_or_else(bad)?;
    let mut out = vec![];
    for _ in 0..count.min(1 << 16) {
        if u32_at(at) != Some(0x0201_4b50) {
            return Err("a damaged zip directory".into());
        }
        let field = |o: usize| u32_at(at + o).map(u64::from).ok_or_else(bad);
        let method = u16_at(at + 10).ok_or_else(bad)?;
        let (mut compressed, mut size, mut local) = (field(20)?, field(24)?, field(42)?);
        let n = usize::from(u16_at(at + 28).ok_or_else(bad)?);
        let x = usize::from(u16_at(at + 30).ok_or_else(bad)?);
        let c = usize::from(u16_at(at + 32).ok_or_else(bad)?);
        let name = String::from_utf8_lossy(b.get(at + 46..at + 46 + n).ok_or_else(bad)?).to_string();
        // The zip64 extra field holds, in order, the fields that read 0xFFFFFFFF.
        let mut e = at + 46 + n;
        while e + 4 <= at + 46 + n + x {
            let (id, len) = (u16_at(e).ok_or_else(bad)?, usize::from(u16_at(e + 2).ok_or_else(bad)?));
            if id == 1 {
                let mut f = e + 4;
                for v in [&mut size, &mut compressed, &mut local] {
                    if *v == 0xffff_ffff {
                        *v = u64_at(f).ok_or_else(bad)?;
                        f += 8;
                    }
                }
            }
            e += 4 + len;
        }
        let conv = |v: u64| usize::try_from(v).map_err(|_| bad());
        out.push(ZipEntry {
            name,
            method,
            compressed: conv(compressed)?,
            size: conv(size)?,
            local_offset: conv(local)?,
        });
        at += 46 + n + x + c;
    }
    Ok(out)
}

/// The `.npy` bytes of a tensor (C order).
pub fn write(t: &HostTensor) -> Vec<u8> {
    let contiguous = t.strides == contiguous_strides(&t.shape) && t.data.len() == t.numel() * t.dtype.bytes() as usize;
    // NumPy has no bfloat16, fp8 or scale types: those are written as float32 (exactly);
    // packed fp4 pairs as their bytes.
    let (descr, data) = match t.dtype {
        DType::BF16 | DType::F8E4M3 | DType::F8E5M2 | DType::UE8M0 | DType::UE4M3 => {
            ("<f4", HostTensor::from_f64(DType::F32, &t.shape, &t.to_f64()).data)
        }
        d => {
            let descr = match d {
                DType::F16 => "<f2",
                DType::F32 => "<f4",
                DType::F64 => "<f8",
                DType::I8 => "|i1",
                DType::U8 | DType::F4E2M1X2 => "|u1",
                DType::I32 => "<i4",
                DType::U32 => "<u4",
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

    /// A stored (uncompressed) zip of `.npy` members, as `np.savez` writes one.
    fn zip(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let (mut out, mut dir) = (vec![], vec![]);
        for (name, data) in members {
            let off = out.len() as u32;
            let head = |sig: u32, central: bool| {
                let mut h = sig.to_le_bytes().to_vec();
                if central {
                    h.extend_from_slice(&[20, 0]);
                }
                h.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
                h.extend_from_slice(&(data.len() as u32).to_le_bytes());
                h.extend_from_slice(&(data.len() as u32).to_le_bytes());
                h.extend_from_slice(&(name.len() as u16).to_le_bytes());
                h.extend_from_slice(&[0, 0]);
                if central {
                    // Comment length, disk, internal and external attributes, then the offset.
                    h.extend_from_slice(&[0; 10]);
                    h.extend_from_slice(&off.to_le_bytes());
                }
                h.extend_from_slice(name.as_bytes());
                h
            };
            out.extend(head(0x0403_4b50, false));
            out.extend_from_slice(data);
            dir.extend(head(0x0201_4b50, true));
        }
        let cd = out.len() as u32;
        out.extend_from_slice(&dir);
        out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(dir.len() as u32).to_le_bytes());
        out.extend_from_slice(&cd.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out
    }

    #[test]
    fn npz_members_by_name() {
        let a = HostTensor::from_f64(DType::F32, &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let b = HostTensor::from_f64(DType::I32, &[3], &[7.0, 8.0, 9.0]);
        let z = zip(&[("a.npy", write(&a)), ("ids.npy", write(&b))]);
        assert_eq!(read_npz(&z, Some("a")).unwrap(), a);
        assert_eq!(read_npz(&z, Some("ids")).unwrap().to_f64(), vec![7.0, 8.0, 9.0]);
        assert!(read_npz(&z, None).unwrap_err().contains("name one"));
        assert!(read_npz(&z, Some("b")).unwrap_err().contains("a, ids"));
        let one = zip(&[("x.npy", write(&b))]);
        assert_eq!(read_npz(&one, None).unwrap().to_f64(), vec![7.0, 8.0, 9.0]);
        assert!(read_npz(b"PK not really", None).is_err());
        // A member larger than allowed is refused by its directory size, before inflating.
        let big = write(&a).len() as u64;
        assert!(read_npz_bounded(&z, Some("a"), big - 1).unwrap_err().contains("before inflating"));
        assert_eq!(read_npz_bounded(&z, Some("a"), big).unwrap(), a);
        // A member that claims deflate but holds garbage: a short message, not a dump of the
        // inflater's buffer (issue 26, item 8).
        let mut bad = z.clone();
        let cd = bad.windows(4).position(|w| w == [0x50, 0x4b, 0x01, 0x02]).expect("a central directory");
        bad[cd + 10] = 8;
        // The member's first byte (after the 30-byte local header and its 5-byte name) as a
        // block of the reserved type 3.
        bad[35] = 0x07;
        let e = read_npz(&bad, Some("a")).unwrap_err();
        assert!(e.contains("bad deflate data") && e.len() < 200, "{e}");
        assert!(read_npz(&z[..z.len() - 3], Some("a")).is_err());
        // Offsets far past the end (the directory's and a member's) are errors, not overflows.
        let mut far = z.clone();
        let n = far.len();
        far[n - 6..n - 2].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(read_npz(&far, Some("a")).is_err());
        let cd = u32::from_le_bytes(z[n - 6..n - 2].try_into().unwrap()) as usize;
        let mut far = z.clone();
        far[cd + 42..cd + 46].copy_from_slice(&(u32::MAX - 3).to_le_bytes());
        assert!(read_npz(&far, Some("a")).unwrap_err().contains("no local header"));
    }

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
        assert!(read(&patched(&t, b"<f4", b"<c8")).unwrap_err().contains("not supported"));
        assert!(read(&patched(&t, b"False", b"True ")).unwrap_err().contains("Fortran"));
        assert!(read(&patched(&t, b"<f4", b">f4")).unwrap_err().contains("big-endian"));
        assert!(read(&patched(&t, b"(4,)", b"(x,)")).unwrap_err().contains("not a size"));
        let square = write(&HostTensor::from_f64(DType::F32, &[1, 1], &[1.0]));
        assert!(read(&patched(&square, b"(1, 1)", b"(-1,-1)")).unwrap_err().contains("not a size"));
    }
}
