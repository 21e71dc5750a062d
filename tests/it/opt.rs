//! `tilec opt` and the pass driver: mixed pipelines, dumps, and the errors of a bad pipeline.

use crate::cli::tilec;
use tilec_passes::driver::{parse_pipeline, upstream_passes, Driver, Ir};

fn tile_text(file: &str, kernel: &str) -> String {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("kernels/{file}.tile"));
    let src = tilec::Source::new(file, std::fs::read_to_string(p).unwrap());
    let o = tilec::CompileOptions {
        arch: "sm_121a".into(),
        kernel: Some(kernel.into()),
        until: Some(tilec::Stage::Tile),
        ..Default::default()
    };
    tilec::compile(&src, &o).unwrap().stage(tilec::Stage::Tile).to_string()
}

fn temp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tilec-opt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn mixed_pipeline_prints_after_every_pass_and_ends_in_llvm() {
    let f = temp("softmax.mlir", &tile_text("softmax", "softmax"));
    let passes = "canonicalize,cse,tile-layout{num-warps=4},canonicalize,tile-to-llvm{arch=sm_90a},cse";
    let (code, out, err) = tilec(&["opt", f.to_str().unwrap(), "--passes", passes, "--print-after-all"]);
    assert_eq!(code, 0, "{err}");
    let dumps: Vec<&str> = err.lines().filter(|l| l.starts_with("// -----// IR Dump After ")).collect();
    let names = ["canonicalize", "cse", "tile-layout{num-warps=4}", "canonicalize", "tile-to-llvm{arch=sm_90a}", "cse"];
    assert_eq!(dumps.len(), names.len(), "{err}");
    for (d, n) in dumps.iter().zip(names) {
        assert_eq!(*d, format!("// -----// IR Dump After {n} //----- //"));
    }
    // After tile-layout the tiles carry layouts; the result is one nvvm kernel.
    let after_layout = err.split("IR Dump After ").nth(3).unwrap();
    assert!(after_layout.starts_with("tile-layout") && after_layout.contains("#tilegpu.blocked<"), "{after_layout}");
    assert!(!err.split("IR Dump After ").nth(2).unwrap().contains("#tilegpu"), "no layouts before tile-layout");
    assert!(out.contains("llvm.func @softmax") && out.contains("nvvm.kernel"), "{out}");
    // The result is valid input for LLVM translation and the NVPTX backend.
    let mlir = tilec_ir::Mlir::new().unwrap();
    let ir = mlir.translate_to_llvm_ir(&mlir.parse(&out, "opt output").unwrap()).unwrap();
    let (arch, _) = tilec_core::target::resolve("sm_90a").unwrap();
    assert!(tilec_backend::codegen(&ir, arch, 3).unwrap().ptx.contains(".entry softmax"));
    // --print-after picks passes by name; -o writes the result.
    let o = f.with_extension("out.mlir");
    let (code, out, err) = tilec(&[
        "opt",
        f.to_str().unwrap(),
        "--passes",
        "cse,tile-layout",
        "--print-after",
        "tile-layout",
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty());
    assert_eq!(err.matches("IR Dump After").count(), 1, "{err}");
    assert!(std::fs::read_to_string(&o).unwrap().contains("#tilegpu.blocked<"));
}

#[test]
fn every_kernel_stays_readable_after_upstream_cleanups() {
    // Upstream passes rewrite the tile stage (fold constants, merge duplicates, hoist out of
    // loops); the reader must take every result back, and MLIR must agree it is the same IR.
    let mlir = tilec_ir::Mlir::new().unwrap();
    let steps = parse_pipeline(&mlir, "canonicalize,cse,loop-invariant-code-motion,sccp").unwrap();
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut n = 0;
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    for path in files.iter().filter(|p| p.extension().is_some_and(|x| x == "tile")) {
        let file = path.file_stem().unwrap().to_string_lossy().into_owned();
        let ast = tilec_frontend::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        for k in ast.kernels.iter().map(|k| k.name.name.clone()) {
            let mut d = Driver::new(&mlir, Ir::Text(tile_text(&file, &k)));
            for s in &steps {
                d.run(s).unwrap_or_else(|e| panic!("{k}: {}: {e:?}", s.name()));
            }
            let m = mlir.parse(&d.text(), "cleaned").unwrap();
            let back = tilec_ir::read_func(&m).unwrap_or_else(|e| panic!("{k}: {e:?}"));
            let again = mlir.parse(&back.to_mlir(), "read back").unwrap();
            assert_eq!(mlir.print(&m), mlir.print(&again), "{k}");
            n += 1;
        }
    }
    assert!(n >= 15, "{n} kernels");
}

#[test]
fn bad_pipelines_name_the_close_matches() {
    let f = temp("sm.mlir", &tile_text("softmax", "softmax"));
    let f = f.to_str().unwrap();
    let cases: [(&str, &[&str]); 7] = [
        ("tile-layot,cse", &["unknown pass `tile-layot`", "did you mean: tile-layout?"]),
        ("canonicalise", &["unknown pass `canonicalise`", "canonicalize"]),
        ("tile-layout{num-warp=4}", &["has no option `num-warp`", "did you mean: num-warps?"]),
        ("tile-layout{num-warps=3}", &["not a power of two"]),
        ("tile-to-llvm{arch=sm_80}", &["unknown arch `sm_80`"]),
        ("canonicalize{max-iteration=2}", &["bad pipeline element", "no such option max-iteration"]),
        ("affine-loop-coalescing", &["runs on `func.func` ops: write `func.func(affine-loop-coalescing)`"]),
    ];
    for (p, wants) in cases {
        let (code, _, err) = tilec(&["opt", f, "--passes", p]);
        assert_eq!(code, 1, "{p}");
        assert!(err.contains("error[E0904]"), "{p}: {err}");
        for w in wants {
            assert!(err.contains(w), "{p}: wants `{w}` in\n{err}");
        }
    }
    let (code, _, err) = tilec(&["opt", f, "--passes", "tile-to-llvm"]);
    assert_eq!(code, 1);
    assert!(err.contains("run `tile-layout` before it"), "{err}");
    let (code, _, err) = tilec(&["opt", f, "--passes", "cse", "--print-after", "cs"]);
    assert_ne!(code, 0);
    assert!(err.contains("did you mean cse?"), "{err}");
    // An upstream lowering leaves ops that tile IR has no form for: tilec's passes say so.
    let (code, _, err) = tilec(&["opt", f, "--passes", "convert-arith-to-llvm,tile-layout"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[E0903]") && err.contains("has no tile-IR form"), "{err}");
}

#[test]
fn the_upstream_list_matches_the_linked_mlir() {
    let mlir = tilec_ir::Mlir::new().unwrap();
    let passes: Vec<_> = upstream_passes().collect();
    let names: Vec<&str> = passes.iter().map(|u| u.name).collect();
    assert!(names.len() > 250 && names.contains(&"canonicalize") && names.contains(&"cse"));
    let nested = |u: &tilec_passes::driver::Upstream| match u.anchor {
        "builtin.module" => format!("builtin.module({})", u.name),
        a => format!("builtin.module({a}({}))", u.name),
    };
    let missing: Vec<&str> =
        passes.iter().filter(|u| mlir.check_pipeline(&nested(u)).is_err()).map(|u| u.name).collect();
    assert!(missing.is_empty(), "listed but not registered here: {missing:?}");
    let (code, out, _) = tilec(&["passes", "--upstream"]);
    assert_eq!(code, 0);
    assert!(out.lines().count() == names.len() && out.contains("loop-invariant-code-motion"));
}
