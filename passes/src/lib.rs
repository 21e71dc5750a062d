//! tilec-passes: the passes of tilec, their registry and the per-target pipelines.
//!
//! Contract: each pass lives in its own file named after its kebab-case CLI name and says in
//! its `//!` what it needs, what it does, what it guarantees and its options. [`PASSES`]
//! lists them; [`pipeline`] gives the default list for a target. Passes work on the Rust
//! form of the dialects (`tilec_core::tir`); after each pass the driver prints the stage and
//! has MLIR verify it, so an ill-formed result is caught at the pass that produced it.

pub mod driver;
pub mod tile_approx_math;
pub mod tile_cta_pair;
pub mod tile_epilogue_overlap;
pub mod tile_grid_dependency;
pub mod tile_layout;
pub mod tile_licm;
pub mod tile_load_order;
pub mod tile_mma_overlap;
pub mod tile_persistent;
pub mod tile_pipeline;
pub mod tile_swizzle;
pub mod tile_to_llvm;
pub mod tile_warp_specialize;

use tilec_core::target::Arch;

/// A printable stage of the pipeline (`tilec compile --emit STAGE`, the dumps, the snapshots).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// The `tile` dialect, as the frontend emits it.
    Tile,
    /// The `tile` dialect with a layout on every tile.
    Tilegpu,
    /// The output of tilec's lowering: `llvm`/`nvvm`, and the tensor-core ops as upstream
    /// `nvgpu` ops on memref views and vector fragments (where the sm_90a `warpgroup`/`tma`
    /// ops will go too).
    Nvgpu,
    /// The `llvm`/`nvvm` dialects only, after the upstream conversions of the pipeline.
    Llvm,
    /// LLVM IR after the optimisation pipeline.
    LlvmIr,
    Ptx,
}

impl Stage {
    pub const ALL: [Stage; 6] = [Stage::Tile, Stage::Tilegpu, Stage::Nvgpu, Stage::Llvm, Stage::LlvmIr, Stage::Ptx];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Tile => "tile",
            Stage::Tilegpu => "tilegpu",
            Stage::Nvgpu => "nvgpu",
            Stage::Llvm => "llvm",
            Stage::LlvmIr => "llvm-ir",
            Stage::Ptx => "ptx",
        }
    }

    pub fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|st| st.name() == s)
    }
}

/// A registered pass: CLI name, the stage it produces, one-line description, options, and
/// its entry in the pass driver.
#[derive(Clone, Copy, Debug)]
pub struct PassInfo {
    pub name: &'static str,
    pub produces: Stage,
    pub doc: &'static str,
    pub options: &'static [PassOption],
    pub run: fn(&mut driver::Driver, &driver::Step) -> Result<(), tilec_core::Diagnostic>,
}

/// An option of a pass (`name{option=value}`).
#[derive(Clone, Copy, Debug)]
pub struct PassOption {
    pub name: &'static str,
    pub doc: &'static str,
    /// Empty: taken from the kernel (see `doc`).
    pub default: &'static str,
    /// Accepts a value or says why not.
    pub check: fn(&str) -> Result<(), String>,
}

fn check_num_warps(v: &str) -> Result<(), String> {
    match v.parse::<u32>() {
        Ok(n) if n.is_power_of_two() && n <= 32 => Ok(()),
        _ => Err(format!("`{v}` is not a power of two from 1 to 32")),
    }
}

fn check_occupancy(v: &str) -> Result<(), String> {
    match v.parse::<u32>() {
        Ok(n) if (1..=32).contains(&n) => Ok(()),
        _ => Err(format!("`{v}` is not a number of blocks per SM from 1 to 32")),
    }
}

fn check_chains(v: &str) -> Result<(), String> {
    match v.parse::<u32>() {
        Ok(n) if (1..=16).contains(&n) => Ok(()),
        _ => Err(format!("`{v}` is not a number of mma chains from 1 to 16")),
    }
}

