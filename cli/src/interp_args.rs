//! The `--arg` grammar of `tilec run`: tensors and scalars in parameter order.
//!
//! - `16x1024:f16` a tensor of standard normal samples (dtype default f32),
//!   `zeros:16x1024:f32` a tensor of zeros;
//! - `@x.npy` a tensor from a NumPy file (float16, float32, int32, int64, bool; C order);
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

/// One argument; a tensor holds at most `room` elements (what the earlier ones left).
fn parse_one(a: &str, rng: &mut rand::rngs::StdRng, limits: Limits, room: u64) -> Result<Arg> {
    if let Some(path) = a.strip_prefix('@') {
        let bytes = std::fs::read(path).with_context(|| format!("--arg {a}: cannot read {path}"))?;
        let t = tilec_core::npy::read(&bytes).map_err(|e| anyhow::anyhow!("--arg {a}: {e}"))?;
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
    }
    let (zeros, rest) = match a.strip_prefix("zeros:") {
        Some(r) => (true, r),
        None => (false, a),
    };
    let (dims, dt) = rest.split_once(':').unwrap_or((rest, "f32"));
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
    let vals: Vec<f64> = (0..n)
        .map(|_| {
            if zeros {
                0.0
            } else {
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
        assert!(parse(&["i32:x".into()], 0).is_err());
    }
}
