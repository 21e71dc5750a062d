//! Links the `tilec` binary as a position-dependent executable. Its objects stay PIC; what
//! changes is the loader's work at every start: a PIE of this size (LLVM and MLIR linked in)
//! carries ~287,000 relative relocations that the dynamic loader applies to ~7 MB of data,
//! page by page, before `main` — about half of a bare `tilec --version` (issue 34: every
//! compile is a process, and memory-bound kernels compile in tens of milliseconds).
fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
