//! Compiles `cpp/registry.cpp`: MLIR's dialects, extensions and passes registered without
//! the code that links LLVM's other back ends (the file says which and why), against the
//! MLIR 22 that `mlir-sys` links.

#[path = "../build-support/llvm_cxx.rs"]
mod llvm_cxx;

fn main() {
    llvm_cxx::compile("MLIR_SYS_220_PREFIX", &["cpp/registry.cpp"], "tilec_registry");
}
