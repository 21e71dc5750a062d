//! The compilation cache: compiled kernels by the hash of everything that decides their code.
//!
//! A [`CacheKey`] is a list of named fields — the canonical kernel text (comments and spacing
//! do not count), the kernel, the constants, the target, the tensors compiled without the
//! 16-byte specialisation, the pipeline switches, the tilec version and build id, the LLVM
//! version — and its [`CacheKey::digest`] (SHA-256 of the fields) names the entry. The
//! cache knows nothing of how the key was made: the compiler fills it in
//! (`tilec::compile_cached`), and `tilec cache explain` compares the fields of a lookup that
//! missed with those of the nearest entry.
//!
//! Two layers. The memory layer holds every entry this process has seen. The disk layer is one
//! file per entry, `DIR/v1/<2 hex>/<digest>.tilec`: a header line, a JSON line (the key
//! fields, section sizes and the SHA-256 of the payload) and the payload (the artifact's
//! metadata JSON, the PTX, the cubin if ptxas made one). Writes go to a temporary file in the
//! same folder and are renamed over the entry, so a reader sees a whole entry or none, and
//! processes writing the same entry at once each leave a whole one. An entry whose sizes or
//! checksum do not match is a miss (the compiler then overwrites it); a hit refreshes the
//! file's modification time, and after a write the oldest entries go until the folder is
//! under its size cap (least recently used first). A folder that cannot be written (read-only,
//! full, not a folder) never fails a compilation: [`Cache::put`] returns the reason the first
//! time only, and the cache carries on in memory.
//!
//! Environment: `TILEC_CACHE_DIR` (default `~/.cache/tilec`), `TILEC_CACHE_MAX_BYTES`
//! (default 1 GiB), `TILEC_ALWAYS_COMPILE=1` (every lookup misses; results are still stored).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tilec_core::artifact::Artifact;

const MAGIC: &str = "tilec-cache-entry v1";
const LAYOUT: &str = "v1";
const EXT: &str = "tilec";
/// The folder of request aliases (see [`Cache::recall`]).
const REQUESTS: &str = "req";

/// What decides a kernel's code, field by field (names are stable: they are shown by
/// `tilec cache explain` and stored in every entry).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheKey {
    /// Field name → value, sorted (the key's text and digest are made from this order).
    pub fields: BTreeMap<String, String>,
}

impl CacheKey {
    /// An empty key.
    pub fn new() -> CacheKey {
        CacheKey::default()
    }

    /// The key with field `name` set to `value`.
    pub fn field(mut self, name: &str, value: impl Into<String>) -> CacheKey {
        self.fields.insert(name.to_string(), value.into());
        self
    }

    /// SHA-256 of the fields, in hex: the entry's name.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        for (k, v) in &self.fields {
            // Lengths first, so that no two field lists hash the same text.
            h.update((k.len() as u64).to_le_bytes());
            h.update(k.as_bytes());
            h.update((v.len() as u64).to_le_bytes());
            h.update(v.as_bytes());
        }
        hex(&h.finalize())
    }

    /// The fields that differ from `other`'s (a missing field reads "").
    pub fn differences(&self, other: &CacheKey) -> Vec<FieldDiff> {
        let mut names: Vec<&String> = self.fields.keys().chain(other.fields.keys()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|n| {
                let (a, b) = (self.fields.get(n), other.fields.get(n));
                (a != b).then(|| FieldDiff {
                    name: n.clone(),
                    ours: a.cloned().unwrap_or_default(),
                    theirs: b.cloned().unwrap_or_default(),
                })
            })
            .collect()
    }
}

/// A key field that differs between two keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDiff {
    /// The field's name.
    pub name: String,
    /// This key's value.
    pub ours: String,
    /// The other key's value.
    pub theirs: String,
}

