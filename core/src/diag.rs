//! The one diagnostic type of the compiler.
//!
//! Every stage (parser, checker, MLIR verification, lowering, backend) reports problems as a
//! [`Diagnostic`]: a stable code (`E0xxx`), a message, labelled source spans and notes. A
//! diagnostic renders like rustc (source line and carets, through codespan-reporting) or as
//! JSON for tools. Codes are listed once, in [`CODES`], with the long text `tilec explain`
//! prints.

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::NoColor};
use serde::Serialize;

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
    pub primary: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        debug_assert!(lookup(code).is_some(), "diagnostic code {code} is not registered");
        Diagnostic { severity: Severity::Error, code, message: message.into(), labels: vec![], notes: vec![] }
    }
    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(code, message) }
    }
    /// The span the diagnostic is about; the first one decides where it is shown.
    pub fn with_primary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label { span, message: message.into(), primary: true });
        self
    }
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label { span, message: message.into(), primary: false });
        self
    }
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A source file as the diagnostics see it. The text is fixed once made: the line index
/// built beside it keeps position lookups logarithmic, so a file with 100,000 ops and as
/// many locations or diagnostics stays linear to print and read back.
#[derive(Clone, Debug)]
pub struct Source {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1))
            .collect();
        Source { name: name.into(), text, line_starts }
    }

    /// The byte range of a 0-based line, without its newline.
    fn line_range(&self, line: usize) -> Option<std::ops::Range<usize>> {
        let start = *self.line_starts.get(line)?;
        let end = self.line_starts.get(line + 1).map_or(self.text.len(), |next| next - 1);
        Some(start..end)
    }

    /// The byte offset of a 1-based (line, column), if the text has it (the inverse of
    /// [`Source::line_col`]; a column one past the end of a line is the line's end).
    pub fn offset(&self, line: usize, col: usize) -> Option<usize> {
        let range = self.line_range(line.checked_sub(1)?)?;
        let col = col.checked_sub(1)?;
        (col <= range.len()).then_some(range.start + col)
    }

    /// 1-based (line, column) of a byte offset, clamped to the text.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        (line + 1, offset - self.line_starts[line] + 1)
    }

    /// The length in bytes of the line holding `offset`.
    fn line_len_at(&self, offset: usize) -> usize {
        let (line, _) = self.line_col(offset);
        self.line_range(line - 1).map_or(0, |r| r.len())
    }
}

/// At most this many diagnostics are rendered; the rest are counted (rustc stops early too:
/// a generated file with 100,000 mistakes must not print 100,000 snippets).
pub const MAX_RENDERED: usize = 50;

/// A label on a line longer than this is shown as `file:line:col` in a note instead of a
/// snippet: a snippet prints its whole line, and one-line generated sources are common.
pub const MAX_SNIPPET_LINE: usize = 400;

/// Renders diagnostics like rustc, without colour (snapshots and logs stay plain).
pub fn render(diags: &[Diagnostic], source: &Source) -> String {
    let file = SimpleFile::new(source.name.as_str(), source.text.as_str());
    let config = term::Config::default();
    let mut out = NoColor::new(Vec::new());
    let len = source.text.len();
    for d in diags.iter().take(MAX_RENDERED) {
        let sev = match d.severity {
            Severity::Error => cs::Severity::Error,
            Severity::Warning => cs::Severity::Warning,
        };
        let mut labels = vec![];
        let mut notes = vec![];
        for l in &d.labels {
            let start = l.span.start.min(len);
            let range = start..l.span.end.min(len).max(start);
            if source.line_len_at(start) > MAX_SNIPPET_LINE {
                let (line, col) = source.line_col(start);
                let what = if l.message.is_empty() { String::new() } else { format!(": {}", l.message) };
                notes.push(format!("at {}:{line}:{col}{what} (the line is too long to show)", source.name));
                continue;
            }
            let style = if l.primary { cs::LabelStyle::Primary } else { cs::LabelStyle::Secondary };
            labels.push(cs::Label::new(style, (), range).with_message(l.message.clone()));
        }
        notes.extend(d.notes.iter().cloned());
        let diag = cs::Diagnostic::new(sev)
            .with_code(d.code)
            .with_message(d.message.clone())
            .with_labels(labels)
            .with_notes(notes);
        // Writing into a Vec cannot fail; a span outside the file is clamped above.
        let _ = term::emit(&mut out, &config, &file, &diag);
    }
    let mut text = String::from_utf8_lossy(&out.into_inner()).into_owned();
    if let Some(hidden) = diags.len().checked_sub(MAX_RENDERED).filter(|&n| n > 0) {
        let errors = diags.iter().filter(|d| d.is_error()).count();
        text.push_str(&format!(
            "error: {hidden} more diagnostics not shown ({errors} errors in all; the first {MAX_RENDERED} are above)\n"
        ));
    }
    text
}

