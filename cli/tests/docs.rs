//! The documentation against the program: every code block of `docs/*.md` is compiled or run
//! here (or, for a GPU, by `tests/gpu/run.sh`), and no file of the repository points outside
//! it. A block's info string says what it is:
//!
//! - `sh`: `tilec` command lines, each run with the built binary in a scratch folder holding
//!   the kernel library; each must exit 0. `sh error`: each must exit 1 (an error with a
//!   message, not a crash). `sh gpu`: needs a GPU — `tests/gpu/run.sh` runs them on the H100;
//!   here each must at least be a `tilec` command. `sh setup`: the README's own commands.
//! - `tile`: a kernel, compiled for every target. `tile-body`, `pipeline`: checked by
//!   `tests/it/docs.rs` (they need the library).
//! - `rust`: a piece of an example that CI compiles (`examples/`).
//! - `toml`: an experiment file (run by `tilec experiment --file`) or a `[dependencies]`
//!   table naming the workspace's packages.
//! - `json`: the metadata outline of `docs/abi.md`, checked field by field against what the
//!   compiler writes.
//! - `python`: run by `tests/python` (CPU) or `tests/gpu/run.sh`.
//! - `text`: output or prose, not code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// A fenced block: its info string, text and first line.
struct Block {
    info: String,
    text: String,
    line: usize,
}

fn blocks(page: &str) -> Vec<Block> {
    let mut out = vec![];
    let mut cur: Option<Block> = None;
    for (i, line) in page.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            match cur.take() {
                Some(b) => out.push(b),
                None => cur = Some(Block { info: info.trim().to_string(), text: String::new(), line: i + 1 }),
            }
        } else if let Some(b) = cur.as_mut() {
            b.text.push_str(line);
            b.text.push('\n');
        }
    }
    assert!(cur.is_none(), "an unclosed code block");
    out
}

fn pages() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    v.sort();
    v
}

/// A scratch folder with the kernel library, where the page's commands run.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tilec-docs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(root().join("kernels"), dir.join("kernels")).unwrap();
    dir
}

/// Runs one command line of a page through `sh` with `tilec` on the PATH.
fn run_line(line: &str, cwd: &Path) -> (i32, String) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tilec"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let o = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(cwd)
        .env("PATH", path)
        .env("TILEC_CACHE_DIR", cwd.join(".cache"))
        .env_remove("TILEC_ALWAYS_COMPILE")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

