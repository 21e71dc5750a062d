//! Running `ptxas` on generated PTX and reading its resource report.
//!
//! `ptxas` is found at `$TILEC_PTXAS`, else in the tools folder `scripts/setup.sh` fills
//! (`.tools/cuda/bin/ptxas` of the repository tilec was built from, or beside the executable
//! in a checkout: the folders above the executable's), else on `PATH`, else in
//! `/usr/local/cuda/bin`. Nothing is looked up relative to the current directory. It runs
//! with a timeout (`$TILEC_PTXAS_TIMEOUT` seconds, default 300) in a fresh folder under the
//! temporary directory, which must exist.

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tilec_core::Diagnostic;

use tilec_core::target::Arch;

/// What `ptxas -v` reports for one kernel.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PtxasReport {
    pub registers: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub stack_bytes: u32,
    pub shared_bytes: u32,
    pub cubin: Vec<u8>,
    pub log: String,
}

/// The `ptxas` executable to use, if any (see the module documentation for the order).
pub fn find_ptxas() -> Option<PathBuf> {
    find_tool("TILEC_PTXAS", "ptxas")
}

/// A CUDA tool: `$env`, else `.tools/cuda/bin/<name>` of the repository or of a checkout
/// above the executable, else `PATH`, else `/usr/local/cuda/bin` (the module documentation's
/// order, for `ptxas` and `cuobjdump` alike).
pub(crate) fn find_tool(env: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    let tools = Path::new(".tools/cuda/bin").join(name);
    let tools = tools.as_path();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(tools);
    if repo.is_file() {
        return Some(repo);
    }
    if let Some(exe_dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        // target/<profile>/tilec or target/<profile>/deps/<test>: the checkout is a few levels up.
        for d in exe_dir.ancestors().take(5) {
            let cand = d.join(tools);
            if cand.is_file() {
                return Some(cand);
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            let cand = d.join(name);
            if cand.is_file() {
                return Some(cand);
            }
        }
    }
    let cand = PathBuf::from("/usr/local/cuda/bin").join(name);
    cand.is_file().then_some(cand)
}

/// Which ptxas [`find_ptxas`] finds, for the compilation cache's key: its entries hold that
/// ptxas's cubin and resource report, so another ptxas (another path, or another binary at
/// the same path) must miss. `none` when there is none.
pub fn ptxas_identity() -> String {
    identity_of(find_ptxas().as_deref())
}

/// The identity of the executable at `path`: the path, its size and modification time.
fn identity_of(path: Option<&Path>) -> String {
    let Some(p) = path else { return "none".into() };
    let full = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let meta = std::fs::metadata(&full).ok();
    let size = meta.as_ref().map_or(0, std::fs::Metadata::len);
    let mtime = meta
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    format!("{} {size} {mtime}", full.display())
}

/// How long ptxas may run.
fn timeout() -> Duration {
    let secs = std::env::var("TILEC_PTXAS_TIMEOUT").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(300);
    Duration::from_secs(secs.max(1))
}

fn number_before(line: &str, key: &str) -> Option<u32> {
    let idx = line.find(key)?;
    line[..idx].split_whitespace().last()?.parse().ok()
}

/// Parses the `-v` output of ptxas (one kernel).
pub fn parse_report(log: &str) -> PtxasReport {
    let mut r = PtxasReport { log: log.to_string(), ..Default::default() };
    for line in log.lines() {
        if let Some(v) = number_before(line, "registers") {
            r.registers = v;
        }
        if let Some(v) = number_before(line, "bytes smem") {
            r.shared_bytes = v;
        }
        if let Some(v) = number_before(line, "bytes stack frame") {
            r.stack_bytes = v;
        }
        if let Some(v) = number_before(line, "bytes spill stores") {
            r.spill_stores = v;
        }
        if let Some(v) = number_before(line, "bytes spill loads") {
            r.spill_loads = v;
        }
    }
    r
}

/// Assembles `ptx` for `arch` and returns the cubin and the resource report.
pub fn ptxas(ptx: &str, arch: &Arch) -> Result<PtxasReport, Diagnostic> {
    let exe = find_ptxas().ok_or_else(|| {
        Diagnostic::error("E0902", "ptxas not found")
            .with_note("run scripts/setup.sh, or set TILEC_PTXAS to a ptxas of CUDA 13.0 or later")
    })?;
    let tmp = std::env::temp_dir();
    if !tmp.is_dir() {
        return Err(Diagnostic::error(
            "E0902",
            format!("the temporary directory {} does not exist (set TMPDIR to a folder that does)", tmp.display()),
        ));
    }
    let dir = tmp.join(format!("tilec-ptxas-{}-{}", std::process::id(), unique()));
    std::fs::create_dir(&dir)
        .map_err(|e| Diagnostic::error("E0902", format!("cannot create {}: {e}", dir.display())))?;
    let src = dir.join("k.ptx");
    let out = dir.join("k.cubin");
    let result = (|| {
        std::fs::write(&src, ptx)
            .map_err(|e| Diagnostic::error("E0902", format!("cannot write {}: {e}", src.display())))?;
        let mut cmd = Command::new(&exe);
        cmd.arg(format!("-arch={}", arch.name)).arg("-v").arg("-o").arg(&out).arg(&src);
        let (status, stdout, stderr) = run_with_timeout(cmd, "ptxas", &exe)?;
        let log = format!("{}{}", String::from_utf8_lossy(&stdout), String::from_utf8_lossy(&stderr));
        if !status.success() {
            let mut d = Diagnostic::error("E0902", format!("ptxas rejected the PTX for {}", arch.name));
            for l in log.lines().take(20) {
                d = d.with_note(l.to_string());
            }
            return Err(d);
        }
        let mut r = parse_report(&log);
        r.cubin = std::fs::read(&out)
            .map_err(|e| Diagnostic::error("E0902", format!("cannot read {}: {e}", out.display())))?;
        Ok(r)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Runs `cmd` (the tool `what` at `exe`) to its end within the timeout, both pipes drained
/// while it runs (a chatty tool never blocks on a full pipe): its status, stdout and stderr.
pub(crate) fn run_with_timeout(
    cmd: Command,
    what: &str,
    exe: &Path,
) -> Result<(std::process::ExitStatus, Vec<u8>, Vec<u8>), Diagnostic> {
    run_within(cmd, what, exe, timeout())
}

/// [`run_with_timeout`] with the limit given.
fn run_within(
    mut cmd: Command,
    what: &str,
    exe: &Path,
    limit: Duration,
) -> Result<(std::process::ExitStatus, Vec<u8>, Vec<u8>), Diagnostic> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Diagnostic::error("E0902", format!("cannot run {}: {e}", exe.display())))?;
    // Each pipe's reader says when its pipe closes — when the tool exits, as a rule — so the
    // wait ends then, not at the next tick of a polling loop (a 20 ms sleep between polls
    // cost 10 ms a ptxas run on average: a tenth of a memory-bound kernel's cold compile).
    let (closed_tx, closed) = std::sync::mpsc::channel::<()>();
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        let closed_tx = closed_tx.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            let _ = closed_tx.send(());
            buf
        })
    };
    let out_t = drain(child.stdout.take().map(|x| Box::new(x) as Box<dyn std::io::Read + Send>));
    let err_t = drain(child.stderr.take().map(|x| Box::new(x) as Box<dyn std::io::Read + Send>));
    drop(closed_tx);
    let deadline = Instant::now() + limit;
    for _ in 0..2 {
        if closed.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_err() {
            break; // the deadline (checked below), or both readers already gone
        }
    }
    // Both pipes closed: the exit is a moment away (or the tool closed them and runs on).
    let mut pause = Duration::from_micros(200);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Diagnostic::error(
                    "E0902",
                    format!("{what} did not finish in {} s (TILEC_PTXAS_TIMEOUT sets the limit)", limit.as_secs()),
                ));
            }
            Ok(None) => {
                std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => return Err(Diagnostic::error("E0902", format!("waiting for {what}: {e}"))),
        }
    };
    Ok((status, out_t.join().unwrap_or_default(), err_t.join().unwrap_or_default()))
}

