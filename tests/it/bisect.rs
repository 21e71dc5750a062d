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

/// Four rows of 100 for softmax (f32), and the output.
fn softmax_args() -> Vec<tilec_interp::Arg> {
    let x: Vec<f64> = (0..4 * 100).map(|i| ((i * 37) % 101) as f64 / 17.0 - 3.0).collect();
    vec![
        tilec_interp::Arg::Tensor(tilec_core::host::HostTensor::from_f64(tilec::DType::F32, &[4, 100], &x)),
        tilec_interp::Arg::Tensor(tilec_core::host::HostTensor::from_f64(tilec::DType::F32, &[4, 100], &[0.0; 400])),
    ]
}

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
    let args = softmax_args();

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

/// The broken pass, registered and put into the pipeline by `CompileOptions::pipeline_edits`
/// behind an inserted upstream pass: the bisection follows `canonicalize` (its output is
/// still tile IR) and names the broken pass after it.
#[test]
fn pipeline_edits_insert_registered_and_upstream_passes() {
    // Another test of this binary may have registered it already.
    let _ = tilec_passes::register(&MISCOMPILE);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/softmax.tile");
    let source = tilec::Source::new("softmax.tile", std::fs::read_to_string(path).unwrap());
    let consts = [("T", tilec::ConstArg::DType(tilec::DType::F32)), ("BLOCK_N", tilec::ConstArg::Int(128))];
    let opts = |edits: &[&str]| tilec::CompileOptions {
        arch: "sm_90a".into(),
        consts: consts.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        pipeline_edits: edits.iter().map(|e| e.to_string()).collect(),
        ..Default::default()
    };
    let names = |o: &tilec::CompileOptions| -> Vec<String> {
        let (_, steps) = tilec::compiler::frontend_and_pipeline(&source, o).unwrap();
        steps.iter().map(|s| s.name().to_string()).collect()
    };
    let default = names(&opts(&[]));
    let at = default.iter().position(|n| n == "tile-layout").unwrap();

    // Inserted after the anchor, in order; moved; each checked.
    let edited = names(&opts(&["after=tile-layout:(canonicalize,test-miscompile)"]));
    assert_eq!(edited[at + 1..at + 3], ["canonicalize", "test-miscompile"], "{edited:?}");
    assert_eq!(edited.len(), default.len() + 2);
    let moved = names(&opts(&["move=tile-licm:after=tile-pipeline"]));
    let pos = |v: &[String], n: &str| v.iter().position(|x| x == n).unwrap();
    assert!(pos(&default, "tile-licm") < pos(&default, "tile-pipeline"));
    assert_eq!(pos(&moved, "tile-licm"), pos(&moved, "tile-pipeline") + 1, "{moved:?}");
    assert_eq!(names(&opts(&["before=tile-layout:cse"]))[at], "cse");
    for (bad, says) in [
        ("after=nope:cse", "runs no `nope`"),
        ("after=tile-layout:no-such-pass", "unknown pass `no-such-pass`"),
        ("move=tile-licm:beside=tile-layout", "write `after=PASS:ITEMS`"),
        ("tile-layout:cse", "write `after=PASS:ITEMS`"),
    ] {
        let e = tilec::compiler::frontend_and_pipeline(&source, &opts(&[bad])).unwrap_err();
        let text = e.render();
        assert!(text.contains(says) && text.contains("E0904"), "{bad}: {text}");
    }

    // The bisection walks the edited pipeline: canonicalize agrees, the broken pass does not.
    let o = opts(&["after=tile-layout:(canonicalize,test-miscompile)"]);
    let (el, steps) = tilec::compiler::frontend_and_pipeline(&source, &o).unwrap();
    let args = softmax_args();
    let b = bisect(&el.func, &el.signature, &steps, &args, None).unwrap();
    let (i, _) = b.culprit.clone().expect("the broken pass is found");
    assert_eq!(b.stages[i].pass, "test-miscompile", "{b:?}");
    assert_eq!(b.stages[i - 1].pass, "canonicalize", "{b:?}");
    assert!(matches!(b.stages[i - 1].verdict, Verdict::Same | Verdict::Within(_)), "{b:?}");

    // A compile through the edits: the cache key tells the edited pipeline from the default.
    let key = |o: &tilec::CompileOptions| tilec::cache_key(&source, o).unwrap().fields["pipeline"].clone();
    let (k0, k1) = (key(&opts(&[])), key(&opts(&["after=tile-layout:canonicalize"])));
    assert!(!k0.contains("pipeline_edits"), "{k0}");
    // A registered pass exists in this process: the binary is in the key too.
    assert!(k1.contains("pipeline_edits=[after=tile-layout:canonicalize] user_passes_binary="), "{k1}");
    let c = tilec::compile(&source, &opts(&["after=tile-layout:canonicalize,cse"])).unwrap();
    assert!(c.timings.iter().any(|(t, _)| t == "canonicalize"), "{:?}", c.timings);
    assert!(c.ptx().contains(".entry softmax"));
}
