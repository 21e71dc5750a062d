//! Compiles `cpp/pass_gate.cpp`: a per-context LLVM pass gate, which LLVM's C API does not
//! reach (the file says why tilec needs one), against the LLVM 22 that `llvm-sys` links.

#[path = "../build-support/llvm_cxx.rs"]
mod llvm_cxx;

fn main() {
    llvm_cxx::compile("LLVM_SYS_221_PREFIX", "cpp/pass_gate.cpp", "tilec_pass_gate");
}