/// SHA-256 of `text`, in hex (for key fields that stand for long texts).
pub fn sha256_hex(text: &[u8]) -> String {
    hex(&Sha256::digest(text))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What ptxas reported of the kernel, when it assembled the entry's cubin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    /// Registers a thread.
    pub registers: u32,
    /// Static shared memory a block, in bytes.
    pub shared_bytes: u32,
    /// Stack frame a thread, in bytes.
    pub stack_bytes: u32,
    /// Bytes of register spill stores.
    pub spill_stores: u32,
    /// Bytes of register spill loads.
    pub spill_loads: u32,
}

/// One compiled kernel in the cache.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The key it was compiled under.
    pub key: CacheKey,
    /// The PTX, signature and hints.
    pub artifact: Artifact,
    /// The cubin ptxas assembled from the PTX, when ptxas was found.
    pub cubin: Option<Vec<u8>>,
    /// What ptxas reported of the cubin.
    pub resources: Option<Resources>,
    /// Milliseconds the compilation took (0 where unknown).
    pub compile_ms: f64,
}

/// Where a lookup found its entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// In this process's memory.
    Memory,
    /// In the cache directory.
    Disk,
}

/// Why a lookup missed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Miss {
    /// No entry of that key.
    Absent,
    /// An entry whose file is damaged (the reason); it will be overwritten.
    Corrupt(String),
    /// `TILEC_ALWAYS_COMPILE` is set.
    AlwaysCompile,
}

/// A lookup's answer.
#[derive(Clone, Debug)]
pub enum Lookup {
    /// Found, and where.
    Hit(Arc<Entry>, Layer),
    /// Not found, and why.
    Miss(Miss),
}

/// An entry on disk as `tilec cache ls` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryInfo {
    /// The entry's file name (the SHA-256 of its key).
    pub digest: String,
    /// The key it was compiled under.
    pub key: CacheKey,
    /// Its size on disk.
    pub bytes: u64,
    /// When a lookup last found it (the file's modification time).
    pub last_used: SystemTime,
    /// Its file.
    pub path: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct Header {
    key: CacheKey,
    /// Section sizes in payload order: meta, ptx, cubin.
    meta: u64,
    ptx: u64,
    cubin: Option<u64>,
    resources: Option<Resources>,
    compile_ms: f64,
    sha256: String,
}

/// The two-layer cache (see the module doc).
#[derive(Debug)]
pub struct Cache {
    dir: Option<PathBuf>,
    cap_bytes: u64,
    always_compile: bool,
    mem: Mutex<BTreeMap<String, Arc<Entry>>>,
    /// Exact request texts already answered in this process → their entry's digest (a
    /// memory hit without rebuilding the key).
    requests: Mutex<BTreeMap<String, String>>,
    warned: AtomicBool,
    /// What was wrong with the environment's settings (said once, by [`Cache::env_warning`]).
    env_problems: Vec<String>,
    env_warned: AtomicBool,
}

/// The cap and the always-compile switch the environment's values ask for, and what is
/// wrong with them: a cap that is not a number of bytes keeps the default, a switch that is
/// none of `1 true yes on` / `0 false no off` compiles always (never wrong, only slower).
pub fn env_settings(max_bytes: Option<&str>, always: Option<&str>) -> (u64, bool, Vec<String>) {
    let mut problems = vec![];
    let cap = match max_bytes.map(str::trim).filter(|v| !v.is_empty()) {
        None => DEFAULT_CAP_BYTES,
        Some(v) => v.parse::<u64>().unwrap_or_else(|_| {
            problems.push(format!(
                "TILEC_CACHE_MAX_BYTES=`{v}` is not a number of bytes; using the default {DEFAULT_CAP_BYTES}"
            ));
            DEFAULT_CAP_BYTES
        }),
    };
    let always = match always.map(|v| v.trim().to_ascii_lowercase()) {
        None => false,
        Some(v) => match v.as_str() {
            "" | "0" | "false" | "no" | "off" => false,
            "1" | "true" | "yes" | "on" => true,
            _ => {
                problems.push(format!(
                    "TILEC_ALWAYS_COMPILE=`{v}` is none of 1/true/yes/on or 0/false/no/off; compiling always"
                ));
                true
            }
        },
    };
    (cap, always, problems)
}

