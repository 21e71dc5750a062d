//! docs/language.md against the compiler: the builtins table names every builtin and its
//! "lowered today" column says "no" for exactly the lowering's list; every `tile` block of the
//! page compiles to PTX for every target, every `tile-body` block parses as statements; every
//! builtin the table calls lowered is used by a kernel that compiles (the library, whose every
//! kernel the stage snapshots compile, the ok goldens, compiled here, and the page's own).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tilec::{compile, CompileOptions, Source};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn page() -> String {
    std::fs::read_to_string(root().join("docs/language.md")).unwrap()
}

/// The page's fenced blocks: (info string, text).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut cur: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(info) = line.strip_prefix("```") {
            match cur.take() {
                Some(b) => out.push(b),
                None => cur = Some((info.trim().to_string(), String::new())),
            }
        } else if let Some((_, body)) = cur.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    assert!(cur.is_none(), "an unclosed code block");
    out
}

/// Rows of the builtins table: (names in the first cell, the lowered-today cell).
fn table(text: &str) -> Vec<(Vec<String>, String)> {
    let start = text.find("| builtin | meaning | lowered today |").expect("the builtins table");
    let mut rows = vec![];
    for line in text[start..].lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split(" | ").collect();
        let (first, last) = (cells[0].trim_start_matches("| "), cells[cells.len() - 1].trim_end_matches(" |"));
        let mut names = vec![];
        for code in first.split('`').skip(1).step_by(2) {
            let head = code.split('(').next().unwrap_or("");
            let name = head.rsplit('.').next().unwrap_or(head);
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                names.push(name.to_string());
            }
        }
        rows.push((names, last.to_string()));
    }
    rows
}

fn tile_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            tile_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "tile") {
            out.push(p);
        }
    }
}

fn uses(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().last().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        before && text[i + name.len()..].starts_with('(')
    })
}

#[test]
fn the_builtins_table_matches_the_frontend_and_the_lowering() {
    let text = page();
    let rows = table(&text);
    let listed: BTreeSet<String> = rows.iter().flat_map(|(n, _)| n.iter().cloned()).collect();
    // `range` is the iterable of `for`, documented with it.
    for b in tilec_frontend::builtin_names().into_iter().filter(|b| *b != "range") {
        assert!(listed.contains(b), "builtin `{b}` is missing from the table of docs/language.md");
    }
    for n in &listed {
        assert!(
            tilec_frontend::builtin_names().contains(&n.as_str()) || n == "astype",
            "the table lists `{n}`, which is not a builtin"
        );
    }
    let not_lowered: BTreeSet<String> =
        rows.iter().filter(|(_, l)| l.starts_with("no")).flat_map(|(n, _)| n.iter().cloned()).collect();
    let lowering: BTreeSet<String> = tilec_passes::tile_to_llvm::NOT_LOWERED.iter().map(|s| s.to_string()).collect();
    assert_eq!(not_lowered, lowering, "the table's \"no\" rows vs the lowering's NOT_LOWERED");
    for (names, l) in &rows {
        assert!(l.starts_with("yes") || l.starts_with("no") || l.contains("tensor cores"), "{names:?}: `{l}`");
    }
}

