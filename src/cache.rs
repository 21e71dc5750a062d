//! Compilation through the cache ([`tilec_runtime::cache`]): the key of a compile request,
//! and [`compile_cached`], which answers from memory or disk when it can and compiles (then
//! stores) when it cannot.

use crate::compiler::{compile, CompileError, CompileOptions};
use std::sync::Arc;
use std::time::Instant;
use tilec_core::{Diagnostic, Source};
use tilec_frontend::ConstArg;
use tilec_runtime::cache::{sha256_hex, Cache, CacheKey, Entry, Layer, Lookup, Miss, Resources};

/// The compiler's build id: a hash of its sources (see `build.rs`).
pub const BUILD_ID: &str = env!("TILEC_BUILD_ID");

/// The cache key of compiling `source` with `opts`: every input that decides the PTX.
/// `None` when the source does not parse or the arch is unknown (compiling says why).
/// Comments and spacing do not change it ([`tilec_frontend::canonical_text`]).
pub fn cache_key(source: &Source, opts: &CompileOptions) -> Option<CacheKey> {
    let canonical = tilec_frontend::canonical_text(&source.text)?;
    let (arch, _) = tilec_core::target::resolve(&opts.arch).ok()?;
    let consts: Vec<String> = opts.consts.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    let unaligned: Vec<&str> = opts.unaligned.iter().map(String::as_str).collect();
    let disabled: Vec<&str> = opts.disabled_passes.iter().map(String::as_str).collect();
    let mut pipeline = format!(
        "disabled=[{}] fast_math={} fp_fusion={} opt_level={}",
        disabled.join(","),
        opts.fast_math,
        !opts.no_fp_fusion,
        opts.opt_level.map(|o| o.to_string()).unwrap_or_else(|| "kernel".into())
    );
    // Named only when switched, so that the default pipeline's keys stay what they were.
    if opts.no_tma {
        pipeline.push_str(" tma=false");
    }
    if opts.no_tcgen05 {
        pipeline.push_str(" tcgen05=false");
    }
    if opts.no_tma_store {
        pipeline.push_str(" tma_store=false");
    }
    if opts.wgmma_wait_at_once {
        pipeline.push_str(" wgmma_in_flight=false");
    }
    if opts.empty_barriers {
        pipeline.push_str(" empty_barriers=true");
    }
    if opts.warp_specialize {
        pipeline.push_str(" warp_specialize=true");
    }
    if opts.no_pingpong {
        pipeline.push_str(" pingpong=false");
    }
    if opts.persistent {
        pipeline.push_str(" persistent=true");
    }
    if opts.llvm_default_pipeline {
        pipeline.push_str(" llvm_pipeline=default");
    }
    if let Some(e) = &opts.emulate {
        pipeline.push_str(&format!(" emulate={e}"));
    }
    if !opts.pass_options.is_empty() {
        pipeline.push_str(&format!(" pass_options=[{}]", opts.pass_options.join(",")));
    }
    if !opts.pipeline_edits.is_empty() {
        pipeline.push_str(&format!(" pipeline_edits=[{}]", opts.pipeline_edits.join(";")));
        // A registered user pass is code this build of tilec never saw: the binary that
        // registered it (its size and modification time) stands for its version.
        if tilec_passes::all_passes().len() > tilec_passes::PASSES.len() {
            let exe = std::env::current_exe().and_then(std::fs::metadata).ok();
            let id = exe.map(|m| format!("{}@{:?}", m.len(), m.modified().ok())).unwrap_or_default();
            pipeline.push_str(&format!(" user_passes_binary={id}"));
        }
    }
    Some(
        CacheKey::new()
            .field("source", sha256_hex(canonical.as_bytes()))
            .field("kernel", opts.kernel.clone().unwrap_or_default())
            .field("consts", consts.join(","))
            .field("target", arch.name)
            .field("unaligned", unaligned.join(","))
            .field("pipeline", pipeline)
            .field("tilec", env!("CARGO_PKG_VERSION"))
            .field("build", BUILD_ID)
            .field("llvm", tilec_backend::llvm_version())
            // The entry holds ptxas's cubin and resource report.
            .field("ptxas", tilec_backend::ptxas::ptxas_identity()),
    )
}

