//! The pass driver: one pipeline string mixing tilec passes and upstream MLIR passes.
//!
//! A pipeline is a comma-separated list, MLIR-style: `tile-layout{num-warps=8},canonicalize,
//! cse,tile-to-llvm{arch=sm_121a}`; an item may be any upstream pipeline element, nesting
//! included (`func.func(cse)`). [`parse_pipeline`] checks every name and option before
//! anything runs: a tilec pass's options against [`PassInfo::options`], an upstream item by
//! having MLIR parse it. An unknown name is an error listing the close matches among tilec's
//! passes and the upstream passes of MLIR 22 ([`UPSTREAM`]).
//!
//! [`Driver`] carries the kernel between passes in whichever form the next pass needs:
//! tilec passes work on the Rust form (`tir::Func`), upstream ones on an MLIR module, and the
//! driver converts with the printer and `tilec_ir::read_func`. Every pass's output is
//! verified by MLIR before the next pass sees it, so a broken result is blamed on the pass
//! that produced it. `tilec compile` runs its default pipeline through this same driver.

use crate::{all_passes, PassInfo};
use std::collections::BTreeMap;
use tilec_core::diag::close_matches;
use tilec_core::tir::verify::{verify, Level};
use tilec_core::tir::{Func, PrintOptions};
use tilec_core::Diagnostic;
use tilec_ir::{read_func_with, Mlir, Module};

/// Upstream passes of the linked MLIR: `name\tanchor op\tdescription` lines (see the
/// file's header).
pub const UPSTREAM: &str = include_str!("upstream_passes.txt");

/// Upstream passes tilec refuses to run, and why: the first crashed the process in a sweep
/// of every upstream pass over the `tile`, `tilegpu` and `llvm` stages of softmax (MLIR
/// 22.1.8); the other two are not linked (`ir/cpp/registry.cpp`). They are left out of
/// [`UPSTREAM`] and named in the error.
pub const REFUSED_UPSTREAM: &[(&str, &str)] = &[
    ("xegpu-propagate-layout", "it segfaults in MLIR 22.1.8 on any module holding an `llvm.func`"),
    ("llvm-target-to-data-layout", NOT_LINKED),
    ("llvm-target-to-target-features", NOT_LINKED),
];

/// Why the `llvm-target-to-*` passes are refused.
const NOT_LINKED: &str = "it is not linked into tilec: it initialises every LLVM back end to find the one it is given";

/// An upstream pass: name, the op it runs on (`builtin.module`: any), description.
#[derive(Clone, Copy, Debug)]
pub struct Upstream {
    pub name: &'static str,
    pub anchor: &'static str,
    pub doc: &'static str,
}

/// The upstream passes in [`UPSTREAM`].
pub fn upstream_passes() -> impl Iterator<Item = Upstream> {
    UPSTREAM.lines().filter(|l| !l.starts_with('#')).filter_map(|l| {
        let mut f = l.splitn(3, '\t');
        Some(Upstream { name: f.next()?, anchor: f.next()?, doc: f.next()? })
    })
}

/// One element of a pipeline.
#[derive(Clone, Debug)]
pub enum Step {
    /// A tilec pass with its options (every option present: given or default).
    Tilec { pass: &'static PassInfo, options: BTreeMap<&'static str, String> },
    /// An upstream pipeline element, as written (`cse`, `func.func(canonicalize)`).
    Upstream { name: String, text: String },
}

impl Step {
    /// A tilec pass with the given options (the rest at their defaults; an empty value
    /// leaves the option to the kernel).
    pub fn tilec(pass: &'static PassInfo, given: &[(&str, &str)]) -> Step {
        let mut options: BTreeMap<&'static str, String> =
            pass.options.iter().map(|o| (o.name, o.default.to_string())).collect();
        for (k, v) in given {
            let known = pass.options.iter().find(|o| o.name == *k);
            debug_assert!(known.is_some(), "`{}` has no option `{k}`", pass.name);
            if let Some(o) = known {
                options.insert(o.name, v.to_string());
            }
        }
        Step::Tilec { pass, options }
    }

