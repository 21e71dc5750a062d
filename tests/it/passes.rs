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
            insta::assert_snapshot!(name, d.text().unwrap());
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
        // The epilogue's store stays direct: the ring is the subject here.
        let steps = parse_pipeline(
            &mlir,
            &format!("tile-to-llvm{{arch={t} tma-store=false}},{}", tilec_passes::TO_LLVM.join(",")),
        )
        .unwrap_or_else(|d| panic!("{t}: {d:?}"));
        let mut d = Driver::new(&mlir, Ir::Text(text.clone()));
        for s in &steps {
            d.run(s).unwrap_or_else(|e| panic!("{t}: {}: {e:?}", s.name()));
        }
        let llvm = d.text().unwrap();
        assert!(!llvm.contains("nvgpu.") && !llvm.contains("unrealized_conversion_cast"), "{t}: {llvm}");
        let m = mlir.parse(&llvm, "llvm").unwrap();
        let ir = mlir.translate_to_llvm_ir(&m).unwrap();
        let cg = tilec_backend::codegen(&ir, arch, tilec_backend::Pipeline::tilec(3))
            .unwrap_or_else(|e| panic!("{t}: {e:?}"));
        assert_eq!(cg.ptx.matches("cp.async.cg.shared.global").count(), 2, "{t}: prologue and loop copies");
        let r = tilec_backend::ptxas(&cg.ptx, arch).unwrap_or_else(|e| panic!("{t}: {e:?}"));
        assert_eq!((r.spill_stores, r.spill_loads, r.shared_bytes), (0, 0, 1280), "{t}");
    }
}

