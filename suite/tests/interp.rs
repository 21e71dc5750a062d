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

/// The two launches of kernels/topk.tile chained over a 152 064-column vocabulary (Qwen2's)
/// on the interpreter: the merged top 8 of every row are the row's top 8 (values and
/// columns, ties to the lower column), including a row of equal values and a row whose
/// largest values sit in the last, ragged chunk.
#[test]
fn two_pass_topk_over_a_vocabulary_is_the_rows_topk() {
    use rand::{Rng, SeedableRng};
    use tilec_core::host::HostTensor;
    use tilec_core::DType;
    use tilec_frontend::{ConstArg, Request};
    use tilec_interp::Arg;
    let text = std::fs::read_to_string(kernels_dir().join("topk.tile")).unwrap();
    let (m, n, bn, k) = (3i64, 152_064i64, 2048i64, 8i64);
    let chunks = (n + bn - 1) / bn;
    let c = chunks * k;
    let elaborate = |kernel: &str, consts: &[(&str, i64)]| {
        let mut req = Request { kernel: Some(kernel.into()), target: "sm_90a".into(), ..Default::default() };
        req.consts.insert("T".into(), ConstArg::DType(DType::F16));
        for (name, v) in consts {
            req.consts.insert(name.to_string(), ConstArg::Int(*v));
        }
        tilec_frontend::check(&text, &req).unwrap_or_else(|d| panic!("{kernel}: {d:?}"))
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    // Values of the f16 grid (the kernel reads f16): many ties.
    let mut x: Vec<f64> = (0..m * n)
        .map(|_| tilec_interp::round_to(f64::from(rng.gen_range(-3000i32..3000)) / 128.0, DType::F16))
        .collect();
    // Row 1: all equal (the top 8 are columns 0..8). Row 2: the largest in the last chunk.
    for v in &mut x[n as usize..2 * n as usize] {
        *v = 1.5;
    }
    for j in 0..5 {
        x[(3 * n - 1 - j * 7) as usize] = 100.0;
    }
    let tensor = |d: DType, shape: &[i64], v: &[f64]| Arg::Tensor(HostTensor::from_f64(d, shape, v));
    let zeros = |d: DType, shape: &[i64]| tensor(d, shape, &vec![0.0; (shape[0] * shape[1]) as usize]);
    let p = elaborate("topk_partial", &[("BLOCK_N", bn), ("K", k)]);
    let args = vec![tensor(DType::F16, &[m, n], &x), zeros(DType::F32, &[m, c]), zeros(DType::I32, &[m, c])];
    let grid = tilec_interp::grid(&p.signature, &args).unwrap();
    let parts = tilec_interp::run(&p.func, grid, args).unwrap().tensors;
    let q = elaborate("topk_merge", &[("BLOCK_C", 1024), ("K", k)]);
    let args = vec![
        Arg::Tensor(parts[1].clone()),
        Arg::Tensor(parts[2].clone()),
        zeros(DType::F16, &[m, k]),
        zeros(DType::I32, &[m, k]),
    ];
    let grid = tilec_interp::grid(&q.signature, &args).unwrap();
    let out = tilec_interp::run(&q.func, grid, args).unwrap().tensors;
    let (values, columns) = (out[2].to_f64(), out[3].to_f64());
    for (r, row) in x.chunks(n as usize).enumerate() {
        let want: Vec<usize> = tilec_suite::sorted_positions(row, true).into_iter().take(k as usize).collect();
        let got: Vec<usize> = columns[r * k as usize..(r + 1) * k as usize].iter().map(|&c| c as usize).collect();
        assert_eq!(got, want, "row {r}");
        let vals: Vec<f64> = want.iter().map(|&p| row[p]).collect();
        assert_eq!(values[r * k as usize..(r + 1) * k as usize], vals[..], "row {r}");
    }
    assert_eq!(columns[8..16].iter().map(|&c| c as i64).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
}
