//! The `--arg` grammar of `tilec run`: tensors and scalars in parameter order.
//!
//! - `16x1024:f16` a tensor of standard normal samples (dtype default f32),
//!   `zeros:16x1024:f32` a tensor of zeros, `arange:64:i32` the numbers 0, 1, … in row-major
//!   order, `randint:0:1000:64:i32` integers uniform in [0, 1000) (ids, lengths, block
//!   tables; dtype default i32), `full:-inf:1x300:f32` a tensor of one value (a number, `inf`,
//!   `-inf` or `nan`);
//! - `@x.npy` a tensor from a NumPy file (float16/32/64, int8/32/64, uint8/32, bool; C order),
//!   `@x.npz` the only array of an archive or `@x.npz:NAME` a named one (`np.savez`,
//!   `np.savez_compressed`), `@x.bin:16x1024:f16` raw little-endian elements of a shape;
//! - `3` an i32, `0.5` an f32; a typed scalar `i32:3`, `i64:5000000000`, `f32:-1.5` (the
//!   type prefix also makes a negative value unambiguous: `--arg f32:-1`, or `--arg=-1`).

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use tilec_core::host::HostTensor;
use tilec_core::DType;
use tilec_interp::Arg;

/// Largest tensor `--arg` builds, in elements (the interpreter keeps f64 copies).
pub const MAX_ELEMENTS: u64 = 1 << 26;

/// Largest number of elements all `--arg` tensors together hold.
pub const MAX_TOTAL_ELEMENTS: u64 = 1 << 27;

/// How many elements the arguments may hold: the interpreter's (`tilec run`) or the GPU's.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub per_tensor: u64,
    pub total: u64,
}

/// The limits of arguments that the interpreter will also run on.
pub const INTERPRETER: Limits = Limits { per_tensor: MAX_ELEMENTS, total: MAX_TOTAL_ELEMENTS };

/// The limits of arguments only the GPU runs on (`tilec tune`): 2^28 elements a tensor (the
/// host builds it in f64 first, 2 GiB), 2^30 in all.
pub const GPU_ONLY: Limits = Limits { per_tensor: 1 << 28, total: 1 << 30 };

pub fn parse(args: &[String], seed: u64) -> Result<Vec<Arg>> {
    parse_with(args, seed, INTERPRETER)
}

pub fn parse_with(args: &[String], seed: u64, limits: Limits) -> Result<Vec<Arg>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut total = 0u64;
    let mut out = vec![];
    for a in args {
        let arg = parse_one(a, &mut rng, limits, limits.total.saturating_sub(total))?;
        if let Arg::Tensor(t) = &arg {
            total += t.shape.iter().product::<i64>() as u64;
        }
        out.push(arg);
    }
    Ok(out)
}

/// The first `limit + 1` bytes of the file at `path` at most: one more than `limit` says the
/// file is larger (a device such as `/dev/zero` never ends: it is read no further).
fn read_bounded(a: &str, path: &str, limit: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(path).with_context(|| format!("--arg {a}: cannot read {path}"))?;
    let mut bytes = vec![];
    f.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("--arg {a}: cannot read {path}"))?;
    Ok(bytes)
}

