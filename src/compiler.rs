//! The compile driver: `.tile` text → every stage → PTX.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tilec_core::abi::Signature;
use tilec_core::diag::{render, render_json, Diagnostic, Source};
use tilec_core::target::Arch;
use tilec_frontend::{ConstArg, Hints, Request};
use tilec_ir::Mlir;
use tilec_passes::driver::Step;

pub use tilec_passes::Stage;

/// What to compile and how.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// `sm_90`, `sm_90a`, `sm_103`, `sm_103a`, `sm_121`, `sm_121a`.
    pub arch: String,
    /// Kernel to compile when the file has several.
    pub kernel: Option<String>,
    /// Compile-time constant overrides.
    pub consts: BTreeMap<String, ConstArg>,
    /// Tensor parameters that may not be 16-byte aligned (compiled with scalar accesses).
    pub unaligned: BTreeSet<String>,
    /// Overrides the kernel's `opt_level` hint.
    pub opt_level: Option<u32>,
    /// Stop after this stage (`--emit`): the later stages are not run.
    pub until: Option<Stage>,
    /// Only the PTX (and the signature and report) is wanted: the `llvm` and `llvm-ir`
    /// stages, each a printing of the whole module, are not made (`Compiled::stage` gives ""
    /// for them); on FMHA that is ~20 ms of ~300. The cache and the JIT compile this way.
    pub ptx_only: bool,
    /// Optional passes left out of the default pipeline (`--disable-pass`).
    pub disabled_passes: BTreeSet<String>,
    /// Approximate every float op the source leaves to the compiler (`--fast-math`).
    pub fast_math: bool,
    /// Keep every float product and sum separately rounded (`--no-fp-fusion`).
    pub no_fp_fusion: bool,
    /// Keep `cp.async` rings where TMA could fill them (`--no-tma`; the ablation).
    pub no_tma: bool,
    /// Keep sm_103a's products on mma.sync (`--no-tcgen05`; the ablation).
    pub no_tcgen05: bool,
    /// Store epilogue tiles from registers rather than through TMA (`--no-tma-store`; the
    /// ablation; `no_tma` implies it).
    pub no_tma_store: bool,
    /// Wait for every wgmma where it is issued (`--wgmma-wait-at-once`; the ablation).
    pub wgmma_wait_at_once: bool,
    /// Release TMA ring stages on empty mbarriers (`--empty-barriers`; an experiment).
    pub empty_barriers: bool,
    /// Warp-specialize every kernel that allows it, as its `warp_specialize = true` hint
    /// would (`--warp-specialize`).
    pub warp_specialize: bool,
    /// No ping-pong between a warp-specialized kernel's consumer warpgroups
    /// (`--no-pingpong`; the ablation).
    pub no_pingpong: bool,
    /// Make every kernel persistent, as its `persistent = true` hint would (`--persistent`).
    pub persistent: bool,
    /// Compile with this target's choices — `by_target` values, shared memory, pipeline,
    /// instructions — into code for `arch` (`--emulate sm_121a` on an H100), padded so that
    /// no more blocks share an SM than on the emulated target.
    pub emulate: Option<String>,
    /// Options of passes of the default pipeline, as a pipeline writes them
    /// (`tile-pipeline{distance=3}`, `tile-layout{num-warps=4}`): each pass must be in the
    /// pipeline, each option its own, each value one it accepts (E0904 otherwise).
    pub pass_options: Vec<String>,
    /// Changes to the default pipeline's order, applied after the switches and options:
    /// `after=tile-layout:canonicalize` (pipeline elements inserted after or `before=` a
    /// pass — upstream passes, tilec's, registered user passes), `move=tile-licm:after=tile-pipeline`
    /// (`tilec_passes::driver::edit_pipeline`; E0904 for a pass the pipeline does not run).
    pub pipeline_edits: Vec<String>,
    /// Optimise the LLVM IR with LLVM's own `default<On>` pipeline instead of tilec's
    /// (`--llvm-default-pipeline`; see `tilec_backend::pipeline`): the ablation, and the way
    /// back should tilec's leave something undone in a kernel.
    pub llvm_default_pipeline: bool,
}

/// Loops a kernel may hold before LLVM's optimizer is left out (see [`compile`]).
pub const LOOP_BUDGET: usize = 256;

/// Everything one compilation produced.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The target compiled for.
    pub arch: &'static Arch,
    /// The user named a plain arch (`sm_121`) and the `a` variant was used.
    pub arch_substituted: bool,
    /// Every stage's text, the PTX included.
    pub stages: BTreeMap<Stage, String>,
    /// The kernel's ABI: its parameters, grid and block, shared memory.
    pub signature: Signature,
    /// The hints the kernel set (occupancy, warps, optimisation level).
    pub hints: Hints,
    /// What the passes decided, one line each.
    pub report: Vec<String>,
    /// The time each stage and pass took, in order (`tilec compile -T`).
    pub timings: Vec<(String, Duration)>,
}

