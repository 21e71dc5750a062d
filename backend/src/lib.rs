//! tilec-backend: LLVM IR → PTX (→ ptxas).
//!
//! Contract: [`codegen`] takes LLVM IR text and a target ([`Arch`], from `tilec_core::target`),
//! optimises it with the requested [`Pipeline`] (tilec's at a level, or LLVM's own: see
//! [`pipeline`]) in inkwell's LLVM context and returns the PTX (and the optimised IR, when
//! asked for). [`codegen_translated`] does the same for a module a
//! translation builds straight into that context — MLIR's translation of the `llvm` stage, so
//! the IR is never printed and parsed again (on FMHA that round trip was ~25 ms; one LLVM is
//! linked, so MLIR's `LLVMContextRef` is inkwell's). [`ptxas`] assembles PTX for the same arch
//! with the `ptxas` it finds and parses its resource report (registers, spills, shared
//! memory). Failures are [`Diagnostic`]s with code `E0902`.

pub mod pipeline;
pub mod ptxas;
pub mod sass;

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple};
use inkwell::OptimizationLevel;
use tilec_core::Diagnostic;

pub use pipeline::Pipeline;
pub use ptxas::{find_ptxas, ptxas, PtxasReport};
pub use sass::{find_cuobjdump, opcode_counts, sass};
pub use tilec_core::target::Arch;

/// The result of code generation.
#[derive(Clone, Debug)]
pub struct Codegen {
    /// LLVM IR after the optimisation pipeline, when it was asked for.
    pub llvm_ir: Option<String>,
    pub ptx: String,
}

/// An `LLVMContextRef` or `LLVMModuleRef` between crates that name LLVM's C types through
/// different bindings (`mlir-sys`, `llvm-sys`).
pub type RawLlvm = *mut std::ffi::c_void;

fn fail(msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error("E0902", msg)
}

/// LLVM's process-wide NVPTX options, set once before the first target machine: shared
/// (and local, const) pointers are 32 bits wide (`-nvptx-short-ptr`, as Triton and nvcc
/// compile), so shared addresses — every `ldmatrix`, `cp.async` and exchange — are 32-bit
/// arithmetic instead of 64-bit adds and widening multiplies. The data layout then comes
/// from the target machine with `p3:32:32`.
///
/// `-slp-vectorize-hor=false`: the SLP vectorizer's search for horizontal reductions over the
/// unrolled registers of a tile found nothing in any kernel of the library on any target
/// (every `llvm-ir` and `ptx` stage snapshot is the same without it) and was 28 % of an FMHA
/// compile's instructions (callgrind). The rest of SLP stays on: without it 56 `llvm-ir`/`ptx`
/// snapshots change, which only a GPU run can judge.
///
/// `-cgpp-huge-func=0`: CodeGenPrepare repeats its walk over the whole function while any
/// block changed, and a tile kernel's few large blocks change a little on every round (29
/// rounds over mla_decode's 6,500 instructions, re-parsing every inline asm's constraints
/// each time: 7 % of its compile on sm_90a). In its "huge function" mode a round after the
/// first only revisits the blocks the previous one changed. The PTX of every kernel of the
/// library, the language, tutorial and frontend tests on every target is the same byte for
/// byte.
///
/// `-dse-memoryssa-walklimit=10` (LLVM's default 90): dead-store elimination walks up from
/// each store through up to that many memory accesses, asking alias analysis whether each
/// one is overwritten; an epilogue's 64 stores to swizzled shared addresses (an `xor` basic
/// alias analysis cannot see through) made it 9 % of matmul's compile on sm_90a, 4 % of
/// bmm's on sm_103a. A store the lowering emits is overwritten, if ever, by one close after
/// it; the PTX of every compile above is the same byte for byte.
///
/// `-slp-min-tree-size=4` (LLVM's default 3): SLP then vectorizes a tree of three nodes only
/// when all of it vectorizes. Each two-element `insertelement` build of a register pair
/// (704 in FMHA's lowering for sm_103a, whose tcgen05 path packs `f32x2` pairs) seeded such
/// a tree, costed and then dropped: 6 % of FMHA's and MLA's compile on sm_103a. The PTX of
/// five compiles changes: quant_fp4 (all three targets: instructions in another order, the
/// same SASS), rope_table and the `dtypes` language test on sm_103a (registers renumbered;
/// 8 fewer SASS instructions in `dtypes`, whose i8 pairs are no longer packed into a vector
/// to be taken apart again).
///
/// `-slp-disable-tree-reorder=true`: SLP reorders the lanes of each tree it builds (bottom up
/// and top down, looking for reused orders) before costing it; the trees grown from the
/// vector lanes' `insertelement` chains are costed and dropped on every target, and on
/// sm_103a and sm_121a (f32 pairs legal) there are many: the reordering was 6.5 % of
/// quant_fp4's compile on sm_121a, 3.8 % of argmax's. Of all 490 compiles (library,
/// language, tutorial and frontend `ok` kernels on three targets) only the `masked` language
/// test's PTX changes, on each target: two predicates computed in the other order, the same
/// instructions and SASS count (session 43).
fn set_nvptx_options() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let args = [
            c"tilec".as_ptr(),
            c"-nvptx-short-ptr".as_ptr(),
            c"-slp-vectorize-hor=false".as_ptr(),
            c"-cgpp-huge-func=0".as_ptr(),
            c"-dse-memoryssa-walklimit=10".as_ptr(),
            c"-slp-min-tree-size=4".as_ptr(),
            c"-slp-disable-tree-reorder=true".as_ptr(),
        ];
        // SAFETY: valid NUL-terminated strings that outlive the call; called once per
        // process (LLVM rejects an option given twice), before any target machine exists.
        unsafe {
            inkwell::llvm_sys::support::LLVMParseCommandLineOptions(
                args.len() as i32,
                args.as_ptr(),
                c"tilec".as_ptr(),
            );
        }
    });
}