pub(crate) fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_tool_is_waited_for_until_it_ends_and_no_longer() {
        let limit = Duration::from_secs(20);
        let t = Instant::now();
        let (st, out, err) = run_within(sh("echo out; echo err >&2; exit 3"), "sh", Path::new("sh"), limit).unwrap();
        assert_eq!((st.code(), &out[..], &err[..]), (Some(3), &b"out\n"[..], &b"err\n"[..]));
        assert!(t.elapsed() < Duration::from_secs(5));
        // Its pipes closed, the tool runs on: waited for to its end.
        let t = Instant::now();
        let (st, _, _) = run_within(sh("exec >&- 2>&-; sleep 0.3"), "sh", Path::new("sh"), limit).unwrap();
        assert!(st.success() && t.elapsed() >= Duration::from_millis(300), "{:?}", t.elapsed());
        // Past the limit: killed, and said.
        let t = Instant::now();
        let e = run_within(sh("sleep 30"), "sh", Path::new("sh"), Duration::from_secs(1)).unwrap_err();
        assert!(e.message.contains("did not finish in 1 s"), "{}", e.message);
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }

    #[test]
    fn the_identity_tells_ptxas_binaries_apart() {
        let dir = std::env::temp_dir().join(format!("tilec-ptxas-id-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, b"one").unwrap();
        std::fs::write(&b, b"three").unwrap();
        let (ia, ib) = (identity_of(Some(&a)), identity_of(Some(&b)));
        assert_ne!(ia, ib);
        assert_eq!(ia, identity_of(Some(&a)), "not stable");
        // Another binary at the same path.
        std::fs::write(&a, b"a longer one").unwrap();
        assert_ne!(ia, identity_of(Some(&a)));
        assert_eq!(identity_of(None), "none");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn parses_a_resource_report() {
        let log = "ptxas info    : Compiling entry function 'softmax' for 'sm_90a'\n\
                   ptxas info    : Function properties for softmax\n\
                   \x20   8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\
                   ptxas info    : Used 40 registers, used 1 barriers, 64 bytes smem";
        let r = parse_report(log);
        assert_eq!((r.registers, r.shared_bytes, r.stack_bytes, r.spill_stores, r.spill_loads), (40, 64, 8, 4, 4));
    }
}
