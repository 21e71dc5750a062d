//! One-pass tests: every `tests/passes/<pass>/*.mlir` is a minimal input whose first line
//! names the pipeline (`// passes: tile-layout`), run through the pass driver; the output is
//! snapshot beside the input (`<name>.snap`, reviewed with `cargo insta review`). The inputs
//! are small on purpose: a change to one pass shows up as a readable diff of one construct,
//! not as a 70 KB kernel snapshot (Cranelift filetests, Triton `test/Conversion` style).

use std::path::{Path, PathBuf};
use tilec_passes::driver::{parse_pipeline, Driver, Ir};

fn inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/passes");
    let mut v = vec![];
    for dir in std::fs::read_dir(&root).expect("tests/passes exists").flatten() {
        for f in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            if f.path().extension().is_some_and(|e| e == "mlir") {
                v.push(f.path());
            }
        }
    }
    v.sort();
    v
}

#[test]
fn every_pass_test_matches_its_snapshot() {
    let mlir = tilec_ir::Mlir::new().unwrap();
    let files = inputs();
    assert!(files.len() >= 8, "{} pass tests", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let pipeline = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// passes:"))
            .unwrap_or_else(|| panic!("{}: the first line is `// passes: <pipeline>`", f.display()))
            .trim();
        let steps = parse_pipeline(&mlir, pipeline).unwrap_or_else(|d| panic!("{}: {d:?}", f.display()));
        let mut d = Driver::new(&mlir, Ir::Text(text.clone()));
        for s in &steps {
            d.run(s).unwrap_or_else(|e| panic!("{}: {}: {e:?}", f.display(), s.name()));
        }
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        insta::with_settings!({
            snapshot_path => f.parent().unwrap(),
            prepend_module_to_snapshot => false,
            input_file => &f,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name, d.text());
        });
    }
}

/// The ring of stages (`tilegpu.stages_alloc` / `stage` / `async_copy_into`) on the
/// interpreter: the pass test's kernel computes A · B like a plain Rust matmul, K = 48 (three
/// tiles, both stages reused), with A's last tile ragged (K = 40: zero-filled columns).
#[test]
fn a_ring_of_stages_interprets_like_a_matmul() {
    use tilec::DType;
    use tilec_core::host::HostTensor;
    use tilec_interp::{run, Arg};
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/passes/tile-to-llvm/ring_stages.mlir");
    let text = std::fs::read_to_string(&f).unwrap();
    let mlir = tilec_ir::Mlir::new().unwrap();
    let func = mlir.read(&text, "tilegpu", None).unwrap();
    // The printer and the reader agree on the three ops, and MLIR verifies the printed text.
    let printed = func.to_mlir();
    mlir.parse(&printed, "tilegpu").unwrap();
    assert_eq!(mlir.read(&printed, "tilegpu", None).unwrap().to_mlir(), printed);
    // A stage whose view is not the ring's M×N buffer, and a copy into the ring itself, are
    // refused by the verifier.
    // (the op's first use changed, the type of that use changed to, what the error says)
    let copy_use = ": (memref<16x16xf16, #tilegpu.swizzled_shared<8 : i64, 4 : i64, 2 : i64, [1, 0]>>, memref<?x?xf16";
    let cases = [
        (("i32) -> memref<16x16xf16", "i32) -> memref<16x8xf16"), "memref<16x8xf16", "a stage of"),
        (("\"tilegpu.async_copy_into\"(%4,", "\"tilegpu.async_copy_into\"(%3,"), "memref<2x16x16xf16", "an async copy"),
    ];
    for ((from, to), use_ty, says) in cases {
        let bad = text.replacen(from, to, 1).replacen(copy_use, &copy_use.replacen("memref<16x16xf16", use_ty, 1), 1);
        let f = mlir.read(&bad, "tilegpu", None).unwrap();
        let e = tilec_core::tir::verify::verify(&f, tilec_core::tir::verify::Level::TileGpu).unwrap_err();
        assert!(e.message.contains(says), "{}", e.message);
    }
    // A ring larger than any tile the IR may hold (the interpreter would allocate it).
    let huge = text.replace("memref<2x16x16xf16", "memref<65536x16x16xf16");
    let f = mlir.read(&huge, "tilegpu", None).unwrap();
    let e = tilec_core::tir::verify::verify(&f, tilec_core::tir::verify::Level::TileGpu).unwrap_err();
    assert!(e.message.contains("a shared buffer of shape [65536, 16, 16]"), "{}", e.message);
    for k in [48i64, 40] {
        let a: Vec<f64> = (0..16 * k).map(|i| ((i * 7 % 13) as f64 - 6.0) / 8.0).collect();
        let b: Vec<f64> = (0..k * 8).map(|i| ((i * 5 % 11) as f64 - 5.0) / 4.0).collect();
        // The kernel walks K in whole tiles of 16 (`K // 16`): a ragged K reads only those.
        let kk = k / 16 * 16;
        let bt: Vec<f64> = (0..8 * k).map(|i| b[((i % k) * 8 + i / k) as usize]).collect();
        let mut want = vec![0.0; 16 * 8];
        for i in 0..16 {
            for j in 0..8 {
                want[(i * 8 + j) as usize] = (0..kk).map(|x| a[(i * k + x) as usize] * b[(x * 8 + j) as usize]).sum();
            }
        }
        let args = vec![
            Arg::Tensor(HostTensor::from_f64(DType::F16, &[16, k], &a)),
            // B is read through an ordered load (order 1, 0): stored N × K.
            Arg::Tensor(HostTensor::from_f64(DType::F16, &[8, k], &bt)),
            Arg::Tensor(HostTensor::from_f64(DType::F32, &[16, 8], &[f64::NAN; 128])),
        ];
        let out = run(&func, [1, 1, 1], args).unwrap();
        let got = out.tensors[2].to_f64();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-3, "K = {k}: {got:?}\nwant {want:?}");
        }
    }
}