fn check_first_offset_chunks(v: &str) -> Result<(), String> {
    match v.parse::<u32>() {
        Ok(_) => Ok(()),
        _ => Err(format!("`{v}` is not a number of chunks (0: only in loops)")),
    }
}

fn check_vector_lanes(v: &str) -> Result<(), String> {
    match v.parse::<u32>() {
        Ok(n) if n <= 64 => Ok(()),
        _ => Err(format!("`{v}` is not a number of registers from 0 (register by register) to 64")),
    }
}

fn check_distance(v: &str) -> Result<(), String> {
    match v.parse::<u32>() {
        Ok(n) if n <= 16 => Ok(()),
        _ => Err(format!("`{v}` is not a number of iterations from 0 (no pipelining) to 16")),
    }
}

fn check_bool(v: &str) -> Result<(), String> {
    match v {
        "true" | "false" => Ok(()),
        _ => Err(format!("`{v}` is not `true` or `false`")),
    }
}

fn check_arch(v: &str) -> Result<(), String> {
    tilec_core::target::resolve(v).map(|_| ())
}

/// Passes of other crates, registered by name ([`register`]): a user's own binary over the
/// CLI (`tilec_cli::run_with`) makes its passes known to every pipeline it parses.
static REGISTERED: std::sync::Mutex<Vec<&'static PassInfo>> = std::sync::Mutex::new(Vec::new());

/// Makes `pass` known by name to the pipelines parsed after this (`tilec opt --passes`,
/// `tilec bisect --passes`) and to `tilec passes`. A name that tilec's passes or an earlier
/// registration already have is refused.
pub fn register(pass: &'static PassInfo) -> Result<(), String> {
    let mut r = REGISTERED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if PASSES.iter().chain(r.iter().copied()).any(|p| p.name == pass.name) {
        return Err(format!("a pass named `{}` exists already", pass.name));
    }
    r.push(pass);
    Ok(())
}

/// tilec's passes, then the registered ones, in registration order.
pub fn all_passes() -> Vec<&'static PassInfo> {
    let r = REGISTERED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    PASSES.iter().chain(r.iter().copied()).collect()
}

