//! `tilec opt` and the pass driver: mixed pipelines, dumps, and the errors of a bad pipeline.

use tilec_passes::driver::{parse_pipeline, upstream_passes, Driver, Ir, REFUSED_UPSTREAM};

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

#[test]
fn a_mixed_pipeline_ends_in_llvm_that_translates_to_ptx() {
    let mlir = tilec_ir::Mlir::new().unwrap();
    let passes = "canonicalize,cse,tile-layout{num-warps=4},canonicalize,tile-to-llvm{arch=sm_90a},cse";
    let steps = parse_pipeline(&mlir, passes).unwrap();
    let mut d = Driver::new(&mlir, Ir::Text(tile_text("softmax", "softmax")));
    for s in &steps {
        d.run(s).unwrap_or_else(|e| panic!("{}: {e:?}", s.name()));
    }
    let out = d.text().unwrap();
    assert!(out.contains("llvm.func @softmax") && out.contains("nvvm.kernel"), "{out}");
    let ir = mlir.translate_to_llvm_ir(&mlir.parse(&out, "opt output").unwrap()).unwrap();
    let (arch, _) = tilec_core::target::resolve("sm_90a").unwrap();
    assert!(tilec_backend::codegen(&ir, arch, tilec_backend::Pipeline::tilec(3))
        .unwrap()
        .ptx
        .contains(".entry softmax"));
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
            let m = mlir.parse(&d.text().unwrap(), "cleaned").unwrap();
            let back = tilec_ir::read_func(&m).unwrap_or_else(|e| panic!("{k}: {e:?}"));
            let again = mlir.parse(&back.to_mlir(), "read back").unwrap();
            assert_eq!(mlir.print(&m), mlir.print(&again), "{k}");
            n += 1;
        }
    }
    assert!(n >= 15, "{n} kernels");
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
}

#[test]
fn refused_upstream_passes_are_errors_that_say_why() {
    // Each refused pass is named with its reason, alone or inside a pipeline, and none is
    // listed as runnable.
    let mlir = tilec_ir::Mlir::new().unwrap();
    for (name, why) in REFUSED_UPSTREAM {
        for text in [name.to_string(), format!("canonicalize,{name},cse")] {
            let e = parse_pipeline(&mlir, &text).err().unwrap_or_else(|| panic!("`{text}` was accepted"));
            assert!(e.message.contains(name) && e.message.contains(why), "{text}: {}", e.message);
        }
        assert!(upstream_passes().all(|u| u.name != *name), "{name} is listed");
    }
}

#[test]
fn spans_survive_upstream_passes_as_locations() {
    let mlir = tilec_ir::Mlir::new().unwrap();
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/matmul.tile");
    let src = tilec::Source::new("kernels/matmul.tile", std::fs::read_to_string(path).unwrap());
    // TILE_M = 8 is below the 16 rows of mma.sync: tile-layout refuses it at the mma.
    let consts = [("TILE_M".to_string(), tilec::ConstArg::Int(8))].into_iter().collect();
    let req = tilec_frontend::Request { target: "sm_90a".into(), consts, ..Default::default() };
    let el = tilec_frontend::check(&src.text, &req).unwrap();
    // Printed with locations, canonicalised upstream, printed with locations, read back: the
    // loads keep their spans.
    let text = el.func.to_mlir_with(tilec_core::tir::PrintOptions { locations: Some(&src) });
    assert!(text.contains("loc(\"kernels/matmul.tile\":"), "{text}");
    let mut m = mlir.parse(&text, "tile with locations").unwrap();
    mlir.run_pipeline(&mut m, "builtin.module(canonicalize,cse)").unwrap();
    let back =
        tilec_ir::read_func_with(&mlir.parse(&mlir.print_with_locations(&m), "again").unwrap(), Some(&src)).unwrap();
    let spans = |f: &tilec_core::tir::Func| {
        let mut v = vec![];
        f.walk(&mut |op| {
            if let tilec_core::tir::OpKind::Load { .. } = op.kind {
                v.push(op.span)
            }
        });
        v
    };
    assert_eq!(spans(&back), spans(&el.func));
    assert!(spans(&back).iter().all(Option::is_some));
    // A tilec pass after an upstream one reports at the source line.
    let steps = parse_pipeline(&mlir, "canonicalize,tile-layout").unwrap();
    let mut d = Driver::new(&mlir, Ir::Tile(el.func)).with_source(src.clone());
    d.run(&steps[0]).unwrap();
    let e = d.run(&steps[1]).unwrap_err();
    assert_eq!(e.code, "E0900");
    let rendered = tilec_core::diag::render(&[e], &src);
    assert!(rendered.contains("kernels/matmul.tile:") && rendered.contains("mma(a, b, acc)"), "{rendered}");
}

#[test]
fn the_dialect_definition_and_the_printer_name_the_same_ops() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let irdl = std::fs::read_to_string(root.join("ir/src/tile.irdl.mlir")).unwrap();
    let mut defined = std::collections::BTreeSet::new();
    let mut dialect = "";
    for line in irdl.lines().map(str::trim) {
        if let Some(d) = line.strip_prefix("irdl.dialect @") {
            dialect = d.trim_end_matches(" {");
        }
        if let Some(op) = line.strip_prefix("irdl.operation @") {
            defined.insert(format!("{dialect}.{}", op.trim_end_matches(" {")));
        }
    }
    let printer = std::fs::read_to_string(root.join("core/src/tir/print.rs")).unwrap();
    let printed: std::collections::BTreeSet<String> = printer
        .split("\\\"")
        .filter(|s| {
            (s.starts_with("tile.") || s.starts_with("tilegpu."))
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        })
        .map(str::to_string)
        .collect();
    assert!(printed.len() >= 18, "{printed:?}");
    assert_eq!(defined, printed, "ops defined in IRDL vs printed by tir");
}