    /// The pass name (`--print-after` matches it; the dumps show it).
    pub fn name(&self) -> &str {
        match self {
            Step::Tilec { pass, .. } => pass.name,
            Step::Upstream { name, .. } => name,
        }
    }

    /// The step as pipeline text.
    pub fn text(&self) -> String {
        match self {
            Step::Tilec { pass, options } => {
                // Options left to the kernel (empty) are not spelled out.
                let o: Vec<String> =
                    options.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k}={v}")).collect();
                if o.is_empty() {
                    pass.name.to_string()
                } else {
                    format!("{}{{{}}}", pass.name, o.join(" "))
                }
            }
            Step::Upstream { text, .. } => text.clone(),
        }
    }

    fn option(&self, name: &str) -> &str {
        match self {
            Step::Tilec { options, .. } => options.get(name).map(String::as_str).unwrap_or(""),
            Step::Upstream { .. } => "",
        }
    }
}

fn bad(msg: String) -> Diagnostic {
    Diagnostic::error("E0904", msg)
}

/// Splits at the commas outside brackets (a pipeline's elements, a variant's switches).
pub fn split_items(text: &str) -> Result<Vec<&str>, Diagnostic> {
    let (mut depth, mut start, mut out) = (0i32, 0, vec![]);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err(bad(format!("unbalanced `{c}` at byte {i} of the pipeline `{text}`")));
        }
    }
    if depth != 0 {
        return Err(bad(format!("unclosed bracket in the pipeline `{text}`")));
    }
    out.push(text[start..].trim());
    Ok(out)
}

/// Parses and checks a pipeline; nothing runs.
pub fn parse_pipeline(mlir: &Mlir, text: &str) -> Result<Vec<Step>, Diagnostic> {
    let t = text.trim();
    let t = t.strip_prefix("builtin.module(").and_then(|x| x.strip_suffix(')')).unwrap_or(t);
    let mut steps = vec![];
    for item in split_items(t)? {
        if item.is_empty() {
            return Err(bad(format!("empty element in the pipeline `{text}`")));
        }
        let name_end = item.find(['{', '(']).unwrap_or(item.len());
        let name = item[..name_end].trim();
        if let Some(pass) = all_passes().into_iter().find(|p| p.name == name) {
            steps.push(Step::Tilec { pass, options: parse_options(pass, &item[name_end..])? });
            continue;
        }
        if let Some((_, why)) = REFUSED_UPSTREAM.iter().find(|(n, _)| item.contains(n)) {
            return Err(bad(format!("tilec does not run the upstream pass in `{item}`: {why}")));
        }
        if let Err(msg) = mlir.check_pipeline(&format!("builtin.module({item})")) {
            let known = upstream_passes().find(|u| u.name == name);
            if known.is_some() || name.contains('.') {
                // A real pass (or an op anchor) written wrongly: MLIR's message says how.
                let mut d = bad(format!("bad pipeline element `{item}`")).with_note(msg.trim().to_string());
                if let Some(u) = known.filter(|u| u.anchor != "builtin.module") {
                    d = d.with_note(format!("`{name}` runs on `{}` ops: write `{}({item})`", u.anchor, u.anchor));
                }
                return Err(d);
            }
            let names = all_passes().into_iter().map(|p| p.name).chain(upstream_passes().map(|u| u.name));
            let mut d = bad(format!("unknown pass `{name}`"));
            let close = close_matches(name, names);
            if !close.is_empty() {
                d = d.with_note(format!("did you mean: {}?", close.join(", ")));
            }
            return Err(d.with_note("`tilec passes` lists tilec's passes; `tilec passes --upstream` the MLIR ones"));
        }
        steps.push(Step::Upstream { name: name.to_string(), text: item.to_string() });
    }
    Ok(steps)
}