/// tilec's own passes, in the order of the default pipeline.
pub const PASSES: &[PassInfo] = &[
    PassInfo {
        name: "tile-load-order",
        produces: Stage::Tile,
        doc: "fold permute(load(…)) into an ordered load (read in the tensor's order, no register permute)",
        options: &[],
        run: driver::run_tile_load_order,
    },
    PassInfo {
        name: "tile-approx-math",
        produces: Stage::Tile,
        doc: "exp → exp2 with log2 e folded into the neighbouring multiply where allowed; with fast-math, approximate division and math with flush-to-zero (the source's per-op options win)",
        options: &[PassOption {
            name: "fast-math",
            doc: "approximate every float op whose options the source left open",
            default: "false",
            check: check_bool,
        }],
        run: driver::run_tile_approx_math,
    },
    PassInfo {
        name: "tile-cta-pair",
        produces: Stage::Tile,
        doc: "run each block on a 2-CTA cluster, each CTA half of the products' rows, B loaded once a pair (TMA multicast)",
        options: &[PassOption { name: "arch", doc: "target architecture", default: "", check: check_arch }],
        run: driver::run_tile_cta_pair,
    },
    PassInfo {
        name: "tile-persistent",
        produces: Stage::Tile,
        doc: "walk the grid's x tiles in a loop on as many blocks as the GPU holds at once (persistent kernel; the launcher fills num_tiles); tile-invariant scalars leave the loop",
        options: &[],
        run: driver::run_tile_persistent,
    },
    PassInfo {
        name: "tile-layout",
        produces: Stage::Tilegpu,
        doc: "give every tile a #blocked or #slice layout (16-byte vectors, warps along rows first)",
        options: &[
            PassOption {
                name: "num-warps",
                doc: "warps per block to lay tiles out over (default: the kernel's tile.num_warps)",
                default: "",
                check: check_num_warps,
            },
            PassOption {
                name: "tcgen05",
                doc: "products take the tcgen05 family (TMEM accumulators) where the target has it (default: true; false keeps them on mma.sync)",
                default: "",
                check: check_bool,
            },
        ],
        run: driver::run_tile_layout,
    },
    PassInfo {
        name: "tile-licm",
        produces: Stage::Tilegpu,
        doc: "move layout conversions of loop-invariant tiles (small ones) out of their loops, also out of an if inside the loop",
        options: &[],
        run: driver::run_tile_licm,
    },
    PassInfo {
        name: "tile-swizzle",
        produces: Stage::Tilegpu,
        doc: "pick each shared buffer's XOR swizzle so that its 16-byte writes and ldmatrix reads are free of bank conflicts (CPU model); on mma.sync targets with TMA, TMA's layouts where they are as good",
        options: &[
            PassOption {
                name: "arch",
                doc: "target (default: the module's tile.target; every target has 32 banks of 4 bytes)",
                default: "",
                check: check_arch,
            },
            PassOption {
                name: "tma",
                doc: "give async-copied buffers TMA's layouts on mma.sync targets with TMA (default: true; false keeps the least-conflict swizzles for cp.async)",
                default: "",
                check: check_bool,
            },
        ],
        run: driver::run_tile_swizzle,
    },
    PassInfo {
        name: "tile-pipeline",
        produces: Stage::Tilegpu,
        doc: "issue the loop loads that feed shared memory `latency` iterations ahead through rings of stages (async copies, group waits, prologue, epilogue); check the shared-memory budget",
        options: &[
            PassOption {
                name: "arch",
                doc: "target whose distance table and shared memory apply (default: the module's tile.target)",
                default: "",
                check: check_arch,
            },
            PassOption {
                name: "distance",
                doc: "iterations ahead for loads without a latency hint (default: the target's)",
                default: "",
                check: check_distance,
            },
            PassOption {
                name: "empty-barriers",
                doc: "release a TMA ring's stages on empty mbarriers instead of a block-wide barrier before each refill (default: false; slower on FMHA, see the pass docs)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "wgmma-in-flight",
                doc: "keep a wgmma that only accumulates from its rings in flight across iterations (default: true; false waits for every wgmma where it is issued)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "tma",
                doc: "fill the rings a wgmma reads with TMA copies and mbarriers where the target has TMA (default: true; false keeps cp.async)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "warp-specialize",
                doc: "release TMA rings on empty mbarriers where tile-warp-specialize will give their copies to a producer (default: false; the default pipeline sets it unless that pass is disabled)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "occupancy",
                doc: "blocks per SM the kernel asks for, for the warp-specialize decision (default: 1)",
                default: "",
                check: check_occupancy,
            },
        ],
        run: driver::run_tile_pipeline,
    },
    PassInfo {
        name: "tile-warp-specialize",
        produces: Stage::Tilegpu,
        doc: "give the TMA copies of a pipelined loop to a producer warpgroup (setmaxnreg moves registers to the consumers), the consumers wait, compute and release stages",
        options: &[
            PassOption {
                name: "arch",
                doc: "target (default: the module's tile.target); applies where it has TMA and setmaxnreg",
                default: "",
                check: check_arch,
            },
            PassOption {
                name: "occupancy",
                doc: "blocks per SM the kernel asks for, which sets the register split (default: 1)",
                default: "",
                check: check_occupancy,
            },
            PassOption {
                name: "pingpong",
                doc: "consumer warpgroups take turns on the tensor cores around a loop's products, FlashAttention-3's ping-pong (default: true)",
                default: "",
                check: check_bool,
            },
        ],
        run: driver::run_tile_warp_specialize,
    },
    PassInfo {
        name: "tile-mma-overlap",
        produces: Stage::Tilegpu,
        doc: "leave a warpgroup product in flight until its result is first read where another product is issued before that (FlashAttention-3's intra-warpgroup overlap); its rings' stage releases follow the wait",
        options: &[],
        run: driver::run_tile_mma_overlap,
    },
    PassInfo {
        name: "tile-epilogue-overlap",
        produces: Stage::Tilegpu,
        doc: "in a persistent kernel whose products accumulate in Tensor Memory, run each tile's epilogue after the next tile's products are issued (two accumulators in alternating TMEM regions)",
        options: &[],
        run: driver::run_tile_epilogue_overlap,
    },
    PassInfo {
        name: "tile-grid-dependency",
        produces: Stage::Tilegpu,
        doc: "issue the prologue's TMA copies of the tensors the kernel declares `independent` (no earlier grid writes them: weights) before it waits for the grid before it (programmatic dependent launch), so they arrive while that grid finishes",
        options: &[PassOption {
            name: "arch",
            doc: "target (default: the module's tile.target)",
            default: "",
            check: check_arch,
        }],
        run: driver::run_tile_grid_dependency,
    },
    PassInfo {
        name: "tile-to-llvm",
        produces: Stage::Nvgpu,
        doc: "lower a laid-out kernel to llvm/nvvm (vector loads, shuffles, shared-memory reductions) and upstream nvgpu (ldmatrix, mma.sync, async copies)",
        options: &[
            PassOption {
                name: "arch",
                doc: "target (default: the module's tile.target)",
                default: "",
                check: check_arch,
            },
            PassOption {
                name: "occupancy",
                doc: "blocks per SM to ask ptxas for (.minnctapersm; default: no hint)",
                default: "",
                check: check_occupancy,
            },
            PassOption {
                name: "fp-fusion",
                doc: "let the source's float + - * fuse into fma (one rounding), as Triton and nvcc do (default: true)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "emulate-block-scale",
                doc: "run the block-scaled mma.sync of sm_121a as fp8 mma.sync products times the scale factors the instruction would read, on a chip without it (--emulate sm_121a on an H100; default: false)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "tma-store",
                doc: "stage an epilogue's accumulator tile in shared memory and store it with TMA bulk tensor stores, where the target has TMA (default: true)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "sort-loops",
                doc: "loop over the stages of a sort's bitonic network instead of writing each out: a twentieth of the compile for a sort of 2048, 11 % slower on the H100 (default: false)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "topk-network",
                doc: "a topk (a sort cut to k < n) through the top-k network: the groups of k sorted, then halved and merged round by round — topk_partial's 8 of 2048 in 38 stages instead of the sort's 66 (default: true; false: the whole sort's network)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "mma-chains",
                doc: "independent mma.sync accumulator chains a warp keeps in flight: a product with fewer accumulator blocks a warp over a long K deals its K steps to partial accumulators summed at the end (default: 4; 1: one chain a block)",
                default: "",
                check: check_chains,
            },
            PassOption {
                name: "first-offset-chunks",
                doc: "outside loops, a global load or store of at least this many chunks a thread addresses each chunk from the thread's first offset (as in loops) instead of writing out its address, which LLVM's straight-line strength reduction compares pairwise: 16 compiled mla_decode in 11 % fewer instructions with that pass (0.6 % without it, as the kernel now compiles) and runs it 0.4-1 % slower on an H200 (default: 0, only in loops)",
                default: "",
                check: check_first_offset_chunks,
            },
            PassOption {
                name: "swizzle-split",
                doc: "an epilogue staged in a swizzled shared buffer for a TMA store and each cp.async chunk of a ring addressed as the thread's part of the swizzle, made once, plus a register constant (an xor and an add or two a chunk) where the constant's bits are clear of the thread's: matmul compiles in 14-25 % fewer instructions; false: each chunk's whole swizzle written out, which LLVM folds to about the same code in more time (default: true)",
                default: "",
                check: check_bool,
            },
            PassOption {
                name: "vector-lanes",
                doc: "a thread's chains of elementwise ops (f32 arithmetic, float casts, the math list, float compares and selects; integer arithmetic, logic, selects and casts) written on this many registers at a time as one vector op, where the chain's vectors save more than making and taking them apart costs and it reads no product's accumulator: gelu compiles in 30-35 % fewer instructions and runs 5 % faster on an H200 (default: 4; 0 or 1: register by register)",
                default: "",
                check: check_vector_lanes,
            },
        ],
        run: driver::run_tile_to_llvm,
    },
];