fn commands(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Every key path of a JSON value (`signature.params[].dtype`), arrays merged.
fn key_paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The key paths of the metadata `tilec compile` writes for kernels that use every optional
/// field: requirements, tensor maps, a persistent kernel, an emulated one (its padding).
fn metadata_paths() -> BTreeSet<String> {
    let dir = scratch("abi");
    let mut all = BTreeSet::new();
    let runs: [&[&str]; 4] = [
        &["kernels/softmax.tile", "--arch", "sm_90a"],
        &["kernels/matmul.tile", "--arch", "sm_90a"],
        &["kernels/matmul.tile", "--arch", "sm_90a", "--persistent"],
        &["kernels/fmha.tile", "--arch", "sm_90a", "--emulate", "sm_121a", "--const", "H=4"],
    ];
    for (i, args) in runs.iter().enumerate() {
        let out = dir.join(format!("k{i}.ptx"));
        let line = format!("tilec compile {} -o {}", args.join(" "), out.display());
        let (code, text) = run_line(&line, &dir);
        assert_eq!(code, 0, "{line}: {text}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("k{i}.json"))).unwrap()).unwrap();
        key_paths(&json, "", &mut all);
    }
    all
}

#[test]
fn every_code_block_of_the_docs_is_compiled_or_run() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let readme_commands: Vec<String> = blocks(&readme)
        .first()
        .map(|b| commands(&b.text).map(|l| l.split('#').next().unwrap_or("").trim().to_string()).collect())
        .unwrap_or_default();
    let examples: Vec<String> = ["examples/jit_tour.rs", "examples/custom_pass/src/main.rs"]
        .iter()
        .map(|p| std::fs::read_to_string(root().join(p)).unwrap())
        .collect();
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let mut metadata: Option<BTreeSet<String>> = None;
    let mut ran = 0;
    for page in pages() {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = scratch(name.trim_end_matches(".md"));
        for b in blocks(&text) {
            let at = format!("docs/{name}:{}", b.line);
            match b.info.as_str() {
                "sh" | "sh error" => {
                    for line in commands(&b.text) {
                        assert!(line.starts_with("tilec "), "{at}: `{line}` is not a tilec command");
                        let (code, out) = run_line(line, &dir);
                        let want = if b.info == "sh" { 0 } else { 1 };
                        assert_eq!(code, want, "{at}: `{line}` exited {code}, not {want}:\n{out}");
                        ran += 1;
                    }
                }
                "sh gpu" => {
                    for line in commands(&b.text) {
                        assert!(line.starts_with("tilec "), "{at}: `{line}` is not a tilec command");
                    }
                }
                "sh setup" => {
                    for line in commands(&b.text) {
                        assert!(
                            readme_commands.iter().any(|c| c == line),
                            "{at}: `{line}` is not one of the README's commands {readme_commands:?}"
                        );
                    }
                }
                "tile" => {
                    let file = dir.join(format!("block{}.tile", b.line));
                    std::fs::write(&file, &b.text).unwrap();
                    for arch in ["sm_90a", "sm_103a", "sm_121a"] {
                        let line = format!("tilec compile {} --arch {arch} -o out/block.ptx", file.display());
                        let (code, out) = run_line(&line, &dir);
                        assert_eq!(code, 0, "{at}: the kernel does not compile for {arch}:\n{out}");
                    }
                    ran += 1;
                }
                "tile-body" | "pipeline" => {
                    assert!(
                        name == "language.md" || name == "passes.md",
                        "{at}: `{}` blocks are checked on language.md and passes.md only",
                        b.info
                    );
                }
                "rust" => {
                    // A piece of an example, compared line by line without the indentation.
                    let flat = |t: &str| t.lines().map(str::trim).collect::<Vec<_>>().join("\n");
                    assert!(
                        examples.iter().any(|e| flat(e).contains(flat(b.text.trim()).as_str())),
                        "{at}: this Rust block is not a piece of examples/jit_tour.rs or examples/custom_pass:\n{}",
                        b.text
                    );
                    ran += 1;
                }
                "toml" if b.text.contains("[variants]") => {
                    let file = dir.join(format!("experiment{}.toml", b.line));
                    std::fs::write(&file, &b.text).unwrap();
                    let (code, out) = run_line(&format!("tilec experiment --file {}", file.display()), &dir);
                    assert_eq!(code, 0, "{at}: the experiment file does not run:\n{out}");
                    ran += 1;
                }
                "toml" => {
                    let deps = b.text.split("[dependencies]").nth(1).unwrap_or_else(|| panic!("{at}: which toml?"));
                    for l in deps.lines().filter(|l| l.contains('=')) {
                        let package = l.split('=').next().unwrap().trim();
                        assert!(
                            cargo.contains(&format!("name = \"{package}\"")),
                            "{at}: no workspace package `{package}`"
                        );
                    }
                }
                "json" => {
                    let parsed = b.text.replace("[...]", "[]").replace("{...}", "{}");
                    let v: serde_json::Value =
                        serde_json::from_str(&parsed).unwrap_or_else(|e| panic!("{at}: not JSON: {e}\n{parsed}"));
                    let real = metadata.get_or_insert_with(metadata_paths);
                    let mut shown = BTreeSet::new();
                    key_paths(&v, "", &mut shown);
                    // A parameter object is shown alone: its paths are those under params[].
                    let prefix = if v.get("kind").is_some() { "signature.params[]." } else { "" };
                    for p in &shown {
                        let full = format!("{prefix}{p}");
                        assert!(real.contains(&full), "{at}: the metadata has no field `{full}`");
                    }
                    if prefix.is_empty() {
                        // The outline names every field of the signature and the top level.
                        for p in real.iter().filter(|p| p.matches('.').count() <= 1 && !p.contains("params[]")) {
                            let top = p.starts_with("signature.") || !p.contains('.');
                            if top && !p.starts_with("hints.") {
                                assert!(shown.contains(p), "{at}: the outline leaves out `{p}`");
                            }
                        }
                    }
                    ran += 1;
                }
                "python" => {
                    assert!(name == "python.md", "{at}: Python blocks live in docs/python.md");
                }
                "text" => {}
                other => panic!("{at}: a code block of unknown kind `{other}` (see cli/tests/docs.rs)"),
            }
        }
    }
    assert!(ran >= 15, "only {ran} blocks and commands ran");
}

/// Text files of the repository (what git would track), without the build outputs.
fn repository_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(name.as_str(), "target" | ".git" | ".tools" | ".carry" | ".carry2" | "out" | "__pycache__") {
                repository_files(&p, out);
            }
        } else if std::fs::read_to_string(&p).is_ok() {
            out.push(p);
        }
    }
}

#[test]
fn no_file_points_outside_the_repository() {
    let root = root();
    let mut files = vec![];
    repository_files(&root, &mut files);
    // Built from pieces, so that this file does not name them itself.
    let outside = [["..", "/shared"].concat(), ["shared/", "seeds"].concat(), ["mlir22", "-examples"].concat()];
    let mut bad = vec![];
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        for o in &outside {
            if text.contains(o.as_str()) {
                bad.push(format!("{rel} names `{o}`"));
            }
        }
        // Relative links of the markdown pages must reach a file of the repository.
        if rel.ends_with(".md") {
            for part in text.split("](").skip(1) {
                let target = part.split([')', '#', ' ']).next().unwrap_or("");
                // A link's target is a path or an address; `kernel[grid](…)` in a table is code.
                let path_like = target.chars().all(|c| c.is_ascii_alphanumeric() || "./_-".contains(c));
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") || !path_like {
                    continue;
                }
                let resolved = f.parent().unwrap().join(target);
                match resolved.canonicalize() {
                    Ok(p) if p.starts_with(&root) => {}
                    _ => bad.push(format!("{rel} links to `{target}`, which is not a file of the repository")),
                }
            }
        }
    }
    assert!(files.len() > 200, "walked only {} files", files.len());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
