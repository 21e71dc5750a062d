//! Pass-level bisection of a miscompile: the kernel runs on the interpreter as the frontend
//! made it (the source's semantics), then again after every tile-level pass of a pipeline on
//! the same inputs — the interpreter runs `tile` and `tilegpu` IR alike — and the first pass
//! after which a tensor differs is named, with the element that differs most, its values
//! before and after, and the unified diff of the IR that pass produced.
//!
//! What it covers: the passes producing `tile` or `tilegpu` IR (`PassInfo::produces`), in
//! the order given, and upstream passes among them while their output still reads back as
//! tile IR (`canonicalize` inserted after `tile-layout`). It stops at the first step past
//! them (`tile-to-llvm`, an upstream conversion):
//! a difference that only the GPU shows lies in the LLVM/PTX part, which the interpreter
//! cannot run — [`Bisection::stopped_at`] names where, and the CLI says how to go on (the
//! pipeline switches of `tilec run --gpu --check`). Floats compare by relative L2 error
//! (the tolerance given, else 1e-5 for f32 and f64 tensors and 1e-2 for narrower ones, as
//! `tilec run --check`); integers and bools exactly.

use similar::TextDiff;
use tilec_core::abi::{ParamSig, Signature};
use tilec_core::host::HostTensor;
use tilec_core::tir::Func;
use tilec_core::{DType, Diagnostic};
use tilec_interp::Arg;
use tilec_passes::driver::{Driver, Ir, Step};
use tilec_passes::Stage;

/// How one stage's run compares with the source's.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every tensor equal, element for element.
    Same,
    /// Floats within the tolerance (the worst relative L2 error), integers equal.
    Within(f64),
    /// A tensor outside the tolerance.
    Differs(Difference),
    /// The interpreter could not run the stage (its message).
    Failed(String),
}

/// The tensor that differs and its worst element.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// Its name in the kernel's signature.
    pub tensor: String,
    /// The element's coordinates.
    pub index: Vec<i64>,
    /// The element before the pass (the source's run).
    pub before: f64,
    /// The element after the pass.
    pub after: f64,
    /// The largest absolute difference over the tensor.
    pub max_abs: f64,
    /// The relative L2 error of the tensor after against before.
    pub rel_l2: f64,
}

/// One pass of the bisection and its stage's verdict.
#[derive(Clone, Debug)]
pub struct StageRun {
    /// The step as pipeline text.
    pub pass: String,
    /// Whether this stage's run agrees with the source's.
    pub verdict: Verdict,
}

/// The passes run, each compared with the source's run; the first that changed the results
/// (with its IR diff), and the step the interpreter could not follow past.
#[derive(Clone, Debug, Default)]
pub struct Bisection {
    /// Every stage run, in pipeline order.
    pub stages: Vec<StageRun>,
    /// Index into `stages` of the first stage that differs or fails, and that pass's diff.
    pub culprit: Option<(usize, String)>,
    /// The first step past the interpretable stages, when the pipeline goes on past them.
    pub stopped_at: Option<String>,
}

/// Runs `func` (the frontend's `tile` IR of a kernel whose signature is `sig`) on the
/// interpreter with `args`, then after each tile-level step of `steps` (see the module).
pub fn bisect(
    func: &Func,
    sig: &Signature,
    steps: &[Step],
    args: &[Arg],
    tolerance: Option<f64>,
) -> Result<Bisection, Diagnostic> {
    let interp_error = |what: &str, e: String| Diagnostic::error("E0906", format!("{what}: {e}"));
    let grid = tilec_interp::grid(sig, args).map_err(|e| interp_error("the arguments", e))?;
    let run = |f: &Func| tilec_interp::run(f, grid, args.to_vec()).map(|o| o.tensors).map_err(|e| e.to_string());
    let want = run(func).map_err(|e| interp_error("the source on the interpreter", e))?;
    let names = tensor_names(sig);
    let mlir = tilec_ir::Mlir::pooled()?;
    let mut driver = Driver::new(&mlir, Ir::Tile(func.clone()));
    let mut before = func.to_mlir();
    let mut out = Bisection::default();
    for step in steps {
        let tile_level =
            matches!(step, Step::Tilec { pass, .. } if matches!(pass.produces, Stage::Tile | Stage::Tilegpu));
        let upstream = matches!(step, Step::Upstream { .. });
        if !tile_level && !upstream {
            out.stopped_at = Some(step.text());
            break;
        }
        driver.run(step)?;
        let after = driver.text()?;
        let verdict = match mlir.read(&after, step.name(), None) {
            // An upstream pass inserted among the tile-level ones (`canonicalize`) is followed
            // while its output is still tile IR; past that the interpreter stops.
            Err(_) if upstream => {
                out.stopped_at = Some(step.text());
                break;
            }
            Err(d) => Verdict::Failed(format!("its output does not read back: {}", d.message)),
            Ok(f) => match run(&f) {
                Err(e) => Verdict::Failed(e),
                Ok(got) => compare(&names, &want, &got, tolerance),
            },
        };
        let bad = matches!(verdict, Verdict::Differs(_) | Verdict::Failed(_));
        out.stages.push(StageRun { pass: step.text(), verdict });
        if bad {
            let diff = ir_diff(&before, &after, step.name()).unwrap_or_default();
            out.culprit = Some((out.stages.len() - 1, diff));
            break;
        }
        before = after;
    }
    Ok(out)
}