/// The upstream conversions from the `nvgpu` stage to the `llvm` stage, in order: `nvgpu`
/// to `nvvm` (its memref subscripts and vector fragments through the LLVM type converter),
/// the `arith.index_cast`s of those subscripts, then the casts that paired the lowering's
/// LLVM values with the upstream types fold away. On a kernel without tensor cores they
/// change nothing but the printing.
pub const TO_LLVM: [&str; 3] = ["convert-nvgpu-to-nvvm", "convert-arith-to-llvm", "reconcile-unrealized-casts"];

/// What the user switched in the default pipeline.
#[derive(Clone, Debug, Default)]
pub struct PipelineConfig {
    /// Passes left out (`--disable-pass NAME`); the required ones cannot be.
    pub disabled: std::collections::BTreeSet<String>,
    /// `--fast-math`: `tile-approx-math` approximates every float op the source leaves to it.
    pub fast_math: bool,
    /// `--no-fp-fusion`: every float product and sum rounds on its own (`tile-to-llvm`'s
    /// `fp-fusion=false`), as on the interpreter.
    pub no_fp_fusion: bool,
    /// `--no-tma` or the kernel's `tma = false` hint: rings stay `cp.async` where TMA could
    /// fill them (`tile-pipeline`'s `tma=false`).
    pub no_tma: bool,
    /// `--no-tcgen05` (or an emulation on a chip without it): products stay off tcgen05
    /// (`tile-layout`'s `tcgen05=false`).
    pub no_tcgen05: bool,
    /// `--wgmma-wait-at-once`: every wgmma is waited for where it is issued (`tile-pipeline`'s
    /// `wgmma-in-flight=false`), for the ablation.
    pub wgmma_wait_at_once: bool,
    /// `--empty-barriers`: TMA rings released on empty mbarriers (`tile-pipeline`'s
    /// `empty-barriers=true`).
    pub empty_barriers: bool,
    /// The kernel's `warp_specialize` hint or `--warp-specialize`: `tile-warp-specialize`
    /// runs (and `tile-pipeline` releases the rings it will give to a producer).
    pub warp_specialize: bool,
    /// `--no-pingpong`: the consumer warpgroups of a warp-specialized kernel do not take
    /// turns (`tile-warp-specialize`'s `pingpong=false`), for the ablation.
    pub no_pingpong: bool,
    /// The kernel's `persistent` hint or `--persistent`: `tile-persistent` runs.
    pub persistent: bool,
    /// The kernel's `cta_pair` hint: `tile-cta-pair` runs.
    pub cta_pair: bool,
    /// Lower block-scaled products to an emulation the executing chip runs (`--emulate`).
    pub emulate_block_scale: bool,
    /// `--no-tma-store` (or `--no-tma`): epilogue stores stay direct register stores
    /// (`tile-to-llvm`'s `tma-store=false`), for the ablation. A kernel's `tma = false` hint
    /// sets [`PipelineConfig::no_tma`] only: it is about the rings.
    pub no_tma_store: bool,
}

