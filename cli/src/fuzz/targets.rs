//! The four fuzz targets: what an input is, how it is generated from (seed, index), and how
//! it is run. Each run ends in an outcome label (counted) or takes the process down (a
//! finding the supervisor records).
//!
//! - `tile`: a mutated `.tile` source (kernel library, frontend goldens) through the frontend
//!   and, when accepted, the lowering to the `llvm` dialect (every 16th accepted input on to
//!   PTX through LLVM), for a random target and random constant overrides;
//! - `mlir`: the `tile`/`tilegpu`/`llvm` stages of the library kernels, mutated, through the
//!   MLIR parser and a random `tilec opt` pipeline (tilec passes, common upstream passes, and
//!   one in five inputs a random pass of the accepted upstream list);
//! - `args`: `tilec run --arg` strings for small library kernels through the argument parser,
//!   the argument check, the grid and the interpreter (under small work limits);
//! - `launch`: the runtime's launch validator over the library's signatures (one in three
//!   mutated, as a cache file could be) with random tensor descriptors and grids.

use super::mutate::{
    interesting_int, mutate, mutate_values, token_soup, MLIR_SWAPS, MLIR_TOKENS, TILE_SWAPS, TILE_TOKENS,
};
use rand::rngs::StdRng;
use rand::Rng;
use std::collections::BTreeMap;
use std::path::Path;
use tilec::{ConstArg, DType, Source};
use tilec_core::abi::{Extent, ParamSig, Signature};
use tilec_runtime::{ArgDesc, TensorDesc};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    Tile,
    Mlir,
    Args,
    Launch,
}

impl Target {
    pub const ALL: [Target; 4] = [Target::Tile, Target::Mlir, Target::Args, Target::Launch];

    pub fn name(self) -> &'static str {
        match self {
            Target::Tile => "tile",
            Target::Mlir => "mlir",
            Target::Args => "args",
            Target::Launch => "launch",
        }
    }

    pub fn parse(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// What the inputs are made from: read from the repository (`kernels/`, `tests/frontend/`)
/// and, for `mlir`, `args` and `launch`, compiled from it once per worker.
pub struct Corpus {
    tiles: Vec<String>,
    mlir: Vec<String>,
    small: Vec<tilec_frontend::Elaborated>,
    signatures: Vec<Signature>,
}

fn read_sorted(dir: &Path, ext: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == ext))
        .filter_map(|e| Some((e.path().display().to_string(), std::fs::read_to_string(e.path()).ok()?)))
        .collect();
    v.sort();
    v
}

/// Kernels of the library as (file text, kernel name), in a fixed order.
fn library_kernels(root: &Path) -> Vec<(String, String)> {
    let mut out = vec![];
    for (_, text) in read_sorted(&root.join("kernels"), "tile") {
        if let Ok(file) = tilec_frontend::parse(&text) {
            for k in file.kernels {
                out.push((text.clone(), k.name.name));
            }
        }
    }
    out
}

