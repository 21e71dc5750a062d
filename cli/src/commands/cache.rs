//! `tilec cache ls|stats|clear|explain|warm`: the compilation cache (`$TILEC_CACHE_DIR`,
//! default `~/.cache/tilec`) that `tilec compile` and the Rust API read and write. `warm`
//! fills it ahead of a deployment — every kernel of the files for every target asked, side by
//! side on the machine's cores (`tilec::parallel`) — so that a JIT's first launches hit.

use super::read_input;
use crate::out;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;
use tilec::runtime::cache::{Cache, Lookup, Miss};
use tilec::Source;

#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// List the entries: kernel, target, constants, size, last use.
    Ls,
    /// The folder, the number of entries, their bytes and the size cap.
    Stats,
    /// Remove every entry.
    Clear,
    /// Say whether compiling FILE with these options hits the cache, and if not, which key
    /// fields differ from the nearest entry.
    Explain(Box<ExplainArgs>),
    /// Compile every kernel of the files for each --arch into the cache (defaults of their
    /// constants), several at once; entries already there are kept.
    Warm(WarmArgs),
}

#[derive(clap::Args, Debug)]
pub struct WarmArgs {
    /// The .tile source files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Target (repeatable, or comma-separated): sm_90a, sm_103a, sm_121a, …
    #[arg(long, required = true, value_delimiter = ',')]
    arch: Vec<String>,
    /// Compiles at once (default: $TILEC_COMPILE_THREADS, else the machine's cores).
    #[arg(short = 'j', long)]
    jobs: Option<usize>,
}

#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// The .tile source file.
    file: PathBuf,
    #[command(flatten)]
    request: super::RequestArgs,
}

fn ago(t: SystemTime) -> String {
    match SystemTime::now().duration_since(t) {
        Ok(d) if d.as_secs() < 120 => format!("{} s ago", d.as_secs()),
        Ok(d) if d.as_secs() < 7200 => format!("{} min ago", d.as_secs() / 60),
        Ok(d) if d.as_secs() < 172_800 => format!("{} h ago", d.as_secs() / 3600),
        Ok(d) => format!("{} days ago", d.as_secs() / 86_400),
        Err(_) => "just now".into(),
    }
}

fn field<'a>(k: &'a tilec::runtime::cache::CacheKey, name: &str) -> &'a str {
    k.fields.get(name).map(String::as_str).unwrap_or("?")
}

