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
