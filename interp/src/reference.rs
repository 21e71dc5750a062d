//! Plain references: naive, obviously correct, f64 throughout.
//!
//! Inputs are the values the kernel actually sees (already rounded to the storage dtype), so
//! the only differences the checks measure are the kernel's own arithmetic and its final
//! rounding.

/// Row softmax of an `m × n` row-major matrix.
pub fn softmax(x: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        let row = &x[i * n..(i + 1) * n];
        let mx = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|v| (v - mx).exp()).collect();
        let s: f64 = e.iter().sum();
        for j in 0..n {
            out[i * n + j] = e[j] / s;
        }
    }
    out
}

/// `silu(a) · b` elementwise, with `silu(a) = a / (1 + e^-a)`.
pub fn silu_mul(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, u)| x / (1.0 + (-x).exp()) * u).collect()
}

/// Max absolute error and relative L2 error `‖out − ref‖ / ‖ref‖`; NaN anywhere in `out`
/// (an unwritten, poisoned element included) makes both NaN.
pub fn errors(out: &[f64], reference: &[f64]) -> (f64, f64) {
    if out.len() != reference.len() {
        return (f64::NAN, f64::NAN);
    }
    let mut max_abs: f64 = 0.0;
    let (mut num, mut den) = (0.0, 0.0);
    for (o, r) in out.iter().zip(reference) {
        let d = o - r;
        if d.is_nan() {
            return (f64::NAN, f64::NAN);
        }
        max_abs = max_abs.max(d.abs());
        num += d * d;
        den += r * r;
    }
    let rel = if den == 0.0 { num.sqrt() } else { (num / den).sqrt() };
    (max_abs, rel)
}

/// Fills `out` (rows of `row_len`) with `f(row, &mut row_slice)` on every core: the
/// references of the large GPU cases (4096³, attention over 4096 keys) take seconds, not
/// minutes. Each row is computed by exactly the code a single thread would run.
pub fn par_rows(out: &mut [f64], row_len: usize, f: impl Fn(usize, &mut [f64]) + Sync) {
    let rows = out.len() / row_len.max(1);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(rows.max(1));
    let per = rows.div_ceil(threads.max(1)).max(1);
    std::thread::scope(|sc| {
        for (t, chunk) in out.chunks_mut(per * row_len.max(1)).enumerate() {
            let f = &f;
            sc.spawn(move || {
                for (i, row) in chunk.chunks_mut(row_len.max(1)).enumerate() {
                    f(t * per + i, row);
                }
            });
        }
    });
}

/// `C = A · B` for row-major A (m×k) and B (k×n).
pub fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    par_rows(&mut c, n, |i, row| {
        // Row i of C accumulates rows of B: contiguous in both.
        for x in 0..k {
            let av = a[i * k + x];
            for (cj, bj) in row.iter_mut().zip(&b[x * n..(x + 1) * n]) {
                *cj += av * bj;
            }
        }
    });
    c
}

/// RMSNorm of each row: `x / sqrt(mean(x²) + eps) · w`.
pub fn rmsnorm(x: &[f64], w: &[f64], m: usize, n: usize, eps: f64) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        let row = &x[i * n..(i + 1) * n];
        let ms = row.iter().map(|v| v * v).sum::<f64>() / n as f64;
        let r = 1.0 / (ms + eps).sqrt();
        for j in 0..n {
            out[i * n + j] = row[j] * r * w[j];
        }
    }
    out
}

/// Attention of one head: `softmax(q·kᵀ·scale [+ causal mask]) · v`; q is sq×d, k and v
/// are sk×d; with `causal`, query i sees keys 0..=i.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    sq: usize,
    sk: usize,
    d: usize,
    scale: f64,
    causal: bool,
) -> Vec<f64> {
    attention_split(q, k, v, sq, sk, d, d, scale, causal, |_, _| 0.0)
}

/// Attention where the score gets an extra term (MLA's rope part); `dv` is v's width.
#[allow(clippy::too_many_arguments)]
pub fn attention_split(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    sq: usize,
    sk: usize,
    d: usize,
    dv: usize,
    scale: f64,
    causal: bool,
    extra: impl Fn(usize, usize) -> f64,
) -> Vec<f64> {
    let mut out = vec![0.0; sq * dv];
    for i in 0..sq {
        let n = if causal { (i + 1).min(sk) } else { sk };
        let s: Vec<f64> =
            (0..n).map(|j| ((0..d).map(|x| q[i * d + x] * k[j * d + x]).sum::<f64>() + extra(i, j)) * scale).collect();
        let mx = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
        let z: f64 = e.iter().sum();
        for c in 0..dv {
            out[i * dv + c] = (0..n).map(|j| e[j] * v[j * dv + c]).sum::<f64>() / z;
        }
    }
    out
}

/// GELU with the tanh approximation.
pub fn gelu_tanh(x: &[f64]) -> Vec<f64> {
    let k = (2.0 / std::f64::consts::PI).sqrt();
    x.iter().map(|v| 0.5 * v * (1.0 + (k * (v + 0.044715 * v * v * v)).tanh())).collect()
}

/// RoPE tables: `(cos, sin)` of `s · base^(−i/half)` for `s < positions`, `i < half`.
pub fn rope_table(positions: usize, half: usize, base: f64) -> (Vec<f64>, Vec<f64>) {
    let angle = |s: usize, i: usize| s as f64 * base.powf(-(i as f64) / half as f64);
    let a: Vec<f64> = (0..positions * half).map(|j| angle(j / half, j % half)).collect();
    (a.iter().map(|x| x.cos()).collect(), a.iter().map(|x| x.sin()).collect())
}

/// Half-rotation RoPE of one head vector `x` (length 2h) with `cos`, `sin` (length h).
pub fn rope(x: &[f64], cos: &[f64], sin: &[f64]) -> Vec<f64> {
    let h = cos.len();
    let mut out = vec![0.0; 2 * h];
    for i in 0..h {
        out[i] = x[i] * cos[i] - x[h + i] * sin[i];
        out[h + i] = x[h + i] * cos[i] + x[i] * sin[i];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_rows_sum_to_one_and_are_shift_invariant() {
        let x = [1.0, 2.0, 3.0, -1.0, 100.0, 100.0];
        let y = softmax(&x, 2, 3);
        for r in 0..2 {
            let s: f64 = y[r * 3..r * 3 + 3].iter().sum();
            assert!((s - 1.0).abs() < 1e-12);
        }
        let shifted: Vec<f64> = x.iter().map(|v| v + 7.0).collect();
        let y2 = softmax(&shifted, 2, 3);
        assert!(errors(&y2, &y).1 < 1e-12);
        assert!((y[0] - 1.0 / (1.0 + 1f64.exp() + 2f64.exp())).abs() < 1e-12);
    }

    #[test]
    fn silu_mul_known_values() {
        let y = silu_mul(&[0.0, 1.0, -1.0], &[2.0, 2.0, 1.0]);
        assert_eq!(y[0], 0.0);
        assert!((y[1] - 2.0 / (1.0 + (-1f64).exp())).abs() < 1e-15);
        assert!((y[2] + 1.0 / (1.0 + 1f64.exp())).abs() < 1e-15);
    }

    #[test]
    fn nan_fails_the_check() {
        assert!(errors(&[f64::NAN], &[1.0]).1.is_nan());
        assert_eq!(errors(&[1.0, 2.0], &[1.0, 2.0]), (0.0, 0.0));
    }
}