/// A tensor from a file: `x.npy`, `x.npz[:NAME]`, or `x.bin:SHAPE:dtype` (raw), of at most
/// `max_elements` elements: no file is read, nor archive member inflated, past what that allows.
fn file_tensor(a: &str, spec: &str, max_elements: u64) -> Result<HostTensor> {
    // Eight bytes an element at most, and room for a .npy header.
    let max_bytes = max_elements.saturating_mul(8).saturating_add(1 << 16);
    // An archive holds several members; its central directory is at its end.
    let read = |path: &str, limit: u64| -> Result<Vec<u8>> {
        let bytes = read_bounded(a, path, limit)?;
        if bytes.len() as u64 > limit {
            bail!("--arg {a}: {path} holds more than the {limit} bytes this argument may take");
        }
        Ok(bytes)
    };
    if spec.ends_with(".npy") {
        return tilec_core::npy::read(&read(spec, max_bytes)?).map_err(|e| anyhow::anyhow!("--arg {a}: {e}"));
    }
    if let Some(i) = spec.find(".npz") {
        let (path, rest) = spec.split_at(i + 4);
        let key = rest.strip_prefix(':');
        if !rest.is_empty() && key.is_none() {
            bail!("--arg {a}: an archive member is `@file.npz:NAME`");
        }
        return tilec_core::npy::read_npz_bounded(&read(path, max_bytes.saturating_mul(16))?, key, max_bytes)
            .map_err(|e| anyhow::anyhow!("--arg {a}: {e}"));
    }
    let mut it = spec.rsplitn(3, ':');
    let (dt, dims, path) = (it.next().unwrap_or(""), it.next(), it.next());
    let (Some(dims), Some(path)) = (dims, path) else {
        bail!("--arg {a}: a file is `@x.npy`, `@x.npz[:NAME]` or raw `@x.bin:SHAPE:dtype`");
    };
    let dtype = DType::parse(dt).with_context(|| format!("unknown dtype `{dt}` in --arg {a}"))?;
    let mut shape = vec![];
    for d in dims.split('x') {
        shape.push(
            d.trim()
                .parse::<i64>()
                .ok()
                .filter(|d| *d >= 0)
                .with_context(|| format!("bad extent `{d}` in --arg {a}"))?,
        );
    }
    let want = shape.iter().try_fold(u64::from(dtype.bytes()), |acc, &d| acc.checked_mul(d as u64));
    let Some(want_bytes) = want.filter(|w| *w <= max_bytes) else {
        bail!("--arg {a}: {shape:?} of {dtype} is more than the {max_elements} elements an argument may hold");
    };
    // The bytes the shape needs and one more, to tell a larger file: never the whole of it.
    let bytes = read_bounded(a, path, want_bytes)?;
    if bytes.len() as u64 > want_bytes {
        bail!("--arg {a}: {path} holds more than the {want_bytes} bytes {shape:?} of {dtype} needs");
    }
    if want != Some(bytes.len() as u64) {
        bail!(
            "--arg {a}: {path} holds {} bytes, {shape:?} of {dtype} needs {}",
            bytes.len(),
            want.map_or("more".into(), |w| w.to_string())
        );
    }
    Ok(HostTensor { dtype, strides: tilec_core::host::contiguous_strides(&shape), shape, data: bytes })
}