/// Diagnostics as a JSON array, with line/column added for editors. Like [`render`], it holds
/// at most [`MAX_RENDERED`] of them; when some were left out, a last item
/// `{"omitted": N}` says how many.
pub fn render_json(diags: &[Diagnostic], source: &Source) -> String {
    let mut items: Vec<serde_json::Value> = diags
        .iter()
        .take(MAX_RENDERED)
        .map(|d| {
            let labels: Vec<serde_json::Value> = d
                .labels
                .iter()
                .map(|l| {
                    let (line, col) = source.line_col(l.span.start);
                    let (end_line, end_col) = source.line_col(l.span.end);
                    serde_json::json!({
                        "start": l.span.start, "end": l.span.end,
                        "line": line, "column": col, "end_line": end_line, "end_column": end_col,
                        "message": l.message, "primary": l.primary,
                    })
                })
                .collect();
            serde_json::json!({
                "severity": d.severity, "code": d.code, "message": d.message,
                "file": source.name, "labels": labels, "notes": d.notes,
            })
        })
        .collect();
    if diags.len() > MAX_RENDERED {
        items.push(serde_json::json!({ "omitted": diags.len() - MAX_RENDERED }));
    }
    serde_json::to_string_pretty(&items).unwrap_or_else(|_| "[]".to_string())
}