impl Corpus {
    pub fn load(root: &Path, target: Target) -> Result<Corpus, String> {
        let mut c = Corpus { tiles: vec![], mlir: vec![], small: vec![], signatures: vec![] };
        for dir in ["kernels", "kernels/tutorial", "tests/frontend/ok", "tests/frontend/err"] {
            c.tiles.extend(read_sorted(&root.join(dir), "tile").into_iter().map(|(_, t)| t));
        }
        if c.tiles.len() < 10 {
            return Err(format!(
                "the corpus is read from kernels/ and tests/frontend/ under {}: found {} files (run from the repository root or pass --root)",
                root.display(),
                c.tiles.len()
            ));
        }
        let lib = library_kernels(root);
        match target {
            Target::Tile => {}
            Target::Mlir => {
                for (text, kernel) in &lib {
                    let source = Source::new(format!("{kernel}.tile"), text.clone());
                    for until in [tilec::Stage::Tile, tilec::Stage::Tilegpu] {
                        let opts = tilec::CompileOptions {
                            arch: "sm_90a".into(),
                            kernel: Some(kernel.clone()),
                            until: Some(until),
                            ..Default::default()
                        };
                        if let Ok(done) = tilec::compile(&source, &opts) {
                            c.mlir.push(done.stage(until).to_string());
                        }
                    }
                }
                // Two kernels at the llvm stage: large, so only the smallest.
                for kernel in ["row_max", "gelu"] {
                    if let Some((text, _)) = lib.iter().find(|(_, k)| k == kernel) {
                        let opts = tilec::CompileOptions {
                            arch: "sm_90a".into(),
                            kernel: Some(kernel.into()),
                            until: Some(tilec::Stage::Llvm),
                            ..Default::default()
                        };
                        if let Ok(done) = tilec::compile(&Source::new("k.tile", text.clone()), &opts) {
                            c.mlir.push(done.stage(tilec::Stage::Llvm).to_string());
                        }
                    }
                }
            }
            Target::Args => {
                // Small specialisations, so an interpreter run stays short.
                let picks: &[(&str, &[(&str, ConstArg)])] = &[
                    ("softmax", &[("T", ConstArg::DType(DType::F32)), ("BLOCK_N", ConstArg::Int(64))]),
                    ("rmsnorm", &[("T", ConstArg::DType(DType::F32)), ("BLOCK_N", ConstArg::Int(64))]),
                    ("transpose", &[("T", ConstArg::DType(DType::F32))]),
                    ("silu_mul", &[("T", ConstArg::DType(DType::F32)), ("BLOCK_N", ConstArg::Int(64))]),
                    ("embedding", &[("T", ConstArg::DType(DType::F32)), ("BLOCK_N", ConstArg::Int(64))]),
                    ("dropout", &[("T", ConstArg::DType(DType::F32)), ("BLOCK_N", ConstArg::Int(64))]),
                    ("row_max", &[]),
                    ("softmax_online", &[("T", ConstArg::DType(DType::F32)), ("BLOCK_N", ConstArg::Int(64))]),
                ];
                for (kernel, consts) in picks {
                    let Some((text, _)) = lib.iter().find(|(_, k)| k == kernel) else { continue };
                    let req = tilec_frontend::Request {
                        kernel: Some(kernel.to_string()),
                        target: "sm_90a".into(),
                        consts: consts.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
                        unaligned: Default::default(),
                        tcgen05: None,
                    };
                    // A constant a kernel does not have: take its defaults instead.
                    let el = tilec_frontend::check(text, &req).or_else(|_| {
                        tilec_frontend::check(text, &tilec_frontend::Request { consts: BTreeMap::new(), ..req })
                    });
                    if let Ok(el) = el {
                        c.small.push(el);
                    }
                }
            }
            Target::Launch => {
                for (text, kernel) in &lib {
                    let req = tilec_frontend::Request {
                        kernel: Some(kernel.clone()),
                        target: "sm_90a".into(),
                        ..Default::default()
                    };
                    if let Ok(el) = tilec_frontend::check(text, &req) {
                        c.signatures.push(el.signature);
                    }
                }
            }
        }
        let empty = match target {
            Target::Tile => false,
            Target::Mlir => c.mlir.is_empty(),
            Target::Args => c.small.is_empty(),
            Target::Launch => c.signatures.is_empty(),
        };
        if empty {
            return Err(format!("no {} corpus could be built from the kernel library", target.name()));
        }
        Ok(c)
    }
}

