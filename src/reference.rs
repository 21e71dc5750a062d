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