/// `tile-licm` and `tile-pipeline` keep every kernel's results: each spec's interpreter cases (ragged
/// sequence and K lengths, causal and not) run on the interpreter after `tile-layout`,
/// `tile-licm` (causal FMHA's and MLA's query offsets leave the loop) and `tile-pipeline`, against the plain-Rust reference. A stage read for the wrong iteration,
/// or before its copy, reads another tile or NaN (the interpreter's unwritten stages).
#[test]
fn pipelined_kernels_interpret_like_their_references() {
    use tilec_passes::driver::Step;
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mlir = tilec_ir::Mlir::new().unwrap();
    let steps: Vec<Step> = ["tile-layout", "tile-licm", "tile-pipeline"]
        .iter()
        .map(|n| Step::tilec(tilec_passes::PASSES.iter().find(|p| p.name == *n).unwrap(), &[]))
        .collect();
    // The passes follow the module's target; the block-scaled GEMM lays out for sm_121a only
    // (the others refuse its product).
    let lower_on = |f: &tilec_core::tir::Func, target: &str| -> Result<tilec_core::tir::Func, String> {
        let mut f = f.clone();
        f.target = target.to_string();
        let mut d = Driver::new(&mlir, Ir::Tile(f));
        for s in &steps {
            d.run(s).map_err(|e| format!("{}: {}", s.name(), e.message))?;
        }
        let text = d.text().map_err(|e| e.message)?;
        if !text.contains("tilegpu.stages_alloc") {
            return Err("not pipelined".into());
        }
        mlir.read(&text, "tilegpu", None).map_err(|e| e.message)
    };
    let lower = |f: &tilec_core::tir::Func| lower_on(f, "sm_90a");
    let lower_121 = |f: &tilec_core::tir::Func| lower_on(f, "sm_121a");
    // The GEMMs' and MLA's own interpreter cases use tiles too small for 16-byte async
    // copies (register loads, not pipelined): these use tiles that are, with K and the
    // sequence ragged (the last tile zero-filled; the prefetches run past the end).
    use tilec_core::DType;
    use tilec_suite::Case;
    let gemm = |d: &[i64]| Case::new(DType::F16, d).with("TILE_M", 64).with("TILE_N", 64).with("TILE_K", 32);
    let extra = |name: &str| -> Vec<Case> {
        match name {
            "matmul" => vec![gemm(&[80, 72, 168]).with("GROUP_M", 2)],
            "bmm" => vec![gemm(&[2, 80, 72, 168])],
            "mla" => [1, 0]
                .map(|c| Case::new(DType::BF16, &[1, 2, 200, 64, 32]).with("TILE_M", 64).with("CAUSAL", c))
                .to_vec(),
            "matmul_mx" => vec![
                Case::new(DType::F4E2M1X2, &[80, 72, 300]).with("TILE_M", 64).with("TILE_N", 64).with("TILE_K", 128),
                Case::new(DType::F8E4M3, &[80, 72, 200]).with("TILE_M", 64).with("TILE_N", 64).with("TILE_K", 64),
            ],
            _ => vec![],
        }
    };
    let (mut ran, mut failures) = (vec![], vec![]);
    for spec in tilec_suite::all() {
        for (i, case) in (spec.interp_cases)().iter().chain(&extra(spec.name)).enumerate() {
            let lowered: &dyn Fn(&tilec_core::tir::Func) -> Result<tilec_core::tir::Func, String> =
                if spec.name == "matmul_mx" { &lower_121 } else { &lower };
            match tilec_suite::run_on_interp_with(spec, case, &kernels, 100 + i as u64, lowered) {
                Ok(c) if c.pass => ran.push(spec.name),
                Ok(c) => failures.push(format!("{} {}: rel L2 {:.3e} {}", spec.name, case.label(), c.rel_l2, c.note)),
                Err(e) if e == "not pipelined" => {}
                Err(e) => failures.push(format!("{} {}: {e}", spec.name, case.label())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    ran.dedup();
    for k in
        ["matmul", "bmm", "fmha", "mla", "attention_decode_grouped", "mla_decode", "fmha_step5_latency", "matmul_mx"]
    {
        assert!(ran.contains(&k), "{k} was not pipelined and checked: {ran:?}");
    }
}

/// Runs `steps` over each case's kernel (as the frontend makes it, for `target` where one is
/// given) on the interpreter and checks it against its reference; `check` sees each lowered
/// text first.
fn interpret_lowered(
    what: &str,
    steps: &[tilec_passes::driver::Step],
    target: Option<&str>,
    cases: &[(&str, tilec_suite::Case)],
    seed: u64,
    check: impl Fn(&str),
) {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mlir = tilec_ir::Mlir::new().unwrap();
    let lower = |f: &tilec_core::tir::Func| -> Result<tilec_core::tir::Func, String> {
        let mut f = f.clone();
        if let Some(t) = target {
            f.target = t.into();
        }
        let mut d = Driver::new(&mlir, Ir::Tile(f));
        for s in steps {
            d.run(s).map_err(|e| format!("{}: {}", s.name(), e.message))?;
        }
        let text = d.text().map_err(|e| e.message)?;
        check(&text);
        mlir.read(&text, "tilegpu", None).map_err(|e| e.message)
    };
    for (name, case) in cases {
        let spec = tilec_suite::find(name).unwrap();
        let c = tilec_suite::run_on_interp_with(spec, case, &kernels, seed, &lower)
            .unwrap_or_else(|e| panic!("{what} {name} {}: {e}", case.label()));
        assert!(c.pass, "{what} {name} {}: rel L2 {:.3e} {}", case.label(), c.rel_l2, c.note);
    }
}

/// `tile-persistent` before the pipeline, with and without the producer warpgroup: the GEMMs
/// walk several tiles a block (the interpreter runs a persistent kernel on at most
/// `PERSISTENT_BLOCKS` blocks), their TMA rings made once before the tile loop and numbered
/// across it — which the interpreter's mbarrier model checks at every wait, acquire and
/// release — and the results match the references on ragged shapes (K not a multiple of
/// TILE_K, so the fill count of one tile is not a multiple of the ring's stages).
#[test]
fn persistent_gemms_interpret_like_their_references() {
    use tilec_core::DType;
    use tilec_passes::driver::Step;
    use tilec_suite::Case;
    let pass = |n: &str, o: &[(&str, &str)]| Step::tilec(tilec_passes::PASSES.iter().find(|p| p.name == n).unwrap(), o);
    let plain = vec![
        pass("tile-persistent", &[]),
        pass("tile-layout", &[]),
        pass("tile-licm", &[]),
        pass("tile-pipeline", &[]),
    ];
    let mut ws = plain.clone();
    ws[3] = pass("tile-pipeline", &[("warp-specialize", "true")]);
    ws.push(pass("tile-warp-specialize", &[]));
    // On sm_103a the accumulator is in Tensor Memory and `tile-epilogue-overlap` moves each
    // tile's epilogue after the next tile's products (the accumulator and the coordinates
    // carried, the last tile's epilogue after the loop).
    let mut two = ws.clone();
    two.extend([pass("tile-mma-overlap", &[]), pass("tile-epilogue-overlap", &[])]);
    // 128-row tiles over 8 warps: wgmma, so TMA rings.
    let gemm = |d: &[i64]| Case::new(DType::F16, d).with("TILE_M", 128).with("TILE_N", 64).with("TILE_K", 32);
    let cases = [
        ("matmul", gemm(&[200, 150, 168]).with("GROUP_M", 2)),
        ("matmul", gemm(&[300, 130, 100]).with("GROUP_M", 3)),
        ("matmul", gemm(&[1, 300, 64])),
        ("bmm", gemm(&[2, 300, 72, 168])),
        // An epilogue that loads (the row and column scales at the carried coordinates).
        (
            "matmul_fp8_rowwise",
            Case::new(DType::F8E4M3, &[300, 130, 256]).with("TILE_M", 128).with("TILE_N", 64).with("GROUP_M", 2),
        ),
    ];
    for (steps, what) in [(&plain, "plain"), (&ws, "warp-specialized"), (&two, "two TMEM accumulators")] {
        let target = (what == "two TMEM accumulators").then_some("sm_103a");
        interpret_lowered(what, steps, target, &cases, 7, |text| {
            assert!(text.contains("tile.num_tiles"), "{what}: not persistent");
            // The rings are made once, before the tile loop.
            let ring = text.find("tilegpu.stages_alloc").expect("pipelined");
            assert!(ring < text.find("scf.for").unwrap(), "{what}: a ring inside the tile loop");
            assert_eq!(text.contains("tile.warp_specialize"), what != "plain", "{what}");
            if target.is_some() {
                // The epilogue's two waits: in the loop (the previous tile), after it (the last).
                assert!(text.contains("#tilegpu.tcgen05"), "{what}: not on tcgen05");
                assert_eq!(text.matches("tilegpu.mma_wait").count(), 2, "{what}");
            }
        });
    }
}

/// `tile-cta-pair` before the rest of the tile-level pipeline (plain, persistent, and
/// persistent with the producer warpgroup): a block of 256 rows runs as two CTAs of 128 —
/// the interpreter runs a block as its two CTAs in turn, each `cluster_rank` its own — and
/// every GEMM matches its reference on ragged shapes: M = 300 (the last pair's second CTA
/// holds 44 rows), M = 100 (its second CTA none), K not a multiple of TILE_K; bmm's batched
/// tiles too. B's ring is
/// released on empty mbarriers (the multicast's), which the interpreter's mbarrier model
/// checks at every wait, acquire and release. A pass that forgot the rank (every CTA the
/// first half) or split B would fail them.
#[test]
fn cta_pairs_interpret_like_their_references() {
    use tilec_core::DType;
    use tilec_passes::driver::Step;
    use tilec_suite::Case;
    let pass = |n: &str, o: &[(&str, &str)]| Step::tilec(tilec_passes::PASSES.iter().find(|p| p.name == n).unwrap(), o);
    let pair = pass("tile-cta-pair", &[("arch", "sm_90a")]);
    let plain = vec![pair.clone(), pass("tile-layout", &[]), pass("tile-licm", &[]), pass("tile-pipeline", &[])];
    let mut persistent = plain.clone();
    persistent.insert(1, pass("tile-persistent", &[]));
    let mut ws = persistent.clone();
    ws[4] = pass("tile-pipeline", &[("warp-specialize", "true")]);
    ws.push(pass("tile-warp-specialize", &[]));
    let gemm = |d: &[i64]| Case::new(DType::F16, d).with("TILE_M", 256).with("TILE_N", 64).with("TILE_K", 32);
    let cases = [
        ("matmul", gemm(&[300, 150, 168]).with("GROUP_M", 2)),
        ("matmul", gemm(&[100, 130, 100])),
        ("matmul", gemm(&[512, 64, 64]).with("GROUP_M", 1)),
        // Batched: `[1, 256, K]` tiles reshaped to `[256, K]`, split along their rows.
        ("bmm", gemm(&[2, 300, 72, 168])),
    ];
    for (steps, what) in [(&plain, "plain"), (&persistent, "persistent"), (&ws, "warp-specialized")] {
        interpret_lowered(what, steps, None, &cases, 11, |text| {
            assert!(text.contains("tile.cluster = 2"), "{what}: not paired");
            assert!(text.contains("tensor<128x64xf32"), "{what}: the accumulator kept 256 rows");
            assert!(text.contains("tilegpu.stage_release"), "{what}: B's ring is not released");
        });
    }
}

/// matmul's CTA pair through the whole pipeline. On sm_90a (wgmma) the signature runs two CTAs
/// a block, the PTX declares the cluster, reads the cluster's index, multicasts B's copies
/// (each CTA half the atoms) and releases B's stages in both CTAs (a remote arrival through
/// `mapa`), and the SASS has no GPU-scope memory barrier in the loop (a `.release.cluster`
/// arrival put one there: the pair ran 0.63x the default on the H200) — its two
/// `MEMBAR.ALL.GPU` are the cluster barriers at the start and the end. On sm_103a (tcgen05,
/// persistent, warp-specialized) the products become one `cta_group::2` product for both CTAs
/// (every tcgen05 instruction of the kernel `cta_group::2`, as ptxas requires): SASS
/// `UTCHMMA.2CTA`, each CTA's copies `UTMALDG.2D.2CTA` onto the leader's mbarrier, the commits
/// `UTCBAR.2CTA.MULTICAST`, no GPU-scope barrier in the K loop (the cluster's three and the
/// once-a-tile TMEM handshake). ptxas assembles both without spills. On sm_121a the pass is
/// not applied and says why.
#[test]
fn matmul_pairs_ctas_in_a_cluster() {
    use tilec::ConstArg;
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/matmul.tile");
    let src = tilec::Source::new("matmul", std::fs::read_to_string(p).unwrap());
    let consts = std::collections::BTreeMap::from([
        ("CTA_PAIR".to_string(), ConstArg::Bool(true)),
        ("TILE_M".to_string(), ConstArg::Int(256)),
    ]);
    let sass_of = |arch: &str| {
        let o = tilec::CompileOptions { arch: arch.into(), consts: consts.clone(), ..Default::default() };
        let c = tilec::compile(&src, &o).unwrap_or_else(|e| panic!("{arch}: {e:?}"));
        assert_eq!(c.signature.cluster, 2, "{arch}");
        let ptx = c.ptx().to_string();
        assert!(ptx.contains(".reqnctapercluster 2, 1, 1"), "{arch}");
        assert!(ptx.contains("%clusterid.x") && ptx.contains("%cluster_ctarank"), "{arch}");
        let r = tilec_backend::ptxas(&ptx, c.arch).unwrap_or_else(|d| panic!("{arch}: {d:?}"));
        assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{arch}");
        let sass = tilec_backend::find_cuobjdump().map(|_| tilec_backend::sass(&r.cubin).unwrap());
        (c, ptx, sass)
    };
    let (c, ptx, sass) = sass_of("sm_90a");
    assert!(ptx.contains(".multicast::cluster [") && ptx.contains("mapa.shared::cluster.u32"));
    assert!(c.report.iter().any(|l| l.contains("multicast to both CTAs")), "{:#?}", c.report);
    if let Some(s) = sass {
        assert_eq!(s.matches("MEMBAR.ALL.GPU").count(), 2, "sm_90a: a GPU-scope barrier beyond the cluster's two");
    }
    let (c, ptx, sass) = sass_of("sm_103a");
    assert!(ptx.contains("tcgen05.mma.cta_group::2") && !ptx.contains("cta_group::1"), "sm_103a");
    assert!(ptx.contains("tcgen05.alloc.cta_group::2") && ptx.contains("cp.async.bulk.tensor.2d.cta_group::2"));
    assert!(c.report.iter().any(|l| l.contains("m256n256k16 issued by the pair's leader")), "{:#?}", c.report);
    if let Some(s) = sass {
        for op in ["UTCHMMA.2CTA", "UTMALDG.2D.2CTA", "UTCBAR.2CTA.MULTICAST"] {
            assert!(s.contains(op), "sm_103a: no {op}");
        }
        assert!(!s.contains("UTCHMMA ") && !s.contains("UTCHMMA\t"), "sm_103a: a one-CTA product");
        assert_eq!(
            s.matches("MEMBAR.ALL.GPU").count(),
            4,
            "sm_103a: the cluster's three barriers and the tile's handshake"
        );
    }
    let o = tilec::CompileOptions {
        arch: "sm_121a".into(),
        consts: consts.into_iter().chain([("OCCUPANCY".to_string(), ConstArg::Int(1))]).collect(),
        ..Default::default()
    };
    let c = tilec::compile(&src, &o).unwrap();
    assert_eq!(c.signature.cluster, 1);
    assert!(
        c.report.iter().any(|l| l.contains("tile-cta-pair: not applied: sm_121a has no thread block clusters")),
        "{:#?}",
        c.report
    );
}

/// `tile-swizzle` over the kernel library: every shared buffer of every compute kernel on
/// every target gets a swizzle with no extra wavefront for its `ldmatrix` reads or its
/// 16-byte writes (the pass's CPU model, `SwizzledShared::{ldmatrix,write}_conflicts`), and
/// none of the other swizzles it considers does better.
#[test]
fn every_chosen_swizzle_is_conflict_free() {
    use tilec_core::layout::SwizzledShared;
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut buffers = 0;
    for (file, kernel) in [
        ("fmha", "fmha"),
        ("matmul", "matmul"),
        ("bmm", "bmm"),
        ("group_gemm", "group_gemm"),
        ("group_gemm", "group_gemm_aligned"),
        ("mla", "mla"),
        ("mla_decode", "mla_decode"),
        ("attention_decode_grouped", "attention_decode_grouped"),
        ("paged_attention_decode", "paged_attention_decode"),
    ] {
        let text = std::fs::read_to_string(kernels.join(format!("{file}.tile"))).unwrap();
        for arch in tilec::ARCHS {
            let o = tilec::CompileOptions {
                arch: arch.name.into(),
                kernel: Some(kernel.into()),
                until: Some(tilec::Stage::Tilegpu),
                ..Default::default()
            };
            let c = tilec::compile(&tilec::Source::new(file, text.clone()), &o).unwrap();
            let f = tilec_ir::Mlir::new().unwrap().read(c.stage(tilec::Stage::Tilegpu), "tilegpu", None).unwrap();
            for t in &f.values {
                let tilec_core::tir::Type::Smem { shape, dtype, layout } = t else { continue };
                // A ring's stages are buffers of its last two dims.
                let s = &shape[shape.len() - 2..];
                let b = i64::from(dtype.bytes());
                let (r, w) = layout.conflicts(s, b);
                assert_eq!((r, w), (0, 0), "{kernel} {}: {s:?} {}", arch.name, layout.to_mlir());
                for mp in [1, 2, 4, 8] {
                    for pp in [1, 2, 4, 8] {
                        let other = SwizzledShared { per_phase: pp, max_phase: mp, ..layout.clone() };
                        let (r2, w2) = other.conflicts(s, b);
                        assert!(r2 + w2 >= r + w);
                    }
                }
                buffers += 1;
            }
        }
    }
    assert!(buffers >= 40, "{buffers} buffers");
}

/// `tile-approx-math` with `--fast-math` on every kernel of the library: on the interpreter
/// (which flushes subnormals where `tile.ftz` says and rounds `exp2(x · log2 e)`'s product)
/// each kernel stays within its reference tolerance, and the error it adds is measured
/// against the kernel without the pass: at most 4 × the plain kernel's rel L2 plus 1e-5.
#[test]
fn approximate_math_stays_within_the_kernels_tolerances() {
    use tilec_passes::driver::Step;
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mlir = tilec_ir::Mlir::new().unwrap();
    let pass = tilec_passes::PASSES.iter().find(|p| p.name == "tile-approx-math").unwrap();
    let step = Step::tilec(pass, &[("fast-math", "true")]);
    let lower = |f: &tilec_core::tir::Func| -> Result<tilec_core::tir::Func, String> {
        let mut d = Driver::new(&mlir, Ir::Tile(f.clone()));
        d.run(&step).map_err(|e| e.message)?;
        mlir.read(&d.text().map_err(|e| e.message)?, "tile", None).map_err(|e| e.message)
    };
    let mut failures = vec![];
    for spec in tilec_suite::all() {
        for (i, case) in (spec.interp_cases)().iter().enumerate() {
            let seed = 100 + i as u64;
            let plain = tilec_suite::run_on_interp(spec, case, &kernels, seed);
            let fast = tilec_suite::run_on_interp_with(spec, case, &kernels, seed, &lower);
            match (plain, fast) {
                (Ok(p), Ok(f)) if f.pass && f.rel_l2 <= 4.0 * p.rel_l2 + 1e-5 => {}
                (Ok(p), Ok(f)) => failures.push(format!(
                    "{} {}: rel L2 {:.3e} with fast math, {:.3e} without",
                    spec.name,
                    case.label(),
                    f.rel_l2,
                    p.rel_l2
                )),
                (a, b) => failures.push(format!("{} {}: {:?} / {:?}", spec.name, case.label(), a.err(), b.err())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The PTX of `kernel` (default constants) for sm_90a, with `no_fp_fusion` as given.
fn ptx_of(file: &str, kernel: &str, no_fp_fusion: bool) -> String {
    ptx_for(file, kernel, no_fp_fusion, "sm_90a")
}

/// The PTX of `kernel` (default constants) for `arch`.
fn ptx_for(file: &str, kernel: &str, no_fp_fusion: bool, arch: &str) -> String {
    ptx_with(file, kernel, tilec::CompileOptions { arch: arch.into(), no_fp_fusion, ..Default::default() })
}

/// The PTX of `kernel` (default constants) with options `o`.
fn ptx_with(file: &str, kernel: &str, o: tilec::CompileOptions) -> String {
    compiled_with(file, kernel, o).ptx().to_string()
}

/// `kernel` of `kernels/{file}.tile` compiled with options `o`.
fn compiled_with(file: &str, kernel: &str, o: tilec::CompileOptions) -> tilec::Compiled {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("kernels/{file}.tile"));
    let o = tilec::CompileOptions { kernel: Some(kernel.into()), ..o };
    tilec::compile(&tilec::Source::new(file, std::fs::read_to_string(p).unwrap()), &o).unwrap()
}

/// The first loop of a PTX text (a label a later branch jumps back to), as lines.
fn first_loop(ptx: &str) -> Vec<&str> {
    loop_with(ptx, "")
}

/// The first loop of a PTX text whose body holds `needle`, as lines.
fn loop_with<'p>(ptx: &'p str, needle: &str) -> Vec<&'p str> {
    let lines: Vec<&str> = ptx.lines().collect();
    let (start, end) = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| {
            let label = l.strip_suffix(':')?;
            // The first branch back to the label whose span holds `needle` (a loop's blocks
            // may branch to its latch before the back edge).
            let to_label = |b: &&str| b.contains("bra") && b.trim_end().ends_with(&format!("{label};"));
            (i..lines.len())
                .filter(|&j| to_label(&lines[j]))
                .find(|&j| lines[i..j].iter().any(|l| l.contains(needle)))
                .map(|j| (i, j))
        })
        .unwrap_or_else(|| panic!("no loop with `{needle}` in the PTX"));
    lines[start..end].to_vec()
}

/// `tile-pipeline` refills a `cp.async` ring right after the wait that frees its stage, so
/// the only barriers of a pipelined GEMM loop are those of its waits: none at the end of the
/// body (sm_121a, `mma.sync`). A TMA ring (sm_90a, `wgmma`) has no group wait at all: the
/// stages' mbarriers are waited for, and, in a kernel that is not warp-specialized (bmm, at
/// two blocks per SM), one barrier an iteration orders the last reads of a stage before its
/// refill. The warp-specialized GEMM (`--warp-specialize`) has no barrier in its consumers'
/// loop: they wait for the full mbarriers and release the stages on the empty ones, and the
/// producer's loop (no wgmma) acquires the stages and issues the copies; bmm, at two blocks
/// per SM, is left unspecialized (the producer would cut its registers).
#[test]
fn a_pipelined_loop_has_no_barrier_beyond_its_waits() {
    // (kernel, TMA copies an iteration: A's one 64-wide atom, B's 256 or 128 columns in
    // atoms, the loads' distance on sm_90a, warp-specialized on sm_90a)
    for (file, kernel, copies, distance, specialized) in
        [("matmul", "matmul", 1 + 4, 2, true), ("bmm", "bmm", 1 + 2, 1, false)]
    {
        // sm_121a with cp.async rings (`--no-tma`).
        let o = tilec::CompileOptions { arch: "sm_121a".into(), no_tma: true, ..Default::default() };
        let ptx = ptx_with(file, kernel, o);
        let body = first_loop(&ptx);
        let count = |s: &str| body.iter().filter(|l| l.contains(s)).count();
        assert!(count("mma.sync") > 0, "{kernel}: the first loop is not the K loop");
        assert_eq!(count("bar.sync"), count("cp.async.wait_group"), "{kernel}: a barrier beyond the waits'");
        // sm_121a's default: `mma.sync` fed by TMA (its buffers in TMA's layouts): the stages'
        // mbarriers waited for, no group wait, and one barrier an iteration before the
        // refills, as an unspecialized TMA ring has.
        let ptx = ptx_for(file, kernel, false, "sm_121a");
        let body = loop_with(&ptx, "mma.sync");
        let count = |s: &str| body.iter().filter(|l| l.contains(s)).count();
        assert_eq!(count("cp.async.wait_group"), 0, "{kernel}: a cp.async wait in sm_121a's TMA loop");
        assert_eq!(count("mbarrier.try_wait.parity"), 2, "{kernel}: one wait per ring on sm_121a");
        assert_eq!(count("bar.sync"), 1, "{kernel}: sm_121a's barriers");
        assert!(ptx.contains("cp.async.bulk.tensor"), "{kernel}: no TMA copy on sm_121a");
        let o = tilec::CompileOptions { arch: "sm_90a".into(), warp_specialize: true, ..Default::default() };
        let ptx = ptx_with(file, kernel, o);
        let body = loop_with(&ptx, "wgmma.mma_async");
        let count = |s: &str| body.iter().filter(|l| l.contains(s)).count();
        assert_eq!(count("cp.async.wait_group"), 0, "{kernel}: a cp.async wait in a TMA loop");
        assert_eq!(count("mbarrier.try_wait.parity"), 2, "{kernel}: one wait per ring");
        // The loop's blocks need not be contiguous in the PTX: count the whole kernel, the
        // prologue's `distance` iterations and the body's one.
        assert_eq!(
            ptx.matches("cp.async.bulk.tensor").count() - ptx.matches(".global.shared::cta").count(),
            (distance + 1) * copies,
            "{kernel}: one copy per 128-byte atom of A and B"
        );
        assert_eq!(ptx.contains("setmaxnreg"), specialized, "{kernel}: warp specialization");
        if specialized {
            assert_eq!(count("bar.sync"), 0, "{kernel}: a barrier in the consumers' loop");
            assert_eq!(count("cp.async.bulk.tensor"), 0, "{kernel}: a consumer issues copies");
            assert_eq!(count("mbarrier.arrive.shared"), 2, "{kernel}: one release per ring");
            let producer = loop_with(&ptx, "cp.async.bulk.tensor");
            let count = |s: &str| producer.iter().filter(|l| l.contains(s)).count();
            assert_eq!(count("wgmma"), 0, "{kernel}: the producer's loop computes");
            assert_eq!(count("mbarrier.try_wait.parity"), 2, "{kernel}: one acquire per ring");
            assert!(ptx.contains(".maxntid 384, 1, 1") && ptx.contains(".minnctapersm 1"));
            let words: Vec<String> = ptx.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
            assert!(words.iter().any(|l| l == "setmaxnreg.dec.sync.aligned.u32 40;"));
            assert!(words.iter().any(|l| l == "setmaxnreg.inc.sync.aligned.u32 232;"));
        } else {
            assert_eq!(count("bar.sync"), 1, "{kernel}: more than the stage-reuse barrier");
        }
    }
}

/// `flush_to_zero` uses the instructions' own `.ftz` forms, and the source's `a * b - c`
/// contracts into one `fma` unless `--no-fp-fusion` asks for two roundings.
#[test]
fn flush_to_zero_and_fp_fusion_lower_to_single_instructions() {
    let fused = ptx_of("fmha", "fmha", false);
    assert!(fused.contains("ex2.approx.ftz.f32") && fused.contains("div.approx.ftz.f32"));
    // The software flush (|x| < 2^-126 → x · 0) is gone.
    assert!(!fused.contains("abs.f32"), "a software flush-to-zero is left");
    assert!(fused.contains("fma.rn.f32"));
    assert!(!fused.contains("sub.rn.f32"), "qk · scale − m is not fused");
    let separate = ptx_of("fmha", "fmha", true);
    assert!(!separate.contains("fma.rn.f32"), "--no-fp-fusion still fuses");
    assert!(separate.contains("mul.rn.f32") && separate.contains("sub.rn.f32"));
}

/// The `warp_specialize = true` hint (matmul's `WARP_SPECIALIZE` constant, in its tune space)
/// asks for the producer warpgroup as `--warp-specialize` does; without it (the default) the
/// GEMM is not specialized.
#[test]
fn the_warp_specialize_hint_gives_the_gemm_a_producer() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/matmul.tile");
    let src = tilec::Source::new("matmul", std::fs::read_to_string(p).unwrap());
    let ptx = |ws: bool| {
        let mut o = tilec::CompileOptions { arch: "sm_90a".into(), ..Default::default() };
        o.consts.insert("WARP_SPECIALIZE".into(), tilec::ConstArg::Bool(ws));
        tilec::compile(&src, &o).unwrap().ptx().to_string()
    };
    let (plain, specialized) = (ptx(false), ptx(true));
    assert!(!plain.contains("setmaxnreg") && plain.contains(".maxntid 256, 1, 1"));
    assert!(specialized.contains("setmaxnreg.inc") && specialized.contains(".maxntid 384, 1, 1"));
}

/// LLVM's loop passes are quadratic in the loops of one function (1,500 loops took 10 s at
/// O3, 3,000 a minute): past `LOOP_BUDGET` loops the backend runs LLVM at O0 and says so in
/// the report; a kernel of the library keeps O3.
#[test]
fn a_kernel_of_thousands_of_loops_skips_llvms_loop_passes() {
    let nests = tilec::LOOP_BUDGET / 2 + 1;
    let body = "    for i in range(0, 4) { for j in range(0, 4) { t = t + 1.0; } }\n".repeat(nests);
    let text = format!(
        "kernel k(x: tensor<f32, [N]>)\n    grid = (1,)\n{{\n    let t = zeros((16,), f32);\n{body}    store(x, index=(0,), tile=t);\n}}\n"
    );
    let o = tilec::CompileOptions { arch: "sm_90a".into(), ..Default::default() };
    let c = tilec::compile(&tilec::Source::new("loops", text), &o).unwrap();
    assert!(c.report.iter().any(|l| l.contains(&format!("{} loops", 2 * nests)) && l.contains("LLVM at O0")));
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/fmha.tile");
    let c = tilec::compile(&tilec::Source::new("fmha", std::fs::read_to_string(p).unwrap()), &o).unwrap();
    assert!(!c.report.iter().any(|l| l.contains("LLVM at O0")));
}

/// FlashAttention-3's ping-pong on FMHA for sm_90a (D = 128: two consumer warpgroups): the
/// last warpgroup hands the first turn to warpgroup 0 (`bar.arrive 2`), each turn waits on its
/// own barrier (`bar.sync 2 + g, 256`: a register id) and ends with `bar.arrive` on the next
/// warpgroup's, the final end only where a warpgroup follows; `--no-pingpong` has none. Causal
/// FMHA needs `tile-licm`: without it the query offsets' layout conversion (two consumer-wide
/// barriers) stays inside the diagonal tiles' `if`, inside a turn, and the lowering refuses the
/// kernel instead of letting the warpgroups deadlock.
#[test]
fn fmha_warpgroups_take_turns_on_the_tensor_cores() {
    let words = |ptx: &str| -> Vec<String> {
        ptx.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect()
    };
    for causal in [false, true] {
        let mut o = tilec::CompileOptions { arch: "sm_90a".into(), ..Default::default() };
        o.consts.insert("CAUSAL".into(), tilec::ConstArg::Bool(causal));
        let ptx = ptx_with("fmha", "fmha", o.clone());
        let w = words(&ptx);
        let syncs = w.iter().filter(|l| l.starts_with("bar.sync %r") && l.ends_with(", 256;")).count();
        let arrives = w.iter().filter(|l| l.contains("bar.arrive %r")).count();
        // Before the loop and before the body's last product.
        assert_eq!(syncs, 2, "causal {causal}: turn waits\n{}", w.join("\n"));
        // The first turn handed over, the body's end, the final end (predicated).
        assert_eq!(arrives, 3, "causal {causal}: turn ends");
        assert_eq!(w.iter().filter(|l| l.contains("@p bar.arrive")).count(), 2, "causal {causal}: predicated arrives");
        let body = loop_with(&ptx, "wgmma.mma_async");
        assert!(
            !body.iter().any(|l| l.contains("bar.sync 1,") || l.contains("bar.sync \t1,")),
            "a consumer barrier in the loop"
        );
        let plain = ptx_with("fmha", "fmha", tilec::CompileOptions { no_pingpong: true, ..o.clone() });
        assert!(!plain.contains("bar.arrive"), "causal {causal}: --no-pingpong has turns");
        if causal {
            let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/fmha.tile");
            let text = std::fs::read_to_string(p).unwrap();
            let mut no_licm = tilec::CompileOptions { kernel: Some("fmha".into()), ..o };
            no_licm.disabled_passes.insert("tile-licm".into());
            // The query offsets' conversion left in the loop: an index tile, made again in
            // the new layout without shared memory or a barrier, so the kernel compiles.
            tilec::compile(&tilec::Source::new("fmha", text.clone()), &no_licm).expect("no barrier in the turn");
            // The same offsets through `min` (no longer an index tile) are exchanged through
            // shared memory, with a barrier inside the turn: refused.
            let line = "let offs_m = bid_x * TILE_M + arange(TILE_M);";
            assert!(text.contains(line));
            let opaque = text.replace(line, "let offs_m = bid_x * TILE_M + min(arange(TILE_M), TILE_M);");
            let e = tilec::compile(&tilec::Source::new("fmha", opaque), &no_licm)
                .expect_err("a barrier inside a turn is refused")
                .render();
            assert!(e.contains("deadlock"), "{e}");
        }
    }
}

/// A persistent GEMM through the whole pipeline for sm_90a: the signature says `persistent`,
/// the PTX entry takes the tile count after the tensors and before the tensor maps (the
/// ABI's order), the ring's mbarriers are initialised once before the tile loop, and with
/// the producer warpgroup the producer's copy holds the tile loop around the K loop.
#[test]
fn a_persistent_gemm_takes_its_tile_count_and_keeps_its_rings() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/matmul.tile");
    let src = tilec::Source::new("matmul", std::fs::read_to_string(p).unwrap());
    for ws in [false, true] {
        let o = tilec::CompileOptions {
            arch: "sm_90a".into(),
            persistent: true,
            warp_specialize: ws,
            ..Default::default()
        };
        let c = tilec::compile(&src, &o).unwrap();
        assert!(c.signature.persistent, "ws {ws}");
        assert!(!c.signature.tma.is_empty(), "ws {ws}: TMA rings");
        let ptx = c.ptx();
        let entry = &ptx[ptx.find(".entry").unwrap()..];
        let params = &entry[..entry.find(')').unwrap()];
        // Three rank-2 tensors (a pointer, two extents, two strides each), then the i32.
        let kinds: Vec<&str> = params.lines().filter(|l| l.contains(".param")).collect();
        assert!(
            kinds[15].contains(".param .u32") && kinds[16].contains(".b8") && kinds[16].contains("[128]"),
            "{params}"
        );
        // The mbarriers are initialised once: no `mbarrier.init` between a label and a later
        // branch back to it.
        let lines: Vec<&str> = ptx.lines().collect();
        assert!(ptx.contains("mbarrier.init"));
        for (i, l) in lines.iter().enumerate() {
            let Some(label) = l.strip_suffix(':') else { continue };
            let back =
                lines[i..].iter().rposition(|b| b.contains("bra") && b.trim_end().ends_with(&format!("{label};")));
            if let Some(j) = back {
                assert!(
                    !lines[i..i + j].iter().any(|x| x.contains("mbarrier.init")),
                    "ws {ws}: mbarrier.init in loop {label}"
                );
            }
        }
        // Without the hint or the switch: no parameter, a grid of one block a tile.
        let plain = tilec::compile(&src, &tilec::CompileOptions { persistent: false, ..o }).unwrap();
        assert!(!plain.signature.persistent && !plain.ptx().contains(".param .u32"));
    }
    // The partition of the warp-specialized kernel: the producer walks the tiles too.
    let mlir = tilec_ir::Mlir::new().unwrap();
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/passes/tile-warp-specialize/persistent_gemm.mlir");
    let mut d = Driver::new(&mlir, Ir::Text(std::fs::read_to_string(f).unwrap()));
    let step = parse_pipeline(&mlir, "tile-warp-specialize").unwrap();
    d.run(&step[0]).unwrap();
    let func = mlir.read(&d.text().unwrap(), "tilegpu", None).unwrap();
    let part = tilec_passes::tile_warp_specialize::partition(&func).unwrap();
    let loops: Vec<&tilec_core::tir::Op> =
        part.producer.iter().filter(|o| matches!(o.kind, tilec_core::tir::OpKind::For { .. })).collect();
    let [tile_loop] = loops[..] else { panic!("the producer has {} top-level loops", loops.len()) };
    let tilec_core::tir::OpKind::For { body, .. } = &tile_loop.kind else { unreachable!() };
    assert!(
        body.iter().any(|o| matches!(o.kind, tilec_core::tir::OpKind::For { .. })),
        "no K loop in the producer's tile loop"
    );
    assert_eq!(part.copies, 6, "the prologue's four fills (two iterations of A and B) and the two refills");
}

/// An `occupancy` hint the target's SM cannot hold is refused at compile time (E0025) with the
/// arithmetic and the shared buffers: FMHA at D = 128 on sm_121a asked for two blocks of
/// 96 KB on GB10's 100 KB per SM before the library gave it one.
#[test]
fn an_occupancy_the_sm_cannot_hold_is_refused() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/fmha.tile");
    let src = tilec::Source::new("fmha.tile", std::fs::read_to_string(p).unwrap());
    let mut o = tilec::CompileOptions { arch: "sm_121a".into(), ..Default::default() };
    o.consts.insert("OCCUPANCY".into(), tilec::ConstArg::Int(2));
    let e = tilec::compile(&src, &o).expect_err("two 96 KB blocks on GB10").render();
    assert!(e.contains("E0025") && e.contains("1 block(s) fit") && e.contains("buffer ["), "{e}");
    // The library's own choice compiles: one block at D = 128, two at D = 64.
    o.consts.remove("OCCUPANCY");
    tilec::compile(&src, &o).unwrap();
    o.consts.insert("TILE_D".into(), tilec::ConstArg::Int(64));
    tilec::compile(&src, &o).unwrap();
}

/// A reduction over an axis of one element is its operand (no `Reduce`, whose sliced layout
/// met the full-shape layout of the splat beside it and made IR that MLIR refused), and a
/// one-element tile's `item()` is a scalar every thread holds: both compile for every target.
#[test]
fn an_extent_one_reduction_and_an_item_compile_for_every_target() {
    let text = r#"
kernel r(x: tensor<f32, [M, N]>, y: tensor<f32, [N]>, count: tensor<i32, [N]>)
    grid = (4,)
{
    let t = load(x, index=(0, 0), shape=(1, 16));
    let m = max(t, axis=0, keepdims=true);
    let s = where(m == -inf, 0.0, m);
    let done = atomic_add(count, index=(0,), tile=full((1,), 1, i32), sem="acq_rel");
    if done.item() == num_blocks(0) - 1 {
        store(y, index=(0,), tile=s.reshape((16,)));
    }
}
"#;
    let src = tilec::Source::new("r.tile", text.to_string());
    for arch in ["sm_90a", "sm_103a", "sm_121a"] {
        let o = tilec::CompileOptions { arch: arch.into(), ..Default::default() };
        let c = tilec::compile(&src, &o).unwrap_or_else(|e| panic!("{arch}: {}", e.render()));
        // The release orders the block's earlier accesses: a barrier before the atomic.
        let ptx = c.ptx();
        let at = ptx.find("atom.acq_rel.gpu").unwrap_or_else(|| panic!("{arch}: no atomic"));
        assert!(ptx[..at].contains("bar.sync"), "{arch}: no barrier before the release");
    }
}

/// A loop carrying scalars (a flag, a count) in a kernel with a tcgen05 product: the Tensor
/// Memory plan asked every loop-carried value how many 256-column blocks its product takes,
/// scalars included, and indexed an empty shape (a panic on `mla_decode`'s combine written as
/// one loop over its two levels). Compiles for every target.
#[test]
fn a_loop_carrying_scalars_beside_a_tcgen05_product_compiles() {
    let text = r#"
kernel m(a: tensor<f16, [M, K]>, b: tensor<f16, [K, N]>, c: tensor<f32, [M, N]>)
    grid = (1,)
    hints { num_warps = 4 }
{
    let acc = zeros((128, 128), f32);
    for k in range(0, cdiv(K, 64)) {
        acc = mma(load(a, index=(0, k), shape=(128, 64)), load(b, index=(k, 0), shape=(64, 128)), acc);
    }
    let go = bid(0) == 0;
    let n = 0;
    for i in range(0, 2) {
        if go {
            acc = acc * 2.0;
            n = n + 1;
            go = n < 1;
        }
    }
    store(c, index=(0, 0), tile=acc);
}
"#;
    let src = tilec::Source::new("m.tile", text.to_string());
    for arch in ["sm_90a", "sm_103a", "sm_121a"] {
        let o = tilec::CompileOptions { arch: arch.into(), ..Default::default() };
        let c = tilec::compile(&src, &o).unwrap_or_else(|e| panic!("{arch}: {}", e.render()));
        if arch == "sm_103a" {
            assert!(c.ptx().contains("tcgen05.mma"), "no tcgen05 product");
        }
    }
}

/// `--emulate sm_121a` on sm_90a: the kernel goes through exactly sm_121a's pipeline — its
/// `tile` and `tilegpu` stages are those of a compile for sm_121a (the `by_target` values,
/// layouts, `mma.sync`, rings) — and the code is for sm_90a (`.target sm_90a`, the
/// signature's target), padded so that an H100 SM holds no more blocks than a GB10 one.
#[test]
fn emulating_sm_121a_on_sm_90a_compiles_spark_s_choices_for_the_h100() {
    use tilec::Stage;
    for (file, kernel) in [
        ("matmul", "matmul"),
        ("bmm", "bmm"),
        ("fmha", "fmha"),
        ("mla", "mla"),
        ("attention_decode_grouped", "attention_decode_grouped"),
    ] {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("kernels/{file}.tile"));
        let src = tilec::Source::new(file, std::fs::read_to_string(p).unwrap());
        let spark = tilec::CompileOptions { arch: "sm_121a".into(), kernel: Some(kernel.into()), ..Default::default() };
        let emulated =
            tilec::CompileOptions { arch: "sm_90a".into(), emulate: Some("sm_121a".into()), ..spark.clone() };
        let (s, e) = (tilec::compile(&src, &spark).unwrap(), tilec::compile(&src, &emulated).unwrap());
        for stage in [Stage::Tile, Stage::Tilegpu] {
            assert_eq!(s.stage(stage), e.stage(stage), "{kernel}: the {} stage differs", stage.name());
        }
        assert!(e.ptx().contains(".target sm_90a") && !e.ptx().contains("wgmma"), "{kernel}");
        assert_eq!(e.signature.target, "sm_90a");
        let (spark_arch, h100) =
            (tilec_core::target::by_name("sm_121a").unwrap(), tilec_core::target::by_name("sm_90a").unwrap());
        let (threads, shared) = (e.signature.block_threads, e.signature.shared_bytes);
        let want = tilec_core::target::resident_blocks(spark_arch, threads, shared).max(1);
        let on_h100 = tilec_core::target::resident_blocks(h100, threads, shared + e.signature.shared_pad);
        assert!(on_h100 <= want, "{kernel}: {on_h100} blocks per H100 SM against {want} on GB10");
        assert!(
            e.report.iter().any(|l| l.starts_with("emulation:") && l.contains("Fp4Mma")),
            "{kernel}: {:?}",
            e.report
        );
    }
}

/// sm_103a's GEMM on the tcgen05 family: Tensor Memory allocated once (by warp 0, the permit
/// given up) and freed once; the K loop issues one `tcgen05.mma` per K step of 16, moves
/// nothing between TMEM and registers — the accumulator is stored once before the loop (its
/// zeros) and loaded once after it — and never waits for its products: each ring's stage is
/// released by a `tcgen05.commit` onto its empty mbarrier (one a ring an iteration), and the
/// only wait for the products is the commit after the loop that every thread waits on.
/// `--no-tcgen05` keeps `mma.sync`.
#[test]
fn a_tcgen05_gemm_keeps_its_accumulator_in_tensor_memory() {
    // Not persistent (sm_103a's default is: `a_persistent_tcgen05_gemm_alternates_two_accumulators`).
    let one = |o: tilec::CompileOptions| tilec::CompileOptions { consts: not_persistent(), ..o };
    let ptx = ptx_with("matmul", "matmul", one(tilec::CompileOptions { arch: "sm_103a".into(), ..Default::default() }));
    let n = |s: &str| ptx.matches(s).count();
    assert_eq!(n("tcgen05.alloc.cta_group::1"), 1);
    assert_eq!(n("tcgen05.relinquish_alloc_permit"), 1);
    assert_eq!(n("tcgen05.dealloc.cta_group::1"), 1);
    // 128 x 256 x 64 tiles: 4 K steps, D kept in TMEM (enable-input-d set on every step).
    assert_eq!(n("tcgen05.mma.cta_group::1.kind::f16"), 4);
    assert_eq!(n("tcgen05.commit.cta_group::1.mbarrier::arrive::one"), 2 + 1);
    assert!(!ptx.contains("mma.sync") && !ptx.contains("ldmatrix"));
    let body = loop_with(&ptx, "tcgen05.mma");
    let count = |s: &str| body.iter().filter(|l| l.contains(s)).count();
    assert_eq!(count("tcgen05.ld") + count("tcgen05.st"), 0, "TMEM moved to registers inside the K loop");
    assert_eq!(count("tcgen05.commit"), 2, "one release a ring");
    assert_eq!(count("mbarrier.try_wait.shared::cta.b64"), 0, "the K loop waits for its products");
    assert_eq!(count("bar.sync"), 0, "a block-wide barrier in the K loop");
    assert_eq!(n("mbarrier.try_wait.shared::cta.b64"), 1, "one wait for the products, after the loop");
    // 128 columns a thread over 8 warps, moved 32 at a time: 4 stores and 4 loads.
    assert_eq!(n("tcgen05.st.sync.aligned.32x32b.x32"), 4);
    assert_eq!(n("tcgen05.ld.sync.aligned.32x32b.x32"), 4);
    let o = tilec::CompileOptions { arch: "sm_103a".into(), no_tcgen05: true, ..Default::default() };
    let ptx = ptx_with("matmul", "matmul", one(o));
    assert!(ptx.contains("mma.sync") && !ptx.contains("tcgen05"));
}

/// `PERSISTENT = false` and `WARP_SPECIALIZE = false`: matmul as one block a tile.
fn not_persistent() -> std::collections::BTreeMap<String, tilec::ConstArg> {
    ["PERSISTENT", "WARP_SPECIALIZE"].iter().map(|k| (k.to_string(), tilec::ConstArg::Bool(false))).collect()
}

/// A persistent GEMM on sm_103a (`tile-epilogue-overlap`): 512 columns of Tensor Memory, two
/// 256-column accumulators the tiles alternate between (a slot carried by the tile loop,
/// flipped by `xor 1`), three mbarriers of 257 arrivals (the kernel's and one a region); each
/// tile's products are committed to their region's mbarrier after the K loop — no wait there —
/// and the epilogue of the previous tile waits for the other region's mbarrier and loads it
/// (in the loop; the last tile's after it: twice four `tcgen05.ld`), never inside the K loop.
/// With and without the producer warpgroup; ptxas takes both without spills.
#[test]
fn a_persistent_tcgen05_gemm_alternates_two_accumulators() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/matmul.tile");
    let src = tilec::Source::new("matmul", std::fs::read_to_string(p).unwrap());
    // sm_103a's defaults (persistent, a producer warpgroup), and without the producer.
    for ws in [true, false] {
        let consts = if ws {
            Default::default()
        } else {
            [("WARP_SPECIALIZE".to_string(), tilec::ConstArg::Bool(false))].into()
        };
        let o = tilec::CompileOptions { arch: "sm_103a".into(), consts, ..Default::default() };
        let c = tilec::compile(&src, &o).unwrap();
        let ptx = c.ptx();
        let n = |s: &str| ptx.matches(s).count();
        assert_eq!(n("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"), 1);
        assert!(ptx.contains(", 512; tcgen05.relinquish_alloc_permit"), "ws {ws}: 512 columns");
        assert_eq!(n(", 257;"), 3, "ws {ws}: the kernel's mbarrier and one a region");
        // Two ring releases in the K loop, the tile's commit after it; none onto the kernel's.
        assert_eq!(n("tcgen05.commit.cta_group::1"), 3, "ws {ws}");
        assert_eq!(n("mbarrier.arrive.shared::cta.b64 st"), 2, "ws {ws}: the two epilogues' waits");
        assert_eq!(n("tcgen05.ld.sync.aligned.32x32b.x32"), 8, "ws {ws}");
        assert!(ptx.contains("xor.b32") && ptx.contains(", 1;"), "ws {ws}: the slot flips");
        // The K loop: the shortest span from a label to a branch back to it that issues.
        let lines: Vec<&str> = ptx.lines().collect();
        let mut spans = vec![];
        for (i, l) in lines.iter().enumerate() {
            let Some(label) = l.strip_suffix(':') else { continue };
            for j in i..lines.len() {
                let back = lines[j].contains("bra") && lines[j].trim_end().ends_with(&format!("{label};"));
                if back && lines[i..j].iter().any(|x| x.contains("tcgen05.mma")) {
                    spans.push(&lines[i..j]);
                }
            }
        }
        let body = spans.into_iter().min_by_key(|b| b.len()).expect("a K loop");
        let count = |s: &str| body.iter().filter(|l| l.contains(s)).count();
        assert_eq!(count("tcgen05.mma.cta_group::1"), 4, "ws {ws}: the K loop");
        assert_eq!(count("tcgen05.ld") + count("tcgen05.st"), 0, "ws {ws}: TMEM moved inside the K loop");
        assert_eq!(count("mbarrier.try_wait.shared::cta.b64"), 0, "ws {ws}: the K loop waits for its products");
        let r = tilec_backend::ptxas(c.ptx(), c.arch).unwrap();
        assert_eq!((r.spill_stores, r.spill_loads, r.stack_bytes), (0, 0, 0), "ws {ws}");
    }
    // Not persistent: one accumulator, the wait after the K loop.
    let o = tilec::CompileOptions { arch: "sm_103a".into(), consts: not_persistent(), ..Default::default() };
    let ptx = tilec::compile(&src, &o).unwrap().ptx().to_string();
    assert!(ptx.contains(", 256; tcgen05.relinquish_alloc_permit") && ptx.matches(", 257;").count() == 1);
}

