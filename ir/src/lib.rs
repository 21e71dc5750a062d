//! tilec-ir: the MLIR side of tilec.
//!
//! Contract: [`Mlir::new`] gives an MLIR context with every upstream dialect (with its
//! external models and extensions, but for the GPU-binary models of non-NVIDIA targets:
//! `cpp/registry.cpp`) and LLVM translation registered and the `tile`/`tilegpu` dialects
//! loaded from their IRDL definition ([`IRDL`]). [`Mlir::parse`] turns the text of any stage into a verified
//! module or a [`Diagnostic`] carrying MLIR's own messages (which MLIR reports only through
//! a diagnostic handler, so one is attached for the life of the context).
//! [`Mlir::run_pipeline`] runs an upstream pass pipeline; [`Mlir::translate_to_llvm_ir`]
//! produces LLVM IR text; [`read_func`] turns a module back into tile IR, so that tilec's
//! passes and upstream ones can alternate. Nothing here knows about GPUs: that is `passes` and `backend`.
//!
//! A context costs ~2.3 ms to make (dialects registered — loaded only when a text or a pass
//! needs them —, translations, the IRDL dialects parsed and loaded; the upstream passes of
//! tilec's pipelines are registered once a process, MLIR's others when a pipeline first
//! names one; loading every dialect up
//! front made it 11 ms: `bench/results/2026-11-27-cpu-compile-speed/`). [`Mlir::pooled`] lends the calling thread's context,
//! made on first use and kept for the next compile on that thread: a JIT, the tuner and
//! `tilec cache warm` make one per thread instead of one per kernel. A context is a `!Send`
//! value, so each thread has its own (compiles on several threads run side by side). Types
//! and attributes a context interns are never freed, so a pooled context is made anew after
//! [`POOLED_USES`] compiles: a long-lived process does not grow without bound.

pub mod reader;

pub use melior::ir::Module;
pub use reader::{read_func, read_func_with};

use melior::dialect::DialectRegistry;
use melior::ir::operation::OperationLike;
use melior::pass::PassManager;
use melior::utility::{load_irdl_dialects, register_all_llvm_translations};
use melior::Context;
use std::cell::RefCell;
use std::ops::Deref;
use std::rc::Rc;
use tilec_core::Diagnostic;

// `cpp/registry.cpp`: MLIR's `registerAllDialects` + `registerAllExtensions` and
// `registerAllPasses`, less the GPU-binary models of ROCDL, SPIR-V and XeVM and the two
// `llvm-target-to-*` passes. melior's `register_all_dialects`/`register_all_passes` call
// MLIR's own, whose references to those linked every LLVM back end into tilec (a 239 MB
// binary and their static initialisers at each process start; 165 MB without them).
extern "C" {
    fn tilecRegisterDialects(registry: mlir_sys::MlirDialectRegistry);
    fn tilecRegisterPasses();
}

/// The IRDL definition of the `tile` and `tilegpu` dialects.
pub const IRDL: &str = include_str!("tile.irdl.mlir");

/// MLIR's pass registry is a process-wide table without a lock of its own: pipelines are
/// parsed under this lock's read side and passes registered under its write side. `true`
/// once every upstream pass is registered.
static PASS_REGISTRY: std::sync::RwLock<bool> = std::sync::RwLock::new(false);

/// Registers the upstream passes tilec's own pipelines name (the conversions after
/// `tile-to-llvm`, `canonicalize`, `cse`). Registering all of MLIR's passes took 1.6 ms of
/// every process (issue 34: a memory-bound kernel compiles in ~25 ms); they are registered
/// when a pipeline names one of the others ([`Mlir::run_pipeline`]).
fn register_default_passes() {
    static DEFAULT: std::sync::Once = std::sync::Once::new();
    DEFAULT.call_once(|| {
        let _w = PASS_REGISTRY.write().unwrap_or_else(|p| p.into_inner());
        // SAFETY: registration functions without arguments, called once, while no pipeline
        // is parsed (the write lock).
        unsafe {
            mlir_sys::mlirRegisterConversionConvertNVGPUToNVVMPass();
            mlir_sys::mlirRegisterConversionArithToLLVMConversionPass();
            mlir_sys::mlirRegisterConversionReconcileUnrealizedCastsPass();
            mlir_sys::mlirRegisterTransformsCanonicalizer();
            mlir_sys::mlirRegisterTransformsCSE();
        }
    });
}