/// Sets the options `text` gives (`tile-pipeline{distance=3}`, the pipeline's spelling) on
/// the step of that pass in `steps`, the others kept; an error (E0904) for a pass the
/// pipeline does not run, an unknown option or a value the option refuses.
pub fn set_options(steps: &mut [Step], text: &str) -> Result<(), Diagnostic> {
    let t = text.trim();
    let name_end = t.find('{').unwrap_or(t.len());
    let name = t[..name_end].trim();
    let Some(Step::Tilec { pass, options }) = steps.iter_mut().find(|s| s.name() == name) else {
        let running: Vec<&str> = steps.iter().map(Step::name).collect();
        return Err(bad(format!("pass options `{t}`: the pipeline runs no tilec pass `{name}`"))
            .with_note(format!("it runs {}", running.join(", "))));
    };
    if t[name_end..].trim().is_empty() {
        return Err(bad(format!("pass options `{t}`: write them as `{name}{{option=value …}}`")));
    }
    // Only the options `text` names: the pipeline's own settings of the others stay.
    options.extend(given_options(pass, &t[name_end..])?);
    Ok(())
}

/// Changes the order of `steps` as `edit` says, checked before anything runs (E0904):
///
/// - `after=ANCHOR:ITEMS` / `before=ANCHOR:ITEMS` — the pipeline elements `ITEMS` (any
///   pipeline text: an upstream pass, a tilec pass with options, a registered user pass;
///   `after=tile-layout:canonicalize,cse`, or in brackets where the edit sits in a list of
///   its own, `after=tile-layout:(canonicalize,cse)`) go right after / before the first step
///   named `ANCHOR`;
/// - `move=PASS:after=ANCHOR` / `move=PASS:before=ANCHOR` — the step named `PASS` moves.
///
/// An anchor or pass the pipeline does not run is an error listing what it runs. Whether the
/// new order makes sense is for the passes to say: each checks its input (`E0905`).
pub fn edit_pipeline(mlir: &Mlir, steps: &mut Vec<Step>, edit: &str) -> Result<(), Diagnostic> {
    let e = edit.trim();
    let usage =
        || bad(format!("pipeline edit `{e}`: write `after=PASS:ITEMS`, `before=PASS:ITEMS` or `move=PASS:after=PASS`"));
    let (verb, rest) = e.split_once('=').ok_or_else(usage)?;
    let (first, second) = rest.split_once(':').ok_or_else(usage)?;
    let (first, second) = (first.trim(), second.trim());
    let position = |steps: &[Step], name: &str| {
        steps.iter().position(|s| s.name() == name).ok_or_else(|| {
            let running: Vec<&str> = steps.iter().map(Step::name).collect();
            bad(format!("pipeline edit `{e}`: the pipeline runs no `{name}`"))
                .with_note(format!("it runs {}", running.join(", ")))
        })
    };
    match verb.trim() {
        "after" | "before" => {
            let anchor = position(steps, first)?;
            // `(canonicalize,cse)`: several elements where the edit is one item of a list.
            let second = second.strip_prefix('(').and_then(|t| t.strip_suffix(')')).unwrap_or(second);
            let items = parse_pipeline(mlir, second).map_err(|d| d.with_note(format!("in the pipeline edit `{e}`")))?;
            let at = if verb.trim() == "after" { anchor + 1 } else { anchor };
            steps.splice(at..at, items);
        }
        "move" => {
            let (side, anchor) = second.split_once('=').ok_or_else(usage)?;
            let from = position(steps, first)?;
            let step = steps.remove(from);
            let anchor = match position(steps, anchor.trim()) {
                Ok(a) => a,
                Err(d) => {
                    steps.insert(from, step);
                    return Err(d);
                }
            };
            let at = match side.trim() {
                "after" => anchor + 1,
                "before" => anchor,
                _ => {
                    steps.insert(from, step);
                    return Err(usage());
                }
            };
            steps.insert(at, step);
        }
        _ => return Err(usage()),
    }
    Ok(())
}

