//! The compilation cache's key: the same request always hits, comments and spacing do not
//! count, and every input that decides the code does.

use std::path::PathBuf;
use tilec::{cache_key, CompileOptions, ConstArg, Source};

fn softmax() -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/softmax.tile")).unwrap()
}

fn key(text: &str, o: &CompileOptions) -> String {
    cache_key(&Source::new("k.tile", text.to_string()), o).expect("a key").digest()
}

#[test]
fn the_key_ignores_comments_and_spacing_and_sees_everything_else() {
    let text = softmax();
    let base = CompileOptions { arch: "sm_90a".into(), ..Default::default() };
    let k = key(&text, &base);
    assert_eq!(k, key(&text, &base), "the key is not stable");
    // The plain arch name resolves to the same target.
    assert_eq!(k, key(&text, &CompileOptions { arch: "sm_90".into(), ..base.clone() }));
    let respaced = format!("# header comment\n\n{}\n# trailing\n", text.replace("    ", "\t").replace(", ", " ,  "));
    assert_eq!(k, key(&respaced, &base), "comments or spacing changed the key");

    // Any change to the code misses.
    let renamed = text.replacen("let ", "let  _unused = 1;\n    let ", 1);
    assert_ne!(k, key(&renamed, &base), "a new statement kept the key");
    let changed: Vec<(&str, CompileOptions)> = vec![
        ("target", CompileOptions { arch: "sm_121a".into(), ..base.clone() }),
        ("kernel", CompileOptions { kernel: Some("softmax".into()), ..base.clone() }),
        (
            "consts",
            CompileOptions {
                consts: [("BLOCK_N".to_string(), ConstArg::Int(512))].into_iter().collect(),
                ..base.clone()
            },
        ),
        ("unaligned", CompileOptions { unaligned: ["x".to_string()].into_iter().collect(), ..base.clone() }),
        (
            "disabled passes",
            CompileOptions { disabled_passes: ["tile-swizzle".to_string()].into_iter().collect(), ..base.clone() },
        ),
        ("fast math", CompileOptions { fast_math: true, ..base.clone() }),
        ("fp fusion", CompileOptions { no_fp_fusion: true, ..base.clone() }),
        ("opt level", CompileOptions { opt_level: Some(1), ..base.clone() }),
    ];
    for (what, o) in changed {
        assert_ne!(k, key(&text, &o), "{what} did not change the key");
    }
    let fields = cache_key(&Source::new("k.tile", text), &base).unwrap().fields;
    for f in ["source", "kernel", "consts", "target", "unaligned", "pipeline", "tilec", "build", "llvm"] {
        assert!(fields.contains_key(f), "no `{f}` field");
    }
    assert!(fields["llvm"].starts_with("22."), "{}", fields["llvm"]);
    // Text that does not parse has no key (compiling it reports the error).
    assert!(cache_key(&Source::new("k.tile", "kernel (".to_string()), &base).is_none());
}

/// `tilec tune` files and the JIT looks up under `tune_key`: comments do not change it, shapes
/// of one bucket share it, and the fixed constants, the space and the target do change it.
#[test]
fn the_tune_key_is_shared_by_a_bucket_and_sees_what_decides_the_choice() {
    use std::collections::BTreeMap;
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/matmul.tile")).unwrap();
    let (sm90, _) = tilec_core::target::resolve("sm_90a").unwrap();
    let (sm121, _) = tilec_core::target::resolve("sm_121a").unwrap();
    let space = vec![("TILE_N".to_string(), vec!["128".to_string(), "256".to_string()])];
    let none = BTreeMap::new();
    let key =
        |text: &str, fixed: &BTreeMap<String, ConstArg>, space: &[(String, Vec<String>)], arch, shapes: &[Vec<i64>]| {
            tilec::cache::tune_key(&Source::new("m.tile", text.to_string()), "matmul", fixed, space, arch, shapes)
                .digest()
        };
    let shapes = [vec![4096, 4096], vec![4096, 4096], vec![4096, 4096]];
    let k = key(&text, &none, &space, sm90, &shapes);
    assert_eq!(k, key(&format!("# tuned\n{text}"), &none, &space, sm90, &shapes));
    assert_eq!(k, key(&text, &none, &space, sm90, &[vec![4000, 4096], vec![4096, 3000], vec![4096, 4096]]));
    assert_ne!(k, key(&text, &none, &space, sm90, &[vec![8192, 4096], vec![4096, 4096], vec![4096, 4096]]));
    assert_ne!(k, key(&text, &none, &space, sm121, &shapes));
    assert_ne!(k, key(&text, &none, &space[..0], sm90, &shapes));
    let fixed: BTreeMap<String, ConstArg> = [("TILE_K".to_string(), ConstArg::Int(32))].into_iter().collect();
    assert_ne!(k, key(&text, &fixed, &space, sm90, &shapes));
    // The space of the kernel's own tune block, minus what is fixed.
    let tune = vec![
        ("TILE_K".to_string(), vec![ConstArg::Int(32), ConstArg::Int(64)]),
        ("TILE_N".to_string(), vec![ConstArg::Int(128)]),
    ];
    assert_eq!(tilec::cache::tune_space(&tune, &fixed), vec![("TILE_N".to_string(), vec!["128".to_string()])]);
}
