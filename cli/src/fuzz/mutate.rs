//! Text mutations for the fuzzer: deletions, token insertions from a dictionary, duplicated
//! and spliced chunks, byte changes and interesting numbers. Every input is a function of
//! (seed, target, index), so a finding is replayed from those three numbers alone.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The generator of input `index` of `target` under `seed`.
pub fn rng_for(seed: u64, target: &str, index: u64) -> StdRng {
    // FNV-1a over the target name, mixed with the seed and the index (splitmix64 finaliser).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in target.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    let mut z = h ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ index.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    StdRng::seed_from_u64(z ^ (z >> 31))
}

/// Integers that sit on the edges of what compilers, allocators and launch limits handle.
pub const INTERESTING_INTS: &[i64] = &[
    0,
    1,
    -1,
    2,
    3,
    7,
    31,
    32,
    33,
    63,
    64,
    65,
    127,
    128,
    255,
    256,
    1000,
    1023,
    1024,
    4096,
    32767,
    32768,
    65535,
    65536,
    1 << 20,
    (1 << 31) - 1,
    1 << 31,
    -(1 << 31),
    (1 << 32) + 1,
    1 << 40,
    i64::MAX,
    i64::MIN,
    i64::MAX / 2 + 1,
    6_148_914_691_236_517_206,
];

pub fn interesting_int(rng: &mut StdRng) -> i64 {
    INTERESTING_INTS[rng.gen_range(0..INTERESTING_INTS.len())]
}

/// Tokens of the tile language, and fragments that reach deep into the checker.
pub const TILE_TOKENS: &[&str] = &[
    "kernel",
    "let",
    "for",
    "in",
    "if",
    "else",
    "const",
    "grid",
    "hints",
    "tune",
    "by_target",
    "None",
    "true",
    "false",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    "=",
    "==",
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "<",
    ">",
    "<=",
    ".",
    "->",
    "x",
    "t",
    "M",
    "N",
    "_",
    "load",
    "store",
    "max",
    "sum",
    "exp",
    "exp2",
    "bid",
    "cdiv",
    "full",
    "zeros",
    "astype",
    "shape",
    "f16",
    "f32",
    "bf16",
    "i32",
    "i64",
    "i1",
    "tensor<f16, 2>",
    "tensor<f32, [M, N]>",
    "tensor<T, [_, 64]>",
    "0",
    "1",
    "-1",
    "64",
    "96",
    "1e9",
    "99999999999999999999",
    "-inf",
    "inf",
    "nan",
    "\"s\"",
    "axis=1",
    "axis=-7",
    "keepdims=true",
    "padding=-inf",
    "index=(0, 0)",
    "shape=(1, 64)",
    "shape=(0, 64)",
    "shape=(65536, 65536)",
    "order=(1, 0)",
    "static_assert",
    "next_pow2",
    "range(",
    "range(0, 10, 0)",
    "#c\n",
    "\n",
    "require",
    "mma(",
    "where(",
    "for i in range(0, 4) {",
    "if x > 0 {",
    "gather(",
    "scatter(",
    "[:, None]",
    "num_warps = 0",
    "num_warps = 64",
    "occupancy = 99",
    "reshape(",
    "permute(",
    "print(",
    "rand(",
    "argmax(",
    "x.shape[0]",
    "x.shape[9]",
    "2147483647",
    "4294967296",
    "-2147483648",
    "1 << 40",
];

