//! `tilec::bisect` names the pass that changed a kernel's results: a test-only pass that
//! miscompiles softmax (it swaps the operands of the first subtraction, `x - max` becoming
//! `max - x`) is put into the default pipeline after `tile-layout`; the bisection must name
//! it, the tensor and an element that differ, and show its diff — and, without it, find every
//! stage agreeing with the source.

use tilec::bisect::{bisect, Verdict};
use tilec_core::tir::verify::Level;
use tilec_core::tir::{BinOp, OpKind};
use tilec_passes::driver::{Driver, Step};
use tilec_passes::{PassInfo, Stage};

fn swap_first_subtraction(d: &mut Driver, step: &Step) -> Result<(), tilec_core::Diagnostic> {
    let mut f = d.take_func(step.name(), Level::TileGpu)?;
    if let Some(op) = f.ops.iter_mut().find(|o| matches!(o.kind, OpKind::Binary { op: BinOp::Sub, .. })) {
        if let OpKind::Binary { lhs, rhs, .. } = &mut op.kind {
            std::mem::swap(lhs, rhs);
        }
    }
    d.set_func(f, step.name(), Level::TileGpu)
}

static MISCOMPILE: PassInfo = PassInfo {
    name: "test-miscompile",
    produces: Stage::Tilegpu,
    doc: "Swaps the operands of the first subtraction (a deliberately broken pass).",
    options: &[],
    run: swap_first_subtraction,
};

#[test]
fn the_bisection_names_a_miscompiling_pass() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/softmax.tile");
    let source = tilec::Source::new("softmax.tile", std::fs::read_to_string(path).unwrap());
    let consts = [("T", tilec::ConstArg::DType(tilec::DType::F32)), ("BLOCK_N", tilec::ConstArg::Int(128))];
    let opts = tilec::CompileOptions {
        arch: "sm_90a".into(),
        consts: consts.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        ..Default::default()
    };
    let (el, steps) = tilec::compiler::frontend_and_pipeline(&source, &opts).unwrap();
    let x: Vec<f64> = (0..4 * 100).map(|i| ((i * 37) % 101) as f64 / 17.0 - 3.0).collect();
    let args = vec![
        tilec_interp::Arg::Tensor(tilec_core::host::HostTensor::from_f64(tilec::DType::F32, &[4, 100], &x)),
        tilec_interp::Arg::Tensor(tilec_core::host::HostTensor::from_f64(tilec::DType::F32, &[4, 100], &[0.0; 400])),
    ];

    let clean = bisect(&el.func, &el.signature, &steps, &args, None).unwrap();
    assert!(clean.culprit.is_none(), "{clean:?}");
    assert!(clean.stages.len() >= 4 && clean.stages.iter().all(|s| s.verdict == Verdict::Same), "{clean:?}");
    assert!(clean.stopped_at.as_deref().is_some_and(|s| s.starts_with("tile-to-llvm")), "{clean:?}");

    let at = steps.iter().position(|s| s.name() == "tile-layout").unwrap() + 1;
    let mut broken = steps.clone();
    broken.insert(at, Step::tilec(&MISCOMPILE, &[]));
    let b = bisect(&el.func, &el.signature, &broken, &args, None).unwrap();
    let (i, diff) = b.culprit.clone().expect("the broken pass is found");
    assert_eq!(b.stages[i].pass, "test-miscompile", "{b:?}");
    assert_eq!(i, at, "every stage before it agrees: {b:?}");
    let Verdict::Differs(d) = &b.stages[i].verdict else { panic!("{b:?}") };
    assert_eq!(d.tensor, "y");
    assert_eq!(d.index.len(), 2);
    assert!(d.rel_l2 > 1e-3 && d.before != d.after, "{d:?}");
    // The diff is the pass's: one subtraction's operands swapped.
    assert!(diff.contains("after test-miscompile") && diff.contains("arith.subf"), "{diff}");
    assert_eq!(diff.lines().filter(|l| l.starts_with('-') && !l.starts_with("---")).count(), 1, "{diff}");
}