/// Optimises LLVM IR with `pipeline` and emits PTX for `arch` (with the optimised IR's text).
pub fn codegen(llvm_ir: &str, arch: &Arch, pipeline: Pipeline) -> Result<Codegen, Diagnostic> {
    let ctx = context(pipeline);
    let buf = MemoryBuffer::create_from_memory_range_copy(llvm_ir.as_bytes(), "tilec");
    let module = ctx.create_module_from_ir(buf).map_err(|e| fail(format!("LLVM rejected the IR: {e}")))?;
    optimise_and_emit(&module, arch, pipeline, true)
}

/// [`codegen`] of the module `translate` builds in the context it is handed, with the
/// optimised IR's text only when `keep_ir`.
///
/// # Safety
/// `translate` returns a module of the context it was given (an `LLVMModuleRef`), which no
/// one else owns or frees: it is dropped here.
pub unsafe fn codegen_translated(
    arch: &Arch,
    pipeline: Pipeline,
    keep_ir: bool,
    translate: impl FnOnce(RawLlvm) -> Result<RawLlvm, Diagnostic>,
) -> Result<Codegen, Diagnostic> {
    let ctx = context(pipeline);
    let raw = translate(ctx.raw().cast())?;
    if raw.is_null() {
        return Err(fail("the translation made no LLVM module"));
    }
    // SAFETY: the caller's contract — a module of `ctx`, owned by nobody else; the Module
    // drops (disposes) it before `ctx` goes.
    let module = unsafe { inkwell::module::Module::new(raw.cast()) };
    // The name the text path gives its buffer: the optimised IR's first line is the same
    // either way.
    module.set_name("tilec");
    optimise_and_emit(&module, arch, pipeline, keep_ir)
}

extern "C" {
    /// `cpp/pass_gate.cpp`: the context's passes ask a gate that refuses SLSR.
    fn tilecContextWithoutStrengthReduction(ctx: inkwell::llvm_sys::prelude::LLVMContextRef);
}

/// An LLVM context with the NVPTX target and tilec's options set up, and the pass gate
/// `pipeline` asks for (per context: other compiles of the process keep LLVM's passes).
fn context(pipeline: Pipeline) -> Context {
    Target::initialize_nvptx(&InitializationConfig::default());
    set_nvptx_options();
    let ctx = Context::create();
    if !pipeline.strength_reduction() {
        // SAFETY: a live context; the gate is a static object that outlives it.
        unsafe { tilecContextWithoutStrengthReduction(ctx.raw()) };
    }
    ctx
}