/// An MLIR context set up for tilec, with collected diagnostics.
pub struct Mlir {
    ctx: Context,
    messages: Rc<RefCell<Vec<String>>>,
}

impl std::fmt::Debug for Mlir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mlir")
    }
}

/// Creates a verification/backend diagnostic with MLIR's messages as notes.
fn mlir_failure(code: &'static str, msg: String, notes: Vec<String>) -> Diagnostic {
    notes.into_iter().fold(Diagnostic::error(code, msg), |d, n| d.with_note(n))
}

/// How many compiles a pooled context serves before it is made anew (see the module docs).
pub const POOLED_USES: u32 = 64;

thread_local! {
    /// This thread's context between two [`Mlir::pooled`] loans, with the loans it served.
    static POOL: RefCell<Option<(Mlir, u32)>> = const { RefCell::new(None) };
}

/// A context lent by [`Mlir::pooled`]; it goes back to its thread's pool when dropped.
/// Modules parsed in it must be dropped first (they borrow it).
#[derive(Debug)]
pub struct PooledMlir {
    mlir: Option<Mlir>,
    uses: u32,
}

impl Deref for PooledMlir {
    type Target = Mlir;
    fn deref(&self) -> &Mlir {
        // Present from `pooled` until `drop` takes it.
        self.mlir.as_ref().unwrap_or_else(|| unreachable!("a pooled context is present until dropped"))
    }
}

impl Drop for PooledMlir {
    fn drop(&mut self) {
        let Some(mlir) = self.mlir.take() else { return };
        // A loan taken while another was out (a compile inside a compile) finds the pool
        // empty and makes its own; whichever comes back first is kept, the other dropped.
        // `try_with`: at thread exit the pool may already be gone; the context is dropped.
        let _ = POOL.try_with(|pool| {
            if let Ok(mut slot) = pool.try_borrow_mut() {
                if slot.is_none() && self.uses < POOLED_USES {
                    *slot = Some((mlir, self.uses));
                }
            }
        });
    }
}

impl Mlir {
    /// The calling thread's context (made if the thread has none, or none free), lent until
    /// the returned value is dropped: what a compile uses instead of [`Mlir::new`] so that a
    /// process compiling many kernels sets MLIR up once a thread. No diagnostics of an
    /// earlier loan are left in it.
    pub fn pooled() -> Result<PooledMlir, Diagnostic> {
        let kept = POOL.try_with(|pool| pool.try_borrow_mut().ok().and_then(|mut slot| slot.take())).ok().flatten();
        let (mlir, uses) = match kept {
            Some((m, uses)) => {
                m.take();
                (m, uses + 1)
            }
            None => (Mlir::new()?, 1),
        };
        Ok(PooledMlir { mlir: Some(mlir), uses })
    }