/// Fragments of the MLIR text of the tile, tilegpu and llvm stages.
pub const MLIR_TOKENS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "<",
    ">",
    ",",
    ":",
    "=",
    "->",
    "%0",
    "%1",
    "%arg0",
    "%c0",
    "i1",
    "i32",
    "i64",
    "f16",
    "f32",
    "bf16",
    "index",
    "tensor<1x64xf32>",
    "tensor<0x64xf32>",
    "tensor<3x64xf16>",
    "tensor<64xf32>",
    "tensor<1x1024xf16>",
    "memref<?x?xf16, strided<[?, ?]>>",
    "memref<?xf32, strided<[?]>>",
    "\"tile.load\"",
    "\"tile.store\"",
    "\"tile.reduce\"",
    "\"tile.broadcast\"",
    "\"tile.reshape\"",
    "\"tile.constant\"",
    "\"tile.bid\"",
    "\"tile.dim\"",
    "\"tile.for\"",
    "\"tile.if\"",
    "\"tile.yield\"",
    "\"tile.mma\"",
    "\"tile.convert_layout\"",
    "arith.constant",
    "arith.addi",
    "arith.muli",
    "arith.divsi",
    "scf.for",
    "scf.yield",
    "scf.if",
    "func.func",
    "func.return",
    "return",
    "llvm.func",
    "llvm.mlir.global",
    "tile.num_warps = 0 : i32",
    "tile.num_warps = 4 : i32",
    "tile.num_warps = 64 : i32",
    "tile.target = \"sm_90a\"",
    "tile.target = \"sm_1\"",
    "tile.divisibility = 16 : i32",
    "tile.divisibility = 3 : i32",
    "axis = 1 : i32",
    "axis = 9 : i32",
    "keepdims = true",
    "kind = \"max\"",
    "kind = \"bogus\"",
    "padding = \"-inf\"",
    "#tile.blocked<",
    "#tile.slice<",
    "spt = [1, 8]",
    "tpw = [1, 32]",
    "wpc = [4, 1]",
    "order = [1, 0]",
    "dim = 1",
    "loc(unknown)",
    "loc(\"k.tile\":1:1 to 1:2)",
    "^bb0",
    "^bb1(%a: i32):",
    "0",
    "1",
    "-1",
    "2147483647",
    "-2147483648",
    "9223372036854775807",
    "0x7FC00000",
    "1.0e+309",
    "dense<0.0>",
    "true",
    "false",
    "\n",
    "// c\n",
    "module {",
    "module attributes {",
];