impl Compiled {
    /// The compiled kernel as the CLI writes it and the cache stores it.
    pub fn artifact(&self) -> tilec_core::artifact::Artifact {
        tilec_core::artifact::Artifact {
            kernel: self.signature.name.clone(),
            target: self.arch.name.to_string(),
            signature: self.signature.clone(),
            hints: self.hints.clone(),
            report: self.report.clone(),
            tilec_version: env!("CARGO_PKG_VERSION").to_string(),
            ptx: self.ptx().to_string(),
        }
    }

    /// One stage's text; empty when the compile did not produce it.
    pub fn stage(&self, s: Stage) -> &str {
        self.stages.get(&s).map(String::as_str).unwrap_or("")
    }
    /// The PTX.
    pub fn ptx(&self) -> &str {
        self.stage(Stage::Ptx)
    }
}

/// A failed compilation: the diagnostics and the source they point into.
#[derive(Clone, Debug)]
pub struct CompileError {
    /// The diagnostics, in order.
    pub diagnostics: Vec<Diagnostic>,
    /// The source they point into.
    pub source: Source,
}

impl CompileError {
    /// The diagnostics rendered for a terminal, with the source lines they point at.
    pub fn render(&self) -> String {
        render(&self.diagnostics, &self.source)
    }
    /// The diagnostics as JSON lines (code, message, span, labels, notes).
    pub fn render_json(&self) -> String {
        render_json(&self.diagnostics, &self.source)
    }
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for CompileError {}

/// Compiles `.tile` source text.
pub fn compile(source: &Source, opts: &CompileOptions) -> Result<Compiled, CompileError> {
    let fail = |d: Vec<Diagnostic>| CompileError { diagnostics: d, source: source.clone() };
    let (arch, arch_substituted, choice) = targets(opts).map_err(|d| fail(vec![d]))?;
    let req = request(opts, arch, choice);
    let mut timings = vec![];
    let mut clock = Instant::now();
    let mut lap = |what: &str, timings: &mut Vec<(String, Duration)>| {
        timings.push((what.to_string(), clock.elapsed()));
        clock = Instant::now();
    };
    let el = tilec_frontend::check(&source.text, &req).map_err(fail)?;
    lap("frontend (parse, elaborate)", &mut timings);
    let mlir = Mlir::pooled().map_err(|d| fail(vec![d]))?;
    let mut stages = BTreeMap::new();

    let tile = el.func.to_mlir();
    mlir.parse(&tile, "tile").map_err(|d| fail(vec![d]))?;
    lap("MLIR context + verify tile", &mut timings);
    stages.insert(Stage::Tile, tile);
    let mut compiled = Compiled {
        arch,
        arch_substituted,
        stages,
        signature: el.signature.clone(),
        hints: el.hints.clone(),
        report: vec![],
        timings: vec![],
    };
    if opts.until == Some(Stage::Tile) {
        compiled.timings = timings;
        return Ok(compiled);
    }

    // The default pipeline, through the same driver as `tilec opt`.
    let steps = default_steps(&mlir, opts, &el.hints, arch, choice).map_err(|d| fail(vec![d]))?;

    let mut loops = 0usize;
    el.func.walk(&mut |op| loops += usize::from(matches!(op.kind, tilec_core::tir::OpKind::For { .. })));
    let mut driver = tilec_passes::driver::Driver::new(&mlir, tilec_passes::driver::Ir::Tile(el.func));
    let produces = |s: &Step| match s {
        Step::Tilec { pass, .. } => Some(pass.produces),
        Step::Upstream { .. } => None,
    };
    for (i, step) in steps.iter().enumerate() {
        driver.run(step).map_err(|d| fail(vec![d]))?;
        lap(&step.text(), &mut timings);
        let Step::Tilec { pass, .. } = step else { continue };
        // The `tile` stage is the frontend's output; the tile-level passes show in `tilegpu`.
        // A stage is the output of the last pass producing it.
        if pass.produces == Stage::Tile || steps[i + 1..].iter().any(|s| produces(s) == Some(pass.produces)) {
            continue;
        }
        compiled.stages.insert(pass.produces, driver.text().map_err(|d| fail(vec![d]))?);
        compiled.signature.block_threads = driver.facts.block_threads.unwrap_or(compiled.signature.block_threads);
        compiled.signature.shared_bytes = driver.facts.shared_bytes.unwrap_or(compiled.signature.shared_bytes);
        compiled.signature.tma = driver.facts.tma.clone();
        compiled.signature.persistent = driver.facts.persistent;
        compiled.signature.grid_dependency = driver.facts.grid_dependency;
        compiled.signature.cluster = driver.facts.cluster.max(1);
        if opts.until == Some(pass.produces) {
            compiled.report = driver.facts.report;
            compiled.timings = timings;
            return Ok(compiled);
        }
    }
    // Emulation: the code runs on `arch` with the emulated target's residency.
    if !std::ptr::eq(choice, arch) {
        compiled.signature.target = arch.name.to_string();
        let (blocks, pad) = tilec_core::target::emulation_padding(
            choice,
            arch,
            compiled.signature.block_threads,
            compiled.signature.shared_bytes,
        );
        compiled.signature.shared_pad = pad;
        use tilec_core::target::Feature;
        // tcgen05 is the one the lowering would use: its products become mma.sync (not
        // emulated, and said so); the others tilec does not emit for the emulated target.
        let not_emulated = if choice.has(Feature::Tcgen05) && !arch.has(Feature::Tcgen05) {
            format!("; NOT emulated: {}'s tcgen05 products and TMEM accumulators, run as mma.sync", choice.name)
        } else {
            String::new()
        };
        let block_scaled = if choice.has(Feature::BlockScaledMmaSync) && !arch.has(Feature::BlockScaledMmaSync) {
            format!("; {}'s block-scaled mma.sync (mma_scaled) emulated: fp8 mma.sync products (fp4 operands widened to e4m3 exactly) times the scale factors, read from the lanes and bytes the instruction reads them from (the tensor cores' own rounding is not)", choice.name)
        } else {
            String::new()
        };
        let missing: Vec<String> = choice
            .features
            .iter()
            .filter(|f| {
                !arch.has(**f) && !matches!(**f, Feature::Tcgen05 | Feature::BlockScaledMmaSync | Feature::PackedF32)
            })
            .map(|f| format!("{f:?}"))
            .collect();
        // The lowering pairs f32 ops into `vector<2xf32>` for a target with paired
        // arithmetic; LLVM makes each pair two scalar instructions elsewhere, with the same
        // operands and the same summation order.
        let paired = if choice.has(Feature::PackedF32) && !arch.has(Feature::PackedF32) {
            format!("; {}'s paired f32 arithmetic as two scalar instructions a pair (same order)", choice.name)
        } else {
            String::new()
        };
        driver.facts.report.push(format!(
            "emulation: {}'s by_target values, shared memory, pipeline and instructions, compiled for {}; {blocks} block(s) per SM as on {} (shared memory padded by {pad} bytes a block; registers not emulated){not_emulated}{block_scaled}{paired}{}",
            choice.name,
            arch.name,
            choice.name,
            if missing.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} features {} lacks, which tilec's lowering of {} does not use today: {}",
                    choice.name,
                    arch.name,
                    choice.name,
                    missing.join(", ")
                )
            }
        ));
    }
    // After the upstream conversions: the `llvm` stage.
    if !opts.ptx_only || opts.until == Some(Stage::Llvm) {
        compiled.stages.insert(Stage::Llvm, driver.text().map_err(|d| fail(vec![d]))?);
        lap("print the llvm stage", &mut timings);
    }
    compiled.report = std::mem::take(&mut driver.facts.report);
    if opts.until == Some(Stage::Llvm) {
        compiled.timings = timings;
        return Ok(compiled);
    }
    let mut opt = opts.opt_level.unwrap_or(el.hints.opt_level);
    // LLVM's loop passes (IndVarSimplify, LoopFullUnroll, LoopDeletion, LoopRotate) cost
    // quadratic time in the loops of one function: 1,500 loops take 10 s at O1–O3 and 3,000
    // about a minute, against 0.2 s at O0. Past LOOP_BUDGET loops LLVM runs at O0 and ptxas
    // (at its -O3) optimizes alone; the library's kernels have a handful.
    if loops > LOOP_BUDGET && opt > 0 {
        compiled.report.push(format!(
            "backend: {loops} loops (more than {LOOP_BUDGET}): LLVM at O0 instead of O{opt} (its loop passes are quadratic in the loops of a function); ptxas still optimizes"
        ));
        opt = 0;
    }
    let mut pipeline = if opts.llvm_default_pipeline {
        tilec_backend::Pipeline::llvm(opt)
    } else {
        tilec_backend::Pipeline::tilec(opt)
    };
    if el.hints.no_strength_reduction {
        pipeline = pipeline.without_strength_reduction();
    }
    // SAFETY: the translation builds its module in the context codegen hands it, and
    // hands the module over.
    let cg = unsafe {
        tilec_backend::codegen_translated(arch, pipeline, !opts.ptx_only, |ctx| {
            let m = driver.translate_into(ctx);
            lap("translate to LLVM IR", &mut timings);
            m
        })
    }
    .map_err(|d| fail(vec![d]))?;
    lap(&format!("LLVM {pipeline} + NVPTX codegen"), &mut timings);
    if let Some(ir) = cg.llvm_ir {
        compiled.stages.insert(Stage::LlvmIr, ir);
    }
    compiled.stages.insert(Stage::Ptx, cg.ptx);
    compiled.timings = timings;
    Ok(compiled)
}