    pub fn new() -> Result<Mlir, Diagnostic> {
        register_default_passes();
        let registry = DialectRegistry::new();
        // SAFETY: the registry is alive for the call; the function only inserts into it.
        unsafe { tilecRegisterDialects(registry.to_raw()) };
        let ctx = Context::new();
        // A compile is one function in one module: MLIR's thread pool has nothing to share
        // out, while a context that allows threads locks every type and attribute it uniques
        // (each op's location among them). Compiles run side by side on contexts of their
        // own (`PooledMlir`, one a thread). Single-threaded: 1-4 % fewer instructions a compile.
        ctx.enable_multi_threading(false);
        // The dialects are registered, not loaded: the parser loads the ones a stage's text
        // names and a pass loads the ones it declares. Loading all ~50 upstream dialects up
        // front was 9 of the context's 11 ms — more than a memory-bound kernel's passes.
        ctx.append_dialect_registry(&registry);
        register_all_llvm_translations(&ctx);
        let messages = Rc::new(RefCell::new(Vec::new()));
        let sink = messages.clone();
        ctx.attach_diagnostic_handler(move |d| {
            sink.borrow_mut().push(format!("{}: {}", d.location(), d));
            true
        });
        let m = Mlir { ctx, messages };
        let dialects = Module::parse(&m.ctx, IRDL).ok_or_else(|| {
            mlir_failure("E0901", "the IRDL definition of the tile dialect does not parse".into(), m.take())
        })?;
        if !load_irdl_dialects(&dialects) {
            return Err(mlir_failure("E0901", "the IRDL definition of the tile dialect did not load".into(), m.take()));
        }
        Ok(m)
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Drains the diagnostics MLIR reported since the last call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.messages.borrow_mut())
    }

    /// Parses and verifies the text of `stage`. Text MLIR's parser must not see — a NUL
    /// byte, nesting deeper than [`MAX_NESTING`] (its parser recurses and would overflow the
    /// stack) — is an error first. MLIR's parser verifies what it parsed (`mlirModuleCreateParse`
    /// keeps the parser's default, verify after parse) and returns no module when that
    /// fails, its messages in the diagnostics: a second `verify` here walked the module
    /// again (issue 34: ~5 ms of mla_decode's 12,000-op `llvm` stage).
    pub fn parse(&self, text: &str, stage: &str) -> Result<Module<'_>, Diagnostic> {
        check_text(text, stage)?;
        self.take();
        Module::parse(&self.ctx, text).ok_or_else(|| {
            mlir_failure("E0901", format!("the {stage} stage does not parse or verify in MLIR"), self.take())
        })
    }

    /// Verifies `module` (after passes run with [`Mlir::run_pipeline`], which does not).
    pub fn verify(&self, module: &Module, stage: &str) -> Result<(), Diagnostic> {
        self.take();
        if module.as_operation().verify() {
            Ok(())
        } else {
            Err(mlir_failure("E0901", format!("the {stage} stage does not verify in MLIR"), self.take()))
        }
    }

    /// Parses, verifies and reads back into tile IR the text of `stage` (see [`reader`]);
    /// with `source`, ops located in it get their spans back.
    pub fn read(
        &self,
        text: &str,
        stage: &str,
        source: Option<&tilec_core::Source>,
    ) -> Result<tilec_core::tir::Func, Diagnostic> {
        read_func_with(&self.parse(text, stage)?, source)
    }

    /// MLIR's own textual form of a module (`tile` ops in the generic syntax, upstream ops in
    /// their custom syntax).
    pub fn print(&self, module: &Module) -> String {
        module.as_operation().to_string()
    }

    /// MLIR's textual form with every op's location (`loc(…)`), so that spans survive a
    /// round trip through upstream passes.
    pub fn print_with_locations(&self, module: &Module) -> String {
        let flags = melior::ir::operation::OperationPrintingFlags::new().enable_debug_info(true, false);
        module.as_operation().to_string_with_flags(flags).unwrap_or_else(|_| self.print(module))
    }

    /// Runs an upstream textual pipeline (e.g. `builtin.module(canonicalize,cse)`) without
    /// verifying between or after its passes: whoever reads the result verifies it once
    /// ([`Mlir::verify`]; the pass driver does before a tilec pass, the translation or the
    /// stage's text), instead of MLIR's verifier after every pass (three walks of FMHA's or
    /// mla_decode's 12,000 ops after the conversions of one `llvm` stage; issue 34).
    pub fn run_pipeline(&self, module: &mut Module, pipeline: &str) -> Result<(), Diagnostic> {
        check_text(pipeline, "pass pipeline")?;
        self.take();
        let pm = self
            .pass_manager(pipeline)
            .map_err(|e| mlir_failure("E0901", format!("bad pass pipeline `{pipeline}`: {e}"), self.take()))?;
        pm.enable_verifier(false);
        pm.run(module).map_err(|_| mlir_failure("E0901", format!("pass pipeline `{pipeline}` failed"), self.take()))
    }

    /// A pass manager running `pipeline`: parsed with the passes registered so far, and if
    /// that fails, again once every upstream pass is registered.
    fn pass_manager(&self, pipeline: &str) -> Result<PassManager<'_>, String> {
        let parse = || {
            let pm = PassManager::new(&self.ctx);
            melior::utility::parse_pass_pipeline(pm.as_operation_pass_manager(), pipeline).map(|()| pm)
        };
        {
            let all = PASS_REGISTRY.read().unwrap_or_else(|p| p.into_inner());
            match parse() {
                Ok(pm) => return Ok(pm),
                Err(e) if *all => return Err(e.to_string()),
                Err(_) => {}
            }
        }
        self.take();
        {
            let mut all = PASS_REGISTRY.write().unwrap_or_else(|p| p.into_inner());
            if !*all {
                // SAFETY: no arguments; the write lock keeps pipeline parsing out meanwhile.
                unsafe { tilecRegisterPasses() };
                *all = true;
            }
        }
        let _all = PASS_REGISTRY.read().unwrap_or_else(|p| p.into_inner());
        parse().map_err(|e| e.to_string())
    }

    /// Whether MLIR accepts `pipeline` (names, options, nesting), with its message if not.
    pub fn check_pipeline(&self, pipeline: &str) -> Result<(), String> {
        check_text(pipeline, "pass pipeline").map_err(|d| d.message)?;
        self.take();
        self.pass_manager(pipeline).map(|_| ()).map_err(|e| {
            let mut msgs = self.take();
            msgs.insert(0, e);
            msgs.join("; ")
        })
    }

    /// Translates a module in the `llvm` (+`nvvm`) dialects into a new LLVM module of
    /// `llvm_context` (an `LLVMContextRef`), returned as an `LLVMModuleRef` the caller owns.
    ///
    /// # Safety
    /// `llvm_context` is a live LLVM context of the LLVM this binary links, alive as long as
    /// the module returned.
    pub unsafe fn translate_into(
        &self,
        module: &Module,
        llvm_context: *mut std::ffi::c_void,
    ) -> Result<*mut std::ffi::c_void, Diagnostic> {
        self.take();
        // SAFETY: the caller's contract for the context; the module is alive for the call.
        let raw = unsafe { mlir_sys::mlirTranslateModuleToLLVMIR(module.as_operation().to_raw(), llvm_context.cast()) };
        if raw.is_null() {
            return Err(mlir_failure("E0902", "translation to LLVM IR failed".into(), self.take()));
        }
        Ok(raw.cast())
    }

    /// Translates a module in the `llvm` (+`nvvm`) dialects to LLVM IR text.
    pub fn translate_to_llvm_ir(&self, module: &Module) -> Result<String, Diagnostic> {
        self.take();
        // SAFETY: the module is alive for the call; the returned C string is malloc'ed by
        // MLIR and owned by us, so it is copied and freed exactly once.
        let text = unsafe {
            let raw = mlir_sys::mlirTranslateModuleToLLVMIRToString(module.as_operation().to_raw());
            if raw.is_null() {
                None
            } else {
                let s = std::ffi::CStr::from_ptr(raw).to_string_lossy().into_owned();
                libc_free(raw.cast());
                Some(s)
            }
        };
        match text {
            Some(t) if !t.is_empty() => Ok(t),
            _ => Err(mlir_failure("E0902", "translation to LLVM IR failed".into(), self.take())),
        }
    }
}