/// `{a=1 b=2}` → every option of `pass`, defaults filled in, values checked.
fn parse_options(pass: &'static PassInfo, text: &str) -> Result<BTreeMap<&'static str, String>, Diagnostic> {
    let mut out: BTreeMap<&'static str, String> =
        pass.options.iter().map(|o| (o.name, o.default.to_string())).collect();
    out.extend(given_options(pass, text)?);
    Ok(out)
}

/// `{a=1 b=2}` → the options it names, each an option of `pass` with a value it accepts.
fn given_options(pass: &'static PassInfo, text: &str) -> Result<Vec<(&'static str, String)>, Diagnostic> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(vec![]);
    }
    let inner = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')).ok_or_else(|| {
        bad(format!("`{}` takes options as `{}{{name=value …}}`, not `{text}`", pass.name, pass.name))
    })?;
    let mut out = vec![];
    for kv in inner.split_whitespace() {
        let (k, v) =
            kv.split_once('=').ok_or_else(|| bad(format!("option `{kv}` of `{}` needs a value", pass.name)))?;
        let Some(opt) = pass.options.iter().find(|o| o.name == k) else {
            let mut d = bad(format!("`{}` has no option `{k}`", pass.name));
            let close = close_matches(k, pass.options.iter().map(|o| o.name));
            if !close.is_empty() {
                d = d.with_note(format!("did you mean: {}?", close.join(", ")));
            }
            let all: Vec<&str> = pass.options.iter().map(|o| o.name).collect();
            let all = if all.is_empty() { "none".to_string() } else { all.join(", ") };
            return Err(d.with_note(format!("its options: {all}")));
        };
        (opt.check)(v).map_err(|why| bad(format!("`{}{{{k}={v}}}`: {why}", pass.name)))?;
        out.push((opt.name, v.to_string()));
    }
    Ok(out)
}

/// The kernel between two passes.
#[derive(Clone, Debug)]
pub enum Ir {
    /// MLIR text of any stage (verified when it was produced).
    Text(String),
    /// The Rust form of the `tile`/`tilegpu` stages.
    Tile(Func),
}

/// What the passes found out about the kernel on the way (for the ABI and `--report`).
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub block_threads: Option<u32>,
    pub shared_bytes: Option<u32>,
    /// The tensor maps the lowered kernel takes (the signature's `tma`).
    pub tma: Vec<tilec_core::abi::TmaParam>,
    /// The lowered kernel takes a tile count (the signature's `persistent`).
    pub persistent: bool,
    /// The lowered kernel opens with `griddepcontrol.wait` (the signature's `grid_dependency`).
    pub grid_dependency: bool,
    /// CTAs a block of the grid runs on (the signature's `cluster`; 0: not lowered yet).
    pub cluster: u32,
    pub report: Vec<String>,
}

/// Runs steps one at a time over a kernel.
#[derive(Debug)]
pub struct Driver<'m> {
    mlir: &'m Mlir,
    ir: Ir,
    /// The kernel as a parsed module, when the last step left one: an upstream pass's result
    /// (then `ir` is stale) or `tile-to-llvm`'s text parsed for its check (then `ir` is that
    /// same text: `synced`). The next upstream pass runs on it, so a run of upstream passes
    /// parses once and prints once — at the end, for the stage's text — instead of a print
    /// and a parse between every two (on FMHA most of the conversions' time).
    live: Option<Module<'m>>,
    synced: bool,
    /// The upstream passes whose result `live` is, not verified since: upstream passes run
    /// without MLIR's verifier after each ([`Mlir::run_pipeline`]), and the module is
    /// verified once where it is read — by a tilec pass, the translation or its text — and
    /// a failure names the run of passes that made it.
    unverified: std::cell::RefCell<Vec<String>>,
    /// The tilec passes whose output `ir` (tile IR) is, not parsed by MLIR since, and the
    /// stage it is in: each pass's output is checked against tilec's rules where the pass
    /// hands it back, and MLIR parses the kernel once where it is next read as text — the
    /// stage's print, an upstream pass, the translation — instead of after every pass (a
    /// print and a parse each: 4 % of an MLA decode compile). A failure names these passes.
    unparsed: std::cell::RefCell<Vec<(String, Level)>>,
    pub facts: Facts,
    /// The source the kernel's spans index: with it, upstream passes see (and keep) every
    /// op's location, and the reader turns locations back into spans.
    source: Option<tilec_core::Source>,
}