/// A base text changed one to four times.
pub fn mutate(rng: &mut StdRng, base: &str, tokens: &[&str], donors: &[String]) -> String {
    let mut s: Vec<u8> = base.as_bytes().to_vec();
    for _ in 0..rng.gen_range(1..5) {
        let len = s.len();
        match rng.gen_range(0..8) {
            0 if len > 0 => {
                let a = rng.gen_range(0..len);
                let b = (a + rng.gen_range(1..24)).min(len);
                s.drain(a..b);
            }
            1 | 2 => {
                let a = rng.gen_range(0..=len);
                let tok = tokens[rng.gen_range(0..tokens.len())];
                s.splice(a..a, format!(" {tok} ").bytes());
            }
            3 if len > 1 => {
                let a = rng.gen_range(0..len);
                let b = (a + rng.gen_range(1..80)).min(len);
                let chunk: Vec<u8> = s[a..b].to_vec();
                let at = rng.gen_range(0..=s.len());
                s.splice(at..at, chunk);
            }
            4 if len > 0 => {
                let a = rng.gen_range(0..len);
                s[a] = rng.gen_range(0x20..0x7f);
            }
            5 => {
                // Replace the number under a random position, or insert one.
                let a = rng.gen_range(0..=len);
                let start = (0..a).rev().take_while(|&i| s[i].is_ascii_digit()).last().unwrap_or(a);
                let end = (a..len).take_while(|&i| s[i].is_ascii_digit()).last().map_or(a, |e| e + 1);
                let n = interesting_int(rng).to_string();
                s.splice(start..end, n.bytes());
            }
            6 if !donors.is_empty() => {
                // Splice a chunk of another corpus entry.
                let d = donors[rng.gen_range(0..donors.len())].as_bytes();
                if !d.is_empty() {
                    let a = rng.gen_range(0..d.len());
                    let b = (a + rng.gen_range(1..200)).min(d.len());
                    let at = rng.gen_range(0..=s.len());
                    s.splice(at..at, d[a..b].iter().copied());
                }
            }
            7 if len > 2 => {
                // Swap two lines.
                let text = String::from_utf8_lossy(&s).into_owned();
                let mut lines: Vec<&str> = text.lines().collect();
                if lines.len() > 1 {
                    let i = rng.gen_range(0..lines.len());
                    let j = rng.gen_range(0..lines.len());
                    lines.swap(i, j);
                    s = lines.join("\n").into_bytes();
                }
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// Words that can stand in for each other (a dtype for a dtype, a reduction for a reduction):
/// mutations that keep a text parseable so it reaches the checks behind the parser.
pub const TILE_SWAPS: &[&[&str]] = &[
    &["f16", "f32", "bf16", "i32", "i64", "i1"],
    &["sum", "max", "min", "argmax"],
    &["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sigmoid"],
    &["axis=0", "axis=1", "axis=-1", "axis=2"],
    &["true", "false"],
    &["bid(0)", "bid(1)", "bid(2)"],
    &["+", "-", "*", "/", "//", "%"],
    &["load", "gather"],
];

pub const MLIR_SWAPS: &[&[&str]] = &[
    &["f16", "f32", "bf16", "i32", "i64", "i1"],
    &["\"max\"", "\"sum\"", "\"min\""],
    &["arith.addf", "arith.mulf", "arith.subf", "arith.divf", "arith.maximumf"],
    &["arith.addi", "arith.muli", "arith.subi", "arith.divsi", "arith.remsi"],
    &["%0", "%1", "%2", "%3", "%4", "%5"],
    &["tile.num_warps = 4", "tile.num_warps = 8", "tile.num_warps = 1", "tile.num_warps = 32"],
];

/// A base text with one to three numbers or words replaced by others of their kind.
pub fn mutate_values(rng: &mut StdRng, base: &str, swaps: &[&[&str]]) -> String {
    let mut s = base.to_string();
    for _ in 0..rng.gen_range(1..4) {
        if rng.gen() {
            let b = s.as_bytes();
            let mut starts: Vec<usize> = (0..b.len())
                .filter(|&i| b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()))
                .collect();
            // Half the time an integer of a layout attribute (`#tilegpu.blocked<[1, 8], …>`,
            // `#tilegpu.wgmma<[4, 1]>`, …): what the layout verifier must check.
            let layouts: Vec<usize> = s.match_indices("#tilegpu.").map(|(i, _)| i).collect();
            if !layouts.is_empty() && rng.gen() {
                let inside: Vec<usize> =
                    starts.iter().copied().filter(|&i| layouts.iter().any(|&l| l < i && i < l + 120)).collect();
                if !inside.is_empty() {
                    starts = inside;
                }
            }
            if starts.is_empty() {
                continue;
            }
            let a = starts[rng.gen_range(0..starts.len())];
            let e = (a..b.len()).find(|&i| !b[i].is_ascii_digit()).unwrap_or(b.len());
            let n = match rng.gen_range(0..3) {
                0 => interesting_int(rng),
                1 => 1 << rng.gen_range(0..14),
                _ => rng.gen_range(0..130),
            };
            s.replace_range(a..e, &n.to_string());
        } else {
            let group = swaps[rng.gen_range(0..swaps.len())];
            let from = group[rng.gen_range(0..group.len())];
            let to = group[rng.gen_range(0..group.len())];
            let hits: Vec<usize> = s.match_indices(from).map(|(i, _)| i).collect();
            if hits.is_empty() {
                continue;
            }
            let at = hits[rng.gen_range(0..hits.len())];
            s.replace_range(at..at + from.len(), to);
        }
    }
    s
}

/// A run of random dictionary tokens.
pub fn token_soup(rng: &mut StdRng, tokens: &[&str]) -> String {
    (0..rng.gen_range(1..80)).map(|_| tokens[rng.gen_range(0..tokens.len())]).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_a_function_of_seed_target_and_index() {
        let a = mutate(&mut rng_for(1, "tile", 7), "kernel k() {}", TILE_TOKENS, &[]);
        let b = mutate(&mut rng_for(1, "tile", 7), "kernel k() {}", TILE_TOKENS, &[]);
        assert_eq!(a, b);
        let c: Vec<u64> = (0..8).map(|i| rng_for(1, "tile", i).gen()).collect();
        let mut d = c.clone();
        d.dedup();
        assert_eq!(c, d, "neighbouring indices get different streams");
        assert_ne!(rng_for(1, "tile", 0).gen::<u64>(), rng_for(1, "mlir", 0).gen::<u64>());
    }
}
