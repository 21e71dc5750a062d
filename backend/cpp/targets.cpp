// llvm-sys's target-initialisation wrappers, for a binary that links one LLVM back end.
//
// llvm-sys compiles `wrappers/target.c`: `LLVM_InitializeAllTargets` and its nine siblings,
// C-callable copies of `llvm-c/Target.h`'s static inline `LLVMInitializeAll*` and
// `LLVMInitializeNative*`, which name every back end LLVM was built with (Debian's LLVM 22:
// ~20, x86, AArch64, AMDGPU, Hexagon, ...). inkwell's `Target::initialize_all` and
// `initialize_native` call the wrappers, and the object holding those functions is linked
// whenever tilec uses anything else of it, so the linker took `target.o` and with it every
// back end's target machine -- their code, and ~240 static initialisers (command-line
// options, pass registrations) that ran at every start of every tilec process (issue 34: a
// memory-bound kernel compiles in ~40 ms, of which the start is a quarter).
//
// tilec generates code for NVPTX only (`Target::initialize_nvptx`; it never calls the
// wrappers). These definitions, in the backend's archive, which the link reads before
// llvm-sys's, satisfy inkwell's references, so `target.o` is never taken. They keep the
// wrappers' meaning for the one back end linked: "all targets" is NVPTX (which has no
// assembly parser or disassembler), and the native target (the host's) is not linked, which
// the native functions report as LLVM does, by returning 1 (failure).

#include "llvm-c/Target.h"

extern "C" {

void LLVM_InitializeAllTargetInfos(void) { LLVMInitializeNVPTXTargetInfo(); }
void LLVM_InitializeAllTargets(void) { LLVMInitializeNVPTXTarget(); }
void LLVM_InitializeAllTargetMCs(void) { LLVMInitializeNVPTXTargetMC(); }
void LLVM_InitializeAllAsmPrinters(void) { LLVMInitializeNVPTXAsmPrinter(); }
void LLVM_InitializeAllAsmParsers(void) {}
void LLVM_InitializeAllDisassemblers(void) {}

LLVMBool LLVM_InitializeNativeTarget(void) { return 1; }
LLVMBool LLVM_InitializeNativeAsmParser(void) { return 1; }
LLVMBool LLVM_InitializeNativeAsmPrinter(void) { return 1; }
LLVMBool LLVM_InitializeNativeDisassembler(void) { return 1; }

} // extern "C"
