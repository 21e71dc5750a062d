//! `tilec cache ls|stats|clear|explain`: the compilation cache (`$TILEC_CACHE_DIR`, default
//! `~/.cache/tilec`) that `tilec compile` and the Rust API read and write.

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
    let Some(dir) = cache.dir().map(|d| d.display().to_string()) else {
        out::err("no cache folder: set TILEC_CACHE_DIR or HOME");
        return Ok(ExitCode::from(1));
    };
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
