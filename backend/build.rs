//! Compiles the backend's C++ against the LLVM 22 that `llvm-sys` links: `cpp/pass_gate.cpp`,
//! a per-context LLVM pass gate, which LLVM's C API does not reach, and `cpp/targets.cpp`,
//! llvm-sys's target-initialisation wrappers for the one back end tilec links (each file says
//! why tilec needs it).

#[path = "../build-support/llvm_cxx.rs"]
mod llvm_cxx;

fn main() {
    llvm_cxx::compile("LLVM_SYS_221_PREFIX", &["cpp/pass_gate.cpp", "cpp/targets.cpp"], "tilec_backend_cxx");
}