/// A compilation answered by the cache or done and stored.
#[derive(Clone, Debug)]
pub struct CachedCompile {
    /// The cache entry: the artifact, its key and digest.
    pub entry: Arc<Entry>,
    /// Where the entry came from (`None`: compiled now).
    pub hit: Option<Layer>,
    /// Why the lookup missed, when it did.
    pub miss: Option<Miss>,
    /// The cache folder could not be written (said once per [`Cache`]).
    pub warning: Option<String>,
}

impl CachedCompile {
    /// The spill warning of the entry's kernel, where ptxas reported spills (see
    /// [`spill_warning`]).
    pub fn spills(&self) -> Option<String> {
        spill_warning(&self.entry.artifact, self.entry.resources.as_ref()?)
    }
}

/// Compiles through `cache`: PTX (whatever `opts.until` says), plus a cubin and ptxas's
/// resource report when ptxas is installed. A damaged entry is recompiled and overwritten;
/// the cache never fails a compilation.
pub fn compile_cached(source: &Source, opts: &CompileOptions, cache: &Cache) -> Result<CachedCompile, CompileError> {
    let opts = CompileOptions { until: None, ptx_only: true, ..opts.clone() };
    // The same text and options as before (this process, or any through the request's
    // alias): no key to rebuild. The alias outlives the process, so it names the compiler
    // too: a rebuilt tilec must not be answered with the entry an older one made.
    let request = request_text(source, &opts);
    if let Some((entry, layer)) = cache.recall(&request) {
        return Ok(CachedCompile { entry, hit: Some(layer), miss: None, warning: cache.env_warning() });
    }
    let key = cache_key(source, &opts);
    let mut miss = None;
    if let Some(k) = &key {
        match cache.get(k) {
            Lookup::Hit(entry, layer) => {
                cache.remember(request, k);
                return Ok(CachedCompile { entry, hit: Some(layer), miss: None, warning: cache.env_warning() });
            }
            Lookup::Miss(m) => miss = Some(m),
        }
    }
    let start = Instant::now();
    let compiled = compile(source, &opts)?;
    let (cubin, resources) = match tilec_backend::find_ptxas() {
        Some(_) => match tilec_backend::ptxas(compiled.ptx(), compiled.arch) {
            Ok(r) => (Some(r.cubin.clone()), Some(resources(&r))),
            Err(d) => return Err(CompileError { diagnostics: vec![ptxas_failed(d)], source: source.clone() }),
        },
        None => (None, None),
    };
    let entry = Entry {
        key: key.clone().unwrap_or_default(),
        artifact: compiled.artifact(),
        cubin,
        resources,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
    };
    let warning = match &key {
        Some(k) => {
            let w = cache.put(entry.clone());
            cache.remember(request, k);
            w
        }
        None => None,
    };
    let warning = match (warning, cache.env_warning()) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    Ok(CachedCompile { entry: Arc::new(entry), hit: None, miss, warning })
}

/// The text a request alias is keyed by: the compiler (build id, LLVM, the ptxas whose
/// cubin the entry holds), the source and the options.
fn request_text(source: &Source, opts: &CompileOptions) -> String {
    format!(
        "{BUILD_ID}\u{0}{}\u{0}{}\u{0}{}\u{0}{opts:?}",
        tilec_backend::llvm_version(),
        tilec_backend::ptxas::ptxas_identity(),
        source.text
    )
}