/// The unified diff (two lines of context) of the IR before and after pass `pass`, or `None`
/// when the pass left the text as it was (`tilec opt --print-changes` prints these).
pub fn ir_diff(before: &str, after: &str, pass: &str) -> Option<String> {
    (before != after).then(|| {
        TextDiff::from_lines(before, after)
            .unified_diff()
            .context_radius(2)
            .header(&format!("before {pass}"), &format!("after {pass}"))
            .to_string()
    })
}

/// The names of a signature's tensor parameters, in order (the interpreter's and the GPU's
/// outputs are these tensors).
fn tensor_names(sig: &Signature) -> Vec<&str> {
    sig.params
        .iter()
        .filter_map(|p| match p {
            ParamSig::Tensor { name, .. } => Some(name.as_str()),
            ParamSig::Scalar { .. } => None,
        })
        .collect()
}

/// The verdict on a run's tensors (`got`: a GPU's, a stage's) against the source's run
/// (`want`), with the bisection's tolerance rule: `tilec bisect --gpu` judges the whole
/// compile with it.
pub fn compare_outputs(sig: &Signature, want: &[HostTensor], got: &[HostTensor], tolerance: Option<f64>) -> Verdict {
    compare(&tensor_names(sig), want, got, tolerance)
}

/// The verdict on `got` against `want`, tensor by tensor in parameter order.
fn compare(names: &[&str], want: &[HostTensor], got: &[HostTensor], tolerance: Option<f64>) -> Verdict {
    let mut worst = 0.0f64;
    let mut exact = true;
    for ((name, w), g) in names.iter().zip(want).zip(got) {
        if let (Some(wi), Some(gi)) = (w.to_i64(), g.to_i64()) {
            if let Some(i) = (0..wi.len().max(gi.len())).find(|&i| wi.get(i) != gi.get(i)) {
                let at = |v: &[i64]| v.get(i).map_or(f64::NAN, |&x| x as f64);
                return Verdict::Differs(Difference {
                    tensor: name.to_string(),
                    index: unravel(i, &w.shape),
                    before: at(&wi),
                    after: at(&gi),
                    max_abs: f64::NAN,
                    rel_l2: f64::NAN,
                });
            }
            continue;
        }
        let (wv, gv) = (w.to_f64(), g.to_f64());
        if wv.iter().zip(&gv).all(|(a, b)| a.to_bits() == b.to_bits()) && wv.len() == gv.len() {
            continue;
        }
        exact = false;
        let (max_abs, rel) = tilec_interp::reference::errors(&gv, &wv);
        let tol = tolerance.unwrap_or(if matches!(w.dtype, DType::F32 | DType::F64) { 1e-5 } else { 1e-2 });
        // NaN where the source had a number (or the reverse) is a difference at any tolerance.
        let nan_moved = wv.iter().zip(&gv).any(|(a, b)| a.is_nan() != b.is_nan());
        if rel.is_nan() || rel > tol || nan_moved {
            let i = (0..wv.len())
                .max_by(|&p, &q| {
                    let d = |k: usize| {
                        let x = (wv[k] - gv[k]).abs();
                        if x.is_nan() && wv[k].is_nan() != gv[k].is_nan() {
                            f64::INFINITY
                        } else if x.is_nan() {
                            0.0
                        } else {
                            x
                        }
                    };
                    d(p).total_cmp(&d(q))
                })
                .unwrap_or(0);
            return Verdict::Differs(Difference {
                tensor: name.to_string(),
                index: unravel(i, &w.shape),
                before: wv.get(i).copied().unwrap_or(f64::NAN),
                after: gv.get(i).copied().unwrap_or(f64::NAN),
                max_abs,
                rel_l2: rel,
            });
        }
        worst = worst.max(rel);
    }
    if exact {
        Verdict::Same
    } else {
        Verdict::Within(worst)
    }
}

/// Row-major coordinates of flat index `i` in `shape`.
fn unravel(mut i: usize, shape: &[i64]) -> Vec<i64> {
    let mut idx = vec![0i64; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        let n = n.max(1) as usize;
        idx[d] = (i % n) as i64;
        i /= n;
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_are_row_major() {
        assert_eq!(unravel(0, &[3, 4]), [0, 0]);
        assert_eq!(unravel(7, &[3, 4]), [1, 3]);
        assert_eq!(unravel(23, &[2, 3, 4]), [1, 2, 3]);
    }

    #[test]
    fn the_worst_element_of_the_first_differing_tensor_is_named() {
        let t = |v: &[f64]| HostTensor::from_f64(DType::F32, &[2, 2], v);
        let want = [t(&[1.0, 2.0, 3.0, 4.0]), t(&[0.0; 4])];
        let same = compare(&["a", "b"], &want, &want, None);
        assert_eq!(same, Verdict::Same);
        let got = [t(&[1.0, 2.0, 3.0, 4.0]), t(&[0.0, 0.0, 5.0, 0.0])];
        let Verdict::Differs(d) = compare(&["a", "b"], &want, &got, None) else { panic!() };
        assert_eq!((d.tensor.as_str(), d.index.as_slice(), d.before, d.after), ("b", &[1i64, 0][..], 0.0, 5.0));
        let close = [t(&[1.0, 2.0, 3.0, 4.000001]), t(&[0.0; 4])];
        assert!(matches!(compare(&["a", "b"], &want, &close, None), Verdict::Within(e) if e > 0.0 && e < 1e-5));
        let nan = [t(&[1.0, f64::NAN, 3.0, 4.0]), t(&[0.0; 4])];
        let Verdict::Differs(d) = compare(&["a", "b"], &want, &nan, Some(1.0)) else { panic!() };
        assert_eq!(d.index, [0, 1]);
    }
}