impl<'m> Driver<'m> {
    pub fn new(mlir: &'m Mlir, ir: Ir) -> Driver<'m> {
        Driver {
            mlir,
            ir,
            live: None,
            synced: false,
            unverified: Default::default(),
            unparsed: Default::default(),
            facts: Facts::default(),
            source: None,
        }
    }

    /// The driver over a kernel whose spans index `source`.
    pub fn with_source(mut self, source: tilec_core::Source) -> Driver<'m> {
        self.source = Some(source);
        self
    }

    /// Verifies the module the last upstream passes left, once (`unverified` is non-empty
    /// only while `live` is their result: every read of it verifies and empties it).
    fn verify_unverified(&self, m: &Module<'_>) -> Result<(), Diagnostic> {
        let passes = std::mem::take(&mut *self.unverified.borrow_mut());
        if passes.is_empty() {
            return Ok(());
        }
        self.mlir.verify(m, &format!("output of {}", passes.join(", ")))
    }

    /// Has MLIR parse `text`, the tile IR the tilec passes in `unparsed` left, once
    /// (`unparsed` is non-empty only while `ir` is their output: every read of it as text
    /// parses and empties it).
    fn parse_unparsed(&self, text: &str) -> Result<(), Diagnostic> {
        let passes = std::mem::take(&mut *self.unparsed.borrow_mut());
        let Some((_, level)) = passes.last() else { return Ok(()) };
        let stage = if *level == Level::Tile { "tile" } else { "tilegpu" };
        self.mlir.parse(text, stage).map(drop).map_err(|d| blame_unparsed(d, &passes))
    }

    /// The kernel's current text.
    pub fn text(&self) -> Result<String, Diagnostic> {
        if let Some(m) = &self.live {
            self.verify_unverified(m)?;
        }
        Ok(match (&self.live, &self.ir) {
            (Some(m), _) if !self.synced => match self.source {
                Some(_) => self.mlir.print_with_locations(m),
                None => self.mlir.print(m),
            },
            (_, Ir::Text(t)) => t.clone(),
            (_, Ir::Tile(f)) => {
                let t = f.to_mlir();
                self.parse_unparsed(&t)?;
                t
            }
        })
    }

    /// The kernel (in the `llvm` and `nvvm` dialects) translated into a new LLVM module of
    /// `llvm_context`: from the module the last upstream pass left, else parsed from its
    /// text (see [`Mlir::translate_into`]).
    ///
    /// # Safety
    /// As [`Mlir::translate_into`].
    pub unsafe fn translate_into(
        &mut self,
        llvm_context: *mut std::ffi::c_void,
    ) -> Result<*mut std::ffi::c_void, Diagnostic> {
        let module = match self.live.take() {
            Some(m) => m,
            None => {
                let m = self.mlir.parse(&self.text()?, "llvm")?;
                self.synced = true;
                m
            }
        };
        self.verify_unverified(&module)?;
        // SAFETY: the caller's contract.
        let translated = unsafe { self.mlir.translate_into(&module, llvm_context) };
        self.live = Some(module);
        translated
    }