/// The warning for a kernel ptxas spills registers of (`None` without spill stores): the
/// kernel, the target, the bytes, the registers a thread, and the tiles that hold the most
/// registers a thread by the layout pass's report (blocked tiles' elements a thread, the
/// products' f32 accumulators), so that the author knows which tile to shrink.
pub fn spill_warning(artifact: &tilec_core::artifact::Artifact, r: &Resources) -> Option<String> {
    if r.spill_stores == 0 {
        return None;
    }
    // The warps the tiles are laid out over (a producer warpgroup holds none of them).
    let threads = i64::from(artifact.hints.num_warps.max(1)) * 32;
    let mut tiles: Vec<(i64, String)> = vec![];
    for l in &artifact.report {
        let Some(rest) = l.strip_prefix("tile-layout: ") else { continue };
        let dims = |s: &str| -> Option<Vec<i64>> {
            let inner = s.split_once('[')?.1.split_once(']')?.0;
            inner.split(',').map(|d| d.trim().parse().ok()).collect()
        };
        if let Some(t) = rest.strip_prefix("tile ") {
            let per = t.split_once(" elements per thread").and_then(|(a, _)| a.rsplit(' ').next()?.parse().ok());
            if let (Some(d), Some(per)) = (dims(t), per) {
                tiles.push((per, format!("tile {d:?}")));
            }
        } else if let Some(m) = rest.strip_prefix("mma ") {
            if let Some(d) = dims(m).filter(|d| d.len() == 3) {
                tiles.push((d[0] * d[1] / threads, format!("the f32 accumulator [{}, {}] of an mma", d[0], d[1])));
            }
        }
    }
    tiles.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    tiles.dedup();
    let top: Vec<String> = tiles.iter().take(3).map(|(n, t)| format!("{t}: {n} a thread")).collect();
    Some(format!(
        "kernel `{}` ({}) spills registers: ptxas reports {} bytes of spill stores and {} of spill loads at {} registers a thread{}",
        artifact.kernel,
        artifact.target,
        r.spill_stores,
        r.spill_loads,
        r.registers,
        if top.is_empty() { String::new() } else { format!("; the tiles holding the most: {}", top.join(", ")) }
    ))
}

/// What the cache keeps of ptxas's report (the runtime does not link the backend).
pub fn resources(r: &tilec_backend::PtxasReport) -> Resources {
    Resources {
        registers: r.registers,
        shared_bytes: r.shared_bytes,
        stack_bytes: r.stack_bytes,
        spill_stores: r.spill_stores,
        spill_loads: r.spill_loads,
    }
}

fn ptxas_failed(d: Diagnostic) -> Diagnostic {
    d.with_note("ptxas rejected the PTX tilec produced: this is a tilec bug")
}

/// A tune space as `tilec tune` files it: the kernel's `tune` block (`tune`, from the
/// elaborator), values spelled as on the command line, without the names fixed by `fixed`.
pub fn tune_space(
    tune: &[(String, Vec<ConstArg>)],
    fixed: &std::collections::BTreeMap<String, ConstArg>,
) -> Vec<(String, Vec<String>)> {
    tune.iter()
        .filter(|(n, _)| !fixed.contains_key(n))
        .map(|(n, cs)| (n.clone(), cs.iter().map(const_text).collect()))
        .collect()
}

/// A constant's value as the command line spells it (`128`, `true`, `f16`).
pub fn const_text(c: &ConstArg) -> String {
    match c {
        ConstArg::Int(v) => v.to_string(),
        ConstArg::Bool(b) => b.to_string(),
        ConstArg::Float(f) => f.to_string(),
        ConstArg::DType(d) => d.to_string(),
    }
}

/// The key a tuning result is filed under (`tilec_runtime::tune`): the canonical source,
/// the kernel, the fixed constants, the space, the target, the build and the shape bucket of
/// the tensor arguments. `tilec tune` files under it and the JIT (`KernelSpec::tuned`) looks
/// it up, so both must build it here.
pub fn tune_key(
    source: &Source,
    kernel: &str,
    fixed: &std::collections::BTreeMap<String, ConstArg>,
    space: &[(String, Vec<String>)],
    target: &tilec_core::target::Arch,
    shapes: &[Vec<i64>],
) -> CacheKey {
    tuning_fields(source, kernel, fixed, ("space", format!("{space:?}")), target, shapes)
}

/// The fields [`tune_key`] and [`measure_key`] share, in their order, with `what` (the space,
/// or one configuration) after the fixed constants.
fn tuning_fields(
    source: &Source,
    kernel: &str,
    fixed: &std::collections::BTreeMap<String, ConstArg>,
    what: (&str, String),
    target: &tilec_core::target::Arch,
    shapes: &[Vec<i64>],
) -> CacheKey {
    let canonical = tilec_frontend::canonical_text(&source.text).unwrap_or_default();
    let fixed_text: Vec<String> = fixed.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    CacheKey::new()
        .field("source", sha256_hex(canonical.as_bytes()))
        .field("kernel", kernel)
        .field("consts", fixed_text.join(","))
        .field(what.0, what.1)
        .field("target", target.name)
        .field("build", BUILD_ID)
        .field("tilec", env!("CARGO_PKG_VERSION"))
        .field("shapes", tilec_runtime::tune::shape_bucket(shapes))
}