/// fp8 attention writes P to shared memory between its two products; each warpgroup writes
/// and reads only its own 64-row blocks, so the buffer is published by a 128-thread barrier
/// of the warpgroup, and the consumers' ping-pong (named turn barriers) still applies. A
/// buffer read across warpgroups (the f16 GEMM's operands) keeps the consumers' barrier.
#[test]
fn a_warpgroup_local_buffer_takes_a_warpgroup_barrier_and_keeps_the_ping_pong() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/fmha_fp8.tile");
    let o = tilec::CompileOptions { arch: "sm_90a".into(), ..Default::default() };
    let c = tilec::compile(&tilec::Source::new("fmha_fp8", std::fs::read_to_string(p).unwrap()), &o).unwrap();
    assert!(c.report.iter().any(|l| l.contains("tile-warp-specialize: ping-pong")), "{:#?}", c.report);
    assert!(c.report.iter().any(|l| l.contains("registers (a warpgroup barrier)")), "{:#?}", c.report);
    let ptx = c.ptx();
    assert!(ptx.lines().any(|l| l.contains("bar.sync") && l.trim_end().ends_with(", 128;")), "no warpgroup barrier");
}

/// The library's kernel `name` (of `kernels/{name}.tile`) compiled for sm_103a.
fn on_sm_103a(name: &str) -> tilec::Compiled {
    compiled_with(name, name, tilec::CompileOptions { arch: "sm_103a".into(), ..Default::default() })
}