pub fn run(cmd: Cmd) -> Result<ExitCode> {
    let cache = Cache::from_env();
    // `warm` works without a folder too (it fills the memory layer, and says so).
    let dir = cache.dir().map(|d| d.display().to_string());
    if dir.is_none() && !matches!(cmd, Cmd::Warm(_)) {
        out::err("no cache folder: set TILEC_CACHE_DIR or HOME");
        return Ok(ExitCode::from(1));
    }
    let dir = dir.unwrap_or_default();
    match cmd {
        Cmd::Ls => {
            let entries = cache.entries();
            out::println(&format!("{} entries in {dir}", entries.len()))?;
            for e in entries {
                let k = &e.key;
                let kernel = if field(k, "kernel").is_empty() { "(only kernel)" } else { field(k, "kernel") };
                out::println(&format!(
                    "{}  {kernel:<24} {:<8} {:>9} B  {:<14} consts [{}]",
                    &e.digest[..e.digest.len().min(12)],
                    field(k, "target"),
                    e.bytes,
                    ago(e.last_used),
                    field(k, "consts")
                ))?;
            }
        }
        Cmd::Stats => {
            let entries = cache.entries();
            let bytes: u64 = entries.iter().map(|e| e.bytes).sum();
            out::println(&format!("folder: {dir}"))?;
            out::println(&format!("entries: {}", entries.len()))?;
            out::println(&format!("bytes: {bytes} of a {} cap (TILEC_CACHE_MAX_BYTES)", cache.cap_bytes()))?;
            if let (Some(o), Some(n)) =
                (entries.iter().map(|e| e.last_used).min(), entries.iter().map(|e| e.last_used).max())
            {
                out::println(&format!("least recently used: {}; most: {}", ago(o), ago(n)))?;
            }
        }
        Cmd::Clear => {
            let n = cache.clear()?;
            out::println(&format!("removed {n} entries from {dir}"))?;
        }
        Cmd::Warm(a) => return warm(&a, &cache),
        Cmd::Explain(a) => {
            let text = read_input(&a.file)?;
            let source = Source::new(a.file.display().to_string(), text);
            let opts = a.request.options()?;
            // A kernel the file does not define has no entry to explain.
            if let (Some(k), Ok(file)) = (&opts.kernel, tilec_frontend::parse(&source.text)) {
                if !file.kernels.iter().any(|x| &x.name.name == k) {
                    let names: Vec<&str> = file.kernels.iter().map(|x| x.name.name.as_str()).collect();
                    out::println(&format!(
                        "no kernel named `{k}` in {} (it defines: {})",
                        a.file.display(),
                        if names.is_empty() { "nothing".to_string() } else { names.join(", ") }
                    ))?;
                    return Ok(ExitCode::from(1));
                }
            }
            let Some(key) = tilec::cache_key(&source, &opts) else {
                out::println("no key: the file does not parse or the arch is unknown (`tilec compile` says which)")?;
                return Ok(ExitCode::from(1));
            };
            match cache.get(&key) {
                Lookup::Hit(..) => out::println(&format!("hit: entry {}", key.digest()))?,
                Lookup::Miss(m) => {
                    let why = match m {
                        Miss::Absent => "no entry of this key".to_string(),
                        Miss::Corrupt(why) => format!("the entry is damaged ({why}); the next compile rewrites it"),
                        Miss::AlwaysCompile => "TILEC_ALWAYS_COMPILE is set".to_string(),
                    };
                    out::println(&format!("miss: {why} (key {})", key.digest()))?;
                    match cache.nearest(&key) {
                        Some((e, diff)) if !diff.is_empty() => {
                            out::println(&format!(
                                "nearest entry {} differs in:",
                                &e.digest[..12.min(e.digest.len())]
                            ))?;
                            for d in diff {
                                out::println(&format!(
                                    "  {}: this compile `{}`, the entry `{}`",
                                    d.name, d.ours, d.theirs
                                ))?;
                            }
                        }
                        Some(_) => {}
                        None => out::println("the cache is empty")?,
                    }
                    return Ok(ExitCode::from(1));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `tilec cache warm`: one line a (file, kernel, target) in order, then the totals.
fn warm(a: &WarmArgs, cache: &Cache) -> Result<ExitCode> {
    let mut jobs = vec![];
    let mut failed = 0usize;
    for file in &a.files {
        let source = Source::new(file.display().to_string(), read_input(file)?);
        let names: Vec<String> = match tilec_frontend::parse(&source.text) {
            Ok(f) => f.kernels.into_iter().map(|k| k.name.name).collect(),
            // The compile reports the parse error with its span.
            Err(_) => vec![String::new()],
        };
        for name in names {
            for arch in &a.arch {
                let kernel = (!name.is_empty()).then(|| name.clone());
                let opts = tilec::CompileOptions { arch: arch.clone(), kernel, ..Default::default() };
                jobs.push((source.clone(), opts));
            }
        }
    }
    let threads = a.jobs.filter(|&j| j > 0).unwrap_or_else(tilec::parallel::threads);
    let start = std::time::Instant::now();
    let (mut compiled, mut hits) = (0usize, 0usize);
    let mut compile_ms = 0.0;
    let done = tilec::parallel::ahead(
        jobs.len(),
        threads,
        |i| tilec::compile_cached(&jobs[i].0, &jobs[i].1, cache),
        |i, r| {
            let (source, opts) = &jobs[i];
            let what = format!("{} {} {}", source.name, opts.kernel.as_deref().unwrap_or("(only kernel)"), opts.arch);
            match r {
                Ok(c) if c.hit.is_some() => {
                    hits += 1;
                    out::println(&format!("{what}: in the cache"))
                }
                Ok(c) => {
                    compiled += 1;
                    compile_ms += c.entry.compile_ms;
                    out::println(&format!("{what}: compiled in {:.0} ms", c.entry.compile_ms))
                }
                Err(e) => {
                    failed += 1;
                    out::err(&format!("{what}: failed"));
                    out::err(e.render().trim_end());
                    Ok(())
                }
            }
        },
    );
    done?;
    out::println(&format!(
        "{} variants: {compiled} compiled ({:.1} s of compiling), {hits} already in the cache, {failed} failed; {:.1} s on {threads} thread{}",
        jobs.len(),
        compile_ms / 1e3,
        start.elapsed().as_secs_f64(),
        if threads == 1 { "" } else { "s" }
    ))?;
    if cache.dir().is_none() {
        out::println("no cache folder (TILEC_CACHE_DIR or HOME): nothing outlives this process")?;
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