#[test]
fn every_example_of_the_page_compiles_and_every_lowered_builtin_is_compiled_somewhere() {
    let text = page();
    let mut compiled_sources: Vec<String> = vec![];
    let mut n = 0;
    for (info, body) in blocks(&text) {
        match info.as_str() {
            "tile" => {
                for t in tilec_core::target::names() {
                    let opts = CompileOptions { arch: t.to_string(), ..Default::default() };
                    if let Err(e) = compile(&Source::new("docs/language.md", body.clone()), &opts) {
                        panic!("a `tile` block of docs/language.md does not compile for {t}:\n{}\n{body}", e.render());
                    }
                }
                compiled_sources.push(body);
                n += 1;
            }
            "tile-body" => {
                let wrapped = format!("kernel k() {{\n{body}}}\n");
                if let Err(d) = tilec_frontend::parse(&wrapped) {
                    panic!("a `tile-body` block does not parse: {d:?}\n{body}");
                }
            }
            "text" | "" | "sh" | "console" => {}
            other => panic!("a code block of unknown kind `{other}`"),
        }
    }
    assert!(n >= 3, "{n} compiled examples");
    // The ok goldens compile to PTX, except where they use a builtin the lowering lacks.
    let mut files = vec![];
    tile_files(&root().join("tests/frontend/ok"), &mut files);
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        let opts = CompileOptions { arch: "sm_90a".into(), ..Default::default() };
        match compile(&Source::new(f.display().to_string(), src.clone()), &opts) {
            Ok(_) => compiled_sources.push(src),
            Err(e) => {
                let r = e.render();
                assert!(
                    tilec_passes::tile_to_llvm::NOT_LOWERED.iter().any(|b| uses(&src, b) && r.contains("E0900")),
                    "{} does not compile:\n{r}",
                    f.display()
                );
            }
        }
    }
    // The library: every kernel compiles for every target in `stages`.
    let mut lib = vec![];
    tile_files(&root().join("kernels"), &mut lib);
    compiled_sources.extend(lib.iter().map(|f| std::fs::read_to_string(f).unwrap()));
    for (names, l) in table(&text) {
        if !l.starts_with("yes") {
            continue;
        }
        for name in names.iter().filter(|n| *n != "astype") {
            assert!(
                compiled_sources.iter().any(|s| uses(s, name)),
                "`{name}` is documented as lowered, but no compiled kernel uses it"
            );
        }
    }
}

/// docs/passes.md against the compiler: a section for every pass of `tilec_passes::PASSES`
/// naming each of its options, and every `pipeline` block a pipeline that parses.
#[test]
fn the_passes_page_names_every_pass_and_option_and_its_pipelines_parse() {
    let text = std::fs::read_to_string(root().join("docs/passes.md")).unwrap();
    for p in tilec_passes::PASSES {
        let head = format!("### {}\n", p.name);
        let at = text.find(&head).unwrap_or_else(|| panic!("docs/passes.md has no section `{}`", head.trim()));
        let section = text[at + head.len()..].split("\n#").next().unwrap();
        for o in p.options {
            assert!(
                section.contains(&format!("`{}`", o.name)),
                "docs/passes.md: `{}` does not name its option `{}`",
                p.name,
                o.name
            );
        }
    }
    let mlir = tilec_ir::Mlir::new().unwrap();
    let pipelines: Vec<String> = blocks(&text).into_iter().filter(|(i, _)| i == "pipeline").map(|(_, b)| b).collect();
    assert!(pipelines.len() >= 2);
    for p in pipelines {
        tilec_passes::driver::parse_pipeline(&mlir, p.trim()).unwrap_or_else(|d| panic!("{p}: {}", d.message));
    }
    // The default pipeline shown is sm_90a's as the compiler makes it.
    let (arch, _) = tilec_core::target::resolve("sm_90a").unwrap();
    let steps = tilec_passes::pipeline(arch, None, &tilec_passes::PipelineConfig::default());
    let shown: Vec<String> = steps.iter().map(|s| s.text()).collect();
    assert!(text.contains(&shown.join(",")), "docs/passes.md's default pipeline is not {}", shown.join(","));
}

/// docs/passes.md's Rust blocks are `examples/custom_pass/src/main.rs`'s own text, which CI
/// builds and tests: the page cannot show a registration that does not compile.
#[test]
fn the_passes_page_rust_blocks_are_the_custom_pass_crate() {
    let text = std::fs::read_to_string(root().join("docs/passes.md")).unwrap();
    let main = std::fs::read_to_string(root().join("examples/custom_pass/src/main.rs")).unwrap();
    let rust: Vec<String> = blocks(&text).into_iter().filter(|(i, _)| i == "rust").map(|(_, b)| b).collect();
    assert!(!rust.is_empty());
    for b in rust {
        assert!(
            main.contains(b.trim()),
            "docs/passes.md shows code examples/custom_pass/src/main.rs does not hold:\n{b}"
        );
    }
}
