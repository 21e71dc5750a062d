//! Every kernel of the library on the CPU interpreter, against its plain-Rust reference, on
//! the spec's interpreter cases (ragged shapes where the kernel allows them), with blocks run
//! in both orders to expose races between blocks. The same specs drive `tilec check` on the
//! GPU, so a case, its reference and its tolerance are written once.

use std::path::Path;
use tilec_suite::{all, run_on_interp};

fn kernels_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels")
}

#[test]
fn every_kernel_matches_its_reference_on_the_interpreter() {
    let mut failures = vec![];
    let mut ran = 0;
    for spec in all() {
        let cases = (spec.interp_cases)();
        assert!(!cases.is_empty(), "{} has no interpreter case", spec.name);
        for (i, case) in cases.iter().enumerate() {
            ran += 1;
            match run_on_interp(spec, case, &kernels_dir(), 100 + i as u64) {
                Ok(c) if c.pass => {}
                Ok(c) => failures.push(format!(
                    "{} {} {}: rel L2 {:.3e} (max abs {:.3e}) over {:.0e} {}",
                    spec.name,
                    case.label(),
                    case.dtype,
                    c.rel_l2,
                    c.max_abs,
                    c.tolerance,
                    c.note
                )),
                Err(e) => failures.push(format!("{} {}: {e}", spec.name, case.label())),
            }
        }
    }
    assert!(failures.is_empty(), "{} of {ran} cases fail:\n{}", failures.len(), failures.join("\n"));
    assert!(ran >= 30, "{ran} cases");
}

#[test]
fn every_spec_names_a_kernel_of_its_file_and_distinct_names() {
    let mut names = std::collections::BTreeSet::new();
    for spec in all() {
        assert!(names.insert(spec.name), "{} twice", spec.name);
        let text = std::fs::read_to_string(kernels_dir().join(spec.file)).unwrap();
        let file = tilec_frontend::parse(&text).unwrap();
        assert!(file.kernels.iter().any(|k| k.name.name == spec.kernel), "{}: no kernel {}", spec.file, spec.kernel);
        assert!(tilec_suite::find(spec.name).is_some());
        for c in (spec.gpu_cases)() {
            assert!(!(spec.outputs).is_empty() && (spec.bytes)(&c) > 0.0, "{} {}", spec.name, c.label());
        }
    }
}

#[test]
fn dropout_keeps_the_expected_fraction() {
    // The keep decision is rand(seed, offset + i) >= p: Philox's uniforms keep ~1 - p.
    let (p, seed, offset) = (0.3f32, 7u32, 11u32);
    let n = 20000;
    let kept = (0..n).filter(|&i| tilec_interp::rand_uniform(seed, offset + i) >= p).count();
    let rate = kept as f64 / f64::from(n);
    assert!((rate - 0.7).abs() < 0.02, "keep rate {rate}");
}
