//! Compiles `cpp/pass_gate.cpp`: a per-context LLVM pass gate, which LLVM's C API does not
//! reach (the file says why tilec needs one). Its headers and compiler come from the LLVM 22
//! that `llvm-sys` links, built as LLVM's own C++ was (no RTTI, no exceptions).

use std::path::PathBuf;

fn main() {
    let prefix = std::env::var("LLVM_SYS_221_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let prefix = PathBuf::from(prefix);
    println!("cargo:rerun-if-changed=cpp/pass_gate.cpp");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_221_PREFIX");
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
        .debug(false)
        .warnings(false)
        .file("cpp/pass_gate.cpp")
        .compile("tilec_pass_gate");
}