/// `kernels/fmha.tile` for sm_103a (with the constants given), and its report.
fn fmha_on_tcgen05(consts: &[(&str, i64)]) -> (tilec::Compiled, String) {
    let mut o = tilec::CompileOptions { arch: "sm_103a".into(), ..Default::default() };
    for &(name, v) in consts {
        o.consts.insert(name.into(), tilec::ConstArg::Int(v));
    }
    let c = compiled_with("fmha", "fmha", o);
    let report = c.report.join("\n");
    (c, report)
}

/// A tcgen05 kernel's products: (instructions, those reading A from TMEM, products left in
/// flight, mbarriers of 8 warps and a commit).
fn products_in_flight(ptx: &str, report: &str) -> (usize, usize, usize, usize) {
    let products: Vec<&str> = ptx.lines().filter(|l| l.contains("tcgen05.mma.cta_group::1.kind::f16")).collect();
    let from_tmem = products.iter().filter(|l| l.contains("], [")).count();
    let inits = ptx.lines().filter(|l| l.contains("mbarrier.init.shared::cta.b64") && l.ends_with(", 257;")).count();
    (products.len(), from_tmem, report.matches("left in flight until its first read").count(), inits)
}

/// FlashAttention-4's P on sm_103a: the softmax's f16 probabilities, in registers one row a
/// thread as `tcgen05.ld` brought the scores out, go back into Tensor Memory with
/// `tcgen05.st` (two elements a 32-bit column) and the second product reads A from there —
/// `tcgen05.mma … [d], [a], b-desc` — with no shared buffer for P; the first product still
/// reads Q through a descriptor. Both products stay in flight (`OVERLAP`, FlashAttention-4's
/// order), each committed to an mbarrier of its own. One 128-row tile computing a key tile's
/// scores in its own iteration here; two query tiles and the default's one 256-row tile, the
/// scores a key tile ahead, in the tests after it.
#[test]
fn tcgen05_attention_reads_p_from_tensor_memory() {
    let (c, report) = fmha_on_tcgen05(&[("Q_TILES", 1), ("TILE_M", 128), ("AHEAD", 0)]);
    let ptx = c.ptx();
    // Q·Kᵀ: 8 K steps of 16 over D = 128; P·V: 4 K steps over 64 keys from
    // TMEM, in the loop and once after it (`OVERLAP`: the last tile's P·V follows the loop).
    // FlashAttention-4's overlap: the three products left in flight until their first read,
    // each committed to an mbarrier of its own (the kernel's and three more, 8 warps + the
    // commit arriving on each), the in-loop two in TMEM regions of their own.
    assert_eq!(products_in_flight(ptx, &report), (16, 8, 3, 4));
    assert!(report.contains("D at TMEM column 0, zero (D not read); committed to its own mbarrier"), "{report}");
    // O and P are carried in Tensor Memory (`TmemPlan::acc_carried`, `a_carried`): P·V
    // accumulates in place, its wait leaves O there, and the product after the loop
    // accumulates onto the same region.
    let in_place = "D at TMEM column 64, in place (carried in TMEM by the loop, rescaled there); committed to its own mbarrier and left in flight: its mma_wait waits for that mbarrier and leaves it in TMEM";
    assert!(report.contains(in_place), "{report}");
    assert_eq!(report.matches("D at TMEM column 64, in place").count(), 2, "{report}");
    assert_eq!(report.matches("carried there by the loop: stored by tcgen05.st 32x32b where it is yielded").count(), 2);
    // 64 keys over two warp columns: 32 f16 a thread, 16 packed columns, one store — after the
    // iteration's last product, where the loop yields P.
    let body = loop_with(ptx, "tcgen05.mma");
    assert_eq!(body.iter().filter(|l| l.contains("tcgen05.st.sync.aligned.32x32b.x16.b32")).count(), 1);
    carried_accumulator_checks(&c, TmemTraffic { p_stores: 1, p_cols: 16, s_loads: 1, o_cols: 32 });
    assert!(report.contains("A from TMEM column"), "{report}");
    assert!(!report.contains("filled by registers"), "P still goes through a shared buffer:\n{report}");
}