/// The target the code is for, whether it was substituted, and the target whose choices the
/// code makes (the emulated one, or the code's own).
type Targets = (&'static tilec_core::target::Arch, bool, &'static tilec_core::target::Arch);

fn targets(opts: &CompileOptions) -> Result<Targets, Diagnostic> {
    let resolve = |a: &str| tilec_core::target::resolve(a).map_err(|m| Diagnostic::error("E0013", m));
    let (arch, substituted) = resolve(&opts.arch)?;
    let choice = match &opts.emulate {
        Some(e) => resolve(e)?.0,
        None => arch,
    };
    Ok((arch, substituted, choice))
}

/// The frontend's request for these options and the target whose choices the code makes.
fn request(opts: &CompileOptions, arch: &tilec_core::target::Arch, choice: &tilec_core::target::Arch) -> Request {
    let tcgen05 = |a: &tilec_core::target::Arch| a.has(tilec_core::target::Feature::Tcgen05);
    Request {
        kernel: opts.kernel.clone(),
        target: choice.name.to_string(),
        consts: opts.consts.clone(),
        unaligned: opts.unaligned.clone(),
        // As `default_steps`' `no_tcgen05`: the products take tcgen05 only where the chip
        // compiled for has it and the options leave it on.
        tcgen05: Some(tcgen05(choice) && tcgen05(arch) && !opts.no_tcgen05),
    }
}

