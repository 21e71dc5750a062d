//! The `tilec` binary as a user runs it.

use std::process::Command;

pub fn tilec(args: &[&str]) -> (i32, String, String) {
    let o =
        Command::new(env!("CARGO_BIN_EXE_tilec")).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
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
    assert!(err.contains("stages: tile, tilegpu, llvm, llvm-ir, ptx"), "{err}");
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
        "--interp",
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
    let (code, _, err) = tilec(&["run", "--interp", "kernels/softmax.tile", "--arg", "3x50:f64"]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown dtype `f64`"), "{err}");
}