/// The ring kernel through the rest of the pipeline (the upstream conversions, LLVM,
/// NVPTX) is accepted by ptxas for every target, without spills, with the ring and B's
/// buffer in 1280 bytes of shared memory.
#[test]
fn a_ring_of_stages_assembles_for_every_target() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/passes/tile-to-llvm/ring_stages.mlir");
    let text = std::fs::read_to_string(&f).unwrap();
    let mlir = tilec_ir::Mlir::new().unwrap();
    for t in tilec_core::target::names() {
        let (arch, _) = tilec_core::target::resolve(t).unwrap();
        let steps = parse_pipeline(&mlir, &format!("tile-to-llvm{{arch={t}}},{}", tilec_passes::TO_LLVM.join(",")))
            .unwrap_or_else(|d| panic!("{t}: {d:?}"));
        let mut d = Driver::new(&mlir, Ir::Text(text.clone()));
        for s in &steps {
            d.run(s).unwrap_or_else(|e| panic!("{t}: {}: {e:?}", s.name()));
        }
        let llvm = d.text();
        assert!(!llvm.contains("nvgpu.") && !llvm.contains("unrealized_conversion_cast"), "{t}: {llvm}");
        let m = mlir.parse(&llvm, "llvm").unwrap();
        let ir = mlir.translate_to_llvm_ir(&m).unwrap();
        let cg = tilec_backend::codegen(&ir, arch, 3).unwrap_or_else(|e| panic!("{t}: {e:?}"));
        assert_eq!(cg.ptx.matches("cp.async.cg.shared.global").count(), 2, "{t}: prologue and loop copies");
        let r = tilec_backend::ptxas(&cg.ptx, arch).unwrap_or_else(|e| panic!("{t}: {e:?}"));
        assert_eq!((r.spill_stores, r.spill_loads, r.shared_bytes), (0, 0, 1280), "{t}");
    }
}