/// The default pipeline `compile` runs for these options and hints: the code for `arch`,
/// with the choices of `choice` (the emulated target, or `arch` itself).
fn default_steps(
    mlir: &Mlir,
    opts: &CompileOptions,
    hints: &tilec_core::artifact::Hints,
    arch: &'static tilec_core::target::Arch,
    choice: &'static tilec_core::target::Arch,
) -> Result<Vec<Step>, Diagnostic> {
    let cfg = tilec_passes::PipelineConfig {
        disabled: opts.disabled_passes.clone(),
        fast_math: opts.fast_math,
        no_fp_fusion: opts.no_fp_fusion,
        no_tma: opts.no_tma || hints.no_tma,
        // The kernel's `tma = false` hint is about its rings; `--no-tma` switches TMA off whole.
        no_tma_store: opts.no_tma_store || opts.no_tma,
        // An emulated target's tcgen05 products run as mma.sync where the chip lacks it (the
        // emulation's report line says so).
        no_tcgen05: opts.no_tcgen05 || !arch.has(tilec_core::target::Feature::Tcgen05),
        wgmma_wait_at_once: opts.wgmma_wait_at_once,
        empty_barriers: opts.empty_barriers,
        warp_specialize: opts.warp_specialize || hints.warp_specialize,
        no_pingpong: opts.no_pingpong,
        persistent: opts.persistent || hints.persistent,
        cta_pair: hints.cta_pair,
        // sm_121a's block-scaled products on a chip without them (the report says so).
        emulate_block_scale: choice.has(tilec_core::target::Feature::BlockScaledMmaSync)
            && !arch.has(tilec_core::target::Feature::BlockScaledMmaSync),
    };
    tilec_passes::check_disabled(&cfg.disabled)?;
    let mut steps = tilec_passes::pipeline(choice, hints.occupancy, &cfg);
    for o in &opts.pass_options {
        tilec_passes::driver::set_options(&mut steps, o)?;
    }
    for e in &opts.pipeline_edits {
        tilec_passes::driver::edit_pipeline(mlir, &mut steps, e)?;
    }
    Ok(steps)
}

/// A kernel as the frontend makes it (its `tile` IR and signature) and the default pipeline
/// `compile` would run on it with these options — what `tilec bisect` walks pass by pass.
pub fn frontend_and_pipeline(
    source: &Source,
    opts: &CompileOptions,
) -> Result<(tilec_frontend::Elaborated, Vec<Step>), CompileError> {
    let fail = |d: Vec<Diagnostic>| CompileError { diagnostics: d, source: source.clone() };
    let (arch, _, choice) = targets(opts).map_err(|d| fail(vec![d]))?;
    let el = tilec_frontend::check(&source.text, &request(opts, arch, choice)).map_err(fail)?;
    let mlir = Mlir::pooled().map_err(|d| fail(vec![d]))?;
    let steps = default_steps(&mlir, opts, &el.hints, arch, choice).map_err(|d| fail(vec![d]))?;
    Ok((el, steps))
}