/// What a thread moves through Tensor Memory in an iteration of FlashAttention-4's loop: P's
/// stores (`p_cols` packed columns each), the scores' loads, and O's loads and stores in the
/// rescale (`o_cols` columns each; the scores' loads are as wide).
struct TmemTraffic {
    p_stores: usize,
    p_cols: usize,
    s_loads: usize,
    o_cols: usize,
}

/// The loop body of FlashAttention-4's order with O and P carried in Tensor Memory, in
/// tilec's lowering (the `nvgpu` stage, in program order): one TMEM sync (the
/// `tcgen05.fence::after_thread_sync` after a block barrier) before the iteration's products,
/// which are then issued back to back; each P stored after the last product, where the loop
/// yields it (the last stores of their width where P's columns are as many as O's); O out of
/// TMEM only in the rescale, which a warp whose factors are all 1.0 skips (`vote.any` and a
/// branch before it), and back with as many stores.
fn carried_accumulator_checks(c: &tilec::Compiled, t: TmemTraffic) {
    let TmemTraffic { p_stores: n_p, p_cols, s_loads, o_cols } = t;
    let text = &c.stages[&tilec::Stage::Nvgpu];
    let lines: Vec<&str> = text.lines().collect();
    let (start, end) = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| {
            let label = l.trim_start().strip_prefix('^')?.split('(').next()?;
            let back = format!("llvm.br ^{label}(");
            let j = (i + 1..lines.len()).find(|&j| lines[j].contains(&back))?;
            lines[i..j].iter().any(|l| l.contains("tcgen05.mma")).then_some((i, j))
        })
        .expect("no loop with a product in the nvgpu stage");
    let body = &lines[start..=end];
    let first = body.iter().position(|l| l.contains("tcgen05.mma.cta_group")).unwrap();
    let last = body.iter().rposition(|l| l.contains("tcgen05.mma.cta_group")).unwrap();
    let sync_between = body[first..last].iter().any(|l| l.contains("tcgen05_fence<after>") && !l.contains("try_wait"));
    assert!(!sync_between, "a TMEM sync between the iteration's products");
    let at = |pat: String| -> Vec<usize> { (0..body.len()).filter(|&i| body[i].contains(&pat)).collect() };
    let mut p_stores = at(format!("tcgen05.st.sync.aligned.32x32b.x{p_cols}.b32"));
    let mut sts = at(format!("tcgen05.st.sync.aligned.32x32b.x{o_cols}.b32"));
    if p_cols == o_cols {
        p_stores = sts.split_off(sts.len().saturating_sub(n_p));
    }
    assert_eq!(p_stores.len(), n_p, "P's stores");
    assert!(p_stores.iter().all(|&i| i > last), "P stored before a product of its iteration");
    let lds = at(format!("tcgen05.ld.sync.aligned.32x32b.x{o_cols}.b32"));
    let votes = at("vote.any.sync".to_string());
    assert!(!sts.is_empty(), "O is not rescaled in Tensor Memory");
    // Each store's rescale: the vote before it, then a branch, then O's loads (the scores'
    // loads, of the same shape, come before the votes).
    let mut o_loads = 0;
    for &st in &sts {
        let vote = *votes.iter().filter(|&&v| v < st).max().expect("no vote before O's rescale");
        let loads: Vec<usize> = lds.iter().copied().filter(|&l| vote < l && l < st).collect();
        assert!(!loads.is_empty() && loads[0] > last, "O's rescale without its load, or before the products");
        assert!(
            body[vote..loads[0]].iter().any(|l| l.contains("cond_br")),
            "O's load not skipped by a warp whose factors are 1.0"
        );
        o_loads = o_loads.max(loads.len());
    }
    // Besides the rescales', only the scores' loads.
    assert_eq!(lds.len(), sts.len() + s_loads, "O loaded outside its rescale");
    assert!(o_loads > 0);
}

