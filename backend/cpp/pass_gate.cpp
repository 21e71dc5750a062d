// A pass gate for one LLVM context: code generation without straight-line strength
// reduction, for the kernels that ask it (`hints { strength_reduction = false }`).
//
// LLVM's own switch, `-opt-disable=slsr`, is process-wide: a JIT or tuner compiling other
// kernels in the same process would lose the pass too. The gate belongs to the context
// (`LLVMContext::setOptPassGate`), which tilec makes afresh for every compile, and the C API
// does not reach it -- hence this file. The legacy pass manager of the NVPTX back end asks
// the gate before each function pass (`FunctionPass::skipFunction`); the new pass manager
// of the optimisation pipeline asks it too, under the passes' class names, and SLSR is not
// in tilec's pipelines. The pass is named by its argument and by its description, as the
// LLVM versions differ in which one they hand the gate.

#include "llvm-c/Types.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/OptBisect.h"

namespace {

class NoStrengthReduction final : public llvm::OptPassGate {
public:
  bool shouldRunPass(llvm::StringRef pass, llvm::StringRef) const override {
    return pass != "slsr" && pass != "Straight line strength reduction" &&
           pass != "StraightLineStrengthReducePass";
  }
  bool isEnabled() const override { return true; }
};

// Stateless, so one gate serves every context of every thread; it outlives them all.
NoStrengthReduction gate;

} // namespace

extern "C" void tilecContextWithoutStrengthReduction(LLVMContextRef ctx) {
  llvm::unwrap(ctx)->setOptPassGate(gate);
}
