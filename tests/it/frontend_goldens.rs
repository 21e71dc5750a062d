//! `tests/frontend/ok/*.tile` check clean for every target; `tests/frontend/err/*.tile` give
//! diagnostics whose rendering is snapshot-tested.

use std::path::PathBuf;
use tilec_core::diag::{render, Source};
use tilec_frontend::{check, Request};

fn files(sub: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/frontend").join(sub);
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .collect();
    v.sort();
    v
}

#[test]
fn ok_files_check_clean() {
    let fs = files("ok");
    assert!(!fs.is_empty());
    for f in fs {
        let text = std::fs::read_to_string(&f).unwrap();
        for t in tilec_core::target::names() {
            if let Err(d) = check(&text, &Request { target: t.into(), ..Default::default() }) {
                panic!("{}:\n{}", f.display(), render(&d, &Source::new(f.display().to_string(), text.clone())));
            }
        }
    }
}

#[test]
fn err_files_render_their_diagnostics() {
    let fs = files("err");
    assert!(fs.len() >= 10);
    for f in fs {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let d = check(&text, &Request { target: "sm_121a".into(), ..Default::default() })
            .err()
            .unwrap_or_else(|| panic!("{name} has no error"));
        let src = Source::new(format!("err/{name}.tile"), text);
        insta::assert_snapshot!(format!("err__{name}"), render(&d, &src));
    }
}

#[test]
fn integer_identities_with_a_constant_emit_no_op() {
    let text = "kernel k(x: tensor<i32, [N]>, y: tensor<f32, [N]>, const G: int = 1, const Z: int = 0) grid = (1,) {
        let i = bid(0) // G + Z;
        let t = load(x, index=(i,), shape=(16,)) * G - Z;
        store(x, index=(i,), tile=t);
        let f = load(y, index=(i,), shape=(16,));
        store(y, index=(i,), tile=f * 1 + 0);
    }";
    let ir = |consts: &[(&str, i64)]| {
        let req = Request {
            target: "sm_90a".into(),
            consts: consts.iter().map(|(k, v)| (k.to_string(), tilec_frontend::ConstArg::Int(*v))).collect(),
            ..Default::default()
        };
        check(text, &req).unwrap_or_else(|d| panic!("{}", render(&d, &Source::new("k", text)))).func.to_mlir()
    };
    let plain = ir(&[]);
    for op in ["arith.floordivsi", "arith.muli", "arith.addi", "arith.subi"] {
        assert!(!plain.contains(op), "{op} left in:\n{plain}");
    }
    // Floats keep theirs (x + 0 turns -0 into +0), and other constants are real ops.
    assert!(plain.contains("arith.mulf") && plain.contains("arith.addf"), "{plain}");
    // Storage-only integers still refuse arithmetic, identity or not.
    let u8_text =
        "kernel k(x: tensor<u8, [N]>) grid = (1,) { store(x, index=(0,), tile=load(x, index=(0,), shape=(16,)) + 0); }";
    let Err(e) = check(u8_text, &Request { target: "sm_90a".into(), ..Default::default() }) else {
        panic!("u8 + 0 must be refused")
    };
    assert!(render(&e, &Source::new("k", u8_text)).contains("u8"));
    let other = ir(&[("G", 2), ("Z", 3)]);
    for op in ["arith.floordivsi", "arith.muli", "arith.addi", "arith.subi"] {
        assert!(other.contains(op), "{op} missing from:\n{other}");
    }
}

/// A bool constant given from outside as 0 or 1 (`--const CTA_PAIR=1`, the suites' integer
/// overrides) is that bool, as a float constant takes an integer; any other integer, or a
/// bool's default written as an integer in the source, is refused.
#[test]
fn a_bool_constant_takes_zero_or_one_from_outside() {
    use tilec_frontend::ConstArg;
    let text = "kernel k(x: tensor<f32, [N]>, const B: bool = false) grid = (1,) {
        let t = load(x, index=(0,), shape=(16,));
        if B { store(x, index=(0,), tile=t * 2.0); }
    }";
    let run = |v: Option<i64>| {
        let consts = v.map(|v| ("B".to_string(), ConstArg::Int(v))).into_iter().collect();
        check(text, &Request { target: "sm_90a".into(), consts, ..Default::default() }).map(|e| e.func.to_mlir())
    };
    let (off, on) = (run(None).unwrap(), run(Some(1)).unwrap());
    assert!(!off.contains("tile.store") && on.contains("tile.store"), "{on}");
    assert_eq!(run(Some(0)).unwrap(), off);
    let e = run(Some(2)).unwrap_err();
    assert!(render(&e, &Source::new("k", text)).contains("declared `bool`"));
    let own = "kernel k(x: tensor<f32, [N]>, const B: bool = 1) grid = (1,) { store(x, index=(0,), tile=load(x, index=(0,), shape=(16,))); }";
    assert!(check(own, &Request { target: "sm_90a".into(), ..Default::default() }).is_err());
}

