//! The `tilec` binary as a user runs it, from the root of the repository.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn tilec(args: &[&str]) -> (i32, String, String) {
    tilec_with_cache(args, &std::env::temp_dir().join(format!("tilec-cli-cache-{}", std::process::id())))
}

/// `tilec ARGS` with its compilation cache in `cache` (tests never touch ~/.cache).
pub fn tilec_with_cache(args: &[&str], cache: &Path) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(args)
        .current_dir(root())
        .env("TILEC_CACHE_DIR", cache)
        .env_remove("TILEC_ALWAYS_COMPILE")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tilec-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The tile stage of a kernel of the library, through `tilec compile --emit tile`.
fn tile_text(file: &str, kernel: &str) -> String {
    let (code, out, err) =
        tilec(&["compile", &format!("kernels/{file}.tile"), "--arch", "sm_121a", "--kernel", kernel, "--emit", "tile"]);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn unknown_arch_lists_the_supported_ones() {
    let (code, _, err) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_80", "--emit", "ptx"]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown arch `sm_80`") && err.contains("sm_121a") && err.contains("sm_90"), "{err}");
}

#[test]
fn compile_writes_ptx_and_metadata() {
    let dir = std::env::temp_dir().join(format!("tilec-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("softmax.ptx");
    let (code, _, err) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_121", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("sm_121a"), "says which variant it used: {err}");
    let ptx = std::fs::read_to_string(&out).unwrap();
    assert!(ptx.contains(".target sm_121a"));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("softmax.json")).unwrap()).unwrap();
    assert_eq!(meta["kernel"], "softmax");
    assert_eq!(meta["target"], "sm_121a");
    assert_eq!(meta["signature"]["params"][0]["name"], "x");
    assert_eq!(meta["hints"]["num_warps"], 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_prints_one_stage() {
    let (code, out, err) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "--emit", "tile"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"tile.load\"") && out.contains("func.func @softmax"));
    let (code, _, err) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "--emit", "asm"]);
    assert_ne!(code, 0);
    assert!(err.contains("invalid value 'asm'") && err.contains("tile, tilegpu, nvgpu, llvm, llvm-ir, ptx"), "{err}");
    // The asynchronous copies are upstream nvgpu ops in the `nvgpu` stage, gone in `llvm`
    // (with cp.async rings: by default sm_121a's matmul is fed by TMA); `ldmatrix` and
    // `mma.sync` are `nvvm` ops from the start (issue 34).
    let (code, out, err) =
        tilec(&["compile", "kernels/matmul.tile", "--arch", "sm_121", "--no-tma", "--emit", "nvgpu"]);
    assert_eq!(code, 0, "{err}");
    for op in ["nvvm.ldmatrix", "nvvm.mma.sync", "nvgpu.device_async_copy", "nvgpu.device_async_wait"] {
        assert!(out.contains(op), "{op} missing from the nvgpu stage");
    }
    let (code, out, err) = tilec(&["compile", "kernels/matmul.tile", "--arch", "sm_121", "--emit", "llvm"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("nvgpu.") && !out.contains("unrealized_conversion_cast") && out.contains("nvvm.ldmatrix"));
    let (code, _, err) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "--error-format", "jsno"]);
    assert_ne!(code, 0);
    assert!(err.contains("invalid value 'jsno'") && err.contains("human, json"), "{err}");
}