/// The default size cap of the disk layer.
pub const DEFAULT_CAP_BYTES: u64 = 1 << 30;

impl Cache {
    /// The cache the environment asks for: `TILEC_CACHE_DIR` or `~/.cache/tilec` (memory
    /// only when neither can be named), `TILEC_CACHE_MAX_BYTES`, `TILEC_ALWAYS_COMPILE`.
    pub fn from_env() -> Cache {
        let dir = std::env::var_os("TILEC_CACHE_DIR").filter(|d| !d.is_empty()).map(PathBuf::from).or_else(|| {
            std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".cache/tilec"))
        });
        let (max, always) = (std::env::var("TILEC_CACHE_MAX_BYTES").ok(), std::env::var("TILEC_ALWAYS_COMPILE").ok());
        let (cap, always, env_problems) = env_settings(max.as_deref(), always.as_deref());
        Cache { always_compile: always, env_problems, ..Cache::new(dir, cap) }
    }

    /// What was wrong with the environment's settings, the first time it is asked.
    pub fn env_warning(&self) -> Option<String> {
        let first = !self.env_problems.is_empty() && !self.env_warned.swap(true, Ordering::Relaxed);
        first.then(|| self.env_problems.join("; "))
    }

    /// A cache over `dir` (None: memory only) with a size cap in bytes.
    pub fn new(dir: Option<PathBuf>, cap_bytes: u64) -> Cache {
        Cache {
            dir,
            cap_bytes,
            always_compile: false,
            mem: Mutex::new(BTreeMap::new()),
            requests: Mutex::new(BTreeMap::new()),
            warned: AtomicBool::new(false),
            env_problems: vec![],
            env_warned: AtomicBool::new(false),
        }
    }

    /// Every lookup misses (results are still stored), as `TILEC_ALWAYS_COMPILE=1`.
    pub fn always_compile(mut self, on: bool) -> Cache {
        self.always_compile = on;
        self
    }

    /// The disk layer's folder, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The size the disk layer is evicted down to, in bytes (`$TILEC_CACHE_MAX_BYTES`).
    pub fn cap_bytes(&self) -> u64 {
        self.cap_bytes
    }

    fn entry_path(&self, digest: &str) -> Option<PathBuf> {
        let d = self.dir.as_ref()?;
        Some(d.join(LAYOUT).join(digest.get(..2).unwrap_or("00")).join(format!("{digest}.{EXT}")))
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Entry>>> {
        // A panic while holding the lock leaves plain data behind: use it.
        self.mem.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The entry that `request` (the exact text of a compile request: source and options,
    /// as the caller spells it) resolved to before — in this process (memory), or in any
    /// process through the request's alias file `DIR/v1/req/<sha256 of request>` (disk) —
    /// if that entry is still whole: a hit without canonicalising the source to rebuild its
    /// key. `None` sends the caller to [`Cache::get`] with the full key.
    pub fn recall(&self, request: &str) -> Option<(Arc<Entry>, Layer)> {
        if self.always_compile {
            return None;
        }
        let known = self.requests.lock().unwrap_or_else(|p| p.into_inner()).get(request).cloned();
        if let Some(e) = known.and_then(|d| self.memory().get(&d).cloned()) {
            return Some((e, Layer::Memory));
        }
        let alias = self.alias_path(request)?;
        let digest = std::fs::read_to_string(alias).ok()?;
        let digest = digest.trim();
        let path = self.entry_path(digest)?;
        let e = decode(&std::fs::read(&path).ok()?).ok()?;
        if e.key.digest() != digest {
            return None;
        }
        touch(&path);
        let e = Arc::new(e);
        self.memory().insert(digest.to_string(), e.clone());
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).insert(request.to_string(), digest.to_string());
        Some((e, Layer::Disk))
    }

    /// Remembers that `request` resolves to `key` (see [`Cache::recall`]); the alias file is
    /// written atomically, and a failure to write it only costs the next process a full key.
    pub fn remember(&self, request: String, key: &CacheKey) {
        let digest = key.digest();
        if let Some(alias) = self.alias_path(&request) {
            let _ = write_atomically(&alias, digest.as_bytes());
        }
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).insert(request, digest);
    }

    fn alias_path(&self, request: &str) -> Option<PathBuf> {
        Some(self.dir.as_ref()?.join(LAYOUT).join(REQUESTS).join(sha256_hex(request.as_bytes())))
    }

    /// Looks `key` up: memory first, then disk (a disk hit is kept in memory too).
    pub fn get(&self, key: &CacheKey) -> Lookup {
        if self.always_compile {
            return Lookup::Miss(Miss::AlwaysCompile);
        }
        let digest = key.digest();
        if let Some(e) = self.memory().get(&digest) {
            return Lookup::Hit(e.clone(), Layer::Memory);
        }
        let Some(path) = self.entry_path(&digest) else { return Lookup::Miss(Miss::Absent) };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(_) => return Lookup::Miss(Miss::Absent),
        };
        match decode(&bytes) {
            Ok(e) if e.key == *key => {
                touch(&path);
                let e = Arc::new(e);
                self.memory().insert(digest, e.clone());
                Lookup::Hit(e, Layer::Disk)
            }
            Ok(_) => Lookup::Miss(Miss::Corrupt("the entry holds another key".into())),
            Err(why) => Lookup::Miss(Miss::Corrupt(why)),
        }
    }

    /// Stores an entry in memory and on disk. `Some(reason)` the first time the disk layer
    /// fails (the caller says so once); later failures are silent. Never fails otherwise.
    pub fn put(&self, entry: Entry) -> Option<String> {
        let digest = entry.key.digest();
        let bytes = encode(&entry);
        self.memory().insert(digest.clone(), Arc::new(entry));
        let path = self.entry_path(&digest)?;
        match write_atomically(&path, &bytes) {
            Ok(()) => {
                self.evict(&path);
                None
            }
            Err(e) => {
                let first = !self.warned.swap(true, Ordering::Relaxed);
                first.then(|| {
                    format!(
                        "the compilation cache at {} cannot be written ({e}); compiling on, keeping results in memory only",
                        self.dir.as_deref().unwrap_or(Path::new("?")).display()
                    )
                })
            }
        }
    }

    /// Removes the least recently used entries until the folder is under its cap (never
    /// `keep`, the entry just written).
    fn evict(&self, keep: &Path) {
        let mut all = self.entry_files();
        let total: u64 = all.iter().map(|e| e.bytes).sum();
        if total <= self.cap_bytes {
            return;
        }
        all.sort_by_key(|e| e.last_used);
        let mut total = total;
        for e in all {
            if total <= self.cap_bytes {
                break;
            }
            if e.path != keep && std::fs::remove_file(&e.path).is_ok() {
                total = total.saturating_sub(e.bytes);
                self.memory().remove(&e.digest);
            }
        }
    }

    /// The entries on disk, by digest (damaged ones included, with an empty key).
    pub fn entries(&self) -> Vec<EntryInfo> {
        let mut all = self.entry_files();
        for e in &mut all {
            e.key = read_header(&e.path).map(|h| h.key).unwrap_or_default();
        }
        all
    }

    /// The entry files on disk with their size and last use, keys not read (an empty key):
    /// what eviction needs after every write, without opening every entry.
    fn entry_files(&self) -> Vec<EntryInfo> {
        let Some(root) = self.dir.as_ref().map(|d| d.join(LAYOUT)) else { return vec![] };
        let mut out = vec![];
        let Ok(shards) = std::fs::read_dir(&root) else { return out };
        let mut shards: Vec<PathBuf> = shards.filter_map(|e| e.ok().map(|e| e.path())).collect();
        shards.sort();
        for shard in shards {
            let Ok(files) = std::fs::read_dir(&shard) else { continue };
            let mut files: Vec<PathBuf> = files.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.sort();
            for path in files {
                if path.extension().and_then(|e| e.to_str()) != Some(EXT) {
                    continue;
                }
                let Ok(meta) = std::fs::metadata(&path) else { continue };
                let key = CacheKey::default();
                let digest = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
                let last_used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                out.push(EntryInfo { digest, key, bytes: meta.len(), last_used, path });
            }
        }
        out
    }

    /// Removes every entry (memory and disk); returns how many files went.
    pub fn clear(&self) -> std::io::Result<usize> {
        self.memory().clear();
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).clear();
        let mut n = 0;
        for e in self.entry_files() {
            std::fs::remove_file(&e.path)?;
            n += 1;
        }
        if let Some(d) = &self.dir {
            let aliases = d.join(LAYOUT).join(REQUESTS);
            if aliases.is_dir() {
                std::fs::remove_dir_all(aliases)?;
            }
        }
        Ok(n)
    }

    /// The entry on disk whose key differs from `key` in the fewest fields (ties: the most
    /// recently used), with those fields: why a lookup of `key` missed.
    pub fn nearest(&self, key: &CacheKey) -> Option<(EntryInfo, Vec<FieldDiff>)> {
        let mut best: Option<(EntryInfo, Vec<FieldDiff>)> = None;
        for e in self.entries() {
            let d = key.differences(&e.key);
            let better = match &best {
                None => true,
                Some((b, bd)) => d.len() < bd.len() || (d.len() == bd.len() && e.last_used > b.last_used),
            };
            if better {
                best = Some((e, d));
            }
        }
        best
    }
}