/// FlashAttention-4's two query tiles a block of 128 rows each (`Q_TILES = 2`, rows split
/// between warps `w` and `w + 4`), the scores a key tile ahead: key tile 0's S_A and S_B before the loop; per key tile P_A·V and P_B·V of the
/// previous tile and S_A, S_B of the next issued at the top, all four left in flight — the P·V
/// waited for where O is rescaled, the next scores at the end of the iteration
/// (`tile-mma-overlap`: read by the next one), so neither softmax waits for a product of its
/// own iteration — and the two P·V after the loop: eight products each with an mbarrier of its
/// own, their Tensor Memory regions placed by their issue-to-wait runs (the scores before the
/// loop at 0 and 64, then O_A at 0 and O_B at 128 carried across the loop and on to the
/// products after it, the next scores at 256 and 320, the two P at 384 and 416) in the 512 a
/// block has; every product on tcgen05, and one K ring and one V ring each read by both tiles'
/// products.
#[test]
fn tcgen05_attention_runs_two_query_tiles_in_flight() {
    let (c, report) = fmha_on_tcgen05(&[("Q_TILES", 2), ("TILE_M", 128)]);
    let ptx = c.ptx();
    assert!(!ptx.contains("mma.sync"), "an mma.sync left");
    // Four Q·Kᵀ of 8 K steps (two before the loop, two in it); four P·V of 4 (two in the loop,
    // two after it); the kernel's mbarrier and eight more.
    assert_eq!(products_in_flight(ptx, &report), (48, 16, 6, 9));
    assert_eq!(report.matches("left in flight until the end of its loop's iteration").count(), 2, "{report}");
    assert!(report.contains("tmem: 512 columns allocated"), "{report}");
    let cols: Vec<&str> =
        report.lines().filter_map(|l| l.split("D at TMEM column ").nth(1)?.split(',').next()).collect();
    assert_eq!(cols, ["0", "64", "0", "128", "256", "320", "0", "128"], "{report}");
    let a_cols: Vec<&str> =
        report.lines().filter_map(|l| l.split("A from TMEM column ").nth(1)?.split(' ').next()).collect();
    assert_eq!(a_cols, ["384", "416", "384", "416"], "{report}");
    assert_eq!(report.matches("3 stages × 16384 B, TMA").count(), 1, "{report}");
    assert_eq!(report.matches("5 stages × 16384 B, TMA").count(), 1, "{report}");
    // Each P goes into Tensor Memory once a key tile, after the iteration's four products.
    let body = loop_with(ptx, "tcgen05.mma");
    assert_eq!(body.iter().filter(|l| l.contains("tcgen05.st.sync.aligned.32x32b.x16.b32")).count(), 2);
    // D = 128 over two warp columns: 64 f32 columns a thread, two loads and stores of 32.
    carried_accumulator_checks(&c, TmemTraffic { p_stores: 2, p_cols: 16, s_loads: 2, o_cols: 32 });
    // Each row's maximum and sum meet their other half through shared memory: 8 block
    // barriers a key tile (the TMEM sync and the ring's release, and 6 for the statistics).
    assert_eq!(body.iter().filter(|l| l.contains("bar.sync")).count(), 8);
    assert!(body.iter().any(|l| l.contains("st.shared")));
}

/// sm_103a's default: one 256-row tile a block, FlashAttention-4's softmax warpgroups in one
/// instruction stream — warps 0-3 hold the first 128-row block, warps 4-7 the second, a
/// thread a whole row (`Mma::tcgen05`: the warp bits past the lane quarter walk the blocks
/// before they split the columns) — so no row maximum or sum leaves its thread: the loop's
/// only block barriers are its TMEM sync before the products and its ring's release (the two
/// query tiles' loop has eight). The scores go a key tile ahead (key tile 0's before the loop,
/// the next key tile's issued beside the previous P·V and waited for at the iteration's end);
/// four products, each two 128-row instructions a K step, with an mbarrier of its own.
#[test]
fn tcgen05_attention_gives_each_warpgroup_a_block_of_rows() {
    let (c, report) = fmha_on_tcgen05(&[]);
    assert!(report.contains("2 block(s) of 128 rows"), "{report}");
    assert_eq!(report.matches("a warpgroup a block for 2 blocks, a whole row a thread").count(), 4, "{report}");
    let ptx = c.ptx();
    // Q·Kᵀ before and in the loop (2 blocks x 8 K steps), P·V in and after it (2 x 4, A from
    // Tensor Memory); the kernel's mbarrier and four more.
    assert_eq!(products_in_flight(ptx, &report), (48, 16, 3, 5));
    assert_eq!(report.matches("left in flight until the end of its loop's iteration").count(), 1, "{report}");
    let body = loop_with(ptx, "tcgen05.mma");
    assert_eq!(body.iter().filter(|l| l.contains("bar.sync")).count(), 2, "a row's statistics crossed warps");
    assert!(!body.iter().any(|l| l.contains("st.shared")), "a row's statistics went through shared memory");
    // A thread's row: 64 keys (two loads of 32), 32 packed columns of P, 128 of O (four of 32).
    carried_accumulator_checks(&c, TmemTraffic { p_stores: 1, p_cols: 32, s_loads: 2, o_cols: 32 });
}

/// sm_103a's default at D = 64: two key tiles an iteration (`KEY_TILES`), so that the second
/// one's scores are read only after the next key tile's P·V and scores are issued — their
/// wait has two products issued after it (`pending=2`) — and only the last scores of an
/// iteration are waited for at its end. Six products in flight, each with its Tensor Memory
/// region and mbarrier (the two scores of an iteration, O, the two P: all 512 columns).
#[test]
fn tcgen05_attention_at_d64_takes_two_key_tiles_an_iteration() {
    let (c, report) = fmha_on_tcgen05(&[("TILE_D", 64)]);
    assert_eq!(report.matches("left in flight until the end of its loop's iteration").count(), 1, "{report}");
    assert!(report.contains("(mma_wait pending=2:"), "{report}");
    assert!(report.contains("tmem: 512 columns allocated"), "{report}");
    // Q·Kᵀ before and twice in the loop, P·V twice in and once after it: 2 blocks x 4 K steps.
    let (products, from_tmem, _, mbarriers) = products_in_flight(c.ptx(), &report);
    assert_eq!((products, from_tmem, mbarriers), (48, 24, 7));
    let body = loop_with(c.ptx(), "tcgen05.mma");
    assert_eq!(body.iter().filter(|l| l.contains("tcgen05.commit")).count(), 4);
    assert_no_spills(&c);
}

