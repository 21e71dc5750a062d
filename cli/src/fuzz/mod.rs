//! `tilec fuzz`: the campaign that keeps crashes, hangs and runaway memory out of the compiler,
//! the interpreter's argument parser and the launch validator.
//!
//! A supervisor splits each target's inputs into chunks and runs each chunk in a worker: this
//! same binary as `tilec fuzz --worker`, under an address-space limit (`--mem-gib`, 4 by
//! default), reporting `start I` before and `done I MICROS LABEL` after every input. A worker
//! that dies (a panic, an abort, a segfault, an allocation over the limit) or goes silent for
//! longer than `--timeout` seconds on one input is a finding: the supervisor writes the input
//! (regenerated from seed, target and index — inputs are never stored) with the worker's last
//! words to `--out`, and goes on from the next input in a new worker. The exit status is 1
//! when anything was found. `--replay I` runs one input in this process, for a debugger.

mod mutate;
mod targets;

use crate::out;
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use targets::{Corpus, Target};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Targets to run, each `NAME` or `NAME=COUNT`: tile, mlir, args, launch, or all.
    #[arg(long = "target", value_name = "NAME[=COUNT]", default_value = "all")]
    targets: Vec<String>,
    /// Inputs per target when a target gives no count.
    #[arg(long, default_value_t = 1000)]
    count: u64,
    /// Seed of the campaign: input I of target T is a function of (seed, T, I).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Workers at once (default: the number of CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// Inputs per worker process.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    chunk: u64,
    /// An input running longer than this many seconds is a hang (at least 1).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
    /// Address-space limit of a worker, in GiB: an allocation past it is a finding (at least 1).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    mem_gib: u64,
    /// The repository whose kernels and goldens seed the corpus.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Where findings are written.
    #[arg(long, default_value = "fuzz-findings")]
    out: PathBuf,
    /// Write the summary as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Run input I of the (single) target in this process and print it.
    #[arg(long, value_name = "I")]
    replay: Option<u64>,
    /// Test of the watchdog: `KIND@I,…` makes the worker panic, abort, hang or allocate
    /// 64 GiB at input I instead of running it (KIND: panic, abort, hang, oom).
    #[arg(long, hide = true, value_name = "KIND@I,…")]
    inject: Option<String>,
    #[arg(long, hide = true)]
    worker: bool,
    #[arg(long, hide = true, default_value_t = 0)]
    from: u64,
    #[arg(long, hide = true, default_value_t = 0)]
    to: u64,
}

fn parse_targets(a: &Args) -> Result<Vec<(Target, u64)>> {
    let mut out: Vec<(Target, u64)> = vec![];
    for t in &a.targets {
        let (name, count) = match t.split_once('=') {
            Some((n, c)) => (n, c.parse::<u64>().with_context(|| format!("--target {t}: `{c}` is not a count"))?),
            None => (t.as_str(), a.count),
        };
        let picked: Vec<Target> = if name == "all" {
            Target::ALL.to_vec()
        } else {
            vec![Target::parse(name)
                .with_context(|| format!("--target {t}: unknown target `{name}` (tile, mlir, args, launch or all)"))?]
        };
        for p in picked {
            if out.iter().any(|(q, _)| *q == p) {
                bail!("--target {}: given twice", p.name());
            }
            out.push((p, count));
        }
    }
    Ok(out)
}

