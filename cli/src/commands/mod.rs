//! One file per command with options of its own; the small ones (`explain`, `passes`) and
//! what several commands share live here.

pub mod bench;
pub mod bisect;
pub mod cache;
pub mod check;
pub mod compile;
pub mod experiment;
pub mod opt;
pub mod run;
pub mod tune;

use crate::out;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use tilec::ConstArg;

/// The largest source file a command reads (a `.tile` kernel or a `.mlir` stage): far above
/// any real kernel, far below what would exhaust memory (`tilec compile /dev/zero`).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads a source file (`-`: standard input), at most [`MAX_INPUT_BYTES`], as UTF-8 text. A
/// leading byte-order mark is dropped and lone carriage returns (old Mac line endings)
/// become line feeds, byte for byte, so that spans still index the text.
pub fn read_input(file: &Path) -> Result<String> {
    let mut bytes = vec![];
    let what = if file.as_os_str() == "-" { "standard input".to_string() } else { file.display().to_string() };
    if file.as_os_str() == "-" {
        std::io::stdin().take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)
    } else {
        let f = std::fs::File::open(file).with_context(|| format!("cannot read {what}"))?;
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            bail!("{what} is a directory, not a source file");
        }
        f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)
    }
    .with_context(|| format!("cannot read {what}"))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        bail!("{what} is larger than {} MiB; tilec reads kernels and IR files up to that size", MAX_INPUT_BYTES >> 20);
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!("{what} is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to())
    })?;
    if let Some(at) = text.find('\0') {
        bail!("{what} holds a NUL byte at offset {at}: it is not a text file");
    }
    let text = text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text);
    Ok(normalize_line_endings(text))
}

/// Lone `\r` → `\n` (same length: spans stay valid); `\r\n` is left alone.
fn normalize_line_endings(text: String) -> String {
    if !text.contains('\r') {
        return text;
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        if c == '\r' && b.get(i + 1) != Some(&b'\n') {
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// `--const NAME=VALUE` items; a name given twice is an error.
pub fn parse_consts(items: &[String]) -> Result<BTreeMap<String, ConstArg>> {
    let mut out = BTreeMap::new();
    for it in items {
        let Some((k, v)) = it.split_once('=') else { bail!("--const takes NAME=VALUE, got `{it}`") };
        let k = k.trim();
        if k.is_empty() {
            bail!("--const `{it}` has no name");
        }
        let val = ConstArg::parse(v)
            .with_context(|| format!("--const {k}: cannot read `{v}` as an integer, bool, float or dtype"))?;
        if out.insert(k.to_string(), val).is_some() {
            bail!("--const {k} is given twice");
        }
    }
    Ok(out)
}

/// A printable stage for `--emit`, taken from the compiler's list of stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageArg(pub tilec::Stage);

impl clap::ValueEnum for StageArg {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::OnceLock<Vec<StageArg>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| tilec::Stage::ALL.iter().map(|s| StageArg(*s)).collect())
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name()))
    }
}

/// How diagnostics are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ErrorFormat {
    /// rustc-style text with the source line and carets, on standard error.
    Human,
    /// A JSON array on standard output, with line/column, for tools.
    Json,
}

pub fn explain(code: &str) -> Result<ExitCode> {
    match tilec_core::diag::lookup(code) {
        Some((c, title, long)) => {
            out::println(&format!("{c}: {title}\n\n{long}"))?;
            Ok(ExitCode::SUCCESS)
        }
        None => bail!("no diagnostic code `{code}`; codes run from E0001 (see `tilec explain E0001`)"),
    }
}

pub fn passes(upstream: bool) -> Result<ExitCode> {
    let mut s = String::new();
    if upstream {
        for u in tilec_passes::driver::upstream_passes() {
            let nest = if u.anchor == "builtin.module" { String::new() } else { format!(" [in {}(…)]", u.anchor) };
            s.push_str(&format!("{:42} {}{nest}\n", u.name, u.doc));
        }
        out::print(&s)?;
        return Ok(ExitCode::SUCCESS);
    }
    for p in tilec_passes::all_passes() {
        s.push_str(&format!("{:14} → {:8} {}\n", p.name, p.produces.name(), p.doc));
        for o in p.options {
            let default = if o.default.is_empty() { String::new() } else { format!(" (default {})", o.default) };
            s.push_str(&format!("    {:12} {}{default}\n", o.name, o.doc));
        }
    }
    s.push_str("\n`tilec opt --passes` also takes upstream MLIR passes (`tilec passes --upstream`).\n\n");
    for a in tilec::ARCHS {
        let steps: Vec<String> =
            tilec_passes::pipeline(a, None, &Default::default()).iter().map(|s| s.text()).collect();
        s.push_str(&format!("pipeline {}: {}\n", a.name, steps.join(",")));
    }
    out::print(&s)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_carriage_returns_become_newlines_in_place() {
        let t = normalize_line_endings("a\rb\r\nc\r".to_string());
        assert_eq!(t, "a\nb\r\nc\n");
    }

    #[test]
    fn repeated_constants_are_an_error() {
        assert!(parse_consts(&["N=1".into(), "N=2".into()]).unwrap_err().to_string().contains("twice"));
        assert!(parse_consts(&["=1".into()]).is_err());
        assert_eq!(parse_consts(&["T=f16".into()]).unwrap()["T"], ConstArg::DType(tilec::DType::F16));
    }
}