/// A `require` clause is recorded in the signature as the source writes it, with its line and
/// a host expression the launchers evaluate: the softmax launch of issue 27 (N = 5000 past
/// BLOCK_N = 1024) is refused, naming the requirement and both sides' values.
#[test]
fn requirements_are_recorded_and_checked_at_launch() {
    use tilec_core::abi::{check_requirements, HostArgs};
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/softmax.tile")).unwrap();
    let el = check(&text, &Request { target: "sm_90a".into(), ..Default::default() }).unwrap();
    let r = &el.signature.requires;
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].text, "N <= BLOCK_N");
    assert_eq!(text.lines().nth(r[0].line as usize - 1).map(str::trim), Some("require N <= BLOCK_N"));
    struct Shape(i64);
    impl HostArgs for Shape {
        fn dim(&self, p: usize, a: usize) -> Option<i64> {
            (p < 2 && a < 2).then_some(if a == 0 { 3 } else { self.0 })
        }
        fn int_arg(&self, _: usize) -> Option<i64> {
            None
        }
    }
    assert_eq!(check_requirements(&el.signature, &Shape(1024)), Ok(()));
    let e = check_requirements(&el.signature, &Shape(5000)).unwrap_err();
    assert!(e.contains("`N <= BLOCK_N`") && e.contains("5000 <= 1024 is false"), "{e}");
    // The metadata JSON carries it for other launchers.
    let j = serde_json::to_value(&el.signature).unwrap();
    assert_eq!(j["requires"][0]["text"], "N <= BLOCK_N");
    assert_eq!(j["requires"][0]["cond"]["cmp"][0], "le");
}

/// `by_target`'s `tcgen05` key: taken where the products may take the tcgen05 family —
/// sm_103a's own choice, over its target entry — and not where they run as `mma.sync`: under
/// `--no-tcgen05` or an emulation on a chip without it (the compiler's
/// `Request::tcgen05 = Some(false)`), nor on a target without it.
#[test]
fn by_target_tcgen05_key_follows_the_product_family() {
    let text =
        "kernel k(x: tensor<f32, 1>, const B: int = by_target { tcgen05: 32, sm_103: 64, default: 128 }) grid = (1,) {
        store(x, index=(0,), tile=load(x, index=(0,), shape=(B,)));
    }";
    let width = |target: &str, tcgen05: Option<bool>| {
        let req = Request { target: target.into(), tcgen05, ..Default::default() };
        let ir = check(text, &req).unwrap_or_else(|d| panic!("{}", render(&d, &Source::new("k", text)))).func.to_mlir();
        [32, 64, 128].into_iter().find(|w| ir.contains(&format!("tensor<{w}xf32"))).unwrap()
    };
    assert_eq!(width("sm_103a", None), 32);
    assert_eq!(width("sm_103a", Some(true)), 32);
    assert_eq!(width("sm_103a", Some(false)), 64);
    assert_eq!(width("sm_90a", None), 128);
    assert_eq!(width("sm_121a", None), 128);
    // Compiled: the compiler says which family the products take.
    let opts = |no_tcgen05| tilec::CompileOptions { arch: "sm_103a".into(), no_tcgen05, ..Default::default() };
    for (no, w) in [(false, 32), (true, 64)] {
        let c = tilec::compile(&tilec::Source::new("k", text), &opts(no)).unwrap();
        assert!(c.stages[&tilec::Stage::Tile].contains(&format!("tensor<{w}xf32")), "no_tcgen05 {no}");
    }
}