pub fn run(a: Args) -> Result<ExitCode> {
    let targets = parse_targets(&a)?;
    if a.worker {
        let [(t, _)] = targets[..] else { bail!("a worker runs one target") };
        return worker(t, &a);
    }
    if let Some(i) = a.replay {
        let [(t, _)] = targets[..] else { bail!("--replay needs one --target") };
        let corpus = Corpus::load(&a.root, t).map_err(anyhow::Error::msg)?;
        let input = targets::generate(t, &corpus, &mut mutate::rng_for(a.seed, t.name(), i));
        out::print(&format!("{} input {i} of seed {}:\n{}\n", t.name(), a.seed, targets::describe(&input, &corpus)))?;
        let mut mlir =
            (t == Target::Mlir).then(tilec_ir::Mlir::new).transpose().map_err(|d| anyhow::anyhow!("{}", d.message))?;
        let label = targets::run(input, &corpus, &mut mlir);
        out::print(&format!("outcome: {label}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    supervise(&a, &targets)
}

/// The worker: inputs `from..to` of one target, one line before and after each.
fn worker(t: Target, a: &Args) -> Result<ExitCode> {
    limit_address_space(a.mem_gib)?;
    let corpus = Corpus::load(&a.root, t).map_err(anyhow::Error::msg)?;
    let mut mlir =
        (t == Target::Mlir).then(tilec_ir::Mlir::new).transpose().map_err(|d| anyhow::anyhow!("{}", d.message))?;
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    writeln!(w, "ready")?;
    w.flush()?;
    let inject: BTreeMap<u64, String> = a
        .inject
        .iter()
        .flat_map(|s| s.split(','))
        .filter_map(|x| x.split_once('@').and_then(|(k, i)| Some((i.parse().ok()?, k.to_string()))))
        .collect();
    for i in a.from..a.to {
        writeln!(w, "start {i}")?;
        w.flush()?;
        match inject.get(&i).map(String::as_str) {
            Some("panic") => panic!("injected panic at input {i}"),
            Some("abort") => std::process::abort(),
            Some("hang") => std::thread::sleep(Duration::from_secs(3600)),
            Some("oom") => {
                let v = vec![1u8; 64 << 30];
                std::hint::black_box(&v);
            }
            _ => {}
        }
        let t0 = Instant::now();
        let input = targets::generate(t, &corpus, &mut mutate::rng_for(a.seed, t.name(), i));
        let label = targets::run(input, &corpus, &mut mlir);
        writeln!(w, "done {i} {} {label}", t0.elapsed().as_micros())?;
        w.flush()?;
    }
    // The files the `args` target wrote for `@file` arguments.
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("tilec-fuzz-{}", std::process::id())));
    writeln!(w, "peak {}", peak_rss_kib().unwrap_or(0))?;
    Ok(ExitCode::SUCCESS)
}

fn limit_address_space(gib: u64) -> Result<()> {
    let bytes = gib.checked_mul(1 << 30).context("--mem-gib is too large")?;
    let lim = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
    // SAFETY: setrlimit reads one initialised struct; it affects only this process.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) };
    if rc != 0 {
        bail!("cannot limit the worker's address space: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// The largest resident set of this process so far, from /proc.
fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[derive(Debug, Default, Clone, serde::Serialize)]
struct Stats {
    inputs: u64,
    outcomes: BTreeMap<String, u64>,
    crashes: u64,
    hangs: u64,
    out_of_memory: u64,
    slowest_us: u64,
    slowest_input: u64,
    peak_rss_mib: u64,
    findings: Vec<String>,
}

#[derive(Debug)]
struct Chunk {
    target: Target,
    from: u64,
    to: u64,
}

/// How a worker ended.
enum End {
    Finished,
    /// It died or hung on input `at`.
    Stopped {
        at: u64,
        kind: &'static str,
        last_words: String,
    },
}

fn supervise(a: &Args, targets: &[(Target, u64)]) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the tilec executable to start workers")?;
    let jobs = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let chunk = a.chunk.max(1);
    let mut queue = VecDeque::new();
    for &(t, n) in targets {
        let mut i = 0;
        while i < n {
            queue.push_back(Chunk { target: t, from: i, to: (i + chunk).min(n) });
            i += chunk;
        }
    }
    let queue = Arc::new(Mutex::new(queue));
    let stats: Arc<Mutex<BTreeMap<Target, Stats>>> =
        Arc::new(Mutex::new(targets.iter().map(|(t, _)| (*t, Stats::default())).collect()));
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let started = Instant::now();
    // Progress and findings stream to stderr as they happen: a long campaign is never
    // silent until it ends (a line at most every 5 s, and each finding at once).
    let total_inputs: u64 = targets.iter().map(|(_, n)| n).sum();
    let last_report = Mutex::new(Instant::now());
    let progress = |stats: &Mutex<BTreeMap<Target, Stats>>| {
        let Ok(mut last) = last_report.lock() else { return };
        if last.elapsed() < Duration::from_secs(5) {
            return;
        }
        *last = Instant::now();
        let (done, found) = stats
            .lock()
            .map(|st| st.values().fold((0, 0), |(d, f), s| (d + s.inputs, f + s.findings.len())))
            .unwrap_or((0, 0));
        out::err(&format!(
            "fuzz: {done} of {total_inputs} inputs, {found} findings, {:.0} s",
            started.elapsed().as_secs_f64()
        ));
    };
    std::thread::scope(|s| {
        for _ in 0..jobs {
            let (queue, stats, errors, exe) = (queue.clone(), stats.clone(), errors.clone(), exe.clone());
            let progress = &progress;
            s.spawn(move || loop {
                let Some(c) = queue.lock().map(|mut q| q.pop_front()).ok().flatten() else { return };
                match run_chunk(&exe, a, &c, &stats) {
                    Ok(End::Finished) => {}
                    Ok(End::Stopped { at, kind, last_words }) => {
                        let path = record_finding(a, c.target, at, kind, &last_words);
                        out::err(&format!("fuzz: finding: {} {kind} at input {at}: {path}", c.target.name()));
                        if let Ok(mut st) = stats.lock() {
                            let e = st.entry(c.target).or_default();
                            e.inputs += 1;
                            match kind {
                                "hang" => e.hangs += 1,
                                "out of memory" => e.out_of_memory += 1,
                                _ => e.crashes += 1,
                            }
                            e.findings.push(format!("{kind} at input {at}: {path}"));
                        }
                        if at + 1 < c.to {
                            if let Ok(mut q) = queue.lock() {
                                q.push_front(Chunk { target: c.target, from: at + 1, to: c.to });
                            }
                        }
                    }
                    Err(e) => {
                        if let Ok(mut v) = errors.lock() {
                            v.push(format!("{} inputs {}..{}: {e:#}", c.target.name(), c.from, c.to));
                        }
                    }
                }
                progress(&stats);
            });
        }
    });
    let errors = errors.lock().map(|v| v.clone()).unwrap_or_default();
    if !errors.is_empty() {
        bail!("the fuzz workers could not run:\n{}", errors.join("\n"));
    }
    let stats = stats.lock().map(|s| s.clone()).unwrap_or_default();
    let secs = started.elapsed().as_secs_f64();
    let mut text = String::new();
    let (mut total, mut crashes, mut hangs, mut oom, mut peak) = (0, 0, 0, 0, 0);
    for (t, st) in &stats {
        let outcomes: Vec<String> = st.outcomes.iter().map(|(k, v)| format!("{v} {k}")).collect();
        text.push_str(&format!(
            "{:<7}{} inputs: {}; slowest {:.3} s (input {}); peak worker memory {} MiB\n",
            t.name(),
            st.inputs,
            outcomes.join(", "),
            st.slowest_us as f64 / 1e6,
            st.slowest_input,
            st.peak_rss_mib
        ));
        for f in &st.findings {
            text.push_str(&format!("       {f}\n"));
        }
        total += st.inputs;
        crashes += st.crashes;
        hangs += st.hangs;
        oom += st.out_of_memory;
        peak = peak.max(st.peak_rss_mib);
    }
    text.push_str(&format!(
        "fuzz: {total} inputs (seed {}), {crashes} crashes, {hangs} hangs over {} s, {oom} over the {} GiB memory limit; peak worker memory {peak} MiB; {secs:.1} s with {jobs} workers\n",
        a.seed, a.timeout, a.mem_gib
    ));
    out::print(&text)?;
    if let Some(p) = &a.json {
        let by_name: BTreeMap<&str, &Stats> = stats.iter().map(|(t, s)| (t.name(), s)).collect();
        let j = serde_json::json!({
            "seed": a.seed, "inputs": total, "crashes": crashes, "hangs": hangs, "out_of_memory": oom,
            "timeout_s": a.timeout, "mem_gib": a.mem_gib, "seconds": secs, "workers": jobs,
            "peak_worker_mib": peak, "targets": by_name, "tilec_version": env!("CARGO_PKG_VERSION"),
        });
        out::write_file(p, &serde_json::to_string_pretty(&j)?)?;
    }
    Ok(if crashes + hangs + oom == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// One worker over one chunk, watched line by line.
fn run_chunk(exe: &Path, a: &Args, c: &Chunk, stats: &Mutex<BTreeMap<Target, Stats>>) -> Result<End> {
    let mut child = Command::new(exe)
        .args(["fuzz", "--worker", "--target", c.target.name()])
        .arg("--seed")
        .arg(a.seed.to_string())
        .arg("--from")
        .arg(c.from.to_string())
        .arg("--to")
        .arg(c.to.to_string())
        .arg("--mem-gib")
        .arg(a.mem_gib.to_string())
        .arg("--root")
        .arg(&a.root)
        .args(a.inject.iter().flat_map(|i| ["--inject", i.as_str()]))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start a fuzz worker")?;
    let stdout = child.stdout.take().context("worker stdout")?;
    let mut stderr = child.stderr.take().context("worker stderr")?;
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // The last 4 KiB of the worker's standard error: its last words when it dies.
    let tail = Arc::new(Mutex::new(Vec::<u8>::new()));
    let tail_w = tail.clone();
    let err_thread = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut t) = tail_w.lock() {
                t.extend_from_slice(&buf[..n]);
                let excess = t.len().saturating_sub(4096);
                t.drain(..excess);
            }
        }
    });
    let mut current: Option<u64> = None;
    let mut ready = false;
    let mut local = Stats::default();
    let end = loop {
        // The corpus is built when a worker starts (the mlir target compiles the library).
        let wait = if ready { Duration::from_secs(a.timeout) } else { Duration::from_secs(a.timeout.max(300)) };
        match rx.recv_timeout(wait) {
            Ok(line) => {
                let mut f = line.splitn(4, ' ');
                match (f.next(), f.next(), f.next(), f.next()) {
                    (Some("ready"), ..) => ready = true,
                    (Some("start"), Some(i), ..) => current = i.parse().ok(),
                    (Some("done"), Some(i), Some(us), Some(label)) => {
                        let (i, us) = (i.parse().unwrap_or(0), us.parse().unwrap_or(0));
                        local.inputs += 1;
                        *local.outcomes.entry(label.to_string()).or_default() += 1;
                        if us > local.slowest_us {
                            local.slowest_us = us;
                            local.slowest_input = i;
                        }
                        current = None;
                    }
                    (Some("peak"), Some(kib), ..) => local.peak_rss_mib = kib.parse::<u64>().unwrap_or(0) / 1024,
                    _ => {}
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                break match current {
                    Some(at) => End::Stopped { at, kind: "hang", last_words: String::new() },
                    None => End::Stopped { at: c.from, kind: "hang", last_words: "while loading the corpus".into() },
                };
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().context("waiting for a fuzz worker")?;
                let _ = err_thread.join();
                let words = tail.lock().map(|t| String::from_utf8_lossy(&t).into_owned()).unwrap_or_default();
                if status.success() && current.is_none() {
                    break End::Finished;
                }
                let Some(at) = current else {
                    bail!("a worker failed before its first input ({status}): {}", words.trim());
                };
                let kind = if words.contains("memory allocation of")
                    || words.contains("bad_alloc")
                    || words.contains("out of memory")
                    || words.contains("Cannot allocate memory")
                {
                    "out of memory"
                } else if words.contains("panicked") {
                    "panic"
                } else {
                    "crash"
                };
                break End::Stopped { at, kind, last_words: format!("{status}\n{words}") };
            }
        }
    };
    if let Ok(mut st) = stats.lock() {
        let e = st.entry(c.target).or_default();
        e.inputs += local.inputs;
        for (k, v) in local.outcomes {
            *e.outcomes.entry(k).or_default() += v;
        }
        if local.slowest_us > e.slowest_us {
            e.slowest_us = local.slowest_us;
            e.slowest_input = local.slowest_input;
        }
        e.peak_rss_mib = e.peak_rss_mib.max(local.peak_rss_mib);
    }
    Ok(end)
}

/// Writes a finding: how to replay it, the worker's last words and the input itself.
fn record_finding(a: &Args, t: Target, at: u64, kind: &str, last_words: &str) -> String {
    let path = a.out.join(format!("{}-seed{}-input{at}.txt", t.name(), a.seed));
    let input = match Corpus::load(&a.root, t) {
        Ok(corpus) => {
            let input = targets::generate(t, &corpus, &mut mutate::rng_for(a.seed, t.name(), at));
            targets::describe(&input, &corpus)
        }
        Err(e) => format!("(the input could not be regenerated: {e})"),
    };
    let text = format!(
        "{kind} in target {} at input {at} of seed {}\nreplay: tilec fuzz --target {} --seed {} --replay {at}\n--- worker's last words ---\n{}\n--- input ---\n{input}\n",
        t.name(),
        a.seed,
        t.name(),
        a.seed,
        last_words.trim()
    );
    match std::fs::create_dir_all(&a.out).and_then(|_| std::fs::write(&path, text)) {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("(not written: {e})"),
    }
}