/// The deepest nesting of regions, parentheses and brackets the MLIR text may have: far more
/// than any kernel's IR, far less than what overflows MLIR's recursive parser.
pub const MAX_NESTING: usize = 256;

/// The largest result number (`%x#N`) or count (`%x:N = …`) the MLIR text may write. MLIR's
/// parser sizes a table by it before it checks it against the op, and aborts the process
/// when `%r#2147483648` asks for 32 GB (found by `tilec fuzz --target mlir`).
pub const MAX_RESULTS: u64 = 65_535;

/// Rejects text MLIR's C API must not be handed (strings skipped): a NUL byte (the strings
/// cross as C strings in places), nesting deeper than [`MAX_NESTING`], result numbers past
/// [`MAX_RESULTS`], and two forms MLIR 22's parser crashes on instead of reporting (found by
/// `tilec fuzz --target mlir`): a struct position of 2^32 or more (`llvm.extractvalue
/// %v[4294967296]`) and a dense array of an element type other than an integer or a float
/// (`array<index>`).
fn check_text(text: &str, what: &str) -> Result<(), Diagnostic> {
    if let Some(i) = text.find('\0') {
        return Err(Diagnostic::error("E0901", format!("the {what} holds a NUL byte (at byte {i})")));
    }
    // Byte by byte: every byte the check looks at is ASCII, which a UTF-8 text never holds
    // inside a longer character, and the bytes between them are skipped without decoding
    // (the lowering's text is a megabyte for the largest kernels).
    let bytes = text.as_bytes();
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || b"_$.-".contains(&b);
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                // A string: to its closing quote, escapes skipped.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'a' if bytes[i..].starts_with(b"array<")
                && (i == 0
                    || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b'.')) =>
            {
                let elem = text[i + 6..].trim_start();
                let ty = &elem[..elem.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(elem.len())];
                let int = ["i", "si", "ui"].iter().any(|p| {
                    ty.strip_prefix(p).is_some_and(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))
                });
                // `array<1 x i64>` (a digit first) is an LLVM array type inside a struct.
                let llvm_array = ty.starts_with(|c: char| c.is_ascii_digit());
                if !int && !llvm_array && !["bf16", "f16", "f32", "f64", "tf32", "f80", "f128"].contains(&ty) {
                    return Err(Diagnostic::error(
                        "E0901",
                        format!("the {what} has a dense array of `{ty}` elements (at byte {i}): arrays hold integers or floats"),
                    ));
                }
            }
            b'%' => {
                let rest = &text[i + 1..];
                let name = rest.bytes().position(|b| !name_byte(b)).unwrap_or(rest.len());
                let after = &rest[name..];
                // `%v[1, 2]`: the positions of llvm.extractvalue / insertvalue.
                if let Some(list) = after.strip_prefix('[') {
                    let list = &list[..list.find(']').unwrap_or(list.len())];
                    for n in
                        list.split(',').map(str::trim).filter(|n| n.bytes().all(|b| b.is_ascii_digit() || b == b'-'))
                    {
                        if !n.is_empty() && n.parse::<i64>().map_or(true, |v| v > i64::from(u32::MAX)) {
                            return Err(Diagnostic::error(
                                "E0901",
                                format!(
                                    "the {what} has the struct position {n} (at byte {i}): positions are below 2^32"
                                ),
                            ));
                        }
                    }
                }
                if let Some(num) = after.strip_prefix('#').or_else(|| after.strip_prefix(':')) {
                    let digits = num.find(|c: char| !c.is_ascii_digit()).unwrap_or(num.len());
                    if digits > 0 && !num[..digits].parse::<u64>().is_ok_and(|n| n <= MAX_RESULTS) {
                        return Err(Diagnostic::error(
                            "E0901",
                            format!(
                                "the {what} numbers a result `%{}` past {MAX_RESULTS} (at byte {i}): no op has that many",
                                &rest[..name + 1 + digits]
                            ),
                        ));
                    }
                }
                // The name's bytes hold nothing to check.
                i += name;
            }
            b'{' | b'(' | b'[' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Diagnostic::error(
                        "E0901",
                        format!("the {what} nests regions or brackets deeper than {MAX_NESTING} levels (at byte {i})"),
                    ));
                }
            }
            b'}' | b')' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