/// One generated input.
pub enum Input {
    Tile { text: String, kernel: Option<String>, arch: &'static str, consts: BTreeMap<String, ConstArg>, to_ptx: bool },
    Mlir { text: String, pipeline: String },
    Args { kernel: usize, args: Vec<String>, seed: u64 },
    Launch { sig: Result<Signature, String>, args: Vec<ArgDesc>, grid: Option<[u32; 3]> },
}

const PIPELINES: &[&str] = &[
    "tile-layout",
    "tile-layout,tile-to-llvm",
    "canonicalize,cse",
    "tile-layout{num-warps=8},canonicalize,cse,tile-to-llvm",
    "cse,tile-layout,tile-to-llvm{arch=sm_121a}",
    "canonicalize,tile-layout,sccp,tile-to-llvm{arch=sm_103a}",
    "loop-invariant-code-motion,tile-layout{num-warps=1},tile-to-llvm",
    "tile-to-llvm",
    "convert-scf-to-cf,convert-arith-to-llvm,reconcile-unrealized-casts",
];

pub fn generate(target: Target, corpus: &Corpus, rng: &mut StdRng) -> Input {
    match target {
        Target::Tile if rng.gen_ratio(1, 200) => growth_input(rng),
        Target::Tile => {
            let base = &corpus.tiles[rng.gen_range(0..corpus.tiles.len())];
            let mode = rng.gen_range(0..20);
            let text = match mode {
                0 => token_soup(rng, TILE_TOKENS),
                1..=7 => mutate(rng, base, TILE_TOKENS, &corpus.tiles),
                8..=15 => mutate_values(rng, base, TILE_SWAPS),
                _ => base.clone(),
            };
            // Constants: one in four inputs overrides one (of the kernel's own, mostly of its
            // kind); an unmutated kernel always gets one, so odd specialisations reach the
            // lowering.
            // (name, declared kind) of the constants of the kernel the input names.
            let mut names: Vec<(String, String)> = ["BLOCK_N", "ROWS", "T", "BLOCK_M", "BLOCK_K", "TILE", "D", "Z"]
                .map(|n| (n.to_string(), String::new()))
                .to_vec();
            let mut kernel = None;
            if let Ok(file) = tilec_frontend::parse(base) {
                if let Some(k) = file.kernels.get(rng.gen_range(0..file.kernels.len().max(1))) {
                    kernel = (file.kernels.len() > 1).then(|| k.name.name.clone());
                    if !rng.gen_ratio(1, 10) {
                        names = k
                            .params
                            .iter()
                            .filter(|p| p.is_const)
                            .map(|p| {
                                let kind = match &p.ty {
                                    tilec_frontend::ast::TypeExpr::Named(t) => t.name.clone(),
                                    _ => String::new(),
                                };
                                (p.name.name.clone(), kind)
                            })
                            .collect();
                    }
                }
            }
            let mut consts = BTreeMap::new();
            if !names.is_empty() && (mode >= 16 || rng.gen_ratio(1, 4)) {
                let (name, kind) = names[rng.gen_range(0..names.len())].clone();
                let pick = match kind.as_str() {
                    _ if rng.gen_ratio(1, 4) => rng.gen_range(0..4),
                    "int" => 0,
                    "bool" => 1,
                    "float" => 2,
                    "dtype" => 3,
                    _ => rng.gen_range(0..4),
                };
                let v = match pick {
                    0 => ConstArg::Int(match rng.gen_range(0..3) {
                        0 => rng.gen_range(-5..5000),
                        1 => 1 << rng.gen_range(0..16),
                        _ => interesting_int(rng),
                    }),
                    1 => ConstArg::Bool(rng.gen()),
                    2 => ConstArg::Float([0.0, -1.0, 1e300, f64::NAN, f64::INFINITY, 0.5][rng.gen_range(0..6)]),
                    _ => ConstArg::DType(DType::ALL[rng.gen_range(0..DType::ALL.len())]),
                };
                consts.insert(name, v);
            }
            let arch = tilec::ARCHS[rng.gen_range(0..tilec::ARCHS.len())].name;
            Input::Tile { text, kernel, arch, consts, to_ptx: rng.gen_ratio(1, 16) }
        }
        Target::Mlir => {
            let base = &corpus.mlir[rng.gen_range(0..corpus.mlir.len())];
            let text = match rng.gen_range(0..20) {
                0 => base.clone(),
                1..=8 => mutate(rng, base, MLIR_TOKENS, &corpus.mlir),
                _ => mutate_values(rng, base, MLIR_SWAPS),
            };
            let pipeline = if rng.gen_ratio(1, 5) {
                let all: Vec<_> = tilec_passes::driver::upstream_passes().collect();
                let p = all[rng.gen_range(0..all.len())];
                if p.anchor == "builtin.module" || p.anchor.is_empty() {
                    p.name.to_string()
                } else {
                    format!("{}({})", p.anchor, p.name)
                }
            } else {
                PIPELINES[rng.gen_range(0..PIPELINES.len())].to_string()
            };
            Input::Mlir { text, pipeline }
        }
        Target::Args => {
            let kernel = rng.gen_range(0..corpus.small.len());
            let params = &corpus.small[kernel].signature.params;
            let n = if rng.gen_ratio(9, 10) { params.len() } else { rng.gen_range(0..6) };
            let mut names = BTreeMap::new();
            let args = (0..n).map(|i| arg_string(rng, params.get(i), &mut names)).collect();
            Input::Args { kernel, args, seed: rng.gen() }
        }
        Target::Launch => {
            let base = &corpus.signatures[rng.gen_range(0..corpus.signatures.len())];
            let sig = if rng.gen_ratio(1, 3) { mutate_signature(rng, base) } else { Ok(base.clone()) };
            let params = match &sig {
                Ok(s) => s.params.clone(),
                Err(_) => base.params.clone(),
            };
            let n = if rng.gen_ratio(19, 20) { params.len().min(64) } else { rng.gen_range(0..6) };
            let mut names = BTreeMap::new();
            let mut args: Vec<ArgDesc> = (0..n).map(|i| arg_desc(rng, params.get(i), &mut names)).collect();
            // Mostly separate buffers (the validator refuses written tensors that overlap).
            if rng.gen_ratio(3, 4) {
                let mut next = 1u64 << 20;
                for a in args.iter_mut() {
                    if let ArgDesc::Tensor(t) = a {
                        t.addr = next;
                        next = next.saturating_add(t.len_bytes.min(1 << 40)).saturating_add(4096) & !255;
                    }
                }
            }
            let grid = rng.gen_ratio(1, 5).then(|| {
                [0, 1, 2].map(|_| if rng.gen() { rng.gen_range(0..100) } else { interesting_int(rng) as u32 })
            });
            Input::Launch { sig, args, grid }
        }
    }
}

/// A kernel of many repeated statements — `for` nests of depth 1 to 3 carrying a tile (with
/// constant or run-time bounds), run-time `if`s, straight-line updates, or thousands of
/// errors — sized so that a compiler linear in them finishes far inside the hang timeout:
/// growth that is not linear becomes a hang finding.
fn growth_input(rng: &mut StdRng) -> Input {
    let r = rng.gen_range(1..1500);
    let bound = if rng.gen() { "4".to_string() } else { "x.shape[0]".to_string() };
    let stmt = match rng.gen_range(0..5) {
        0 => {
            let depth = rng.gen_range(1..=3);
            let mut s = "t = t + 1.0;".to_string();
            for d in 0..depth {
                s = format!("for i{d} in range(0, {bound}) {{ {s} }}");
            }
            s
        }
        1 => "if x.shape[0] > 3 { t = t * 2.0; }".to_string(),
        2 => "t = t + 1.0;".to_string(),
        _ => "let a = nope;".to_string(),
    };
    let errors = stmt.contains("nope");
    let body = format!("    {stmt}\n").repeat(if errors { r * 10 } else { r });
    let text = format!(
        "kernel k(x: tensor<f32, [N]>)\n    grid = (1,)\n{{\n    let t = zeros((16,), f32);\n{body}    store(x, index=(0,), tile=t);\n}}\n"
    );
    Input::Tile { text, kernel: None, arch: "sm_90a", consts: BTreeMap::new(), to_ptx: !errors }
}

/// A tensor shape for a parameter: its declared extents honoured (a shape name keeps one value
/// per input) except now and then, its rank mostly right.
fn shape_for(rng: &mut StdRng, rank: usize, extents: &[Extent], names: &mut BTreeMap<String, i64>) -> Vec<i64> {
    let r = if rng.gen_ratio(9, 10) { rank.min(9) } else { rng.gen_range(0..5) };
    (0..r)
        .map(|i| match extents.get(i) {
            _ if rng.gen_ratio(1, 20) => small_dim(rng),
            Some(Extent::Named(n)) => {
                let d = small_dim(rng);
                *names.entry(n.clone()).or_insert(d)
            }
            Some(Extent::Fixed(n)) => *n,
            _ => small_dim(rng),
        })
        .collect()
}

fn small_dim(rng: &mut StdRng) -> i64 {
    if rng.gen_ratio(1, 50) {
        interesting_int(rng)
    } else {
        [0, 1, 2, 3, 5, 8, 16, 17, 33, 64, 65, 100][rng.gen_range(0..12)]
    }
}

/// A one-member zip archive (`np.savez`'s layout: stored, no compression) holding `data` as
/// `name`.
fn stored_zip(name: &str, data: &[u8]) -> Vec<u8> {
    let (n, len) = (name.len() as u16, data.len() as u32);
    let mut z = vec![];
    // Local header: signature, version, flags, method 0, time, date, crc (not checked by the
    // reader), sizes, name length, extra length.
    z.extend(0x0403_4b50u32.to_le_bytes());
    z.extend([20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    z.extend(len.to_le_bytes());
    z.extend(len.to_le_bytes());
    z.extend(n.to_le_bytes());
    z.extend(0u16.to_le_bytes());
    z.extend(name.as_bytes());
    z.extend(data);
    let dir = z.len() as u32;
    z.extend(0x0201_4b50u32.to_le_bytes());
    z.extend([20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    z.extend(len.to_le_bytes());
    z.extend(len.to_le_bytes());
    z.extend(n.to_le_bytes());
    z.extend([0u8; 12]);
    z.extend(0u32.to_le_bytes());
    z.extend(name.as_bytes());
    let dir_len = z.len() as u32 - dir;
    z.extend(0x0605_4b50u32.to_le_bytes());
    z.extend([0, 0, 0, 0, 1, 0, 1, 0]);
    z.extend(dir_len.to_le_bytes());
    z.extend(dir.to_le_bytes());
    z.extend(0u16.to_le_bytes());
    z
}

/// An `@file` argument whose file is an `.npy`, an `.npz` or raw bytes with a damaged header
/// (shapes past every cap, unknown dtypes, sizes and offsets claiming gigabytes, deflate
/// garbage, truncation), written under the worker's temporary folder.
fn archive_arg(rng: &mut StdRng) -> String {
    let n = rng.gen_range(1..64);
    let t = tilec_core::host::HostTensor::from_f64(DType::F32, &[n], &vec![1.5; n as usize]);
    let mut npy = tilec_core::npy::write(&t);
    // The header is ASCII up to its newline: edit its text.
    if let Some(end) = npy.iter().position(|&c| c == b'\n') {
        let header = String::from_utf8_lossy(&npy[10..end]).to_string();
        let edited = match rng.gen_range(0..6) {
            0 => header.replace(
                &format!("({n},)"),
                ["(4294967296, 4096)", "(-1,)", "(0,)", "()", "(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)"][rng.gen_range(0..5)],
            ),
            1 => header.replace("<f4", ["<f9", "|O", ">f4", "<c8", "<U3", ""][rng.gen_range(0..6)]),
            2 => header.replace("False", "True"),
            3 => mutate(rng, &header, &["(", ")", "'", ":", ",", "{", "}", "1e99", "-"], &[]),
            _ => header,
        };
        let mut out = npy[..8].to_vec();
        out.extend((edited.len() as u16 + 1).to_le_bytes());
        out.extend(edited.as_bytes());
        out.extend(&npy[end..]);
        npy = out;
    }
    if rng.gen_ratio(1, 4) {
        npy.truncate(rng.gen_range(0..npy.len()));
    }
    let dir = std::env::temp_dir().join(format!("tilec-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let kind = rng.gen_range(0..3);
    // Eight names a worker reuses (an input's files are all written before any is read,
    // in the same order on replay): the folder stays small over a campaign.
    let path = dir.join(format!("arg{}.{}", rng.gen_range(0..8), ["npy", "npz", "bin"][kind]));
    let (bytes, spec) = match kind {
        0 => (npy, String::new()),
        1 => {
            let mut z = stored_zip("x.npy", &npy);
            // Damage a field of the archive: a size claiming 3 GiB, deflate over stored bytes,
            // a directory offset past the end, a byte anywhere.
            match rng.gen_range(0..5) {
                0 => {
                    let at = z.len() - 22 - 46 - 5 + 24;
                    z[at..at + 4].copy_from_slice(&(3u32 << 30).to_le_bytes());
                }
                1 => {
                    let at = z.len() - 22 - 46 - 5 + 10;
                    z[at] = 8;
                }
                2 => {
                    let at = z.len() - 6;
                    z[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
                }
                3 => {
                    let at = rng.gen_range(0..z.len());
                    z[at] = rng.gen();
                }
                _ => {}
            }
            (z, [":x", "", ":y"][rng.gen_range(0..3)].to_string())
        }
        _ => (npy, format!(":{}:f32", ["64", "4294967296x4096", "0", "1x2x3"][rng.gen_range(0..4)])),
    };
    let _ = std::fs::write(&path, bytes);
    format!("@{}{spec}", path.display())
}

/// A `--arg` string: mostly one of the kind the parameter takes, sometimes another or garbage.
fn arg_string(rng: &mut StdRng, param: Option<&ParamSig>, names: &mut BTreeMap<String, i64>) -> String {
    if rng.gen_ratio(1, 25) {
        return archive_arg(rng);
    }
    let dtypes = ["f16", "bf16", "f32", "i32", "i64", "i1", "f64", "", "f8"];
    let s = match (param, rng.gen_range(0..20)) {
        (Some(ParamSig::Tensor { dtype, rank, extents, .. }), 0..=18) => {
            let mut shape = shape_for(rng, *rank, extents, names);
            // Tensors between 2^20 elements and the parser's cap take seconds to fill with
            // random numbers and prove nothing more than small ones: keep them small.
            let n = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d.max(0)));
            if n.is_some_and(|n| n > 1 << 20 && n <= crate::interp_args::MAX_ELEMENTS as i64) {
                shape[0] = 1;
            }
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            let dt = if rng.gen_ratio(9, 10) { dtype.name() } else { dtypes[rng.gen_range(0..dtypes.len())] };
            let zeros = if rng.gen() { "zeros:" } else { "" };
            format!("{zeros}{}:{dt}", dims.join("x"))
        }
        (Some(ParamSig::Scalar { dtype, .. }), 0..=18) => match rng.gen_range(0..4) {
            0 => interesting_int(rng).to_string(),
            1 => format!("{}:{}", dtype.name(), interesting_int(rng)),
            2 => format!("f32:{}", ["nan", "inf", "-inf", "1e39", "-0", "0.5"][rng.gen_range(0..6)]),
            _ => rng.gen_range(-10..100).to_string(),
        },
        _ => token_soup(rng, &["x", ":", "zeros", "-", "f16", "i64", "1e999", "3", "64", "", "i32:", "f32:"])
            .replace(' ', ""),
    };
    if rng.gen_ratio(1, 20) {
        mutate(rng, &s, &["x", ":", "-", "0", "zeros:", "f32"], &[])
    } else {
        s
    }
}

/// A signature changed at the JSON level (a leaf to an edge value, a field dropped) or as
/// text, read back as a cache file would be.
fn mutate_signature(rng: &mut StdRng, base: &Signature) -> Result<Signature, String> {
    let mut v = serde_json::to_value(base).map_err(|e| e.to_string())?;
    if rng.gen_ratio(1, 4) {
        let text = mutate(rng, &v.to_string(), &["{", "}", "[", "]", ",", ":", "null", "-1", "\"f16\"", "1e400"], &[]);
        return serde_json::from_str(&text).map_err(|e| e.to_string());
    }
    for _ in 0..rng.gen_range(1..4) {
        let mut leaves = vec![];
        collect_leaves(&v, String::new(), &mut leaves);
        if leaves.is_empty() {
            break;
        }
        let path = &leaves[rng.gen_range(0..leaves.len())];
        if let Some(slot) = v.pointer_mut(path) {
            *slot = match rng.gen_range(0..5) {
                0 => serde_json::json!(interesting_int(rng)),
                1 => serde_json::json!(["f16", "i1", "bogus", "", "f64"][rng.gen_range(0..5)]),
                2 => serde_json::Value::Null,
                3 => serde_json::json!(rng.gen_range(-3..10)),
                _ => serde_json::json!({ "int": interesting_int(rng) }),
            };
        }
    }
    serde_json::from_value(v).map_err(|e| e.to_string())
}

fn collect_leaves(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                collect_leaves(x, format!("{at}/{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                collect_leaves(x, format!("{at}/{i}"), out);
            }
        }
        _ => out.push(at),
    }
}

/// A launch argument: mostly well formed for its parameter, with edge extents, strides,
/// addresses and lengths.
fn arg_desc(rng: &mut StdRng, param: Option<&ParamSig>, names: &mut BTreeMap<String, i64>) -> ArgDesc {
    match (param, rng.gen_range(0..40)) {
        (Some(ParamSig::Tensor { dtype, rank, extents, .. }), 0..=38) => {
            let dtype = if rng.gen_ratio(19, 20) { *dtype } else { DType::ALL[rng.gen_range(0..DType::ALL.len())] };
            // A mutated signature may claim any rank: shape_for keeps the descriptor small.
            let shape = shape_for(rng, *rank, extents, names);
            let r = shape.len();
            let mut strides = vec![1i64; r];
            for i in (0..r.saturating_sub(1)).rev() {
                strides[i] = strides[i + 1].saturating_mul(shape[i + 1].max(1));
            }
            if rng.gen_ratio(1, 8) {
                for s in strides.iter_mut() {
                    if rng.gen() {
                        *s = small_dim(rng);
                    }
                }
            }
            let addr = match rng.gen_range(0..12) {
                0 => interesting_int(rng) as u64,
                1 => u64::MAX - rng.gen_range(0..4096),
                2 => rng.gen_range(0..1u64 << 40) | 1,
                _ => rng.gen_range(0..1u64 << 30) * 256,
            };
            let need: i64 = shape
                .iter()
                .zip(&strides)
                .fold(1i64, |acc, (&d, &s)| acc.saturating_add(d.saturating_sub(1).saturating_mul(s)))
                .saturating_mul(i64::from(dtype.bytes()));
            let len_bytes = match rng.gen_range(0..12) {
                0 => interesting_int(rng) as u64,
                1 => need.max(0) as u64 / 2,
                _ => need.max(0) as u64,
            };
            ArgDesc::Tensor(TensorDesc { dtype, shape, strides, addr, len_bytes })
        }
        _ => match rng.gen_range(0..4) {
            0 => ArgDesc::I32(interesting_int(rng) as i32),
            1 => ArgDesc::I64(interesting_int(rng)),
            2 => ArgDesc::F32([f32::NAN, 0.0, -1.0, f32::INFINITY][rng.gen_range(0..4)]),
            _ => ArgDesc::I32(rng.gen_range(-4..100)),
        },
    }
}

/// A readable form of an input (written beside a finding).
pub fn describe(input: &Input, corpus: &Corpus) -> String {
    match input {
        Input::Tile { text, kernel, arch, consts, to_ptx } => {
            format!(
                "kernel {kernel:?}, arch {arch}, constants {consts:?}, through {}\n--- source ---\n{text}",
                if *to_ptx { "PTX" } else { "the llvm dialect" }
            )
        }
        Input::Mlir { text, pipeline } => format!("pipeline {pipeline}\n--- module ---\n{text}"),
        Input::Args { kernel, args, seed } => {
            format!("kernel {}, seed {seed}, arguments {args:?}", corpus.small[*kernel].func.name)
        }
        Input::Launch { sig, args, grid } => format!("signature {sig:?}\narguments {args:?}\ngrid {grid:?}"),
    }
}

/// The work limits of an `args` run: small, so each input is quick.
const INTERP_LIMITS: tilec_interp::Limits =
    tilec_interp::Limits { work: 1 << 22, live_elements: 1 << 20, print_bytes: 1 << 12 };

/// Runs one input; the label says how far it got.
pub fn run(input: Input, corpus: &Corpus, mlir: &mut Option<tilec_ir::Mlir>) -> &'static str {
    match input {
        Input::Tile { text, kernel, arch, consts, to_ptx } => {
            let source = Source::new("fuzz.tile", text);
            let req = tilec_frontend::Request {
                kernel: kernel.clone(),
                target: arch.into(),
                consts: consts.clone(),
                ..Default::default()
            };
            if let Err(d) = tilec_frontend::check(&source.text, &req) {
                let _ = tilec_core::diag::render(&d, &source);
                return "rejected by the frontend";
            }
            let opts = tilec::CompileOptions {
                arch: arch.into(),
                kernel,
                consts,
                until: (!to_ptx).then_some(tilec::Stage::Llvm),
                ..Default::default()
            };
            match tilec::compile(&source, &opts) {
                Ok(_) if to_ptx => "compiled to PTX",
                Ok(_) => "lowered to the llvm dialect",
                Err(e) => {
                    let _ = e.render_json();
                    "rejected by a later stage"
                }
            }
        }
        Input::Mlir { text, pipeline } => {
            let Some(m) = mlir.as_ref() else {
                return "no MLIR context";
            };
            let steps = match tilec_passes::driver::parse_pipeline(m, &pipeline) {
                Ok(s) => s,
                Err(_) => return "pipeline refused",
            };
            if m.parse(&text, "input").is_err() {
                return "rejected by the MLIR parser";
            }
            let mut driver = tilec_passes::driver::Driver::new(m, tilec_passes::driver::Ir::Text(text));
            for s in &steps {
                if driver.run(s).is_err() {
                    return "rejected by a pass";
                }
            }
            if driver.text().is_err() {
                return "rejected by the verifier after the pipeline";
            }
            "passed the pipeline"
        }
        Input::Args { kernel, args, seed } => {
            let el = &corpus.small[kernel];
            let Ok(iargs) = crate::interp_args::parse(&args, seed) else {
                return "rejected by the argument parser";
            };
            if tilec_interp::check_args(&el.func, &iargs).is_err() {
                return "rejected by the argument check";
            }
            let Ok(grid) = tilec_interp::grid(&el.signature, &iargs) else {
                return "rejected by the grid";
            };
            match tilec_interp::run_with(&el.func, grid, iargs, tilec_interp::BlockOrder::Forward, INTERP_LIMITS) {
                Ok(_) => "ran on the interpreter",
                Err(_) => "stopped by the interpreter",
            }
        }
        Input::Launch { sig, args, grid } => match sig {
            Err(_) => "signature refused",
            Ok(sig) => match tilec_runtime::validate(&sig, &args, grid) {
                Ok(_) => "valid launch",
                Err(e) => {
                    let _ = e.to_string();
                    "launch refused"
                }
            },
        },
    }
}