    /// The kernel as tile IR for a tilec pass, checked against the rules of the stage it
    /// must be in (`E0905`): a pass never works on ill-formed IR. A pass takes the kernel,
    /// rewrites it and hands it back with [`Driver::set_func`] (a pass of another crate
    /// too: `PassInfo::run` is any function of this shape).
    pub fn take_func(&mut self, pass: &str, level: Level) -> Result<Func, Diagnostic> {
        if let Some(m) = &self.live {
            self.verify_unverified(m)?;
            let f = read_func_with(m, self.source.as_ref())?;
            verify(&f, level).map_err(|d| d.with_note(format!("in the input of `{pass}`")))?;
            return Ok(f);
        }
        let f = match std::mem::replace(&mut self.ir, Ir::Text(String::new())) {
            Ir::Tile(f) => f,
            Ir::Text(t) => {
                let f = self.mlir.read(&t, &format!("input of {pass}"), self.source.as_ref());
                self.ir = Ir::Text(t);
                f?
            }
        };
        verify(&f, level).map_err(|d| d.with_note(format!("in the input of `{pass}`")))?;
        Ok(f)
    }

    /// Runs one step. A tilec pass's result is verified here; a run of upstream passes' result
    /// where it is next read (see `unverified`).
    pub fn run(&mut self, step: &Step) -> Result<(), Diagnostic> {
        match step {
            Step::Upstream { name, text } => {
                let mut module = match self.live.take() {
                    Some(m) => m,
                    None => {
                        let input = match (&self.ir, &self.source) {
                            (Ir::Tile(f), Some(src)) => f.to_mlir_with(PrintOptions { locations: Some(src) }),
                            _ => self.text()?,
                        };
                        // The passes not parsed yet are named if their output fails here.
                        let passes = std::mem::take(&mut *self.unparsed.borrow_mut());
                        self.mlir.parse(&input, &format!("input of {name}")).map_err(|d| blame_unparsed(d, &passes))?
                    }
                };
                // A failed pass may leave the module half converted: nothing is kept then.
                self.ir = Ir::Text(String::new());
                self.mlir.run_pipeline(&mut module, &format!("builtin.module({text})"))?;
                self.live = Some(module);
                self.synced = false;
                self.unverified.borrow_mut().push(name.clone());
                Ok(())
            }
            Step::Tilec { pass, .. } => (pass.run)(self, step),
        }
    }
}

/// The driver entry of `tile-layout`.
pub(crate) fn run_tile_layout(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    let mut func = d.take_func(step.name(), Level::Tile)?;
    if let Ok(n) = step.option("num-warps").parse::<u32>() {
        func.num_warps = n;
    }
    let asked = func.num_warps;
    let opts = crate::tile_layout::Options { tcgen05: step.option("tcgen05") != "false" };
    let r = crate::tile_layout::run(&mut func, &opts)?;
    let note = if r.num_warps == asked { String::new() } else { format!(" (asked for {asked})") };
    d.facts.report.push(format!("tile-layout: {} warps{note}", r.num_warps));
    d.facts.report.extend(r.lines.iter().map(|l| format!("tile-layout: {l}")));
    d.facts.block_threads = Some(r.num_warps * 32);
    // What the pass guarantees, checked on its output before MLIR sees it.
    set_func(d, func, step.name(), Level::TileGpu)
}

/// The target a pass's `arch` option names, or the module's.
fn step_arch(step: &Step, func: &Func) -> Result<&'static tilec_core::target::Arch, Diagnostic> {
    let name = match step.option("arch") {
        "" => func.target.clone(),
        a => a.to_string(),
    };
    tilec_core::target::resolve(&name).map(|(a, _)| a).map_err(|m| bad(format!("{}: {m}", step.name())))
}

/// MLIR's refusal of tile IR, with the tilec passes that made it since the last parse.
fn blame_unparsed(d: Diagnostic, passes: &[(String, Level)]) -> Diagnostic {
    if passes.is_empty() {
        return d;
    }
    let names: Vec<String> = passes.iter().map(|(p, _)| format!("`{p}`")).collect();
    d.with_note(format!("in the output of {} (a compiler bug: tilec's rules held after each)", names.join(", ")))
}

fn set_func(d: &mut Driver, func: Func, pass: &str, level: Level) -> Result<(), Diagnostic> {
    d.set_func(func, pass, level)
}