fn optimise_and_emit(
    module: &inkwell::module::Module<'_>,
    arch: &Arch,
    pipeline: Pipeline,
    keep_ir: bool,
) -> Result<Codegen, Diagnostic> {
    let triple = TargetTriple::create("nvptx64-nvidia-cuda");
    let target = Target::from_triple(&triple).map_err(|e| fail(format!("no NVPTX target in this LLVM: {e}")))?;
    let level = match pipeline.level() {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    let tm = target
        .create_target_machine(&triple, arch.name, arch.ptx_feature, level, RelocMode::Default, CodeModel::Default)
        .ok_or_else(|| fail(format!("LLVM cannot target {}", arch.name)))?;
    module.set_triple(&triple);
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    module
        .run_passes(&pipeline.text(), &tm, PassBuilderOptions::create())
        .map_err(|e| fail(format!("LLVM optimisation failed: {e}")))?;
    if pairs_f32_without_the_unit(arch) {
        module
            .run_passes("scalarizer<min-bits=32>", &tm, PassBuilderOptions::create())
            .map_err(|e| fail(format!("LLVM scalarizer failed: {e}")))?;
    }
    module.verify().map_err(|e| fail(format!("LLVM IR does not verify after optimisation: {e}")))?;
    let llvm_ir = keep_ir.then(|| module.print_to_string().to_string());
    let out =
        tm.write_to_memory_buffer(module, FileType::Assembly).map_err(|e| fail(format!("PTX emission failed: {e}")))?;
    let ptx = String::from_utf8_lossy(out.as_slice()).trim_end_matches('\0').to_string();
    Ok(Codegen { llvm_ir, ptx })
}

/// Whether NVPTX would select a vector of f32 as `.f32x2` pairs (it does from compute
/// capability 10 on) on a chip without paired f32 units (`Feature::PackedF32`: sm_121a, where
/// ptxas splits them into scalar instructions again): there the lowering's f32 vectors
/// (`tile-to-llvm`'s `vector-lanes`), which LLVM optimised as vectors, are taken apart into
/// scalar ops before code generation, and the PTX keeps scalar f32 as the chip runs it
/// (`<2 x half>` and other vectors of 32 bits are left as they are).
fn pairs_f32_without_the_unit(arch: &Arch) -> bool {
    arch.cc.0 >= 10 && !arch.has(tilec_core::target::Feature::PackedF32)
}

/// The version of the LLVM this binary links (`major.minor.patch`), for cache keys.
pub fn llvm_version() -> String {
    let (mut major, mut minor, mut patch) = (0u32, 0u32, 0u32);
    // SAFETY: LLVMGetVersion only writes the three integers it is given.
    unsafe { inkwell::llvm_sys::core::LLVMGetVersion(&mut major, &mut minor, &mut patch) };
    format!("{major}.{minor}.{patch}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three addresses `b + i * s` (i = 3, 5, 7): SLSR rewrites the second and third as the
    /// one before plus `2 * s` (a `shl` and adds); without it each is its own `mad`.
    const THREE_ADDRESSES: &str = r#"
define ptx_kernel void @k(ptr addrspace(1) noundef %p, i64 noundef %b, i64 noundef %s) {
  %m1 = mul i64 %s, 3
  %x1 = add i64 %b, %m1
  %m2 = mul i64 %s, 5
  %x2 = add i64 %b, %m2
  %m3 = mul i64 %s, 7
  %x3 = add i64 %b, %m3
  store volatile i64 %x1, ptr addrspace(1) %p
  store volatile i64 %x2, ptr addrspace(1) %p
  store volatile i64 %x3, ptr addrspace(1) %p
  ret void
}
"#;

    #[test]
    fn strength_reduction_is_left_out_of_one_compile_only() {
        let arch = tilec_core::target::by_name("sm_90a").unwrap();
        let ptx = |p: Pipeline| codegen(THREE_ADDRESSES, arch, p).unwrap().ptx;
        let with = ptx(Pipeline::tilec(3));
        assert_eq!((with.matches("mad.lo.s64").count(), with.matches("shl.b64").count()), (1, 1), "{with}");
        let without = ptx(Pipeline::tilec(3).without_strength_reduction());
        assert_eq!((without.matches("mad.lo.s64").count(), without.matches("shl.b64").count()), (3, 0), "{without}");
        // The gate was the other compile's context's: this one strength-reduces again.
        assert_eq!(ptx(Pipeline::tilec(1)).matches("shl.b64").count(), 1);
        assert_eq!(Pipeline::tilec(1).without_strength_reduction().to_string(), "O1 without SLSR");
    }
}