/// One argument; a tensor holds at most `room` elements (what the earlier ones left).
fn parse_one(a: &str, rng: &mut rand::rngs::StdRng, limits: Limits, room: u64) -> Result<Arg> {
    if let Some(spec) = a.strip_prefix('@') {
        let t = file_tensor(a, spec, room.min(limits.per_tensor))?;
        if t.numel() as u64 > room.min(limits.per_tensor) {
            bail!(
                "--arg {a}: {} elements are more than the {} the arguments may hold",
                t.numel(),
                room.min(limits.per_tensor)
            );
        }
        return Ok(Arg::Tensor(t));
    }
    if let Ok(v) = a.parse::<i32>() {
        return Ok(Arg::I32(v));
    }
    if let Ok(v) = a.parse::<f32>() {
        return Ok(Arg::F32(v));
    }
    if let Some((ty, v)) = a.split_once(':') {
        let scalar = match ty {
            "i32" => Some(v.parse::<i32>().map(Arg::I32).map_err(|e| e.to_string())),
            "i64" => Some(v.parse::<i64>().map(Arg::I64).map_err(|e| e.to_string())),
            "f32" if !v.contains('x') && !v.contains(':') => {
                Some(v.parse::<f32>().map(Arg::F32).map_err(|e| e.to_string()))
            }
            _ => None,
        };
        if let Some(s) = scalar {
            return s.map_err(|e| anyhow::anyhow!("--arg {a}: `{v}` is not an {ty}: {e}"));
        }
        // `i8:5`: a dtype and a number, not a shape. Scalars are i32, i64 or f32.
        if DType::parse(ty).is_some() && v.parse::<f64>().is_ok() && !v.contains('x') {
            bail!(
                "--arg {a}: a scalar argument is i32:V, i64:V or f32:V; a {ty} value is a tensor (full:{v}:1:{ty} is one element)"
            );
        }
    }
    #[derive(PartialEq)]
    enum Fill {
        Normal,
        Zeros,
        Arange,
        RandInt(i64, i64),
        Full(f64),
    }
    let (fill, rest) = if let Some(r) = a.strip_prefix("zeros:") {
        (Fill::Zeros, r)
    } else if let Some(r) = a.strip_prefix("arange:") {
        (Fill::Arange, r)
    } else if let Some(r) = a.strip_prefix("full:") {
        let (v, rest) = r.split_once(':').with_context(|| format!("--arg {a}: full:VALUE:SHAPE[:dtype]"))?;
        let v = v.parse::<f64>().with_context(|| format!("--arg {a}: `{v}` is not a number"))?;
        (Fill::Full(v), rest)
    } else if let Some(r) = a.strip_prefix("randint:") {
        let mut it = r.splitn(3, ':');
        let (lo, hi, rest) = (it.next().unwrap_or(""), it.next().unwrap_or(""), it.next().unwrap_or(""));
        let bound = |v: &str| {
            v.parse::<i64>()
                .with_context(|| format!("--arg {a}: `{v}` is not an integer (randint:LOW:HIGH:SHAPE[:dtype])"))
        };
        let (lo, hi) = (bound(lo)?, bound(hi)?);
        if lo >= hi {
            bail!("--arg {a}: randint's range [{lo}, {hi}) is empty");
        }
        (Fill::RandInt(lo, hi), rest)
    } else {
        (Fill::Normal, a)
    };
    let default_dtype = if matches!(fill, Fill::RandInt(..)) { "i32" } else { "f32" };
    let (dims, dt) = rest.split_once(':').unwrap_or((rest, default_dtype));
    let dtype = DType::parse(dt).with_context(|| format!("unknown dtype `{dt}` in --arg {a}"))?;
    let mut shape = vec![];
    for d in dims.split('x') {
        let e = d.trim().parse::<i64>().ok().filter(|d| *d >= 0);
        shape.push(e.with_context(|| {
            format!("bad extent `{d}` in --arg {a} (a tensor is EXTENTSxEXTENTS:dtype, a scalar i32:V, i64:V or f32:V)")
        })?);
    }
    let n = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
        .filter(|n| *n <= limits.per_tensor)
        .with_context(|| format!("--arg {a}: more than {} elements is too many for one argument", limits.per_tensor))?;
    if n > room {
        bail!("--arg {a}: the tensors of all --arg together may hold {} elements", limits.total);
    }
    if let Fill::Full(v) = fill {
        // The value must be one the dtype holds: exactly for integers and bools (300 is no i8,
        // inf no i32), without overflowing to infinity for floats (1e10 is no f16).
        let got = HostTensor::from_f64(dtype, &[1], &[v]).to_f64().first().copied().unwrap_or(f64::NAN);
        let fits =
            if dtype.is_float() { got == v || (v.is_finite() && got.is_finite()) || v.is_nan() } else { got == v };
        if !fits {
            bail!("--arg {a}: {v} does not fit in {dtype} (it would be {got})");
        }
    }
    if let Fill::RandInt(lo, hi) = fill {
        // Every value must survive the dtype exactly (an i32 tensor of ids up to 2^40 would not).
        let exact = |v: i64| HostTensor::from_f64(dtype, &[1], &[v as f64]).to_f64().first() == Some(&(v as f64));
        if !exact(lo) || !exact(hi - 1) {
            bail!("--arg {a}: [{lo}, {hi}) does not fit in {dtype}");
        }
    }
    let vals: Vec<f64> = (0..n)
        .map(|i| match fill {
            Fill::Zeros => 0.0,
            Fill::Arange => i as f64,
            Fill::RandInt(lo, hi) => rng.gen_range(lo..hi) as f64,
            Fill::Full(v) => v,
            Fill::Normal => {
                let u: f64 = rng.gen_range(f64::EPSILON..1.0);
                let v: f64 = rng.gen_range(0.0..1.0);
                (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
            }
        })
        .collect();
    if vals.is_empty() && shape.is_empty() {
        bail!("--arg {a}: a tensor needs at least one extent");
    }
    Ok(Arg::Tensor(HostTensor::from_f64(dtype, &shape, &vals)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_tensors_and_their_errors() {
        let a = parse(&["3".into(), "0.5".into(), "i64:5000000000".into(), "f32:-1".into()], 0).unwrap();
        assert_eq!(a, vec![Arg::I32(3), Arg::F32(0.5), Arg::I64(5_000_000_000), Arg::F32(-1.0)]);
        let t = parse(&["zeros:2x3:f16".into()], 0).unwrap();
        assert!(matches!(&t[0], Arg::Tensor(h) if h.shape == vec![2, 3] && h.dtype == DType::F16));
        // The element count is checked before it can wrap.
        let e = parse(&["zeros:3x6148914691236517206:f16".into()], 0).unwrap_err().to_string();
        assert!(e.contains("too many"), "{e}");
        let big: Vec<String> = (0..3).map(|_| "zeros:8192x8192:f16".to_string()).collect();
        let e = parse(&big, 0).unwrap_err().to_string();
        assert!(e.contains("all --arg together"), "{e}");
        assert!(parse(&["3x-2:f32".into()], 0).is_err());
        // Negative scalars without a type, integer ranges and aranges.
        assert_eq!(parse(&["-2.0".into(), "-3".into()], 0).unwrap(), vec![Arg::F32(-2.0), Arg::I32(-3)]);
        let r = parse(&["randint:-5:7:1000".into(), "arange:2x3:i64".into()], 0).unwrap();
        let Arg::Tensor(ids) = &r[0] else { panic!("randint is a tensor") };
        assert_eq!(ids.dtype, DType::I32);
        let v = ids.to_f64();
        assert!(v.iter().all(|x| (-5.0..7.0).contains(x) && x.fract() == 0.0), "{v:?}");
        assert!(v.contains(&-5.0) && v.contains(&6.0), "both ends are drawn");
        let Arg::Tensor(ar) = &r[1] else { panic!("arange is a tensor") };
        assert_eq!((ar.dtype, ar.to_f64()), (DType::I64, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]));
        assert!(parse(&["randint:3:3:4".into()], 0).unwrap_err().to_string().contains("empty"));
        let f = parse(&["full:-inf:2x2:f16".into(), "full:-1:3:i32".into()], 0).unwrap();
        assert!(matches!(&f[0], Arg::Tensor(t) if t.to_f64() == vec![f64::NEG_INFINITY; 4]));
        assert!(matches!(&f[1], Arg::Tensor(t) if t.dtype == DType::I32 && t.to_f64() == vec![-1.0; 3]));
        assert!(parse(&["randint:0:99999999999:4:i32".into()], 0).unwrap_err().to_string().contains("fit"));
        assert!(parse(&["randint:a:3:4".into()], 0).is_err());
        // full: refuses values its dtype cannot hold, as randint does (issue 26, item 7).
        for bad in
            ["full:300:4:i8", "full:inf:4:i32", "full:nan:2:i32", "full:-1:3:u8", "full:1e10:2:f16", "full:2.5:2:i32"]
        {
            let e = parse(&[bad.into()], 0).unwrap_err().to_string();
            assert!(e.contains("does not fit"), "{bad}: {e}");
        }
        for good in [
            "full:127:4:i8",
            "full:-inf:2:f16",
            "full:65504:2:f16",
            "full:0.1:2:f16",
            "full:nan:2:f32",
            "full:1:2:bool",
        ] {
            assert!(parse(&[good.into()], 0).is_ok(), "{good}");
        }
        // A dtype with a number is not a shape: the message says what scalars are.
        let e = parse(&["i8:5".into()], 0).unwrap_err().to_string();
        assert!(e.contains("scalar argument is i32:V") && !e.contains("unknown dtype"), "{e}");
        // Raw files of a shape, and their size check.
        let dir = std::env::temp_dir().join(format!("tilec-raw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let raw = dir.join("x.bin");
        std::fs::write(&raw, [1u8, 0, 2, 0, 3, 0]).unwrap();
        assert!(parse(&[format!("@{}:3:i16", raw.display())], 0).unwrap_err().to_string().contains("unknown dtype"));
        let r = parse(&[format!("@{}:6:u8", raw.display()), format!("@{}:2x3:i8", raw.display())], 0).unwrap();
        assert!(matches!(&r[0], Arg::Tensor(t) if t.to_f64() == vec![1.0, 0.0, 2.0, 0.0, 3.0, 0.0]));
        assert!(matches!(&r[1], Arg::Tensor(t) if t.dtype == DType::I8 && t.shape == vec![2, 3]));
        // Larger than the shape: said, and read no further than one byte past it (issue 26,
        // item 4: `@/dev/zero` grew to 2 GB); smaller: said with both sizes.
        let e = parse(&[format!("@{}:4:u8", raw.display())], 0).unwrap_err().to_string();
        assert!(e.contains("holds more than the 4 bytes"), "{e}");
        assert!(parse(&[format!("@{}:8:u8", raw.display())], 0).unwrap_err().to_string().contains("holds 6 bytes"));
        if std::path::Path::new("/dev/zero").exists() {
            let e = parse(&["@/dev/zero:16:f32".into()], 0).unwrap_err().to_string();
            assert!(e.contains("holds more than the 64 bytes"), "{e}");
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(parse(&["i32:x".into()], 0).is_err());
    }
}
