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