impl Driver<'_> {
    /// Verifies a tilec pass's output against the rules of the stage it produces (`tile` or
    /// `tilegpu`) and makes it the kernel: a result that breaks them is blamed on `pass`,
    /// before any later pass sees it. MLIR parses the kernel where it is next read as text
    /// (see `unparsed`).
    pub fn set_func(&mut self, func: Func, pass: &str, level: Level) -> Result<(), Diagnostic> {
        verify(&func, level).map_err(|e| e.with_note(format!("in the output of `{pass}` (a compiler bug)")))?;
        self.unparsed.borrow_mut().push((pass.to_string(), level));
        self.ir = Ir::Tile(func);
        // The upstream passes' module (if a pass replaced it without reading it) is gone.
        self.live = None;
        self.unverified.borrow_mut().clear();
        Ok(())
    }
}

/// A tilec pass that keeps the kernel in the Rust form at `level`: its input checked, `run`
/// applied, the report lines it returns prefixed with the pass's name, its output verified.
fn in_place(
    d: &mut Driver,
    step: &Step,
    level: Level,
    run: impl FnOnce(&mut Func) -> Result<Vec<String>, Diagnostic>,
) -> Result<(), Diagnostic> {
    let mut func = d.take_func(step.name(), level)?;
    let before = func.clone();
    let lines = run(&mut func)?;
    d.facts.report.extend(lines.iter().map(|l| format!("{}: {l}", step.name())));
    if func == before {
        // Unchanged: the input was verified just now and parsed by MLIR when it became the
        // kernel, so printing and parsing it again would only cost time (a pass that finds
        // nothing to do is the common case: ~1 % of a kernel's compile each, issue 34).
        d.ir = Ir::Tile(func);
        d.live = None;
        return Ok(());
    }
    set_func(d, func, step.name(), level)
}

/// The driver entry of `tile-load-order`.
pub(crate) fn run_tile_load_order(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::Tile, |f| Ok(crate::tile_load_order::run(f).lines))
}

/// The driver entry of `tile-approx-math`.
pub(crate) fn run_tile_approx_math(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    let fast = step.option("fast-math") == "true";
    in_place(d, step, Level::Tile, |f| Ok(crate::tile_approx_math::run(f, fast).lines))
}

/// The driver entry of `tile-cta-pair`.
pub(crate) fn run_tile_cta_pair(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::Tile, |f| {
        let arch = step_arch(step, f)?;
        Ok(crate::tile_cta_pair::run(f, arch).lines)
    })
}

/// The driver entry of `tile-persistent`.
pub(crate) fn run_tile_persistent(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::Tile, |f| Ok(crate::tile_persistent::run(f).lines))
}

/// The driver entry of `tile-licm`.
pub(crate) fn run_tile_licm(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::TileGpu, |f| Ok(crate::tile_licm::run(f).lines))
}

/// The driver entry of `tile-swizzle`.
pub(crate) fn run_tile_swizzle(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::TileGpu, |f| {
        let arch = step_arch(step, f)?;
        let tma = crate::tile_swizzle::tma_fillable(arch) && step.option("tma") != "false";
        Ok(crate::tile_swizzle::run(f, tma).lines)
    })
}

/// The driver entry of `tile-pipeline`.
pub(crate) fn run_tile_pipeline(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::TileGpu, |func| pipeline_in_place(step, func))
}

/// `tile-pipeline` with the step's options over `func`: its report lines.
fn pipeline_in_place(step: &Step, func: &mut Func) -> Result<Vec<String>, Diagnostic> {
    let arch = step_arch(step, func)?;
    let mut opts = crate::tile_pipeline::Options::for_arch(arch);
    if let Ok(n) = step.option("distance").parse::<u32>() {
        opts.default_distance = n;
    }
    if let Ok(b) = step.option("empty-barriers").parse::<bool>() {
        opts.empty_barriers = b;
    }
    // A producer needs the empty mbarriers: where `tile-warp-specialize` will apply, the
    // rings are released on them.
    if step.option("warp-specialize") == "true" {
        let occupancy = step.option("occupancy").parse::<u32>().unwrap_or(1);
        opts.empty_barriers |= crate::tile_warp_specialize::fits(func, arch, occupancy).is_ok();
    }
    if let Ok(b) = step.option("wgmma-in-flight").parse::<bool>() {
        opts.in_flight = b;
    }
    if let Ok(b) = step.option("tma").parse::<bool>() {
        opts.tma = b && arch.has(tilec_core::target::Feature::Tma);
    }
    Ok(crate::tile_pipeline::run(func, &opts)?.lines)
}

