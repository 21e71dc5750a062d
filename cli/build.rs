//! Links the `tilec` binary for a fast start (issue 34: every compile is a process, and
//! memory-bound kernels compile in tens of milliseconds).
//!
//! - Position-dependent (`-no-pie`). Its objects stay PIC; what changes is the loader's work
//!   at every start: a PIE of this size (LLVM and MLIR linked in) carries ~287,000 relative
//!   relocations that the dynamic loader applies to ~7 MB of data, page by page, before
//!   `main` — about half of a bare `tilec --version`.
//! - libstdc++ linked statically where the toolchain has `libstdc++.a`: linked dynamically,
//!   every C++ class's type info in LLVM and MLIR points at a vtable of libstdc++'s
//!   (`__si_class_type_info`, …), ~18,000 symbol relocations the loader looks up and writes
//!   at every start (a quarter of `tilec --version`). The `-lstdc++` that llvm-sys and
//!   mlir-sys ask for finds the archive first: a search directory holding only it comes
//!   before the system's. Without the archive the binary links libstdc++ dynamically, as
//!   before.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
    println!("cargo:rerun-if-changed=build.rs");
    let Some(archive) = static_libstdcxx() else {
        println!("cargo:warning=no libstdc++.a: tilec links libstdc++ dynamically (a slower start)");
        return;
    };
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else { return };
    let dir = out.join("static-libstdcxx");
    let link = dir.join("libstdc++.a");
    let _ = std::fs::remove_file(&link);
    if std::fs::create_dir_all(&dir).is_ok() && std::os::unix::fs::symlink(&archive, &link).is_ok() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
}

/// The C++ compiler's `libstdc++.a`, if it has one.
fn static_libstdcxx() -> Option<PathBuf> {
    for cc in ["c++", "g++", "gcc", "cc"] {
        let Ok(out) = Command::new(cc).arg("-print-file-name=libstdc++.a").output() else { continue };
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        // A compiler that does not know the file prints its bare name back.
        if out.status.success() && path.is_absolute() && path.is_file() {
            return Some(path);
        }
    }
    None
}