/// fp8 attention on sm_103a in FlashAttention-4's order: P, quantized to e4m3 one row a
/// thread, goes into Tensor Memory four elements a 32-bit column where the loop yields it, and
/// the P·V products (`kind::f8f6f4`, A from TMEM: CUTLASS's `SM100_MMA_F8F6F4_TS`) read it
/// there — no shared buffer for P, whose bytes were put together a byte at a time (PRMT, SHF,
/// LOP3: 472 instructions a warp a key tile, 349 now); the stores are held against the
/// instruction's packing by `a_operand_stores_follow_the_layout`.
#[test]
fn tcgen05_fp8_attention_reads_p_from_tensor_memory() {
    let c = on_sm_103a("fmha_fp8");
    let report = c.report.join("\n");
    assert_eq!(
        report
            .matches(
                "carried there by the loop: stored by tcgen05.st 32x32b where it is yielded, four elements a column"
            )
            .count(),
        2,
        "{report}"
    );
    assert_eq!(report.matches("left in flight until the end of its loop's iteration").count(), 1, "{report}");
    // Two blocks x 2 K steps of 32 keys, in the loop and after it.
    let from_tmem =
        c.ptx().lines().filter(|l| l.contains("tcgen05.mma.cta_group::1.kind::f8f6f4") && l.contains("], [")).count();
    assert_eq!(from_tmem, 8);
    // P's 64 keys a row: 16 words, one store of 16 columns a key tile.
    let body = loop_with(c.ptx(), "tcgen05.mma");
    assert_eq!(body.iter().filter(|l| l.contains("tcgen05.st.sync.aligned.32x32b.x16.b32")).count(), 1);
    assert_no_spills(&c);
}

/// A product whose only use is the accumulator of the product right after it accumulates
/// into that one's Tensor Memory region with no commit, wait, load or store between: MLA's
/// scores `mma(qr, kr, mma(q, k, 0))` — the nope part's 8 K steps then the rope part's 4
/// onto the same columns, one commit after both (they went out of TMEM and back before: one
/// `tcgen05.ld` and one `tcgen05.st` more a key tile in the SASS, and a block barrier). On
/// sm_103a MLA takes fmha's order (256 rows, the scores a key tile ahead): the chain before
/// the loop, key tile 0's, is the first 24 instructions (two 128-row blocks).
#[test]
fn tcgen05_chained_products_accumulate_in_tensor_memory() {
    let c = on_sm_103a("mla");
    let report = c.report.join("\n");
    assert_eq!(report.matches("not committed: the next product accumulates onto it in TMEM").count(), 2, "{report}");
    assert_eq!(report.matches("onto the product before it, in its region").count(), 2, "{report}");
    assert_eq!(report.matches("left in flight until the end of its loop's iteration").count(), 1, "{report}");
    let body: Vec<&str> = c.ptx().lines().collect();
    let issues: Vec<usize> = (0..body.len()).filter(|&i| body[i].contains("tcgen05.mma.cta_group")).collect();
    // Two chains of 2 x (8 + 4) K steps, two P·V of 2 x 2.
    assert_eq!(issues.len(), 56);
    let between = &body[issues[0]..=issues[23]];
    for what in ["tcgen05.commit", "tcgen05.ld", "tcgen05.st", "mbarrier.try_wait", "bar.sync"] {
        assert!(!between.iter().any(|l| l.contains(what)), "{what} between the chained products");
    }
    assert!(body[issues[23]..issues[24]].iter().any(|l| l.contains("tcgen05.commit")), "no commit after the chain");
    // Block 0 of both parts writes the same columns: the D operand is one register.
    let d = |l: &str| l.split('[').nth(1).and_then(|x| x.split(']').next()).map(str::to_string);
    assert_eq!(d(body[issues[0]]), d(body[issues[16]]));
    assert_no_spills(&c);
}

/// A decode's products of 16 query rows on sm_103a: one M = 64 `tcgen05.mma` each K step
/// (instruction descriptor M field 64 >> 4 = 4), the queries' buffer written four times over
/// (64 rows), the accumulators read out with `tcgen05.ld.16x32bx2` — 128 keys over 4 warps,
/// 16 columns a lane, half-split at 16 — and no `mma.sync` left.
#[test]
fn a_decodes_sixteen_rows_go_through_tcgen05() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/attention_decode_grouped.tile");
    let o = tilec::CompileOptions { arch: "sm_103a".into(), ..Default::default() };
    let src = tilec::Source::new("attention_decode_grouped", std::fs::read_to_string(p).unwrap());
    let c = tilec::compile(&src, &o).unwrap();
    let ptx = c.ptx();
    assert!(!ptx.contains("mma.sync"), "an mma.sync left");
    let products = ptx.lines().filter(|l| l.contains("tcgen05.mma.cta_group::1.kind::f16")).count();
    // Q·Kᵀ: 8 K steps over D = 128; P·V: 8 over 128 keys.
    assert_eq!(products, 16);
    assert!(ptx.contains("tcgen05.ld.sync.aligned.16x32bx2.x16.b32"), "no 16x32bx2 load");
    assert!(ptx.contains("], 16;"), "the half-split offset of 16 columns");
    let report = c.report.join("\n");
    assert!(report.contains("m64n128k16"), "{report}");
    assert!(report.contains("buffer [64, 128] f16: 16384 B"), "{report}");
    // A skinny GEMM's 16-row A (matmul_splitk's form before it was computed transposed)
    // keeps its TMA ring; each stage's rows are copied four times into a ring of replicas (as
    // many stages) that the product reads.
    let skinny = "kernel skinny(A: tensor<f16, [M, K]>, B: tensor<f16, [K, N]>, C: tensor<f32, [M, N]>)
        grid = (cdiv(M, 16), cdiv(N, 64)) hints { num_warps = 4 }
    {
        let acc = zeros((16, 64), f32);
        for k in range(0, cdiv(K, 64)) {
            acc = mma(load(A, index=(bid(0), k), shape=(16, 64)), load(B, index=(k, bid(1)), shape=(64, 64)), acc);
        }
        atomic_add(C, index=(bid(0), bid(1)), tile=acc);
    }";
    let c = tilec::compile(&tilec::Source::new("skinny", skinny), &o).unwrap();
    let report = c.report.join("\n");
    assert!(report.contains("load of A: no hint, target default → distance 2, 4 stages × 2048 B, TMA"), "{report}");
    assert!(report.contains("buffer [64, 64] f16 x 4 stage(s): 32768 B"), "{report}");
    assert!(!c.ptx().contains("mma.sync"));
}

/// A GEMM's epilogue on a target with TMA: the tile is staged in a 128-byte-swizzled buffer
/// and leaves in one bulk tensor store per 64-column atom (128×256 f16: four), issued by one
/// thread that then waits only for the buffer's reads; no register store to global memory is
/// left, and the tensor map of C (box 64×128, swizzle 128) follows the copies' maps in the
/// signature. A reshape that only adds a leading unit dim (bmm's) is not lowered before it.
/// `--no-tma-store` keeps the register stores.
#[test]
fn an_epilogue_leaves_through_tma_bulk_stores() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/matmul.tile");
    let o = tilec::CompileOptions { arch: "sm_90a".into(), kernel: Some("matmul".into()), ..Default::default() };
    let c = tilec::compile(&tilec::Source::new("matmul", std::fs::read_to_string(&p).unwrap()), &o).unwrap();
    let ptx = c.ptx();
    assert_eq!(ptx.matches("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group").count(), 4);
    assert_eq!(ptx.matches("cp.async.bulk.wait_group.read 0").count(), 1);
    assert!(!ptx.contains("st.global"), "a register store left in the epilogue");
    let c_map = c.signature.tma.iter().find(|t| t.param == 2).expect("C's tensor map");
    assert_eq!((c_map.box_dims.as_slice(), c_map.swizzle), (&[64u32, 128][..], 128));
    let direct = ptx_with("matmul", "matmul", tilec::CompileOptions { no_tma_store: true, ..o.clone() });
    assert!(direct.contains("st.global") && !direct.contains(".global.shared::cta"));
    // bmm: `acc.astype(T).reshape((1, M, N))` goes straight from the accumulator's registers.
    let bmm = |no_tma_store| {
        let o = tilec::CompileOptions { arch: "sm_90a".into(), no_tma_store, ..Default::default() };
        ptx_with("bmm", "bmm", o)
    };
    let (tma, direct) = (bmm(false), bmm(true));
    assert!(tma.contains("cp.async.bulk.tensor.3d.global.shared::cta"));
    // C += A·B reads C: its store stays a register store (a bulk store's writes would be
    // the async proxy's, complete only later).
    let src = "kernel gemm_acc(A: tensor<f16, [M, K]>, B: tensor<f16, [K, N]>, C: tensor<f16, [M, N]>)
    grid = (cdiv(A.shape[0], 128), cdiv(B.shape[1], 128))
    hints { num_warps = 8 }
{
    let acc = load(C, index=(bid(0), bid(1)), shape=(128, 128)).astype(f32);
    for k in range(0, cdiv(A.shape[1], 64)) {
        acc = mma(load(A, index=(bid(0), k), shape=(128, 64)), load(B, index=(k, bid(1)), shape=(64, 128)), acc);
    }
    store(C, index=(bid(0), bid(1)), tile=acc.astype(f16));
}";
    let o = tilec::CompileOptions { kernel: None, ..o };
    let c = tilec::compile(&tilec::Source::new("gemm_acc", src.to_string()), &o).unwrap();
    assert!(c.ptx().contains("st.global") && !c.ptx().contains(".global.shared::cta"));
    // The exchange would read the tile back from shared memory; the staging only writes it.
    assert!(direct.contains("ld.shared"));
    assert!(!tma.contains("ld.shared"), "the reshape's exchange through shared memory is still there");
}

/// `tile-to-llvm{sort-loops=true}`: `topk_partial`'s network (8 of 2048) loops over the whole
/// sort's 66 stages (one barrier in the loop) instead of writing out the top-k's 38 (38
/// barriers, the default; before the top-k network, the sort's 66 written out); both
/// assemble. (The loops ran 11 % slower on the H100 than the sort written out, hence not the
/// default: bench/results/2026-11-27-h100-session18/sort-loops/.)
#[test]
fn sort_loops_loop_over_the_network_stages() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/topk.tile");
    let src = tilec::Source::new("topk", std::fs::read_to_string(p).unwrap());
    let o = tilec::CompileOptions { arch: "sm_90a".into(), kernel: Some("topk_partial".into()), ..Default::default() };
    let written = tilec::compile(&src, &o).unwrap();
    let looped = tilec::CompileOptions { pass_options: vec!["tile-to-llvm{sort-loops=true}".into()], ..o };
    let looped = tilec::compile(&src, &looped).unwrap();
    let bars = |ptx: &str| ptx.lines().filter(|l| l.trim_start().starts_with("bar.sync")).count();
    // The written-out stages and the barrier after the pairs are stored; the loops' body
    // holds one stage's.
    assert_eq!(bars(written.ptx()), 39);
    assert_eq!(bars(looped.ptx()), 2);
    let lines = |ptx: &str| ptx.lines().count();
    // (Since the u64 codes, a compare-exchange is 7 instructions: 324 lines against 919.)
    assert!(lines(looped.ptx()) * 2 < lines(written.ptx()), "{} against {}", lines(looped.ptx()), lines(written.ptx()));
    for c in [&written, &looped] {
        assert_no_spills(c);
    }
}

