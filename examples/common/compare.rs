//! Our logits and tokens against transformers': the relative L2 error of a step's logits,
//! and at a token that differs, the margins that explain it.
//!
//! The bound: random fp16 weights make logits whose top two often differ by less than fp16
//! noise, so exact token agreement cannot be the criterion alone. transformers' own fp16
//! logits differ from the same model's fp32 logits (the reference script saves both, the fp32
//! ones teacher-forced on the fp16 tokens) by the error any fp16 implementation makes; ours
//! must stay within [`BOUND_FACTOR`] times that error at every step, against the same fp32
//! logits. A token that differs from transformers' must come where transformers' own margin
//! between its top two logits is within our error of zero.

/// Our error against fp32 may be this many times transformers' fp16 error against fp32.
pub const BOUND_FACTOR: f64 = 2.0;

/// ‖a − b‖₂ / ‖b‖₂ (0 when both are zero).
pub fn rel_l2(a: &[f32], b: &[f32]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let d = f64::from(*x) - f64::from(*y);
        num += d * d;
        den += f64::from(*y) * f64::from(*y);
    }
    if den == 0.0 {
        if num == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (num / den).sqrt()
    }
}

/// The largest value's index (the first on ties, as argmax does) and its lead over the
/// second largest.
pub fn top2(row: &[f32]) -> (usize, f32) {
    let mut best = (0usize, f32::NEG_INFINITY);
    let mut second = f32::NEG_INFINITY;
    for (i, &v) in row.iter().enumerate() {
        if v > best.1 {
            second = best.1;
            best = (i, v);
        } else if v > second {
            second = v;
        }
    }
    (best.0, best.1 - second)
}

/// One sequence's token that differs from transformers' at a step.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    pub sequence: usize,
    pub ours: i64,
    pub theirs: i64,
    /// transformers' lead of its token over its second best.
    pub their_margin: f32,
    /// Our logits' lead of our token over transformers' token.
    pub our_lead: f32,
}

/// One step's comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct StepCheck {
    pub step: usize,
    /// Against transformers' fp16 logits.
    pub rel_l2_fp16: f64,
    /// Against the fp32 logits, ours and transformers' fp16 (when the fp32 logits exist).
    pub rel_l2_fp32: Option<(f64, f64)>,
    pub divergences: Vec<Divergence>,
}

impl StepCheck {
    /// Ours within the bound at this step (see the module's note).
    pub fn within_bound(&self) -> bool {
        match self.rel_l2_fp32 {
            Some((ours, theirs)) => ours <= BOUND_FACTOR * theirs.max(1e-4),
            None => self.rel_l2_fp16 < 1e-2,
        }
    }
}

/// Compares one step: `ours` and `theirs` are `[batch, vocab]` logits, `fp32` the fp32
/// model's; `our_tokens` and `their_tokens` what each chose.
pub fn check_step(
    step: usize,
    vocab: usize,
    ours: &[f32],
    theirs: &[f32],
    fp32: Option<&[f32]>,
    our_tokens: &[i64],
    their_tokens: &[i64],
) -> StepCheck {
    let mut divergences = vec![];
    for (b, (&o, &t)) in our_tokens.iter().zip(their_tokens).enumerate() {
        if o != t {
            let row = |v: &[f32]| v[b * vocab..(b + 1) * vocab].to_vec();
            let (their_row, our_row) = (row(theirs), row(ours));
            let lead = |r: &[f32]| {
                let at = |i: i64| usize::try_from(i).ok().and_then(|i| r.get(i).copied()).unwrap_or(f32::NAN);
                at(o) - at(t)
            };
            divergences.push(Divergence {
                sequence: b,
                ours: o,
                theirs: t,
                their_margin: top2(&their_row).1,
                our_lead: lead(&our_row),
            });
        }
    }
    StepCheck {
        step,
        rel_l2_fp16: rel_l2(ours, theirs),
        rel_l2_fp32: fp32.map(|f| (rel_l2(ours, f), rel_l2(theirs, f))),
        divergences,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rel_l2_and_top2() {
        assert_eq!(rel_l2(&[3.0, 4.0], &[3.0, 4.0]), 0.0);
        assert!((rel_l2(&[3.0, 4.5], &[3.0, 4.0]) - 0.1).abs() < 1e-12);
        assert_eq!(rel_l2(&[1.0], &[0.0]), f64::INFINITY);
        assert_eq!(top2(&[0.5, 2.0, 1.5, 2.0]), (1, 0.0));
        assert_eq!(top2(&[3.0, 1.0, 2.5]), (0, 0.5));
    }

    #[test]
    fn a_divergence_reports_both_margins() {
        // Two sequences, vocab 3: the second chose token 2 where transformers chose 0.
        let theirs = [0.0, 1.0, 0.0, 2.0, 0.5, 1.9];
        let ours = [0.0, 1.0, 0.0, 1.9, 0.5, 2.0];
        let c = check_step(4, 3, &ours, &theirs, None, &[1, 2], &[1, 0]);
        assert_eq!(c.divergences.len(), 1);
        let d = &c.divergences[0];
        assert_eq!((d.sequence, d.ours, d.theirs), (1, 2, 0));
        assert!((d.their_margin - 0.1).abs() < 1e-6 && (d.our_lead - 0.1).abs() < 1e-6, "{d:?}");
        assert!(c.rel_l2_fp16 > 0.0);
    }

    #[test]
    fn the_bound_is_relative_to_transformers_own_fp16_error() {
        let fp32 = [1.0f32, 2.0, 3.0, 4.0];
        let theirs = [1.01f32, 2.0, 3.0, 4.0];
        let close = [0.99f32, 2.0, 3.01, 4.0];
        let far = [1.1f32, 2.0, 3.0, 4.0];
        let c = check_step(0, 4, &close, &theirs, Some(&fp32), &[3], &[3]);
        assert!(c.within_bound(), "{c:?}");
        let c = check_step(0, 4, &far, &theirs, Some(&fp32), &[3], &[3]);
        assert!(!c.within_bound(), "{c:?}");
    }
}