#[test]
fn errors_render_with_source_and_json() {
    let dir = std::env::temp_dir().join(format!("tilec-cli-err-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.tile");
    std::fs::write(&f, "kernel k(x: tensor<f16, 1>) grid = (1,) {\n    let t = load(x, index=(0,), shape=(96,));\n}\n")
        .unwrap();
    let (code, _, err) = tilec(&["compile", f.to_str().unwrap(), "--arch", "sm_90a"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[E0010]") && err.contains("use 64 or 128") && err.contains("^"), "{err}");
    let (_, out, _) = tilec(&["compile", f.to_str().unwrap(), "--arch", "sm_90a", "--error-format", "json"]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j[0]["code"], "E0010");
    assert_eq!(j[0]["labels"][0]["line"], 2);
    // An unreadable input is a JSON diagnostic too (issue 26, item 8).
    let missing = dir.join("missing.tile");
    let (code, out, _) = tilec(&["compile", missing.to_str().unwrap(), "--arch", "sm_90a", "--error-format", "json"]);
    assert_eq!(code, 2);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(j[0]["code"], "E0023");
    assert!(j[0]["message"].as_str().is_some_and(|m| m.contains("cannot read")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explain_and_passes() {
    let (code, out, _) = tilec(&["explain", "E0010"]);
    assert_eq!(code, 0);
    assert!(out.contains("power of two"));
    assert_ne!(tilec(&["explain", "E9999"]).0, 0);
    let (code, out, _) = tilec(&["passes"]);
    assert_eq!(code, 0);
    assert!(out.contains("tile-layout") && out.contains("pipeline sm_121a"));
}

#[test]
fn check_without_a_gpu_says_so() {
    if tilec_runtime::driver_available().is_ok() {
        return; // a machine with a driver runs the real check instead (tilec check)
    }
    let (code, _, err) = tilec(&["check"]);
    assert_eq!(code, 2);
    assert!(err.contains("no NVIDIA driver"), "{err}");
}

#[test]
fn run_on_the_interpreter() {
    let (code, out, err) = tilec(&[
        "run",
        "kernels/softmax.tile",
        "--const",
        "BLOCK_N=64",
        "--const",
        "T=f32",
        "--arg",
        "3x50:f32",
        "--arg",
        "zeros:3x50:f32",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ran softmax on the interpreter over grid [3, 1, 1]"), "{out}");
    // Each of the 3 rows sums to 1.
    assert!(out.contains("y f32 [3, 50]: sum 3.0000"), "{out}");
    let (code, _, err) = tilec(&["run", "--interp", "kernels/softmax.tile", "--arg", "3x50:f8", "--arg", "3x50"]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown dtype `f8`"), "the old --interp spelling still works: {err}");
    // A tensor of a dtype the kernel does not take names both.
    let (code, _, err) = tilec(&["run", "kernels/softmax.tile", "--arg", "3x50:f64", "--arg", "3x50"]);
    assert_ne!(code, 0);
    assert!(err.contains("expected a rank-2 f16 tensor, got a f64 tensor"), "{err}");
    // A missing argument names the parameters the kernel takes.
    let (code, _, err) = tilec(&["run", "kernels/softmax.tile", "--arg", "3x50:f16"]);
    assert_eq!(code, 2);
    assert!(err.contains("takes 2 arguments (x: tensor<f16, 2>, y: tensor<f16, 2>), 1 given"), "{err}");
    // A scalar where a tensor goes is named before the grid reads the tensor's shape.
    let (code, _, err) = tilec(&["run", "kernels/softmax.tile", "--arg", "-1", "--arg", "3x50:f16"]);
    assert_eq!(code, 2);
    assert!(err.contains("argument `x`: expected a rank-2 f16 tensor, got the i32 -1"), "{err}");
    // softmax declares x and y as [M, N]: a y of other rows would be written partly.
    let (code, _, err) = tilec(&["run", "kernels/softmax.tile", "--arg", "3x50:f16", "--arg", "zeros:4x50:f16"]);
    assert_eq!(code, 2);
    assert!(err.contains("argument `y`: dimension 0 is 4, but the kernel names it `M`, which is 3 in `x`"), "{err}");
}

#[test]
fn outputs_are_written_safely() {
    let dir = temp_dir("out");
    // The metadata goes beside the PTX; an output named .json would be overwritten by it.
    let j = dir.join("k.json");
    let (code, _, err) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "-o", j.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("ends in .json") && !j.exists(), "{err}");
    // Never over the input.
    let src = dir.join("s.tile");
    std::fs::copy(root().join("kernels/softmax.tile"), &src).unwrap();
    let before = std::fs::read_to_string(&src).unwrap();
    for extra in [&[][..], &["--emit", "tile"][..]] {
        let mut args = vec!["compile", src.to_str().unwrap(), "--arch", "sm_90a", "-o", src.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (code, _, err) = tilec(&args);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("is the input file"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&src).unwrap(), before);
    // A device gets the PTX and no metadata file beside it.
    let (code, _, err) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "-o", "/dev/null"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("no metadata file") && !std::path::Path::new("/dev/null.json").exists(), "{err}");
    // `-o -` is standard output.
    let (code, out, _) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "-o", "-"]);
    assert_eq!(code, 0);
    assert!(out.contains(".entry softmax"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_closed_or_full_stdout_is_no_panic() {
    // `tilec passes --upstream | head -1`: the pipe closes after one line.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(["passes", "--upstream"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(o.status.code() == Some(0) || o.status.code().is_none(), "{:?}: {err}", o.status);
    if std::path::Path::new("/dev/full").exists() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_tilec"))
            .args(["compile", "kernels/softmax.tile", "--arch", "sm_90a", "--emit", "tile"])
            .current_dir(root())
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("No space left") && !err.contains("panicked"), "{err}");
    }
}

#[test]
fn sources_are_read_carefully() {
    let dir = temp_dir("src");
    // A byte-order mark and old Mac line endings read as the same program.
    let text = std::fs::read_to_string(root().join("kernels/softmax.tile")).unwrap();
    let f = dir.join("bom.tile");
    std::fs::write(&f, format!("\u{feff}{}", text.replace('\n', "\r"))).unwrap();
    let (code, out, err) = tilec(&["compile", f.to_str().unwrap(), "--arch", "sm_90a", "--emit", "tile"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("func.func @softmax"));
    // Not text, a folder, a huge stream: errors, not panics or 2 GB of memory.
    let bin = dir.join("bin.tile");
    std::fs::write(&bin, [0xff, 0xfe, 0x00]).unwrap();
    let (code, _, err) = tilec(&["compile", bin.to_str().unwrap(), "--arch", "sm_90a"]);
    assert_eq!(code, 2);
    assert!(err.contains("not UTF-8"), "{err}");
    let (code, _, err) = tilec(&["compile", dir.to_str().unwrap(), "--arch", "sm_90a"]);
    assert_eq!(code, 2);
    assert!(err.contains("is a directory"), "{err}");
    let (code, _, err) = tilec(&["compile", "/dev/zero", "--arch", "sm_90a"]);
    assert_eq!(code, 2);
    assert!(err.contains("larger than 64 MiB"), "{err}");
    let nul = dir.join("nul.tile");
    std::fs::write(&nul, "kernel k() grid = (1,) {}\0").unwrap();
    let (code, _, err) = tilec(&["compile", nul.to_str().unwrap(), "--arch", "sm_90a"]);
    assert_eq!(code, 2);
    assert!(err.contains("holds a NUL byte at offset 25"), "{err}");
    // 100,000 mistakes on one line: 50 short diagnostics and a count, not gigabytes of snippets.
    let many = dir.join("many.tile");
    std::fs::write(&many, format!("kernel k() grid = (1,) {{{} }}", " let a = zz;".repeat(100_000))).unwrap();
    let (code, _, err) = tilec(&["compile", many.to_str().unwrap(), "--arch", "sm_90a", "--emit", "tile"]);
    assert_eq!(code, 1);
    assert!(err.len() < 20_000, "{} bytes of diagnostics", err.len());
    assert!(err.contains("99950 more diagnostics not shown (100000 errors in all"), "{err}");
    // A constant given twice is an error, not the last one silently.
    let (code, _, err) =
        tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "--const", "ROWS=1", "--const", "ROWS=2"]);
    assert_eq!(code, 2);
    assert!(err.contains("--const ROWS is given twice"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn time_passes_lists_every_stage() {
    let (code, _, err) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "-o", "/dev/null", "-T"]);
    assert_eq!(code, 0, "{err}");
    for what in
        ["frontend", "tile-layout", "tile-to-llvm{arch=sm_90a}", "translate to LLVM IR", "NVPTX codegen", "total"]
    {
        assert!(err.lines().any(|l| l.starts_with("time:") && l.contains(what)), "{what} in\n{err}");
    }
    // A stage before the PTX stops the compile after it: `-T` times what ran, nothing later.
    let (code, out, err) =
        tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "--emit", "tilegpu", "-o", "-", "-T"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tilegpu.") && out.contains("func.func @softmax"), "{out}");
    assert!(err.lines().any(|l| l.starts_with("time:") && l.contains("tile-layout")), "{err}");
    for later in ["tile-to-llvm", "translate to LLVM IR", "NVPTX codegen"] {
        assert!(!err.contains(later), "{later} ran for --emit tilegpu:\n{err}");
    }
    // With ptxas asked for, the PTX is still made for it (timed before ptxas runs, found or not).
    let (_, _, err) = tilec(&[
        "compile",
        "kernels/softmax.tile",
        "--arch",
        "sm_90a",
        "--emit",
        "tile",
        "-o",
        "/dev/null",
        "-T",
        "--ptxas",
    ]);
    assert!(err.contains("NVPTX codegen"), "{err}");
}

#[test]
fn opt_prints_the_changes_of_the_passes_that_made_some() {
    let dir = temp_dir("opt-changes");
    let f = dir.join("softmax.mlir");
    std::fs::write(&f, tile_text("softmax", "softmax")).unwrap();
    // tile-load-order has nothing to do in softmax (no ordered load): no diff of its own.
    let passes = "tile-load-order,tile-layout{num-warps=4}";
    let (code, _, err) = tilec(&["opt", f.to_str().unwrap(), "--passes", passes, "--print-changes"]);
    assert_eq!(code, 0, "{err}");
    let headers: Vec<&str> = err.lines().filter(|l| l.starts_with("--- before ")).collect();
    assert_eq!(headers, ["--- before tile-layout{num-warps=4}"], "{err}");
    assert!(err.lines().any(|l| l.starts_with('+') && l.contains("#tilegpu.blocked<")), "{err}");
}

#[test]
fn experiment_compares_variants_of_a_library_kernel() {
    let (code, out, err) = tilec(&[
        "experiment",
        "softmax",
        "--shapes",
        "4x100:f32,3x2000:f16",
        "--variant",
        "fm=fast-math",
        "--variant",
        "rows2=ROWS=2,-tile-licm",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| default") || l.starts_with("| fm") || l.starts_with("| rows2"))
        .collect();
    assert_eq!(rows.len(), 6, "{out}");
    assert!(rows.iter().all(|r| r.contains("| agree (")), "{out}");
    assert!(out.contains("| rows2 | 3x2000 ROWS=2 |"), "{out}");
    // The same from an experiment file, the command line's variant after the file's.
    let dir = temp_dir("experiment");
    let f = dir.join("softmax.toml");
    std::fs::write(&f, "kernel = \"softmax\"\nshapes = \"4x100:f32\"\n[variants]\nfm = \"fast-math\"\n").unwrap();
    let (code, out, err) = tilec(&["experiment", "--file", f.to_str().unwrap(), "--variant", "r2=ROWS=2"]);
    assert_eq!(code, 0, "{err}");
    let names: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("| ")?.split(' ').next()).collect();
    assert_eq!(&names[1..], ["default", "fm", "r2"], "{out}");
    // A pass's options, as a pipeline writes them, in a variant and on compile's command line.
    let (code, out, err) =
        tilec(&["experiment", "softmax", "--shapes", "4x100:f32", "--variant", "w4=tile-layout{num-warps=4}"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.starts_with("| w4 |") && l.contains("| agree (")), "{out}");
    let (code, out, err) = tilec(&[
        "compile",
        "kernels/softmax.tile",
        "--arch",
        "sm_90a",
        "--emit",
        "tilegpu",
        "--pass-option",
        "tile-layout{num-warps=2}",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tile.num_warps = 2"), "{out}");
    let (code, _, err) =
        tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "--pass-option", "tile-layout{warps=2}"]);
    assert_ne!(code, 0);
    assert!(err.contains("`tile-layout` has no option `warps`"), "{err}");
    let (code, _, err) = tilec(&["experiment", "softmax", "--variant", "x=turbo"]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown switch `turbo`"), "{err}");
    let (code, _, err) = tilec(&["experiment", "softmax", "--variant", "x=-tile-layout"]);
    assert_ne!(code, 0);
    assert!(err.contains("tile-layout"), "{err}");
}

#[test]
fn the_experiment_file_of_the_passes_page_runs() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/passes.md")).unwrap();
    let block =
        page.split("```toml\n").nth(1).and_then(|b| b.split("```").next()).expect("a toml block in docs/passes.md");
    let dir = temp_dir("experiment-doc");
    let f = dir.join("doc.toml");
    std::fs::write(&f, block).unwrap();
    let (code, out, err) = tilec(&["experiment", "--file", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().filter(|l| l.contains("| agree (")).count(), 4, "{out}");
    assert!(out.contains("| canonicalized | 4096x4096x4096 | agree (11 passes"), "{out}");
}

/// Variants of another kernel (`kernel=`), of an edited copy (`source=`), with constants for
/// every variant from the file, a chart and the JSON rows.
#[test]
fn experiments_take_kernels_sources_and_write_a_chart() {
    let dir = temp_dir("experiment-sources");
    let edited = dir.join("softmax.tile");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/softmax.tile")).unwrap();
    // A dead row statistic: one more cross-warp reduction (its barriers stay in the PTX).
    let text = text.replace(
        "    let s = sum(e, axis=1, keepdims=true);\n",
        "    let s = sum(e, axis=1, keepdims=true);\n    let dead = sum(t * t, axis=1, keepdims=true);\n",
    );
    assert!(text.contains("let dead"));
    std::fs::write(&edited, text).unwrap();
    let f = dir.join("e.toml");
    std::fs::write(
        &f,
        format!(
            "kernel = \"softmax\"\nshapes = \"64x1000:f16\"\nconsts = \"BLOCK_N=1024\"\n[variants]\nedited = \"source={}\"\nonline = \"kernel=softmax_online\"\n",
            edited.display()
        ),
    )
    .unwrap();
    let (svg, json) = (dir.join("e.svg"), dir.join("e.json"));
    let (code, out, err) = tilec(&[
        "experiment",
        "--file",
        f.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let row =
        |v: &str| out.lines().find(|l| l.starts_with(&format!("| {v} |"))).unwrap_or_else(|| panic!("{v}: {out}"));
    let bars = |l: &str| l.trim_end_matches(" |").rsplit("| ").next().unwrap().trim().parse::<u32>().unwrap();
    assert!(row("default").contains("64x1000 ROWS=1 BLOCK_N=1024"), "{out}");
    assert!(bars(row("edited")) > bars(row("default")), "{out}");
    assert!(row("online").contains("agree ("), "{out}");
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let kernels: Vec<&str> = j["rows"].as_array().unwrap().iter().map(|r| r["kernel"].as_str().unwrap()).collect();
    assert_eq!(kernels, ["softmax", "softmax", "softmax_online"]);
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.contains("registers a thread") && chart.contains("online"), "{chart}");
    // The chart again from the JSON alone: the same bars.
    let again = dir.join("again.svg");
    let (code, _, err) = tilec(&["experiment", "--replot", json.to_str().unwrap(), "--svg", again.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let rects = |t: &str| t.matches("<rect").count();
    assert_eq!(rects(&std::fs::read_to_string(&again).unwrap()), rects(&chart));
    let (code, _, err) = tilec(&["experiment", "softmax", "--variant", "x=kernel=nope"]);
    assert_ne!(code, 0);
    assert!(err.contains("no kernel spec `nope`"), "{err}");
}

#[test]
fn bisect_walks_the_tile_level_passes_on_the_interpreter() {
    let (code, out, err) = tilec(&[
        "bisect",
        "kernels/softmax.tile",
        "--const",
        "T=f32",
        "--const",
        "BLOCK_N=128",
        "--arg",
        "4x100:f32",
        "--arg",
        "zeros:4x100:f32",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    for pass in ["tile-load-order", "tile-layout", "tile-pipeline{arch=sm_90a}"] {
        assert!(out.contains(&format!("after {pass}: same")), "{pass} in\n{out}");
    }
    assert!(out.contains("the interpreter stops before `tile-to-llvm"), "{out}");
    let (code, _, err) = tilec(&["bisect", "kernels/softmax.tile", "--arg", "4x100:f32"]);
    assert_ne!(code, 0);
    assert!(err.contains("takes 2 arguments, 1 given"), "{err}");
}

#[test]
fn opt_runs_a_mixed_pipeline_with_dumps() {
    let dir = temp_dir("opt");
    let f = dir.join("softmax.mlir");
    std::fs::write(&f, tile_text("softmax", "softmax")).unwrap();
    let passes = "canonicalize,cse,tile-layout{num-warps=4},canonicalize,tile-to-llvm{arch=sm_90a},cse";
    let (code, out, err) = tilec(&["opt", f.to_str().unwrap(), "--passes", passes, "--print-after-all"]);
    assert_eq!(code, 0, "{err}");
    let dumps: Vec<&str> = err.lines().filter(|l| l.starts_with("// -----// IR Dump After ")).collect();
    let names = ["canonicalize", "cse", "tile-layout{num-warps=4}", "canonicalize", "tile-to-llvm{arch=sm_90a}", "cse"];
    assert_eq!(dumps.len(), names.len(), "{err}");
    for (d, n) in dumps.iter().zip(names) {
        assert_eq!(*d, format!("// -----// IR Dump After {n} //----- //"));
    }
    // After tile-layout the tiles carry layouts; the result is one nvvm kernel.
    let after_layout = err.split("IR Dump After ").nth(3).unwrap();
    assert!(after_layout.starts_with("tile-layout") && after_layout.contains("#tilegpu.blocked<"), "{after_layout}");
    assert!(!err.split("IR Dump After ").nth(2).unwrap().contains("#tilegpu"), "no layouts before tile-layout");
    assert!(out.contains("llvm.func @softmax") && out.contains("nvvm.kernel"), "{out}");
    // --print-after picks passes by name; -o writes the result; -T times each pass.
    let o = f.with_extension("out.mlir");
    let (code, out, err) = tilec(&[
        "opt",
        f.to_str().unwrap(),
        "--passes",
        "cse,tile-layout",
        "--print-after",
        "tile-layout",
        "-T",
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty());
    assert_eq!(err.matches("IR Dump After").count(), 1, "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("time:")).count(), 2, "{err}");
    assert!(std::fs::read_to_string(&o).unwrap().contains("#tilegpu.blocked<"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_pipelines_name_the_close_matches() {
    let dir = temp_dir("badopt");
    let f = dir.join("sm.mlir");
    std::fs::write(&f, tile_text("softmax", "softmax")).unwrap();
    let f = f.to_str().unwrap();
    let cases: [(&str, &[&str]); 7] = [
        ("tile-layot,cse", &["unknown pass `tile-layot`", "did you mean: tile-layout?"]),
        ("canonicalise", &["unknown pass `canonicalise`", "canonicalize"]),
        ("tile-layout{num-warp=4}", &["has no option `num-warp`", "did you mean: num-warps?"]),
        ("tile-layout{num-warps=3}", &["not a power of two"]),
        ("tile-to-llvm{arch=sm_80}", &["unknown arch `sm_80`"]),
        ("canonicalize{max-iteration=2}", &["bad pipeline element", "no such option max-iteration"]),
        ("affine-loop-coalescing", &["runs on `func.func` ops: write `func.func(affine-loop-coalescing)`"]),
    ];
    for (p, wants) in cases {
        let (code, _, err) = tilec(&["opt", f, "--passes", p]);
        assert_eq!(code, 1, "{p}");
        assert!(err.contains("error[E0904]"), "{p}: {err}");
        for w in wants {
            assert!(err.contains(w), "{p}: wants `{w}` in\n{err}");
        }
    }
    let (code, _, err) = tilec(&["opt", f, "--passes", "tile-to-llvm"]);
    assert_eq!(code, 1);
    assert!(err.contains("run `tile-layout` before it"), "{err}");
    let (code, _, err) = tilec(&["opt", f, "--passes", "cse", "--print-after", "cs"]);
    assert_ne!(code, 0);
    assert!(err.contains("did you mean cse?"), "{err}");
    // An upstream lowering leaves ops that tile IR has no form for: tilec's passes say so.
    let (code, _, err) = tilec(&["opt", f, "--passes", "convert-arith-to-llvm,tile-layout"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[E0903]") && err.contains("has no tile-IR form"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn passes_upstream_lists_every_upstream_pass() {
    let list = std::fs::read_to_string(root().join("passes/src/upstream_passes.txt")).unwrap();
    let n = list.lines().filter(|l| !l.starts_with('#')).count();
    let (code, out, _) = tilec(&["passes", "--upstream"]);
    assert_eq!(code, 0);
    assert!(out.lines().count() == n && out.contains("loop-invariant-code-motion"));
}

/// `tilec opt` on IR that would crash, hang or be lowered into wrong code: an error each.
#[test]
fn opt_rejects_what_would_crash_or_miscompile() {
    let dir = temp_dir("hard");
    let tile = tile_text("softmax", "softmax");
    let cases: Vec<(&str, String, &str, &str)> = vec![
        ("nul.mlir", format!("{tile}\0"), "cse", "NUL byte"),
        (
            "deep.mlir",
            format!(
                "module {{ func.func @f() {{ {}{} return }} }}",
                "scf.execute_region { ".repeat(5000),
                "} ".repeat(5000)
            ),
            "cse",
            "deeper than 256",
        ),
        // A store of an f32 tile into an f16 tensor would write past the buffer.
        (
            "store.mlir",
            tile.replace(r#""tile.store"(%y, %2, %14, %13)"#, r#""tile.store"(%y, %2, %14, %12)"#)
                .replace("i32, i32, tensor<1x1024xf16>) -> ()", "i32, i32, tensor<1x1024xf32>) -> ()"),
            "tile-layout",
            "store of tensor<1x1024xf32> into a rank-2 f16 tensor",
        ),
        ("warps.mlir", tile.replace("tile.num_warps = 4 : i32", "tile.num_warps = 0 : i32"), "tile-layout", "0 warps"),
        ("refused.mlir", tile.clone(), "xegpu-propagate-layout", "segfaults"),
    ];
    for (name, text, passes, want) in cases {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        let (code, _, err) = tilec(&["opt", f.to_str().unwrap(), "--passes", passes]);
        // 2: refused as input by the CLI (the NUL byte); 1: a diagnostic of the compiler.
        assert!(code == 1 || code == 2, "{name}: {err}");
        assert!(err.contains(want) && !err.contains("panicked"), "{name}: wants `{want}` in {err}");
    }
    // A pass on the wrong stage says which stage the module is in.
    let llvm = dir.join("llvm.mlir");
    let (code, out, _) = tilec(&["compile", "kernels/softmax.tile", "--arch", "sm_90a", "--emit", "llvm"]);
    assert_eq!(code, 0);
    std::fs::write(&llvm, out).unwrap();
    let (code, _, err) = tilec(&["opt", llvm.to_str().unwrap(), "--passes", "tile-layout"]);
    assert_eq!(code, 1);
    assert!(err.contains("already lowered to the llvm dialect"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The interpreter's limits: a runaway kernel stops with an error naming the flag.
#[test]
fn run_stops_at_its_limits() {
    let dir = temp_dir("limits");
    let f = dir.join("spin.tile");
    std::fs::write(
        &f,
        "kernel spin(n: i32) grid = (1,) {\n    let x = 0;\n    for i in range(0, n) {\n        x = x + 1;\n    }\n}\n",
    )
    .unwrap();
    let (code, _, err) = tilec(&["run", f.to_str().unwrap(), "--arg", "2000000000", "--max-work", "100000"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-work"), "{err}");
    // A tensor where a scalar goes is described, not dumped.
    let (code, _, err) = tilec(&["run", f.to_str().unwrap(), "--arg", "zeros:4096x4096:f32"]);
    assert_eq!(code, 2);
    assert!(err.contains("a f32 tensor of shape [4096, 4096]") && err.len() < 400, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Limits of zero would make every input a hang or every allocation a finding: refused
/// (issue 26, item 8).
#[test]
fn fuzz_refuses_zero_limits() {
    for flag in ["--timeout", "--mem-gib", "--chunk"] {
        let (code, _, err) = tilec(&["fuzz", flag, "0", "--target", "tile=1"]);
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(err.contains("0 is not in 1.."), "{flag}: {err}");
    }
}

/// The fuzz slice CI runs: a fixed count of inputs per target, in watched workers; any crash,
/// hang over 30 s or allocation over 4 GiB fails it (the findings are written beside).
#[test]
fn fuzz_slice_finds_nothing() {
    let dir = temp_dir("fuzz");
    let json = dir.join("fuzz.json");
    let (code, out, err) = tilec(&[
        "fuzz",
        "--target",
        "tile=3000",
        "--target",
        "mlir=2000",
        "--target",
        "args=2000",
        "--target",
        "launch=20000",
        "--seed",
        "1",
        "--chunk",
        "1000",
        // A hang is a compilation that does not end; 30 s rather than the command's 10 leaves
        // room for legitimately huge constants on a loaded two-core machine (input 1971, a
        // 16384-wide top-k merge, lowers in about 10 s: compile time, issue 34).
        "--timeout",
        "30",
        "--out",
        dir.join("findings").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    println!("{out}");
    assert_eq!(code, 0, "{out}\n{err}");
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["inputs"], 27_000);
    assert_eq!(j["crashes"], 0);
    // Every target gets past its first gate on some inputs: the slice is not all rejections.
    for (t, reached) in [
        ("tile", "lowered to the llvm dialect"),
        ("mlir", "passed the pipeline"),
        ("args", "ran on the interpreter"),
        ("launch", "valid launch"),
    ] {
        assert!(j["targets"][t]["outcomes"][reached].as_u64().unwrap_or(0) > 0, "{t}: {out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The watchdog sees each way a worker can go: a panic, an abort, a hang and a runaway
/// allocation are each a finding at the right input, and the inputs after them still run.
#[test]
fn fuzz_watchdog_records_crashes_hangs_and_memory() {
    let dir = temp_dir("fuzzdog");
    let (code, out, err) = tilec(&[
        "fuzz",
        "--target",
        "launch=40",
        "--inject",
        "panic@3,abort@11,hang@17,oom@25",
        "--timeout",
        "2",
        "--jobs",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}\n{err}");
    for want in ["panic at input 3", "crash at input 11", "hang at input 17", "out of memory at input 25"] {
        assert!(out.contains(want), "{want}: {out}");
    }
    assert!(
        out.contains("fuzz: 40 inputs (seed 1), 2 crashes, 1 hangs over 2 s, 1 over the 4 GiB memory limit"),
        "{out}"
    );
    let finding = std::fs::read_to_string(dir.join("launch-seed1-input3.txt")).unwrap();
    assert!(finding.contains("replay: tilec fuzz --target launch --seed 1 --replay 3"), "{finding}");
    assert!(finding.contains("injected panic at input 3"), "{finding}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tilec compile` goes through the cache: a second process hits it (the same PTX, even with
/// a comment and other spacing), processes compiling one kernel at once all succeed and leave
/// one whole entry, a damaged entry is recompiled, and `tilec cache explain` names the field
/// a missing compile differs in.
#[test]
fn compile_uses_the_cache_across_processes() {
    let dir = temp_dir("cache");
    let cache = dir.join("cache");
    let _ = std::fs::remove_dir_all(&cache);
    let ptx = |i: usize| dir.join(format!("s{i}.ptx"));
    let run = |i: usize, file: &str| {
        let out = ptx(i);
        tilec_with_cache(&["compile", file, "--arch", "sm_90a", "-o", out.to_str().unwrap()], &cache)
    };
    // Four processes at once on a cold cache.
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let out = ptx(i);
            let cache = cache.clone();
            std::thread::spawn(move || {
                tilec_with_cache(
                    &["compile", "kernels/softmax.tile", "--arch", "sm_90a", "-o", out.to_str().unwrap()],
                    &cache,
                )
            })
        })
        .collect();
    for h in handles {
        let (code, _, err) = h.join().unwrap();
        assert_eq!(code, 0, "{err}");
    }
    let first = std::fs::read_to_string(ptx(0)).unwrap();
    for i in 1..4 {
        assert_eq!(std::fs::read_to_string(ptx(i)).unwrap(), first);
    }
    let (code, ls, err) = tilec_with_cache(&["cache", "ls"], &cache);
    assert_eq!(code, 0, "{err}");
    assert!(ls.starts_with("1 entries"), "{ls}");
    // Another process, the same kernel with a comment added and other indentation: a hit.
    let respaced = dir.join("respaced.tile");
    let text = std::fs::read_to_string(root().join("kernels/softmax.tile")).unwrap();
    std::fs::write(&respaced, format!("# a new comment\n{}", text.replace("    ", "  "))).unwrap();
    let (code, out, _) =
        tilec_with_cache(&["cache", "explain", respaced.to_str().unwrap(), "--arch", "sm_90a"], &cache);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("hit:"), "{out}");
    // A different constant misses, and explain names it.
    let (code, out, _) = tilec_with_cache(
        &["cache", "explain", "kernels/softmax.tile", "--arch", "sm_90a", "--const", "BLOCK_N=512"],
        &cache,
    );
    assert_eq!(code, 1);
    assert!(out.contains("consts: this compile `BLOCK_N=Int(512)`, the entry ``"), "{out}");
    // A kernel the file does not define: said, not explained as a key difference.
    let (code, out, _) =
        tilec_with_cache(&["cache", "explain", "kernels/softmax.tile", "--arch", "sm_90a", "--kernel", "nope"], &cache);
    assert_eq!(code, 1);
    assert!(out.contains("no kernel named `nope`") && out.contains("it defines: softmax"), "{out}");
    // A damaged entry is a miss, recompiled into the same PTX.
    let file = std::fs::read_dir(cache.join("v1"))
        .unwrap()
        .flatten()
        .flat_map(|shard| std::fs::read_dir(shard.path()).unwrap().flatten())
        .map(|f| f.path())
        .find(|p| p.extension().is_some_and(|e| e == "tilec"))
        .unwrap();
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let (code, out, _) = tilec_with_cache(&["cache", "explain", "kernels/softmax.tile", "--arch", "sm_90a"], &cache);
    assert_eq!(code, 1);
    assert!(out.contains("damaged") && out.contains("truncated"), "{out}");
    let (code, _, err) = run(5, "kernels/softmax.tile");
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(ptx(5)).unwrap(), first);
    let (code, out, _) = tilec_with_cache(&["cache", "explain", "kernels/softmax.tile", "--arch", "sm_90a"], &cache);
    assert_eq!(code, 0, "the entry was not rewritten: {out}");
    // A folder that cannot be made: compiling carries on and says so.
    let blocked = dir.join("blocked");
    std::fs::write(&blocked, "").unwrap();
    let (code, _, err) = tilec_with_cache(
        &["compile", "kernels/softmax.tile", "--arch", "sm_90a", "-o", ptx(6).to_str().unwrap()],
        &blocked.join("cache"),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("cannot be written").count(), 1, "{err}");
    let (code, out, _) = tilec_with_cache(&["cache", "clear"], &cache);
    assert_eq!(code, 0);
    assert!(out.starts_with("removed 1 entries"), "{out}");
}

/// `tilec cache warm` compiles every kernel of its files for every target, several at once,
/// reports them in order, and fills the cache a later compile hits; a file that does not
/// parse is reported with its span and makes the exit status 1, the others still compile.
#[test]
fn cache_warm_compiles_every_kernel_for_every_target_into_the_cache() {
    let dir = temp_dir("warm");
    let cache = dir.join("cache");
    let _ = std::fs::remove_dir_all(&cache);
    let bad = dir.join("bad.tile");
    std::fs::write(&bad, "kernel broken(x: tensor<f16, [n]>) {\n    let y = ;\n}\n").unwrap();
    let files = ["kernels/softmax.tile", "kernels/matmul_splitk.tile"];
    let mut args = vec!["cache", "warm"];
    args.extend(files);
    args.extend([bad.to_str().unwrap(), "--arch", "sm_90a,sm_121a", "-j", "2"]);
    let (code, out, err) = tilec_with_cache(&args, &cache);
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    let expected = [
        "kernels/softmax.tile softmax sm_90a: compiled",
        "kernels/softmax.tile softmax sm_121a: compiled",
        "kernels/matmul_splitk.tile matmul_splitk sm_90a: compiled",
        "kernels/matmul_splitk.tile matmul_splitk sm_121a: compiled",
        "kernels/matmul_splitk.tile matmul_swiglu sm_90a: compiled",
        "kernels/matmul_splitk.tile matmul_swiglu sm_121a: compiled",
    ];
    for (line, want) in lines.iter().zip(expected) {
        assert!(line.starts_with(want), "{line} / {want}\n{out}");
    }
    assert!(
        out.contains("8 variants: 6 compiled")
            && out.contains("0 already in the cache, 2 failed")
            && out.contains("on 2 threads"),
        "{out}"
    );
    assert!(err.contains("bad.tile (only kernel) sm_90a: failed") && err.contains("bad.tile:2:"), "{err}");
    let (code, out, _) = tilec_with_cache(
        &["cache", "explain", "kernels/matmul_splitk.tile", "--arch", "sm_121a", "--kernel", "matmul_swiglu"],
        &cache,
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("hit:"), "{out}");
    // Again: everything from the cache, nothing compiled.
    let mut args = vec!["cache", "warm"];
    args.extend(files);
    args.extend(["--arch", "sm_90a", "--arch", "sm_121a"]);
    let (code, out, err) = tilec_with_cache(&args, &cache);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches(": in the cache").count(), 6, "{out}");
    assert!(out.contains("6 variants: 0 compiled"), "{out}");
}

/// `--save-out` writes every tensor as .npy, `--arg @file.npy` reads one back: a second run
/// on the saved inputs gives the same outputs byte for byte; a missing or foreign file is an
/// error naming it.
#[test]
fn run_reads_and_writes_npy() {
    let dir = temp_dir("npy");
    let (a, b) = (dir.join("a"), dir.join("b"));
    let k = "kernels/softmax.tile";
    let (code, out, err) = tilec(&[
        "run",
        k,
        "--const",
        "T=f32",
        "--arg",
        "3x40:f32",
        "--arg",
        "zeros:3x40:f32",
        "--save-out",
        a.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wrote") && a.join("y.npy").is_file(), "{out}");
    let x = format!("@{}", a.join("x.npy").display());
    let y = format!("@{}", a.join("y.npy").display());
    let (code, _, err) =
        tilec(&["run", k, "--const", "T=f32", "--arg", &x, "--arg", &y, "--save-out", b.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(a.join("y.npy")).unwrap(), std::fs::read(b.join("y.npy")).unwrap());
    let bytes = std::fs::read(a.join("x.npy")).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"));
    let missing = format!("@{}", dir.join("missing.npy").display());
    let (code, _, err) = tilec(&["run", k, "--arg", &missing, "--arg", &y]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot read") && err.contains("missing.npy"), "{err}");
    let foreign = dir.join("foreign.npy");
    std::fs::write(&foreign, "not numpy").unwrap();
    let (code, _, err) = tilec(&["run", k, "--arg", &format!("@{}", foreign.display()), "--arg", &y]);
    assert_ne!(code, 0);
    assert!(err.contains("not a .npy file"), "{err}");
}

/// `tilec tune` needs a GPU: without one it says so (no panic), and its arguments are the
/// `tilec run` grammar.
#[test]
fn tune_without_a_gpu_says_so() {
    if Path::new("/dev/nvidiactl").exists() {
        return; // a GPU machine: the H100 results under bench/results/ show the real thing
    }
    let (code, _, err) =
        tilec(&["tune", "kernels/matmul.tile", "--arg", "64x64:f16", "--arg", "64x64:f16", "--arg", "zeros:64x64:f16"]);
    assert_ne!(code, 0);
    assert!(err.contains("no NVIDIA driver"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `tilec check --const` takes what `bench --const` takes and refuses the rest before it
/// looks for a GPU.
#[test]
fn check_consts_are_integers_named_once() {
    for (args, says) in [
        (&["check", "fmha", "--const", "AHEAD"][..], "expected NAME=VALUE"),
        (&["check", "fmha", "--const", "AHEAD=yes"][..], "integer values"),
        (&["check", "fmha", "--const", "AHEAD=1", "--const", "AHEAD=0"][..], "given twice"),
    ] {
        let (code, _, err) = tilec(args);
        assert_ne!(code, 0);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `tilec bench --list` prints each case with the suite's counts and the constants a compile
/// takes — as `tilec compile --const` reads them back — without a GPU: `bench/estimates.py`
/// compiles every listed case of a tensor-core kernel for the targets we cannot run.
#[test]
fn bench_lists_its_cases_without_a_gpu() {
    let (code, out, err) = tilec(&["bench", "--list", "--quick", "mla", "fmha"]);
    assert_eq!(code, 0, "{err}");
    let cases: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mla = cases.iter().find(|c| c["name"] == "mla").expect("mla's bench case");
    assert_eq!(mla["dims"], serde_json::json!([4, 16, 4096, 128, 64]));
    // Causal: the scores over D + DR and P·V over D, half of each.
    assert_eq!(mla["flops"].as_f64(), Some(2.0 * 4.0 * 16.0 * 4096.0 * 4096.0 * (2.0 * 128.0 + 64.0) * 0.5));
    assert_eq!(mla["consts"]["CAUSAL"], "true");
    let fmha = cases.iter().find(|c| c["name"] == "fmha").unwrap();
    let mut args = vec!["compile".to_string(), "kernels/fmha.tile".into(), "--arch".into(), "sm_103a".into()];
    for (k, v) in fmha["consts"].as_object().unwrap() {
        args.extend(["--const".to_string(), format!("{k}={}", v.as_str().unwrap())]);
    }
    args.extend(["--emit".into(), "tile".into(), "-o".into(), "-".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = tilec(&args);
    assert_eq!(code, 0, "the listed constants do not compile: {err}");
}

/// Issue 27's two silent-wrong launches are refused before any block runs: softmax rows wider
/// than its tile (a `require` clause), matmul operands whose K differ (named extents).
#[test]
fn launches_that_break_a_requirement_are_refused() {
    let (code, _, err) =
        tilec(&["run", "--interp", "kernels/softmax.tile", "--arg", "3x5000:f16", "--arg", "zeros:3x5000:f16"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("requires `N <= BLOCK_N` (line") && err.contains("5000 <= 1024 is false"),
        "softmax past BLOCK_N: {err}"
    );
    let (code, _, err) = tilec(&[
        "run",
        "--interp",
        "kernels/matmul.tile",
        "--arg",
        "64x32:f16",
        "--arg",
        "48x64:f16",
        "--arg",
        "zeros:64x64:f16",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("`K`, which is 32 in `A`"), "matmul with disagreeing K: {err}");
    let (code, _, err) =
        tilec(&["run", "--interp", "kernels/softmax.tile", "--arg", "3x1000:f16", "--arg", "zeros:3x1000:f16"]);
    assert_eq!(code, 0, "{err}");
    // `run` takes compile's pipeline switches (for its GPU compilation and its check).
    let (code, _, err) = tilec(&[
        "run",
        "kernels/softmax.tile",
        "--fast-math",
        "--no-fp-fusion",
        "--arg",
        "3x100:f16",
        "--arg",
        "zeros:3x100:f16",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// bf16 and fp8 tensors go out as float32 `.npy` (NumPy has neither) and come back in for a
/// bf16 parameter converted, with a note: a run fed the tensors it saved gives the same
/// outputs, bit for bit.
#[test]
fn bf16_tensors_saved_as_npy_read_back() {
    let dir = temp_dir("bf16-npy");
    let (first, second) = (dir.join("first"), dir.join("second"));
    // softmax in bf16 on `x`, its tensors saved into `out`.
    let softmax = |x: &str, out: &PathBuf| {
        let out = out.display().to_string();
        tilec(&[
            "run",
            "kernels/softmax.tile",
            "--const",
            "T=bf16",
            "--arg",
            x,
            "--arg",
            "zeros:3x100:bf16",
            "--save-out",
            &out,
        ])
    };
    let (code, _, err) = softmax("3x100:bf16", &first);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = softmax(&format!("@{}", first.join("x.npy").display()), &second);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("f32 values converted to bf16 for `x` (0 of 300 rounded)"), "{err}");
    let y = |d: &PathBuf| std::fs::read(d.join("y.npy")).unwrap();
    assert_eq!(y(&first), y(&second));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The link places the code a compile runs first (cli/build.rs, `hot-symbols.txt`): the
/// functions at the head of the list are in the binary, at rising addresses in the list's
/// order. Fails when the build stops passing the list to the linker, and when the list is
/// stale (another LLVM: most of its names gone) — `scripts/hot-symbols.sh` writes it again.
#[test]
fn hot_code_is_linked_first() {
    if env!("TILEC_HOT_SYMBOLS") != "1" {
        eprintln!("the link is not rust-lld's (cli/build.rs): tilec's code is not ordered");
        return;
    }
    let list = std::fs::read_to_string(root().join("cli/hot-symbols.txt")).unwrap();
    let head: Vec<&str> = list.lines().take(1000).collect();
    let wanted: std::collections::HashSet<&str> = head.iter().copied().collect();
    let nm = Command::new("nm").args(["--defined-only", env!("CARGO_BIN_EXE_tilec")]).output();
    let nm = nm.expect("`nm` (binutils) reads the binary's symbols");
    assert!(nm.status.success(), "{}", String::from_utf8_lossy(&nm.stderr));
    let mut at = std::collections::HashMap::new();
    for line in String::from_utf8_lossy(&nm.stdout).lines() {
        let mut fields = line.split_whitespace();
        let (Some(addr), Some(_), Some(name)) = (fields.next(), fields.next(), fields.next()) else { continue };
        if let (Some(name), Ok(addr)) = (wanted.get(name), u64::from_str_radix(addr, 16)) {
            // A local function may be defined by several objects: all are placed together.
            let first = at.entry(name.to_string()).or_insert(addr);
            *first = (*first).min(addr);
        }
    }
    let placed: Vec<(&str, u64)> = head.iter().filter_map(|n| at.get(*n).map(|a| (*n, *a))).collect();
    // A Rust name ends in a hash of its crate's build (the profile too: a debug build has
    // other names); LLVM's and MLIR's are the same in every build against the same LLVM.
    let rust = |n: &str| n.len() > 20 && n.ends_with('E') && n[n.len() - 20..].starts_with("17h");
    let (cxx, cxx_placed) = (head.iter().filter(|n| !rust(n)).count(), placed.iter().filter(|(n, _)| !rust(n)).count());
    assert!(
        cxx_placed * 10 >= cxx * 9,
        "only {cxx_placed} of the list's first {cxx} C++ functions are in the binary: regenerate cli/hot-symbols.txt"
    );
    // An alias (a constructor's complete and base forms) lies where the first of its names
    // put it.
    let (mut highest, mut seen) = (0, std::collections::HashSet::new());
    for (name, addr) in placed {
        if seen.insert(addr) {
            assert!(addr > highest, "`{name}` lies below a function listed before it: the list did not order the link");
            highest = addr;
        }
    }
}
