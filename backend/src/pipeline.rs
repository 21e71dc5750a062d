//! The LLVM pass pipelines that optimise a kernel's IR before the NVPTX back end.
//!
//! [`Pipeline::tilec`] at O1 and O3 is LLVM 22's `default<O1>` and `default<O3>` as LLVM
//! spells them out (`opt -passes='default<O3>' -print-pipeline-passes`), less the passes
//! that find nothing in what tilec's lowering hands LLVM: one kernel function whose only
//! calls are intrinsics and inline asm (every global load and store among them), no
//! allocas, one global (the shared memory), registers unrolled and constants folded by the
//! emitter. What is left out, each named where it stood (the O2 and O0 pipelines are
//! LLVM's):
//!
//! - passes with nothing to work on by construction: coroutines, OpenMP, the inliner and
//!   call-graph passes, global and constant merging, SROA and mem2reg, the loop vectorizer
//!   and its helpers, memcpy and memset idioms;
//! - later runs of InstCombine (five of eight at O1, three of eight at O3), SimplifyCFG
//!   (four of eight, two of eight) and their kin, which LLVM schedules to clean up after
//!   inlining, SROA, unrolling and vectorization: in a tile kernel the runs before them leave
//!   nothing;
//! - DSE, ADCE, BDCE and merged-load/store motion, which found nothing either.
//!
//! Each was taken out in turn and left out only when the PTX of every kernel compiled at
//! that level stayed the same byte for byte: the library, language, tutorial, custom-pass
//! and frontend `ok` kernels on sm_90a, sm_103a and sm_121a (227 compiles at O3, 21 at O1;
//! session 35 of issue 34). The control-flow and loop passes (jump threading, correlated
//! value propagation, constraint elimination, loop rotation, unswitching, deletion, full
//! unrolling, sinking) found nothing either and stay: they work on the loops and branches a
//! kernel author writes; so do TailCallElim and the last SimplifyCFG, nearly free, which
//! keep the optimised IR (the `llvm-ir` stage) close to LLVM's: it differs in 73 of the 248
//! compiles, in value and block names and in single-entry phis of loop exits that code
//! generation drops. A whole compile of FMHA takes 5–7 % fewer instructions, matmul 10 %, MLA
//! decode 8–10 %, MoE align 16 %.
//!
//! The test `tilec_pipelines_give_llvms_ptx` holds the claim for every kernel of the library
//! on every target: a lowering change that gives a left-out pass work fails there, and the
//! pass goes back. [`Pipeline::llvm`] (`--llvm-default-pipeline`) compiles with LLVM's own.

use std::fmt;

/// Which pass pipeline optimises the LLVM IR, and at what level (0–3; the back end's code
/// generation level follows it), and whether code generation runs straight-line strength
/// reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pipeline {
    level: u32,
    llvm_default: bool,
    strength_reduction: bool,
}

impl Pipeline {
    /// tilec's pipeline at `level` (LLVM's `default<O{level}>` less what finds nothing in a
    /// tile kernel at O1 and O3); levels past 3 are 3.
    pub fn tilec(level: u32) -> Self {
        Pipeline { level: level.min(3), llvm_default: false, strength_reduction: true }
    }

    /// LLVM's own `default<O{level}>`.
    pub fn llvm(level: u32) -> Self {
        Pipeline { level: level.min(3), llvm_default: true, strength_reduction: true }
    }

    /// The same, with the NVPTX back end's straight-line strength reduction (SLSR) left out
    /// of code generation (`hints { strength_reduction = false }`). SLSR rewrites an address
    /// `B + i' * S` as a dominating `B + i * S` plus `(i' - i) * S`; before each rewrite it
    /// proves that reusing the dominating value adds no poison, and where the proof fails —
    /// tile kernels' addresses reach kernel parameters and inline asm results, which may be
    /// poison — the failing search is what costs: a fifth of MLA decode's compile. What SLSR
    /// does rewrite changes the SASS (a kernel leaving it out says what it measured). The
    /// optimisation pipeline is the same.
    pub fn without_strength_reduction(self) -> Self {
        Pipeline { strength_reduction: false, ..self }
    }

