//! `tile-dce` through `my-tilec`: the one-pass test (a dead chain goes, the live ops stay, the
//! result still verifies and lowers), the pass known by name to `opt`, `bisect` and `passes`.

use std::process::Command;

fn my_tilec(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_my-tilec"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// A row softmax with a dead chain (`waste`, `waste2`) and a dead load.
const KERNEL: &str = "kernel dead(x: tensor<f32, [M, N]>, y: tensor<f32, [M, N]>, const BLOCK_N: int = 128)
    grid = (M,)
    require N <= BLOCK_N
{
    let t = load(x, index=(bid(0), 0), shape=(1, BLOCK_N), padding=-inf);
    let unused = load(x, index=(bid(0), 0), shape=(1, BLOCK_N));
    let waste = exp(t) * 3.0;
    let waste2 = sum(waste, axis=1, keepdims=true);
    let e = exp(t - max(t, axis=1, keepdims=true));
    store(y, index=(bid(0), 0), tile=e / sum(e, axis=1, keepdims=true));
}
";

#[test]
fn tile_dce_removes_the_dead_chain_and_nothing_else() {
    let dir = std::env::temp_dir().join(format!("my-tilec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("dead.tile");
    std::fs::write(&src, KERNEL).unwrap();
    let tile = dir.join("dead.mlir");
    let (code, _, err) = my_tilec(&[
        "compile",
        src.to_str().unwrap(),
        "--arch",
        "sm_90a",
        "--emit",
        "tile",
        "-o",
        tile.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let before = std::fs::read_to_string(&tile).unwrap();
    let (code, after, err) = my_tilec(&["opt", tile.to_str().unwrap(), "--passes", "tile-dce"]);
    assert_eq!(code, 0, "{err}");
    let count = |t: &str, op: &str| t.lines().filter(|l| l.contains(op)).count();
    // One load, one exp, one mulf, one of the three reductions' chain gone; the store stays.
    assert_eq!(count(&before, "\"tile.load\""), 2);
    assert_eq!(count(&after, "\"tile.load\""), 1, "{after}");
    assert_eq!(count(&after, "math.exp"), count(&before, "math.exp") - 1, "{after}");
    assert_eq!(count(&after, "arith.mulf"), 0, "{after}");
    assert_eq!(count(&after, "\"tile.reduce\""), count(&before, "\"tile.reduce\"") - 1, "{after}");
    assert_eq!(count(&after, "\"tile.store\""), 1);
    // The result still lowers: the rest of the pipeline after the pass.
    let (code, _, err) = my_tilec(&[
        "opt",
        tile.to_str().unwrap(),
        "--passes",
        "tile-dce,tile-layout,tile-to-llvm{arch=sm_90a}",
        "--print-changes",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("--- before tile-dce"), "{err}");
    // Known by name: listed, and the bisection walks it (dead code changes no result).
    let (_, listed, _) = my_tilec(&["passes"]);
    assert!(listed.lines().any(|l| l.starts_with("tile-dce")), "{listed}");
    let (code, out, err) = my_tilec(&[
        "bisect",
        src.to_str().unwrap(),
        "--passes",
        "tile-dce,tile-layout,tile-licm",
        "--arg",
        "5x100:f32",
        "--arg",
        "zeros:5x100:f32",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("after tile-dce: same") && out.contains("after tile-layout: same"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The pass through `my-tilec experiment`: the experiment file of this crate puts it before
/// `tile-layout` on a softmax with dead row statistics — the tile-level stages still agree with
/// the source, and two block barriers and 64 bytes of shared memory go, as in the library's
/// softmax without the dead code. Through `compile --pipeline-edit` too.
#[test]
fn tile_dce_runs_through_experiment_and_pipeline_edits() {
    let (code, out, err) =
        my_tilec(&["experiment", "--file", "examples/custom_pass/softmax-dce.toml", "--shapes", "4096x1024:f16"]);
    assert_eq!(code, 0, "{err}");
    let row = |v: &str| -> Vec<String> {
        let l = out.lines().find(|l| l.starts_with(&format!("| {v} |"))).unwrap_or_else(|| panic!("{v}: {out}"));
        l.split('|').map(|c| c.trim().to_string()).collect()
    };
    // Cells: variant, case, stages, regs, spills, smem, …, bar (the last).
    let (default, dce, library) = (row("default"), row("tile-dce"), row("library-softmax"));
    assert!(dce[3].starts_with("agree (10 passes"), "{out}");
    let bar = |r: &[String]| r[r.len() - 2].parse::<u32>().unwrap();
    let smem = |r: &[String]| r[6].parse::<u32>().unwrap();
    assert!(bar(&dce) < bar(&default) && smem(&dce) < smem(&default), "{out}");
    assert_eq!((bar(&dce), smem(&dce)), (bar(&library), smem(&library)), "{out}");
    let (code, _, err) = my_tilec(&[
        "compile",
        "examples/custom_pass/kernels/softmax.tile",
        "--arch",
        "sm_90a",
        "--pipeline-edit",
        "before=tile-layout:tile-dce",
        "--report",
        "-o",
        &std::env::temp_dir().join(format!("dce-{}.ptx", std::process::id())).display().to_string(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("tile-dce: ") && err.contains("dead op(s) removed"), "{err}");
}