/// The passes every kernel needs: without them there is no code.
pub const REQUIRED: [&str; 2] = ["tile-layout", "tile-to-llvm"];

/// The tilec passes of the default pipeline, in order.
pub const DEFAULT_PASSES: [&str; 13] = [
    "tile-load-order",
    "tile-approx-math",
    "tile-cta-pair",
    "tile-persistent",
    "tile-layout",
    "tile-licm",
    "tile-swizzle",
    "tile-pipeline",
    "tile-warp-specialize",
    "tile-mma-overlap",
    "tile-epilogue-overlap",
    "tile-grid-dependency",
    "tile-to-llvm",
];

/// Checks `--disable-pass` names: a known optional pass, or an error naming the choices.
pub fn check_disabled(names: &std::collections::BTreeSet<String>) -> Result<(), tilec_core::Diagnostic> {
    for n in names {
        if REQUIRED.contains(&n.as_str()) {
            return Err(tilec_core::Diagnostic::error(
                "E0904",
                format!("`{n}` cannot be disabled: every kernel needs it"),
            ));
        }
        if !DEFAULT_PASSES.contains(&n.as_str()) {
            let optional = DEFAULT_PASSES.iter().copied().filter(|p| !REQUIRED.contains(p));
            let mut d = tilec_core::Diagnostic::error("E0904", format!("no pass `{n}` to disable"));
            let close = tilec_core::diag::close_matches(n, optional.clone());
            if !close.is_empty() {
                d = d.with_note(format!("did you mean: {}?", close.join(", ")));
            }
            return Err(
                d.with_note(format!("passes that can be disabled: {}", optional.collect::<Vec<_>>().join(", ")))
            );
        }
    }
    Ok(())
}

