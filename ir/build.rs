//! Compiles `cpp/registry.cpp`: MLIR's dialects, extensions and passes registered without
//! the code that links LLVM's other back ends (the file says which and why). MLIR's C++
//! headers come from the same LLVM 22 as the libraries `mlir-sys` links, and so does the
//! compiler: clang from that prefix, as LLVM's own C++ was built (no RTTI, no exceptions).

use std::path::PathBuf;

fn main() {
    let prefix = std::env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let prefix = PathBuf::from(prefix);
    println!("cargo:rerun-if-changed=cpp/registry.cpp");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
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
        // The file only calls registration functions; optimising it buys nothing at run
        // time and adds to a build that is mostly parsing MLIR's headers.
        .opt_level(0)
        .debug(false)
        .warnings(false)
        .file("cpp/registry.cpp")
        .compile("tilec_registry");
}