/// The pipeline switches of a compile (`tilec compile`, `tilec cache explain`) or a GPU run
/// (`tilec check`, `tilec bench`).
#[derive(clap::Args, Debug, Default)]
pub struct VariantArgs {
    /// Leave an optional pass out of the default pipeline (repeatable): tile-load-order,
    /// tile-approx-math, tile-persistent, tile-licm, tile-swizzle, tile-pipeline, tile-warp-specialize,
    /// tile-mma-overlap, tile-epilogue-overlap, tile-grid-dependency.
    #[arg(long = "disable-pass", value_name = "NAME")]
    pub disable_pass: Vec<String>,
    /// Options of a pass of the default pipeline, as a pipeline writes them (repeatable):
    /// `--pass-option 'tile-pipeline{distance=3}'` (`tilec passes` lists the options).
    #[arg(long = "pass-option", value_name = "PASS{OPTION=VALUE}")]
    pub pass_option: Vec<String>,
    /// Change the default pipeline's order (repeatable, applied in order):
    /// `after=PASS:ITEMS` or `before=PASS:ITEMS` inserts pipeline elements (upstream MLIR
    /// passes, tilec's or a registered user pass: `--pipeline-edit after=tile-layout:canonicalize,cse`),
    /// `move=PASS:after=OTHER` (or `before=`) moves a pass.
    #[arg(long = "pipeline-edit", value_name = "EDIT")]
    pub pipeline_edit: Vec<String>,
    /// Approximate every float op whose options the source leaves open (`tile-approx-math`):
    /// exp through exp2, div.approx, flush-to-zero.
    #[arg(long)]
    pub fast_math: bool,
    /// Keep every float product and sum separately rounded: no `fma` contraction of the
    /// source's `a * b + c` (on by default, as in Triton and nvcc).
    #[arg(long)]
    pub no_fp_fusion: bool,
    /// Keep `cp.async` rings where TMA (sm_90a) could fill them: the ablation of TMA.
    #[arg(long)]
    pub no_tma: bool,
    /// Keep sm_103a's products on mma.sync instead of tcgen05 and Tensor Memory: the
    /// ablation (and what `--emulate sm_103a` does on a chip without tcgen05).
    #[arg(long)]
    pub no_tcgen05: bool,
    /// Store GEMM and attention epilogues from registers instead of staging them in shared
    /// memory for TMA bulk stores: the ablation of TMA stores (`--no-tma` implies it).
    #[arg(long)]
    pub no_tma_store: bool,
    /// Wait for every wgmma where it is issued (wait depth 0): the ablation of keeping a
    /// GEMM's products in flight across K steps.
    #[arg(long)]
    pub wgmma_wait_at_once: bool,
    /// Release the stages of TMA rings on empty mbarriers instead of a block-wide barrier
    /// before each refill (an experiment: slower on FMHA on the H100).
    #[arg(long)]
    pub empty_barriers: bool,
    /// Give the TMA copies of every pipelined loop that allows it to a producer warpgroup
    /// (`tile-warp-specialize`), as a kernel's `warp_specialize = true` hint does.
    #[arg(long)]
    pub warp_specialize: bool,
    /// Keep the consumer warpgroups of a warp-specialized kernel from taking turns on the
    /// tensor cores (FlashAttention-3's ping-pong): the ablation.
    #[arg(long)]
    pub no_pingpong: bool,
    /// Make the kernel persistent (`tile-persistent`: as many blocks as the GPU holds at once,
    /// each walking tiles), as a kernel's `persistent = true` hint does.
    #[arg(long)]
    pub persistent: bool,
    /// Optimise the LLVM IR with LLVM's own default pipeline at the kernel's level instead of
    /// tilec's (LLVM's less the passes that find nothing in tilec's lowering): the ablation.
    #[arg(long)]
    pub llvm_default_pipeline: bool,
    /// Compile with another target's choices — its `by_target` values, shared memory per
    /// block, pipeline and instructions — into code for this one, padded so that no more
    /// blocks share an SM than on that target: `tilec check --emulate sm_121a` runs DGX
    /// Spark's tile configurations on an H100. The report lists what is not emulated.
    #[arg(long, value_name = "ARCH")]
    pub emulate: Option<String>,
    /// The kernel's text from this file instead of the library's (`tilec experiment`'s
    /// `source=`): an edited kernel, of the same name and arguments, checked against the
    /// library spec's reference and timed beside it.
    #[arg(skip)]
    pub source: Option<std::path::PathBuf>,
    /// Constants set over the case's (`tilec experiment`'s `NAME=true`: a bool constant the
    /// spec does not derive, which a case's integer constants cannot set).
    #[arg(skip)]
    pub const_overrides: Vec<(String, tilec::ConstArg)>,
}