    /// The optimisation level.
    pub fn level(self) -> u32 {
        self.level
    }

    /// Whether code generation runs straight-line strength reduction.
    pub fn strength_reduction(self) -> bool {
        self.strength_reduction
    }

    /// The pipeline as LLVM's pass builder parses it.
    pub fn text(self) -> String {
        match (self.llvm_default, self.level) {
            (false, 1) => join(O1),
            (false, 3) => join(O3),
            (_, l) => format!("default<O{l}>"),
        }
    }
}

impl fmt::Display for Pipeline {
    /// `O3` for tilec's, `default<O3>` for LLVM's; ` without SLSR` after either where code
    /// generation leaves it out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.llvm_default {
            write!(f, "default<O{}>", self.level)?;
        } else {
            write!(f, "O{}", self.level)?;
        }
        if !self.strength_reduction {
            write!(f, " without SLSR")?;
        }
        Ok(())
    }
}

/// The elements with commas between siblings: none after an opening `name(` or before a
/// closing `)`.
fn join(elements: &[&str]) -> String {
    let mut s = String::new();
    for e in elements {
        if !(s.is_empty() || s.ends_with('(') || *e == ")") {
            s.push(',');
        }
        s.push_str(e);
    }
    s
}

const O1: &[&str] = &[
    "memprof-remove-attributes",
    "annotation2metadata",
    "forceattrs",
    "nvvm-reflect",
    "function(",
        "nvvm-intr-range",
    ")",
    "inferattrs",
    // coro-early (no coroutines)
    "function<eager-inv>(",
        "ee-instrument<>",
        "lower-expect",
        "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;no-switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>",
        // sroa (no allocas)
        "early-cse<>",
    ")",
    // openmp-opt (no OpenMP)
    "ipsccp",
    // called-value-propagation (no indirect calls)
    // globalopt (one global, the shared memory)
    "function<eager-inv>(",
        // mem2reg (no allocas)
        "instcombine<max-iterations=1;no-verify-fixpoint>",
        "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>",
    ")",
    // always-inline (no calls)
    "require<globals-aa>",
    "function(",
        "invalidate<aa>",
    ")",
    "require<profile-summary>",
    "cgscc(",
        "devirt<4>(",
            // inline (no calls)
            "function-attrs<skip-non-recursive-function-attrs>",
            "function<eager-inv;no-rerun>(",
                // sroa (no allocas)
                "early-cse<memssa>",
                // simplifycfg (a repeat: nothing new)
                "instcombine<max-iterations=1;no-verify-fixpoint>",
                // libcalls-shrinkwrap (no library calls)
                // simplifycfg (a repeat: nothing new)
                "reassociate",
                "loop-mssa(",
                    "loop-instsimplify",
                    "loop-simplifycfg",
                    "licm<no-allowspeculation>",
                    "loop-rotate<header-duplication;no-prepare-for-lto>",
                    "licm<allowspeculation>",
                    "simple-loop-unswitch<no-nontrivial;trivial>",
                ")",
                // simplifycfg (a repeat: nothing new)
                // instcombine (a repeat: nothing new)
                "loop(",
                    // loop-idiom (no memset or memcpy loops)
                    "indvars",
                    "loop-deletion",
                    "loop-unroll-full",
                ")",
                // sroa (no allocas)
                // memcpyopt (no memory intrinsics)
                "sccp",
                // bdce (nothing found)
                // instcombine (a repeat: nothing new)
                // coro-elide (no coroutines)
                // adce (nothing found)
                // simplifycfg (a repeat: nothing new)
                // instcombine (a repeat: nothing new)
            ")",
            "function-attrs",
            "function(",
                "require<should-not-run-function-passes>",
            ")",
            // coro-split (no coroutines)
            // coro-annotation-elide (no coroutines)
        ")",
    ")",
    // deadargelim (a kernel's parameters are its ABI)
    // coro-cleanup (no coroutines)
    // globalopt (one global, the shared memory)
    // globaldce (one global, the shared memory)
    // elim-avail-extern (no external definitions)
    "rpo-function-attrs",
    // recompute-globalsaa (no globals read or written but shared memory)
    "function<eager-inv>(",
        // drop-unnecessary-assumes (no assumes)
        // float2int (nothing found)
        "lower-constant-intrinsics",
        "loop(",
            "loop-rotate<header-duplication;no-prepare-for-lto>",
            "loop-deletion",
        ")",
        // loop-distribute (vectorizes no loop)
        // inject-tli-mappings (vectorizes no loop)
        // loop-vectorize (a tile loop is already its threads' registers)
        // drop-unnecessary-assumes (no assumes)
        // infer-alignment (a repeat: nothing new)
        // loop-load-elim (vectorizes no loop)
        // instcombine (a repeat: nothing new)
        "simplifycfg<bonus-inst-threshold=1;forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;switch-to-lookup;no-keep-loops;hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>",
        // O1's only vector-combine (O3 has two): it finds the vector lanes' extract/insert
        // pairs in bias_add, residual_add and moe_combine (session 44: without it their O1
        // PTX was not LLVM's).
        "vector-combine",
        // instcombine (a repeat: nothing new)
        "loop-unroll<O1>",
        "transform-warning",
        // sroa (no allocas)
        "infer-alignment",
        "instcombine<max-iterations=1;no-verify-fixpoint>",
        // loop-mssa(licm) (a repeat: nothing new)
        // alignment-from-assumptions (no assumes)
        "loop-sink",
        // instsimplify (a repeat: nothing new)
        "div-rem-pairs",
        "tailcallelim",
        "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;speculate-unpredictables>",
    ")",
    "alloc-token",
    // globaldce (one global, the shared memory)
    // constmerge (no constant globals)
    // cg-profile (no profile)
    // rel-lookup-table-converter (no lookup tables)
    "function(",
        "annotation-remarks",
    ")",
];

