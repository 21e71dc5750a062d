//! The one way tilec's build scripts compile C++ against LLVM 22 (`ir/cpp/registry.cpp`,
//! `backend/cpp/pass_gate.cpp`, `backend/cpp/targets.cpp`): the headers, and the compiler,
//! from the LLVM prefix the crate's LLVM bindings link (`prefix_var`, default
//! `/usr/lib/llvm-22`), built as LLVM's own C++ was (no RTTI, no exceptions). Unoptimised:
//! the files only register things, answer a question a pass or stand in for a wrapper;
//! optimising them buys nothing at run time and adds to a build that is mostly parsing
//! headers. Included by each build script with `#[path]`.

use std::path::PathBuf;

pub fn compile(prefix_var: &str, files: &[&str], lib: &str) {
    let prefix = PathBuf::from(std::env::var(prefix_var).unwrap_or_else(|_| "/usr/lib/llvm-22".into()));
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    println!("cargo:rerun-if-changed=../build-support/llvm_cxx.rs");
    println!("cargo:rerun-if-env-changed={prefix_var}");
    let clang = prefix.join("bin/clang++");
    let mut build = cc::Build::new();
    if clang.exists() {
        build.compiler(clang);
    }
    build
        .cpp(true)
        .std("c++17")
        .include(prefix.join("include"))
        .flag("-fno-rtti")
        .flag("-fno-exceptions")
        .opt_level(0)
        .debug(false)
        .warnings(false)
        .files(files)
        .compile(lib);
}