impl VariantArgs {
    /// The file the kernel of `spec` is read from: the variant's source, or the library's.
    pub fn kernel_path(&self, kernels_dir: &std::path::Path, spec: &tilec_suite::Spec) -> std::path::PathBuf {
        self.source.clone().unwrap_or_else(|| kernels_dir.join(spec.file))
    }

    /// `o` with this variant's pipeline switches.
    pub fn apply(&self, mut o: tilec::CompileOptions) -> tilec::CompileOptions {
        o.consts.extend(self.const_overrides.iter().cloned());
        tilec::CompileOptions {
            disabled_passes: self.disable_pass.iter().cloned().collect(),
            fast_math: self.fast_math,
            no_fp_fusion: self.no_fp_fusion,
            no_tma: self.no_tma,
            no_tcgen05: self.no_tcgen05,
            no_tma_store: self.no_tma_store,
            wgmma_wait_at_once: self.wgmma_wait_at_once,
            empty_barriers: self.empty_barriers,
            warp_specialize: self.warp_specialize,
            no_pingpong: self.no_pingpong,
            persistent: self.persistent,
            llvm_default_pipeline: self.llvm_default_pipeline,
            emulate: self.emulate.clone(),
            pass_options: self.pass_option.clone(),
            pipeline_edits: self.pipeline_edit.clone(),
            ..o
        }
    }

    /// How the variant names itself in case labels (empty for the default pipeline).
    pub fn label(&self) -> String {
        // In name order, each once, whatever the order on the command line.
        let disabled: std::collections::BTreeSet<&String> = self.disable_pass.iter().collect();
        let mut v: Vec<String> = disabled.iter().map(|d| format!("-{d}")).collect();
        if self.fast_math {
            v.push("+fast-math".into());
        }
        if self.no_fp_fusion {
            v.push("-fp-fusion".into());
        }
        if self.no_tma {
            v.push("-tma".into());
        }
        if self.no_tcgen05 {
            v.push("-tcgen05".into());
        }
        if self.no_tma_store {
            v.push("-tma-store".into());
        }
        if self.wgmma_wait_at_once {
            v.push("wgmma-wait-0".into());
        }
        if self.empty_barriers {
            v.push("+empty-barriers".into());
        }
        if self.warp_specialize {
            v.push("+warp-specialize".into());
        }
        if self.no_pingpong {
            v.push("-pingpong".into());
        }
        if self.persistent {
            v.push("+persistent".into());
        }
        if self.llvm_default_pipeline {
            v.push("+llvm-default-pipeline".into());
        }
        if let Some(e) = &self.emulate {
            v.push(format!("emulating {e}"));
        }
        v.extend(self.pass_option.iter().cloned());
        v.extend(self.pipeline_edit.iter().cloned());
        if let Some(s) = &self.source {
            v.push(format!("source={}", s.display()));
        }
        v.extend(self.const_overrides.iter().map(|(k, c)| format!("{k}={c:?}")));
        v.join(" ")
    }
}

/// What a compile request names besides its file: target, kernel, constants, the tensors
/// without the 16-byte specialisation and the pipeline switches (`tilec compile`,
/// `tilec cache explain`).
#[derive(clap::Args, Debug)]
pub struct RequestArgs {
    /// Target: sm_90, sm_90a, sm_103, sm_103a, sm_121, sm_121a (plain names compile for the
    /// `a` variant, and say so).
    #[arg(long)]
    pub arch: String,
    /// Kernel name, when the file has several.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Compile-time constant override, NAME=VALUE (repeatable, each name once).
    #[arg(long = "const", value_name = "NAME=VALUE")]
    pub consts: Vec<String>,
    /// Tensor parameter not assumed 16-byte aligned (repeatable).
    #[arg(long)]
    pub unaligned: Vec<String>,
    #[command(flatten)]
    pub pipeline: VariantArgs,
}

impl RequestArgs {
    pub fn options(&self) -> Result<tilec::CompileOptions> {
        Ok(self.pipeline.apply(tilec::CompileOptions {
            arch: self.arch.clone(),
            kernel: self.kernel.clone(),
            consts: parse_consts(&self.consts)?,
            unaligned: self.unaligned.iter().cloned().collect(),
            ..Default::default()
        }))
    }
}
