//! Embeds a build id: a hash of the compiler's own sources (every crate that decides the
//! code of a kernel, the grammar and the lock file), so that the compilation cache misses
//! whenever the compiler changes, even between two builds of one version.

use std::path::{Path, PathBuf};

const INPUTS: [&str; 8] =
    ["core/src", "frontend/src", "ir/src", "passes/src", "backend/src", "backend/cpp", "src", "Cargo.lock"];

fn files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_file() {
        out.push(p.to_path_buf());
        return;
    }
    let Ok(rd) = std::fs::read_dir(p) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for e in entries {
        files(&e, out);
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    // FNV-1a over (path, contents) of every input, in a fixed order.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for input in INPUTS {
        let p = root.join(input);
        println!("cargo:rerun-if-changed={}", p.display());
        let mut fs = vec![];
        files(&p, &mut fs);
        for f in fs {
            let rel = f.strip_prefix(&root).unwrap_or(&f);
            eat(rel.to_string_lossy().as_bytes());
            eat(&std::fs::read(&f).unwrap_or_default());
        }
    }
    println!("cargo:rustc-env=TILEC_BUILD_ID={h:016x}");
}