const O3: &[&str] = &[
    "memprof-remove-attributes",
    "annotation2metadata",
    "forceattrs",
    "nvvm-reflect",
    "function(",
        "nvvm-intr-range",
    ")",
    "inferattrs",
    // coro-early (no coroutines)
    "function<eager-inv>(",
        "ee-instrument<>",
        "lower-expect",
        "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;no-switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>",
        // sroa (no allocas)
        "early-cse<>",
        // callsite-splitting (no calls)
    ")",
    // openmp-opt (no OpenMP)
    "ipsccp",
    // called-value-propagation (no indirect calls)
    // globalopt (one global, the shared memory)
    "function<eager-inv>(",
        // mem2reg (no allocas)
        "instcombine<max-iterations=1;no-verify-fixpoint>",
        "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>",
    ")",
    // always-inline (no calls)
    "require<globals-aa>",
    "function(",
        "invalidate<aa>",
    ")",
    "require<profile-summary>",
    "cgscc(",
        "devirt<4>(",
            // inline (no calls)
            "function-attrs<skip-non-recursive-function-attrs>",
            // argpromotion (no calls)
            // openmp-opt-cgscc (no OpenMP)
            "function<eager-inv;no-rerun>(",
                // sroa (no allocas)
                "early-cse<memssa>",
                "speculative-execution<only-if-divergent-target>",
                "jump-threading",
                "correlated-propagation",
                "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>",
                "instcombine<max-iterations=1;no-verify-fixpoint>",
                // aggressive-instcombine (nothing found)
                // libcalls-shrinkwrap (no library calls)
                "tailcallelim",
                "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>",
                "reassociate",
                "constraint-elimination",
                "loop-mssa(",
                    "loop-instsimplify",
                    "loop-simplifycfg",
                    "licm<no-allowspeculation>",
                    "loop-rotate<header-duplication;no-prepare-for-lto>",
                    "licm<allowspeculation>",
                    "simple-loop-unswitch<nontrivial;trivial>",
                ")",
                // simplifycfg (a repeat: nothing new)
                "instcombine<max-iterations=1;no-verify-fixpoint>",
                "loop(",
                    // loop-idiom (no memset or memcpy loops)
                    "indvars",
                    // extra-simple-loop-unswitch-passes (nothing found)
                    "loop-deletion",
                    "loop-unroll-full",
                ")",
                // sroa (no allocas)
                // vector-combine (a repeat: nothing new)
                // mldst-motion (nothing found)
                "gvn<>",
                "sccp",
                // bdce (nothing found)
                // instcombine (a repeat: nothing new)
                "jump-threading",
                "correlated-propagation",
                // adce (nothing found)
                // memcpyopt (no memory intrinsics)
                // dse (nothing found)
                // move-auto-init (no allocas)
                "loop-mssa(",
                    "licm<allowspeculation>",
                ")",
                // coro-elide (no coroutines)
                // simplifycfg (a repeat: nothing new)
                // instcombine (a repeat: nothing new)
            ")",
            "function-attrs",
            "function(",
                "require<should-not-run-function-passes>",
            ")",
            // coro-split (no coroutines)
            // coro-annotation-elide (no coroutines)
        ")",
    ")",
    // deadargelim (a kernel's parameters are its ABI)
    // coro-cleanup (no coroutines)
    "globalopt",
    // globaldce (one global, the shared memory)
    // elim-avail-extern (no external definitions)
    "rpo-function-attrs",
    // recompute-globalsaa (no globals read or written but shared memory)
    "function<eager-inv>(",
        // drop-unnecessary-assumes (no assumes)
        // float2int (nothing found)
        "lower-constant-intrinsics",
        // chr (no profile)
        "loop(",
            "loop-rotate<header-duplication;no-prepare-for-lto>",
            "loop-deletion",
        ")",
        // loop-distribute (vectorizes no loop)
        // inject-tli-mappings (vectorizes no loop)
        // loop-vectorize (a tile loop is already its threads' registers)
        // drop-unnecessary-assumes (no assumes)
        // infer-alignment (a repeat: nothing new)
        // loop-load-elim (vectorizes no loop)
        "instcombine<max-iterations=1;no-verify-fixpoint>",
        "simplifycfg<bonus-inst-threshold=1;forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;switch-to-lookup;no-keep-loops;hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>",
        "slp-vectorizer",
        "vector-combine",
        // instcombine (a repeat: nothing new)
        "loop-unroll<O3>",
        "transform-warning",
        // sroa (no allocas)
        "infer-alignment",
        "instcombine<max-iterations=1;no-verify-fixpoint>",
        "loop-mssa(",
            "licm<allowspeculation>",
        ")",
        // alignment-from-assumptions (no assumes)
        "loop-sink",
        // instsimplify (a repeat: nothing new)
        "div-rem-pairs",
        "tailcallelim",
        "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;speculate-unpredictables>",
    ")",
    "alloc-token",
    // globaldce (one global, the shared memory)
    // constmerge (no constant globals)
    // cg-profile (no profile)
    // rel-lookup-table-converter (no lookup tables)
    "function(",
        "annotation-remarks",
    ")",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_one_and_three_are_tilecs_and_the_rest_llvms() {
        assert_eq!(Pipeline::tilec(0).text(), "default<O0>");
        assert_eq!(Pipeline::tilec(2).text(), "default<O2>");
        assert_eq!(Pipeline::llvm(3).text(), "default<O3>");
        assert_eq!(Pipeline::tilec(7), Pipeline::tilec(3));
        for p in [Pipeline::tilec(1), Pipeline::tilec(3)] {
            let t = p.text();
            assert!(t.starts_with("memprof-remove-attributes,annotation2metadata,"), "{t}");
            assert!(!t.contains(",,") && !t.contains("(,") && !t.contains(",)"), "{t}");
            assert_eq!(t.matches('(').count(), t.matches(')').count(), "{t}");
        }
        assert!(Pipeline::tilec(3).text().contains("slp-vectorizer"));
        assert!(!Pipeline::tilec(1).text().contains("slp-vectorizer"));
    }
}