/// `tile-to-llvm{first-offset-chunks=16}`: outside loops, mla_decode's loads and stores of 16
/// or more chunks a thread take each chunk's address from the thread's first offset; 0, the
/// default, writes each address out (the same PTX as the default). Not the default: 0.4–1 %
/// slower on an H200 for 11 % less compile (bench/results/2026-11-29-session31/first-offset-stores/).
/// Since an access writes each offset's term once (session 39) the default has no more 64-bit
/// multiplications in the `nvgpu` stage than the option (442 each on sm_90a; 715 against 607
/// before), so only the PTX tells them apart.
#[test]
fn first_offset_chunks_address_large_accesses_from_the_first_offset() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/mla_decode.tile");
    let src = tilec::Source::new("mla_decode", std::fs::read_to_string(p).unwrap());
    let o = tilec::CompileOptions { arch: "sm_90a".into(), ..Default::default() };
    let with = |n: u32| tilec::CompileOptions {
        pass_options: vec![format!("tile-to-llvm{{first-offset-chunks={n}}}")],
        ..o.clone()
    };
    let (default, zero, first) = (
        tilec::compile(&src, &o).unwrap(),
        tilec::compile(&src, &with(0)).unwrap(),
        tilec::compile(&src, &with(16)).unwrap(),
    );
    assert_eq!(default.ptx(), zero.ptx());
    let muls = |c: &tilec::Compiled| c.stage(tilec::Stage::Nvgpu).matches("llvm.mul").count();
    assert!(muls(&first) <= muls(&default), "{} against {}", muls(&first), muls(&default));
    assert_ne!(first.ptx(), default.ptx());
    assert_no_spills(&first);
}

/// `tile-to-llvm{vector-lanes=N}`: a thread's chain of elementwise ops is written on vectors
/// of N registers (default 4), a group at a time. gelu's tanh chain: the `nvgpu` stage holds
/// `vector<4xf32>` ops and is under half the length of the register-by-register one (0), and
/// ptxas gives it no more registers a thread on sm_90a (40 against 48: a group's temporaries
/// die before the next group's are made). On sm_121a the f32 vectors reach code generation as
/// scalar ops (the backend's scalarizer): no `.f32x2`, which ptxas would split again there.
/// FMHA's softmax (in the loop with its products) stays register by register.
#[test]
fn vector_lanes_write_elementwise_chains_a_group_at_a_time() {
    let compile = |kernel: &str, arch: &str, lanes: Option<u32>| {
        let pass_options = lanes.map(|n| format!("tile-to-llvm{{vector-lanes={n}}}")).into_iter().collect();
        compiled_with(kernel, kernel, tilec::CompileOptions { arch: arch.into(), pass_options, ..Default::default() })
    };
    let (vector, scalar) = (compile("gelu", "sm_90a", None), compile("gelu", "sm_90a", Some(0)));
    let (v, s) = (vector.stage(tilec::Stage::Nvgpu), scalar.stage(tilec::Stage::Nvgpu));
    assert!(v.contains(": vector<4xf32>") && !s.contains(": vector<4xf32>"));
    assert!(2 * v.lines().count() < s.lines().count(), "{} against {} lines", v.lines().count(), s.lines().count());
    assert_eq!(compile("gelu", "sm_90a", Some(1)).ptx(), scalar.ptx(), "1 is register by register too");
    let regs =
        |c: &tilec::Compiled| tilec_backend::ptxas(c.ptx(), c.arch).unwrap_or_else(|d| panic!("{d:?}")).registers;
    assert!(regs(&vector) <= regs(&scalar), "{} registers against {}", regs(&vector), regs(&scalar));
    assert_no_spills(&vector);
    let spark = compile("gelu", "sm_121a", None);
    assert!(spark.stage(tilec::Stage::Nvgpu).contains(": vector<4xf32>"));
    assert!(!spark.ptx().contains("f32x2"), "sm_121a keeps scalar f32");
    let fmha = compile("fmha", "sm_90a", None);
    assert!(!fmha.stage(tilec::Stage::Nvgpu).contains("xf32>"), "FMHA's loop stays register by register");
}

/// Integer and predicate chains are vectors of registers too: quant_fp4's nibbles (float
/// compares and selects into a code, its conversion to an integer, the sign's product and
/// `or`) are `vector<4 x i32>` ops, `llvm.fptosi.sat` included, and NVPTX splits them into
/// the instructions the registers' ops give.
#[test]
fn vector_lanes_take_integer_chains_too() {
    let compile = |arch: &str, lanes: u32| {
        let pass_options = vec![format!("tile-to-llvm{{vector-lanes={lanes}}}")];
        compiled_with(
            "quant_mx",
            "quant_fp4",
            tilec::CompileOptions { arch: arch.into(), pass_options, ..Default::default() },
        )
    };
    // The PTX's instructions, as a sorted list of opcodes (the order may differ).
    let opcodes = |c: &tilec::Compiled| {
        let mut ops: Vec<String> = c
            .ptx()
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with(|ch: char| ch.is_ascii_lowercase()) && !l.starts_with("mov"))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect();
        ops.sort();
        ops
    };
    for arch in ["sm_90a", "sm_121a"] {
        let (vector, scalar) = (compile(arch, 4), compile(arch, 0));
        let (v, s) = (vector.stage(tilec::Stage::Nvgpu), scalar.stage(tilec::Stage::Nvgpu));
        assert!(v.contains(": vector<4xi32>") && !s.contains(": vector<4xi32>"), "{arch}");
        assert!(v.contains("llvm.fptosi.sat.v4i32.v4f32"), "{arch}: the conversion on vectors");
        assert!(v.lines().count() < s.lines().count(), "{arch}");
        assert_eq!(opcodes(&vector), opcodes(&scalar), "{arch}: the same instructions");
        assert_no_spills(&vector);
    }
}

/// A block's scale broadcast along a group's four registers is one splat (not an edge of the
/// group), and a reshape that renames registers passes vectors on: quant_fp4's division of its
/// blocks by their scale, register by register while the broadcast counted as an edge, is on
/// `vector<4 x f32>`s, and the chain runs on from the blocks into the pairs' nibbles.
#[test]
fn vector_lanes_take_block_scales_and_renaming_reshapes() {
    for arch in ["sm_90a", "sm_121a"] {
        let c =
            compiled_with("quant_mx", "quant_fp4", tilec::CompileOptions { arch: arch.into(), ..Default::default() });
        let nvgpu = c.stage(tilec::Stage::Nvgpu);
        assert!(
            nvgpu.lines().any(|l| l.contains("llvm.fdiv") && l.contains(": vector<4xf32>")),
            "{arch}: the division by the block scale on vectors"
        );
        // Scalar divisions are the block maxima's (a register or two a thread), not the 32 elements'.
        let scalar = nvgpu.lines().filter(|l| l.contains("llvm.fdiv") && l.ends_with(": f32")).count();
        assert!(scalar < 8, "{arch}: {scalar} scalar divisions");
        assert_no_spills(&c);
    }
}

/// ptxas assembles the compile's PTX with nothing spilled to local memory.
fn assert_no_spills(c: &tilec::Compiled) {
    let r = tilec_backend::ptxas(c.ptx(), c.arch).unwrap_or_else(|d| panic!("{d:?}"));
    assert_eq!((r.spill_stores, r.spill_loads), (0, 0));
}

/// The TMA copies, tcgen05 products and commits are issued under `elect.sync` (made once at
/// the kernel's entry, where every lane is active) rather than under `tid == 0`: ptxas wraps a
/// uniform-datapath instruction under a per-thread compare in a loop over the active lanes
/// (ELECT, R2UR, BRA.U.ANY a product: 148 of sm_103a FMHA's 866 instructions a key tile).
#[test]
fn asynchronous_instructions_are_issued_by_an_elected_lane() {
    let (c, _) = fmha_on_tcgen05(&[]);
    let ptx = c.ptx();
    assert_eq!(ptx.matches("elect.sync").count(), 1, "one election, at the entry");
    let entry = ptx.find("elect.sync").unwrap();
    let first_product = ptx.find("tcgen05.mma").unwrap();
    assert!(entry < first_product);
    let gemm = ptx_for("matmul", "matmul", false, "sm_90a");
    assert_eq!(gemm.matches("elect.sync").count(), 1, "the GEMM's TMA copies too");
}

/// FlashAttention-4's conditional rescale: a row factor of the form
/// `exp2(m - where(c, m_new, m))` is exactly 1.0 wherever the select kept `m`, and the
/// accumulator's rescale by it is skipped for a warp whose factors all are (`vote.any`); a
/// factor from `maximum` (the tutorial's step 2) keeps the plain multiply.
#[test]
fn the_conditional_rescale_is_skipped_where_a_warps_factors_are_one() {
    for arch in ["sm_90a", "sm_103a", "sm_121a"] {
        let ptx = ptx_for("fmha", "fmha", false, arch);
        assert!(ptx.contains("vote.sync.any.pred"), "{arch}: fmha's threshold form takes the vote");
    }
    let tutorial = ptx_for("tutorial/fmha_step2_mma", "fmha_step2_mma", false, "sm_90a");
    assert!(!tutorial.contains("vote.sync.any"), "a factor from `maximum` is multiplied as before");
}

/// Blackwell's paired f32 arithmetic: on sm_103a the softmax's scale, sums and rescale are
/// `.f32x2` (FFMA2/FADD2/FMUL2 in the SASS); sm_121a (which ptxas would split back into
/// scalar instructions) and sm_90a keep scalar f32.
#[test]
fn paired_f32_arithmetic_is_sm_103a_s() {
    let (c, _) = fmha_on_tcgen05(&[]);
    let ptx = c.ptx();
    for op in ["fma.rn.f32x2", "add.f32x2"] {
        assert!(ptx.contains(op), "sm_103a: {op}");
    }
    for arch in ["sm_90a", "sm_121a"] {
        assert!(!ptx_for("fmha", "fmha", false, arch).contains("f32x2"), "{arch}");
    }
}

/// An index tile made by `arange` is made again in a conversion's target layout (no shared
/// memory round trip), and comparing it with a scalar compares one difference with
/// constants: FMHA's ragged-tile masks on sm_103a (two query tiles, 32 key columns a thread
/// each) compare against immediates and keep no column offsets live through the loop (9
/// such compares before, 72 now).
#[test]
fn index_tiles_compare_with_constants() {
    let (c, _) = fmha_on_tcgen05(&[]);
    let immediate = c
        .ptx()
        .lines()
        .filter(|l| l.trim_start().starts_with("setp.") && l.contains(".s32"))
        .filter(|l| {
            l.trim_end().trim_end_matches(';').rsplit(',').next().is_some_and(|x| x.trim().parse::<i64>().is_ok())
        })
        .count();
    assert!(immediate >= 64, "{immediate} compares with an immediate");
}

/// sm_103a's block-scaled GEMM loads its scale tiles in the layout `tcgen05.st` stores them
/// into Tensor Memory from (a thread its rows' factors of every K block, 16-byte loads),
/// instead of loading them in a layout of their own and exchanging them through shared
/// memory a byte at a time (two conversions before; 425 → 270 instructions a warp a K step).
#[test]
fn tcgen05_scale_tiles_are_loaded_where_tensor_memory_takes_them() {
    let c = on_sm_103a("matmul_mx");
    let gpu = c.stage(tilec::Stage::Tilegpu);
    assert!(!gpu.contains("tilegpu.convert_layout"), "a scale tile exchanged through shared memory");
    let loads = c.ptx().lines().filter(|l| l.contains("ld.global") && l.contains(".v4.b32")).count();
    assert!(loads >= 12, "{loads} 16-byte scale loads");
}