/// A registered diagnostic code: (code, one-line title, long explanation).
pub type CodeInfo = (&'static str, &'static str, &'static str);

/// Every code the compiler emits. `tilec explain` prints the third field.
pub const CODES: &[CodeInfo] = &[
    ("E0001", "syntax error", "The text does not follow the grammar of the tile language. The caret points at the first token that could not be parsed; the message lists what was expected there. See docs/language.md for the grammar."),
    ("E0002", "unknown name", "A name was used that is not a parameter, a `let` binding, a constant or a builtin. Names are resolved in order: a `let` must come before its use. Check the spelling; the note lists close matches when there are any."),
    ("E0003", "duplicate definition", "Two parameters (or two kernels) have the same name. Rename one of them."),
    ("E0004", "wrong number of arguments", "A builtin was called with too many or too few arguments. The message states the signature of the builtin."),
    ("E0005", "unknown keyword argument", "A builtin was given a named argument it does not take, or the same named argument twice."),
    ("E0006", "wrong kind of value", "A value of one kind (tensor, tile, scalar, constant, dtype, tuple) was used where another kind is required, e.g. a tile where a compile-time integer is needed for a shape."),
    ("E0007", "shape mismatch", "Two tiles whose shapes cannot be broadcast together were combined, or a tile of the wrong shape was stored. Broadcasting follows NumPy: dims are compared from the right; each pair must be equal or one of them 1."),
    ("E0008", "dtype mismatch", "Two values of different element types were combined without a cast. The tile language never converts implicitly between float widths; insert `.astype(dtype)` where the conversion should happen."),
    ("E0009", "not a compile-time constant", "A tile shape, an axis or a constant parameter must be known when the kernel is compiled. Use constant parameters (`const N: int = 64`) or literals; runtime values such as `bid(0)` or `x.shape[1]` cannot size a tile."),
    ("E0010", "tile dimension not a power of two", "Tile dimensions must be powers of two so that every layout splits them evenly over threads and warps. Round the dimension up to the next power of two and let `padding=` and masked stores handle the ragged edge."),
    ("E0011", "axis out of range", "A reduction, index or shape access named an axis the value does not have. Axes count from 0; negative axes count from the end."),
    ("E0012", "rank mismatch", "A load or store index, or a tile shape, has a different number of dimensions than the tensor."),
    ("E0013", "unknown target in by_target", "`by_target { ... }` names an architecture tilec does not know. The keys are sm_90, sm_103, sm_121 (with or without the `a` suffix) and `default`."),
    ("E0014", "invalid constant value", "A constant has a value outside what the kernel accepts (a negative tile size, zero warps, a division by zero in a constant expression, ...)."),
    ("E0015", "invalid hint", "A kernel hint is unknown or has a bad value. Known hints: num_warps (1, 2, 4, 8, 16 or 32), occupancy (1..=32), opt_level (0..=3), and the switches warp_specialize, persistent, cta_pair, tma and strength_reduction (true or false)."),
    ("E0016", "invalid type", "A type annotation names an unknown dtype, or a tensor type has a bad rank."),
    ("E0017", "missing kernel", "The file defines no kernel, or the requested kernel name does not exist in it."),
    ("E0018", "static assertion failed", "A `static_assert(cond, \"message\")` evaluated to false for this specialization."),
    ("E0019", "invalid constant override", "A constant given on the command line (`--const NAME=VALUE`) or through the API does not exist or has the wrong kind of value."),
    ("E0020", "tile too large", "A tile has more elements than one thread block can hold in registers under the current lowering. Use a smaller tile, or more warps."),
    ("E0021", "value changes type across a region", "A variable assigned inside a run-time `for` loop or `if` keeps the shape and dtype it had before (the loop carries it; the if merges its branches). Cast the new value back with `.astype(...)`, or use a new name."),
    ("E0022", "shared memory budget exceeded", "The rings of shared-memory stages that `tile-pipeline` makes for the loads of a loop (a load with `latency=n` keeps n + 1 tiles in flight), together with the kernel's other shared buffers, need more shared memory than one block has on the target (227 KB on sm_90a and sm_103a, 99 KB on sm_121a). The message lists every ring and the largest stage count that fits. Lower the latency hints (per target with a `by_target` constant), use smaller tiles, or compile without the pass (`--disable-pass tile-pipeline`)."),
    ("E0023", "input not readable", "The source file (or standard input) could not be read as a kernel source: it does not exist, cannot be opened, is a directory, is not UTF-8 text or is larger than the limit. The message says which."),
    ("E0024", "launch requirement", "A kernel's `require` clause states what its launches must meet, over tensor extents (`N`, `x.shape[1]`), integer scalar parameters and constants: `require N <= BLOCK_N, K % 8 == 0`. It is checked at every launch (the runtime, the JIT, `tilec run`, the interpreter) and recorded in the metadata's `requires`. At compile time this error means the requirement is false for the constants alone (no launch could meet it: change the constants), or is not a bool of such values (a tile or a float cannot be checked on the host)."),
    ("E0025", "occupancy the target cannot hold", "The kernel's `occupancy` hint asks for more blocks per SM than the target's SM holds with this kernel's shared memory (each block also takes 1 KB reserved by CUDA) or threads (the per-SM limits of the target table: 228 KB and 2048 threads on sm_90a and sm_103a, 100 KB and 1536 threads on sm_121a). Such a hint only makes ptxas cut the registers of blocks that never share an SM. The message gives the arithmetic and the shared buffers; lower the hint for that target (`occupancy = by_target { sm_121: 1, default: 2 }`), or make the blocks smaller (tiles, `latency=` stages)."),
    ("E0900", "not lowered yet", "The construct is part of the tile language but the lowering to GPU code does not handle it yet in this version of tilec. The message says which construct; the issue tracker follows the work."),
    ("E0901", "MLIR verification failed", "The IR produced by a stage did not verify in MLIR. This is a compiler bug: please report it with the kernel and the `--emit` output of the stage before."),
    ("E0902", "backend failure", "LLVM could not translate or compile the lowered module to PTX, or ptxas rejected the PTX. This is a compiler bug unless the note says otherwise."),
    ("E0903", "not readable as tile IR", "A tilec pass needs the kernel in the `tile`/`tilegpu` dialects, and the module holds something the tile IR has no form for: an op of another dialect (left by an upstream pass or written by hand), a tensor constant, or a type outside the tile types. Run tilec's passes before the upstream passes that introduce such ops, or feed `tilec opt` a module that `tilec compile --emit tile` or `--emit tilegpu` could have produced."),
    ("E0905", "ill-formed tile IR", "A tilec pass was given tile IR whose ops break the rules of the dialect that MLIR's definitions cannot check: operand and result types, shapes and dtypes (a store of an f32 tile into an f16 tensor, a broadcast to an incompatible shape), a value used before it is defined, loop-carried values that change type, a tile without a layout after `tile-layout`, a block of 0 warps. The IR came from a `.mlir` file given to `tilec opt`, a hand edit, or a pass: the message names the op and the rule. Every tilec pass checks its input, so such IR is never lowered to wrong code."),
    ("E0904", "bad pass pipeline", "The `--passes` pipeline of `tilec opt` names a pass that does not exist, gives a pass an option it does not have or a value it does not accept, or is not well bracketed. `tilec passes` lists tilec's passes and their options; `tilec passes --upstream` lists MLIR's passes. Items are separated by commas; options are written `pass{name=value name=value}`; upstream items may nest (`func.func(cse)`)."),
    ("E0906", "the interpreter cannot run the kernel", "`tilec bisect` runs the kernel on the interpreter as the frontend made it, then after every tile-level pass, on the arguments given with `--arg`. The first run failed: the arguments do not fit the kernel's parameters or `require` clauses, or the run hit a limit of the interpreter (work, memory) or an error of the kernel (an out-of-bounds index the language defines as an error). The message says which; `tilec run` with the same arguments shows the same."),
];

/// The registered entry of a code, if any.
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    CODES.iter().find(|c| c.0.eq_ignore_ascii_case(code))
}