unsafe extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut std::ffi::c_void);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pooled_context_serves_its_thread_until_its_uses_are_spent() {
        let raw = |m: &Mlir| m.context().to_raw().ptr as usize;
        let (first, uses) = {
            let m = Mlir::pooled().unwrap();
            // A failed parse leaves MLIR's messages in the context: the next loan has none.
            assert!(m.parse("module { \"t.op\"(%undefined) : (i32) -> () }", "t").is_err());
            (raw(&m), m.uses)
        };
        let m = Mlir::pooled().unwrap();
        assert_eq!((raw(&m), m.uses), (first, uses + 1));
        assert!(m.take().is_empty());
        // A loan while another is out (a compile inside a compile) is a context of its own.
        let inner = Mlir::pooled().unwrap();
        assert_ne!(raw(&inner), raw(&m));
        assert_eq!(inner.uses, 1);
        drop(inner);
        drop(m);
        // Another thread has its own.
        let other = std::thread::spawn(|| Mlir::pooled().map(|m| m.uses).unwrap()).join().unwrap();
        assert_eq!(other, 1);
        // Spent: made anew.
        let mut uses = 0;
        while uses < POOLED_USES {
            uses = Mlir::pooled().unwrap().uses;
        }
        assert_eq!(Mlir::pooled().unwrap().uses, 1);
        let m = Mlir::pooled().unwrap();
        m.parse("module {}", "t").unwrap();
    }

    #[test]
    fn forms_that_crash_the_mlir_parser_are_refused_first() {
        // Each made MLIR 22's parser abort the process ("LLVM ERROR: out of memory").
        for text in [
            "func.func @f() { %0:2 = \"t.op\"() : () -> (i32, i32)\n \"t.use\"(%0#2147483648) : (i32) -> () return }",
            "func.func @f() { %0:4294967296 = \"t.op\"() : () -> (i32) return }",
        ] {
            let e = check_text(text, "module").unwrap_err();
            assert!(e.message.contains("past 65535"), "{}", e.message);
        }
        check_text("%0:2 = x %0#1 \"%a#99999999\"", "module").unwrap();
        // The parser segfaulted on each (a struct position of 2^32, an array of `index`).
        let bad = [
            "%b = llvm.extractvalue %a[4294967296] : !llvm.struct<(i32)>",
            "%b = llvm.insertvalue %x, %a[0, 99999999999999999999] : !llvm.struct<(i32)>",
            "\"t.op\"() {order = array< index i32: , 1>} : () -> ()",
            "\"t.op\"() {order = array<index>} : () -> ()",
            // Outside a string after one with escaped quotes; a NUL; nesting one too deep.
            "\"a\\\"b\" array<index: 1>",
            "a\0b",
            &"(".repeat(MAX_NESTING + 1),
        ];
        for text in bad {
            assert!(check_text(text, "module").is_err(), "{text}");
        }
        let good = [
            "%b = llvm.extractvalue %a[4294967295, 0] : !llvm.struct<(i32)>",
            "\"t.op\"() {o = array<i32: 0, 1>, p = array<i64>, q = array<f32: 1.0>, r = array<i1: true>} : () -> ()",
            "memref.load %m[%i, %j] : memref<?x?xf32>",
            // An LLVM array in a struct (a memref descriptor); MLIR reports a digit-first
            // dense array (`array<1 x index>`) as an error, it does not crash.
            "%d = llvm.mlir.poison : !llvm.struct<(ptr<3>, ptr<3>, i64, array<1 x i64>, array<1 x i64>)>",
            // Inside strings (escaped quotes too), in a value's name, after non-ASCII text,
            // and nesting as deep as allowed.
            "\"t.op\"() {c = \"array<index> %x#99999 [4294967296] \\\" (((\"} : () -> ()",
            "%v.array<index> = x",
            "\"é\" = array<i8> (é)",
            &format!("{}{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING)),
        ];
        for text in good {
            check_text(text, "module").unwrap();
        }
    }

    #[test]
    fn a_pipeline_may_name_any_upstream_pass() {
        // The context registers only the passes tilec's pipelines name; the first pipeline
        // naming another (`symbol-dce`, `loop-invariant-code-motion`: no other test of this
        // crate names them) registers the rest and parses again.
        let m = Mlir::new().unwrap();
        assert_eq!(m.check_pipeline("builtin.module(cse,canonicalize)"), Ok(()));
        assert_eq!(m.check_pipeline("builtin.module(symbol-dce,loop-invariant-code-motion)"), Ok(()));
        let mut module = m.parse("module { func.func private @unused() }", "t").unwrap();
        m.run_pipeline(&mut module, "builtin.module(symbol-dce)").unwrap();
        assert!(!m.print(&module).contains("unused"), "{}", m.print(&module));
        let err = m.check_pipeline("builtin.module(no-such-pass)").unwrap_err();
        assert!(err.contains("no-such-pass"), "{err}");
    }

    #[test]
    fn irdl_loads_and_verifies_tile_ops() {
        let m = Mlir::new().unwrap();
        let text = r#"
func.func @k(%x: memref<?x?xf16, strided<[?, ?]>>) {
  %0 = "tile.bid"() {axis = 0 : i32} : () -> i32
  %1 = "tile.load"(%x, %0, %0) {latency = 0 : i32, order = array<i32: 0, 1>, padding = "zero"} : (memref<?x?xf16, strided<[?, ?]>>, i32, i32) -> tensor<1x64xf16, #tilegpu.blocked<[1, 2], [1, 32], [1, 1], [1, 0]>>
  return
}"#;
        m.parse(text, "test").unwrap();
    }

    #[test]
    fn nul_bytes_and_deep_nesting_are_errors() {
        let m = Mlir::new().unwrap();
        assert!(m.parse("module {}\0", "test").unwrap_err().message.contains("NUL"));
        let deep = format!(
            "module {{ func.func @f() {{ {}{} return }} }}",
            "scf.execute_region { ".repeat(5000),
            "} ".repeat(5000)
        );
        assert!(m.parse(&deep, "test").unwrap_err().message.contains("deeper than 256"));
        assert!(m.check_pipeline("builtin.module(cse\0)").is_err());
    }

    #[test]
    fn bad_attribute_is_reported_with_mlir_message() {
        let m = Mlir::new().unwrap();
        let text = r#"
func.func @k(%x: memref<?xf16, strided<[?]>>) {
  %0 = "tile.bid"() {axis = 0 : i32} : () -> i32
  %1 = "tile.load"(%x, %0) {latency = 0 : i32, order = array<i32: 0>, padding = 3 : i32} : (memref<?xf16, strided<[?]>>, i32) -> tensor<64xf16>
  return
}"#;
        let err = m.parse(text, "test").unwrap_err();
        assert_eq!(err.code, "E0901");
        assert!(err.notes.iter().any(|n| n.contains("builtin.string")), "{err:?}");
    }
}