/// The key one configuration's outcome is filed under (`tilec_runtime::tune::save_measurement`):
/// the fields of [`tune_key`] without the space — a measurement holds for its configuration
/// whatever else is tried — plus the configuration, the device and the timed repetitions. A
/// grown or reordered space finds the configurations it had and times only the new ones.
#[allow(clippy::too_many_arguments)]
pub fn measure_key(
    source: &Source,
    kernel: &str,
    fixed: &std::collections::BTreeMap<String, ConstArg>,
    config: &tilec_runtime::tune::Config,
    target: &tilec_core::target::Arch,
    shapes: &[Vec<i64>],
    device: &str,
    reps: usize,
) -> CacheKey {
    let config_text: Vec<String> = config.iter().map(|(k, v)| format!("{k}={v}")).collect();
    tuning_fields(source, kernel, fixed, ("config", config_text.join(",")), target, shapes)
        .field("device", device)
        .field("reps", reps.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measurement's key is the configuration's, not the space's: the same point of two
    /// spaces has one key; another value, device or shape bucket another.
    #[test]
    fn a_measurement_key_names_its_configuration_not_the_space() {
        let src = Source::new("k.tile", "kernel k(X: tensor<f32, [N]>) grid = (1, 1, 1) { }".to_string());
        let arch = tilec_core::target::by_name("sm_90a").unwrap();
        let fixed = std::collections::BTreeMap::new();
        let cfg = |n: &str| tilec_runtime::tune::Config::from([("TILE_N".to_string(), n.to_string())]);
        let k = |c: &tilec_runtime::tune::Config, dev: &str, shape: i64| {
            measure_key(&src, "k", &fixed, c, arch, &[vec![shape]], dev, 50).digest()
        };
        assert_eq!(k(&cfg("128"), "H100", 1000), k(&cfg("128"), "H100", 1024));
        assert_ne!(k(&cfg("128"), "H100", 1024), k(&cfg("64"), "H100", 1024));
        assert_ne!(k(&cfg("128"), "H100", 1024), k(&cfg("128"), "H200", 1024));
        assert_ne!(k(&cfg("128"), "H100", 1024), k(&cfg("128"), "H100", 4096));
    }

    /// A spill is said with the kernel, the bytes and the tiles holding the most registers
    /// (read from the layout pass's report of a real compilation); no spill, no warning.
    #[test]
    fn a_spill_names_the_kernel_the_bytes_and_the_largest_tiles() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/fmha.tile");
        let src = Source::new("fmha.tile", std::fs::read_to_string(path).unwrap());
        let c = compile(&src, &CompileOptions { arch: "sm_90a".into(), ..Default::default() }).unwrap();
        let art = c.artifact();
        let r = Resources { registers: 255, shared_bytes: 0, stack_bytes: 24, spill_stores: 20, spill_loads: 24 };
        let w = spill_warning(&art, &r).expect("a warning");
        assert!(w.starts_with("kernel `fmha` (sm_90a) spills registers"), "{w}");
        assert!(w.contains("20 bytes of spill stores and 24 of spill loads at 255 registers"), "{w}");
        // 256 consumer threads: the [128, 128] accumulators hold 64 f32 a thread.
        assert!(w.contains("the f32 accumulator [128, 128] of an mma: 64 a thread"), "{w}");
        assert_eq!(spill_warning(&art, &Resources { spill_stores: 0, ..r }), None);
    }

    /// A request alias outlives the process: one written by another build of tilec (or
    /// against another LLVM) must not answer this one's requests with that build's entry.
    #[test]
    fn a_request_alias_names_the_compiler() {
        let src = Source::new("k.tile", "kernel k() {}");
        let t = request_text(&src, &CompileOptions::default());
        assert!(t.starts_with(BUILD_ID), "{t}");
        assert!(t.contains(&tilec_backend::llvm_version()), "{t}");
        assert!(t.contains(&tilec_backend::ptxas::ptxas_identity()), "{t}");
        assert!(t.contains("kernel k() {}"), "{t}");
    }
}