/// The default pipeline of a target, with the options the kernel's hints set (`occupancy`,
/// blocks per SM) and the user's switches: tilec's passes, then [`TO_LLVM`]. Every target
/// runs the same passes; the arch table decides inside each pass what the chip offers.
pub fn pipeline(arch: &Arch, occupancy: Option<u32>, cfg: &PipelineConfig) -> Vec<driver::Step> {
    let occ = occupancy.map(|o| o.to_string()).unwrap_or_default();
    let fast = if cfg.fast_math { "true" } else { "false" };
    // Empty: the pass default (fused), left out of the printed pipeline.
    let fusion = if cfg.no_fp_fusion { "false" } else { "" };
    let mut steps = vec![];
    for name in DEFAULT_PASSES {
        let Some(p) = PASSES.iter().find(|p| p.name == name) else { continue };
        if cfg.disabled.contains(name)
            || (name == "tile-warp-specialize" && !cfg.warp_specialize)
            || (name == "tile-persistent" && !cfg.persistent)
            || (name == "tile-cta-pair" && !cfg.cta_pair)
        {
            continue;
        }
        let opts: Vec<(&str, &str)> = match name {
            "tile-approx-math" => vec![("fast-math", fast)],
            "tile-layout" if cfg.no_tcgen05 && arch.has(tilec_core::target::Feature::Tcgen05) => {
                vec![("tcgen05", "false")]
            }
            "tile-swizzle" => {
                let mut o = vec![("arch", arch.name)];
                if cfg.no_tma {
                    o.push(("tma", "false"));
                }
                o
            }
            "tile-pipeline" => {
                let mut o = vec![("arch", arch.name)];
                if cfg.no_tma {
                    o.push(("tma", "false"));
                }
                if cfg.wgmma_wait_at_once {
                    o.push(("wgmma-in-flight", "false"));
                }
                if cfg.empty_barriers {
                    o.push(("empty-barriers", "true"));
                }
                // The producer learns from the empty mbarriers that a stage is free.
                if cfg.warp_specialize
                    && !cfg.disabled.contains("tile-warp-specialize")
                    && arch.has(tilec_core::target::Feature::Setmaxnreg)
                    && arch.has(tilec_core::target::Feature::Tma)
                {
                    o.push(("warp-specialize", "true"));
                    o.push(("occupancy", &occ));
                }
                o
            }
            "tile-grid-dependency" | "tile-cta-pair" => vec![("arch", arch.name)],
            "tile-warp-specialize" => {
                let mut o = vec![("arch", arch.name), ("occupancy", &occ)];
                if cfg.no_pingpong {
                    o.push(("pingpong", "false"));
                }
                o
            }
            "tile-to-llvm" => {
                let mut o = vec![("arch", arch.name), ("occupancy", &occ), ("fp-fusion", fusion)];
                if cfg.emulate_block_scale {
                    o.push(("emulate-block-scale", "true"));
                }
                if cfg.no_tma_store {
                    o.push(("tma-store", "false"));
                }
                o
            }
            _ => vec![],
        };
        steps.push(driver::Step::tilec(p, &opts));
    }
    steps.extend(TO_LLVM.iter().map(|n| driver::Step::Upstream { name: n.to_string(), text: n.to_string() }));
    steps
}