/// Rendered compile failure that carries its diagnostics (for `?` across crate boundaries).
#[derive(Clone, Debug)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl std::fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for d in &self.0 {
            writeln!(f, "error[{}]: {}", d.code, d.message)?;
            for n in &d.notes {
                writeln!(f, "  = note: {n}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// Names within a few edits of `name`, for "did you mean" notes.
pub fn close_matches<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    fn dist(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for i in 1..=a.len() {
            let mut cur = vec![i; b.len() + 1];
            for j in 1..=b.len() {
                let c = usize::from(a[i - 1] != b[j - 1]);
                cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + c);
            }
            prev = cur;
        }
        prev[b.len()]
    }
    // Allow one edit per three characters (at least one), closest first, at most three.
    let limit = (name.chars().count() / 3).max(1);
    let mut scored: Vec<(usize, String)> = candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (dist(name, c), c.to_string()))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_well_formed() {
        for (i, c) in CODES.iter().enumerate() {
            assert!(c.0.len() == 5 && c.0.starts_with('E'), "{}", c.0);
            assert!(CODES[i + 1..].iter().all(|d| d.0 != c.0), "duplicate {}", c.0);
        }
    }

    #[test]
    fn render_points_at_span() {
        let src = Source::new("k.tile", "let x = 1;\nlet y = z;\n");
        let d = Diagnostic::error("E0002", "unknown name `z`").with_primary(Span::new(19, 20), "not defined");
        let text = render(&[d], &src);
        assert!(text.contains("error[E0002]: unknown name `z`"), "{text}");
        assert!(text.contains("k.tile:2:9"), "{text}");
        assert!(text.contains('^'), "{text}");
    }

    #[test]
    fn offsets_invert_line_columns() {
        let src = Source::new("k.tile", "ab\ncde\n\nf");
        for off in 0..src.text.len() {
            let (l, c) = src.line_col(off);
            assert_eq!(src.offset(l, c), Some(off), "{off}");
        }
        assert_eq!(src.offset(2, 9), None);
        assert_eq!(src.offset(9, 1), None);
    }

    #[test]
    fn many_diagnostics_on_one_long_line_render_briefly() {
        let text = "let a = zz; ".repeat(20_000);
        let src = Source::new("gen.tile", text);
        let diags: Vec<Diagnostic> = (0..20_000)
            .map(|i| {
                Diagnostic::error("E0002", "unknown name `zz`").with_primary(Span::new(i * 12 + 8, i * 12 + 10), "here")
            })
            .collect();
        let out = render(&diags, &src);
        assert!(out.len() < 20_000, "{} bytes", out.len());
        assert!(out.contains("gen.tile:1:20"), "{out}");
        assert!(out.contains("19950 more diagnostics not shown (20000 errors in all"), "{out}");
        let json: serde_json::Value = serde_json::from_str(&render_json(&diags, &src)).unwrap();
        assert_eq!(json.as_array().unwrap().len(), MAX_RENDERED + 1);
        assert_eq!(json[MAX_RENDERED]["omitted"], 19_950);
    }

    #[test]
    fn out_of_range_span_does_not_panic() {
        let src = Source::new("k.tile", "ab");
        let d = Diagnostic::error("E0001", "x").with_primary(Span::new(10, 40), "here");
        let _ = render(std::slice::from_ref(&d), &src);
        let _ = render_json(&[d], &src);
    }
}
