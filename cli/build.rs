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
//! - The code a compile runs placed first, in one stretch (`hot-symbols.txt`, through the
//!   linker's symbol ordering file). LLVM's and MLIR's functions otherwise lie in the order
//!   of their archives, so a compile's ~20,000 functions spread over 44 MB of the binary's
//!   80 MB of code, and the kernel maps each 64 KiB window of it at its first use: ~700 page
//!   faults a compile, two thirds of all (softmax sm_90a: 1,145 -> 605 faults; the median
//!   library compile 58 -> 53 ms, the small ones by a fifth). Only where the link is rustc's
//!   `rust-lld`, which reads the file (GNU ld 2.40 refuses the option): the default of rustc
//!   1.90 and later on x86_64 Linux, unless the build names a linker of its own.
//!   `scripts/hot-symbols.sh` writes the list; a name the binary no longer has (a function
//!   renamed, another LLVM) is skipped, so a stale list costs speed, not the build, and the
//!   test `hot_code_is_linked_first` says when it is stale.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
    println!("cargo:rerun-if-changed=build.rs");
    hot_code_first();
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

/// Passes `hot-symbols.txt` to the link where the linker is `rust-lld`, and tells the crate's
/// tests whether it did (`TILEC_HOT_SYMBOLS`).
fn hot_code_first() {
    println!("cargo:rerun-if-changed=hot-symbols.txt");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let list = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default()).join("hot-symbols.txt");
    let ordered = list.is_file() && rust_lld_links();
    if ordered {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", list.display());
        // One warning per listed function a build does not have (a list from another LLVM).
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    println!("cargo:rustc-env=TILEC_HOT_SYMBOLS={}", if ordered { "1" } else { "0" });
}

/// Whether rustc links with its own `rust-lld`: rustc 1.90 or later for x86_64 Linux, and no
/// linker, linker flavour or `-fuse-ld` of the build's own (`target.*.linker` reaches a build
/// script as `RUSTC_LINKER`, flags as `CARGO_ENCODED_RUSTFLAGS`).
fn rust_lld_links() -> bool {
    if std::env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu")
        || std::env::var_os("RUSTC_LINKER").is_some()
    {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker", "link-self-contained", "fuse-ld"].iter().any(|f| flags.contains(f)) {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-vV").output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let release = text.lines().find_map(|l| l.strip_prefix("release: ")).unwrap_or("");
    let mut parts = release.split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