/// Writes `bytes` to `path` through a temporary file of its folder (made if missing) and a
/// rename: a reader sees the old file or the new one, never part of one, and writers of the
/// same path at once (threads or processes) each leave a whole file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let folder = path.parent().ok_or_else(|| std::io::Error::other("a path without a folder"))?;
    std::fs::create_dir_all(folder)?;
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let tmp = folder.join(format!(".tmp-{}-{nanos}-{serial}", std::process::id()));
    let result = (|| {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn touch(path: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(path) {
        let _ = f.set_modified(SystemTime::now());
    }
}

fn encode(e: &Entry) -> Vec<u8> {
    let meta = e.artifact.metadata_json();
    let mut payload = Vec::with_capacity(meta.len() + e.artifact.ptx.len() + e.cubin.as_ref().map_or(0, Vec::len));
    payload.extend_from_slice(meta.as_bytes());
    payload.extend_from_slice(e.artifact.ptx.as_bytes());
    if let Some(c) = &e.cubin {
        payload.extend_from_slice(c);
    }
    let header = Header {
        key: e.key.clone(),
        meta: meta.len() as u64,
        ptx: e.artifact.ptx.len() as u64,
        cubin: e.cubin.as_ref().map(|c| c.len() as u64),
        resources: e.resources.clone(),
        compile_ms: e.compile_ms,
        sha256: sha256_hex(&payload),
    };
    // Plain data with string keys: serialising cannot fail.
    let json = serde_json::to_string(&header).unwrap_or_default();
    let mut out = format!("{MAGIC}\n{json}\n").into_bytes();
    out.extend_from_slice(&payload);
    out
}

/// The header and where the payload starts.
fn split_header(bytes: &[u8]) -> Result<(Header, usize), String> {
    let magic_end = bytes.iter().position(|&b| b == b'\n').ok_or("no header line")?;
    if &bytes[..magic_end] != MAGIC.as_bytes() {
        return Err("not a tilec cache entry of this version".into());
    }
    let rest = &bytes[magic_end + 1..];
    let json_end = rest.iter().position(|&b| b == b'\n').ok_or("truncated header")?;
    let header: Header = serde_json::from_slice(&rest[..json_end]).map_err(|e| format!("unreadable header: {e}"))?;
    Ok((header, magic_end + 1 + json_end + 1))
}

fn read_header(path: &Path) -> Result<Header, String> {
    use std::io::Read;
    // The header is small; read a prefix rather than the whole entry.
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 64 * 1024];
    let n = f.read(&mut buf).map_err(|e| e.to_string())?;
    split_header(&buf[..n]).map(|(h, _)| h)
}

fn decode(bytes: &[u8]) -> Result<Entry, String> {
    let (h, start) = split_header(bytes)?;
    let payload = &bytes[start..];
    // Checked: a damaged header may hold any sizes.
    let want = [Some(h.meta), Some(h.ptx), h.cubin].into_iter().flatten().try_fold(0u64, u64::checked_add);
    if want != Some(payload.len() as u64) {
        let want = want.map_or_else(|| "more than 2^64".to_string(), |w| w.to_string());
        return Err(format!("truncated: {} payload bytes, the header says {want}", payload.len()));
    }
    if sha256_hex(payload) != h.sha256 {
        return Err("checksum mismatch".into());
    }
    let (meta, rest) = payload.split_at(h.meta as usize);
    let (ptx, cubin) = rest.split_at(h.ptx as usize);
    let meta = std::str::from_utf8(meta).map_err(|_| "metadata is not UTF-8")?;
    let ptx = String::from_utf8(ptx.to_vec()).map_err(|_| "PTX is not UTF-8")?;
    let artifact = Artifact::from_parts(meta, ptx)?;
    Ok(Entry {
        key: h.key,
        artifact,
        cubin: h.cubin.map(|_| cubin.to_vec()),
        resources: h.resources,
        compile_ms: h.compile_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_core::abi::Signature;

    fn artifact(name: &str) -> Artifact {
        let sig = Signature {
            name: name.into(),
            target: "sm_90a".into(),
            params: vec![],
            grid: vec![],
            block_threads: 128,
            shared_bytes: 0,
            constants: Default::default(),
            tma: vec![],
            requires: vec![],
            persistent: false,
            grid_dependency: false,
            shared_pad: 0,
            cluster: 1,
        };
        Artifact {
            kernel: name.into(),
            target: "sm_90a".into(),
            signature: sig,
            hints: Default::default(),
            report: vec!["a decision".into()],
            tilec_version: "0".into(),
            ptx: format!(".entry {name} {{ ret; }}"),
        }
    }

    fn entry(name: &str, key: &CacheKey) -> Entry {
        Entry {
            key: key.clone(),
            artifact: artifact(name),
            cubin: Some(vec![1, 2, 3]),
            resources: Some(Resources { registers: 32, ..Default::default() }),
            compile_ms: 1.5,
        }
    }

    fn key(v: &str) -> CacheKey {
        CacheKey::new().field("source", v).field("target", "sm_90a")
    }

    fn disk(dir: &Path) -> Cache {
        Cache::new(Some(dir.to_path_buf()), DEFAULT_CAP_BYTES)
    }

    #[test]
    fn malformed_environment_values_are_said_never_silently_the_default() {
        // Issue 26, item 6.
        assert_eq!(env_settings(None, None), (DEFAULT_CAP_BYTES, false, vec![]));
        assert_eq!(env_settings(Some(" 4096 "), Some("1")), (4096, true, vec![]));
        assert_eq!(env_settings(Some(""), Some("off")).2.len(), 0);
        let (cap, always, why) = env_settings(Some("1GB"), Some("maybe"));
        assert_eq!((cap, always), (DEFAULT_CAP_BYTES, true));
        assert!(why[0].contains("TILEC_CACHE_MAX_BYTES=`1GB`"), "{why:?}");
        assert!(why[1].contains("TILEC_ALWAYS_COMPILE=`maybe`"), "{why:?}");
        // Said once.
        let c = Cache { env_problems: why, ..Cache::new(None, 1) };
        assert!(c.env_warning().is_some_and(|w| w.contains("1GB")));
        assert_eq!(c.env_warning(), None);
    }

    #[test]
    fn an_entry_comes_back_from_memory_then_from_disk_whole() {
        let d = tempfile::tempdir().unwrap();
        let k = key("a");
        assert!(matches!(disk(d.path()).get(&k), Lookup::Miss(Miss::Absent)));
        let c = disk(d.path());
        assert_eq!(c.put(entry("k", &k)), None);
        assert!(matches!(c.get(&k), Lookup::Hit(_, Layer::Memory)));
        // Another process: only the disk layer.
        let Lookup::Hit(e, Layer::Disk) = disk(d.path()).get(&k) else { panic!("no disk hit") };
        assert_eq!(*e, entry("k", &k));
        assert!(matches!(disk(d.path()).get(&key("b")), Lookup::Miss(Miss::Absent)));
    }

    #[test]
    fn every_field_is_in_the_digest() {
        let k = key("a");
        assert_eq!(k.digest(), key("a").digest());
        assert_ne!(k.digest(), key("b").digest());
        assert_ne!(k.digest(), k.clone().field("target", "sm_121a").digest());
        assert_ne!(k.digest(), k.clone().field("extra", "").digest());
        // Field boundaries count: ("ab", "c") is not ("a", "bc").
        assert_ne!(CacheKey::new().field("ab", "c").digest(), CacheKey::new().field("a", "bc").digest());
        let d = k.differences(&k.clone().field("target", "sm_121a"));
        let want = FieldDiff { name: "target".into(), ours: "sm_90a".into(), theirs: "sm_121a".into() };
        assert_eq!(d, vec![want]);
    }

    #[test]
    fn truncated_and_corrupt_entries_are_misses() {
        let d = tempfile::tempdir().unwrap();
        let k = key("a");
        let c = disk(d.path());
        c.put(entry("k", &k));
        let path = c.entry_path(&k.digest()).unwrap();
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 5]).unwrap();
        let Lookup::Miss(Miss::Corrupt(why)) = disk(d.path()).get(&k) else { panic!("truncation not seen") };
        assert!(why.contains("truncated"), "{why}");
        let mut flipped = whole.clone();
        let last = flipped.len() - 10;
        flipped[last] ^= 0x20;
        std::fs::write(&path, &flipped).unwrap();
        let Lookup::Miss(Miss::Corrupt(why)) = disk(d.path()).get(&k) else { panic!("corruption not seen") };
        assert!(why.contains("checksum"), "{why}");
        // Section sizes whose sum overflows: damaged, not a panic.
        let huge = Header {
            key: k.clone(),
            meta: u64::MAX,
            ptx: 2,
            cubin: None,
            resources: None,
            compile_ms: 0.0,
            sha256: String::new(),
        };
        let text = format!("{MAGIC}\n{}\npayload", serde_json::to_string(&huge).unwrap());
        std::fs::write(&path, text).unwrap();
        let Lookup::Miss(Miss::Corrupt(why)) = disk(d.path()).get(&k) else { panic!("huge sizes not seen") };
        assert!(why.contains("more than 2^64"), "{why}");
        std::fs::write(&path, b"garbage").unwrap();
        assert!(matches!(disk(d.path()).get(&k), Lookup::Miss(Miss::Corrupt(_))));
        // A new write repairs it.
        let c = disk(d.path());
        c.put(entry("k", &k));
        assert!(matches!(disk(d.path()).get(&k), Lookup::Hit(_, Layer::Disk)));
    }

    #[test]
    fn an_unwritable_folder_is_said_once_and_the_cache_carries_on_in_memory() {
        let d = tempfile::tempdir().unwrap();
        // A file where the folder should be: no one, root included, can create entries in it.
        let blocker = d.path().join("file");
        std::fs::write(&blocker, b"").unwrap();
        let c = Cache::new(Some(blocker.join("cache")), DEFAULT_CAP_BYTES);
        let first = c.put(entry("k", &key("a")));
        assert!(first.as_deref().is_some_and(|w| w.contains("cannot be written")), "{first:?}");
        assert_eq!(c.put(entry("k", &key("b"))), None, "said twice");
        assert!(matches!(c.get(&key("a")), Lookup::Hit(_, Layer::Memory)));
    }

    #[test]
    fn writers_of_the_same_entry_at_once_leave_a_whole_one() {
        let d = tempfile::tempdir().unwrap();
        let k = key("a");
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..25 {
                        disk(d.path()).put(entry("k", &k));
                        // Every read in between sees a whole entry or none.
                        match disk(d.path()).get(&k) {
                            Lookup::Hit(..) | Lookup::Miss(Miss::Absent) => {}
                            other => panic!("a reader saw {other:?}"),
                        }
                    }
                });
            }
        });
        assert!(matches!(disk(d.path()).get(&k), Lookup::Hit(_, Layer::Disk)));
        let left: Vec<_> = std::fs::read_dir(d.path().join(LAYOUT).join(&k.digest()[..2])).unwrap().collect();
        assert_eq!(left.len(), 1, "temporary files left behind");
    }

    #[test]
    fn the_least_recently_used_entries_go_first_past_the_cap() {
        let d = tempfile::tempdir().unwrap();
        let one = encode(&entry("k", &key("0"))).len() as u64;
        let c = Cache::new(Some(d.path().to_path_buf()), one * 3);
        let t0 = SystemTime::now() - std::time::Duration::from_secs(1000);
        for i in 0..3 {
            let k = key(&i.to_string());
            c.put(entry("k", &k));
            // Entry 0 the oldest, then 1, 2.
            let p = c.entry_path(&k.digest()).unwrap();
            std::fs::File::options()
                .append(true)
                .open(&p)
                .unwrap()
                .set_modified(t0 + std::time::Duration::from_secs(i * 10))
                .unwrap();
        }
        // Using entry 0 makes it the newest: 1 goes when a fourth arrives.
        assert!(matches!(disk(d.path()).get(&key("0")), Lookup::Hit(_, Layer::Disk)));
        c.put(entry("k", &key("3")));
        let left: Vec<String> = c.entries().iter().map(|e| e.key.fields["source"].clone()).collect();
        let mut left = left;
        left.sort();
        assert_eq!(left, vec!["0", "2", "3"]);
        assert_eq!(c.clear().unwrap(), 3);
        assert!(c.entries().is_empty());
    }

    #[test]
    fn a_request_seen_before_is_recalled_from_memory_or_through_its_alias() {
        let d = tempfile::tempdir().unwrap();
        let c = disk(d.path());
        assert!(c.recall("req").is_none());
        c.put(entry("k", &key("a")));
        c.remember("req".into(), &key("a"));
        assert!(matches!(c.recall("req"), Some((_, Layer::Memory))));
        // Another process: through the alias file.
        let Some((e, Layer::Disk)) = disk(d.path()).recall("req") else { panic!("no alias hit") };
        assert_eq!(e.key, key("a"));
        assert!(disk(d.path()).recall("other request").is_none());
        // A damaged entry behind the alias: no recall (the caller rebuilds the key).
        let p = c.entry_path(&key("a").digest()).unwrap();
        std::fs::write(&p, b"junk").unwrap();
        assert!(disk(d.path()).recall("req").is_none());
        assert!(disk(d.path()).always_compile(true).recall("req").is_none());
    }

    #[test]
    fn always_compile_misses_but_stores() {
        let d = tempfile::tempdir().unwrap();
        let c = disk(d.path()).always_compile(true);
        c.put(entry("k", &key("a")));
        assert!(matches!(c.get(&key("a")), Lookup::Miss(Miss::AlwaysCompile)));
        assert!(matches!(disk(d.path()).get(&key("a")), Lookup::Hit(..)));
    }

    #[test]
    fn the_nearest_entry_names_the_fields_that_differ() {
        let d = tempfile::tempdir().unwrap();
        let c = disk(d.path());
        c.put(entry("k", &key("a").field("consts", "N=1")));
        c.put(entry("k", &CacheKey::new().field("source", "zzz")));
        let (e, diff) = c.nearest(&key("a").field("consts", "N=2")).unwrap();
        assert_eq!(e.key.fields["consts"], "N=1");
        assert_eq!(diff, vec![FieldDiff { name: "consts".into(), ours: "N=2".into(), theirs: "N=1".into() }]);
    }
}
