//! Writing to the terminal and to files without panicking.
//!
//! `print!` panics when standard output is closed (`tilec passes --upstream | head -1`) or
//! full (`> /dev/full`). Here a write returns an error instead: a broken pipe is recognised by
//! `main` and ends the program quietly (as in cargo); any other failure is reported. Files are
//! written through a temporary file in the same folder and renamed over the target, so an
//! interrupted write never leaves half a PTX behind; devices (`/dev/null`) are written directly.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// The marker error of a closed standard output.
#[derive(Debug)]
pub struct ClosedStdout;

impl std::fmt::Display for ClosedStdout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output is closed")
    }
}

impl std::error::Error for ClosedStdout {}

pub fn is_closed_stdout(e: &anyhow::Error) -> bool {
    e.downcast_ref::<ClosedStdout>().is_some()
}

/// Writes `s` to standard output.
pub fn print(s: &str) -> Result<()> {
    let mut o = std::io::stdout().lock();
    match o.write_all(s.as_bytes()).and_then(|_| o.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(ClosedStdout.into()),
        Err(e) => Err(anyhow::anyhow!("cannot write to standard output: {e}")),
    }
}

/// Writes `s` and a newline to standard output.
pub fn println(s: &str) -> Result<()> {
    print(&format!("{s}\n"))
}

/// Writes a line to standard error; a closed or full standard error is ignored (there is
/// nowhere left to report it).
pub fn err(s: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{s}");
}

/// Writes text to standard error without a newline (progress lines).
pub fn err_raw(s: &str) {
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "{s}");
    let _ = e.flush();
}

/// Writes a file: through a temporary file and a rename for a regular path, directly for a
/// device or anything else that exists and is not a regular file.
pub fn write_file(path: &Path, contents: &str) -> Result<()> {
    write_bytes(path, contents.as_bytes())
}

/// [`write_file`] for binary contents.
pub fn write_bytes(path: &Path, contents: &[u8]) -> Result<()> {
    let is_special = std::fs::metadata(path).map(|m| !m.is_file()).unwrap_or(false);
    if is_special {
        return std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()));
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // `-o out/k.ptx` makes `out/`, as `--save-out` and `--json` do: a missing folder is not
    // worth an error.
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make the folder {}", dir.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = dir.join(format!(".{name}.tilec-{}.tmp", std::process::id()));
    let r = std::fs::write(&tmp, contents).and_then(|_| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r.with_context(|| format!("cannot write {}", path.display()))
}

/// Whether two paths name the same existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