/// The driver entry of `tile-to-llvm`.
pub(crate) fn run_tile_to_llvm(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    let func = d.take_func(step.name(), Level::TileGpu)?;
    // The lowering is the last reader of tile IR: what MLIR has not parsed yet, it parses now.
    if !d.unparsed.borrow().is_empty() {
        d.parse_unparsed(&func.to_mlir())?;
    }
    let arch = step_arch(step, &func)?;
    let opts = crate::tile_to_llvm::Options {
        occupancy: step.option("occupancy").parse::<u32>().ok(),
        fp_fusion: step.option("fp-fusion") != "false",
        emulate_block_scale: step.option("emulate-block-scale") == "true",
        tma_store: step.option("tma-store") != "false",
        sort_loops: step.option("sort-loops") == "true",
        topk_network: step.option("topk-network") != "false",
        mma_chains: step
            .option("mma-chains")
            .parse::<i64>()
            .unwrap_or(crate::tile_to_llvm::Options::default().mma_chains),
        first_offset_chunks: step
            .option("first-offset-chunks")
            .parse::<i64>()
            .unwrap_or(crate::tile_to_llvm::Options::default().first_offset_chunks),
        swizzle_split: step.option("swizzle-split") != "false",
        vector_lanes: step
            .option("vector-lanes")
            .parse::<usize>()
            .unwrap_or(crate::tile_to_llvm::Options::default().vector_lanes),
    };
    let low = crate::tile_to_llvm::run(&func, arch, &opts)?;
    d.facts.report.push(format!(
        "tile-to-llvm: {} threads per block, {} bytes of shared memory",
        low.block_threads, low.shared_bytes
    ));
    d.facts.report.extend(low.report.iter().map(|l| format!("tile-to-llvm: {l}")));
    d.facts.block_threads = Some(low.block_threads);
    d.facts.shared_bytes = Some(low.shared_bytes);
    d.facts.tma = low.tma.clone();
    d.facts.persistent = low.persistent;
    d.facts.grid_dependency = low.grid_dependency;
    d.facts.cluster = func.cluster;
    d.live = Some(d.mlir.parse(&low.text, "llvm")?);
    d.synced = true;
    d.ir = Ir::Text(low.text);
    Ok(())
}

/// The driver entry of `tile-mma-overlap`.
pub(crate) fn run_tile_mma_overlap(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::TileGpu, |f| Ok(crate::tile_mma_overlap::run(f).lines))
}

/// The driver entry of `tile-epilogue-overlap`.
pub(crate) fn run_tile_epilogue_overlap(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::TileGpu, |f| Ok(crate::tile_epilogue_overlap::run(f).lines))
}

/// The driver entry of `tile-grid-dependency`.
pub(crate) fn run_tile_grid_dependency(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::TileGpu, |f| {
        let arch = step_arch(step, f)?;
        Ok(crate::tile_grid_dependency::run(f, arch).lines)
    })
}

/// The driver entry of `tile-warp-specialize`.
pub(crate) fn run_tile_warp_specialize(d: &mut Driver, step: &Step) -> Result<(), Diagnostic> {
    in_place(d, step, Level::TileGpu, |f| {
        let arch = step_arch(step, f)?;
        let occupancy = step.option("occupancy").parse::<u32>().unwrap_or(1);
        let pingpong = step.option("pingpong") != "false";
        Ok(crate::tile_warp_specialize::run(f, arch, occupancy, pingpong).lines)
    })
}
