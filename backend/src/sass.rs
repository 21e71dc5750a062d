//! Reading the machine code ptxas made: `cuobjdump -sass` on a cubin, and the instruction
//! counts the tests check (the tensor instructions a target should get, no local memory).
//!
//! `cuobjdump` is found like `ptxas` (`$TILEC_CUOBJDUMP`, the tools folder `scripts/setup.sh`
//! fills, `PATH`, `/usr/local/cuda/bin`), and so is the `nvdisasm` it runs
//! (`$TILEC_NVDISASM`); neither needs a GPU. This is how code for targets we
//! cannot run (sm_103a, sm_121a) is inspected: the instructions are the hardware's, whatever
//! the PTX said.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use tilec_core::Diagnostic;

use crate::ptxas::{find_tool, run_with_timeout, unique};

/// The `cuobjdump` executable to use, if any.
pub fn find_cuobjdump() -> Option<PathBuf> {
    find_tool("TILEC_CUOBJDUMP", "cuobjdump")
}

/// The SASS of a cubin, as `cuobjdump -sass` prints it.
pub fn sass(cubin: &[u8]) -> Result<String, Diagnostic> {
    let exe = find_cuobjdump().ok_or_else(|| {
        Diagnostic::error("E0902", "cuobjdump not found")
            .with_note("run scripts/setup.sh, or set TILEC_CUOBJDUMP to a cuobjdump of CUDA 13")
    })?;
    let path = std::env::temp_dir().join(format!("tilec-sass-{}-{}.cubin", std::process::id(), unique()));
    std::fs::write(&path, cubin)
        .map_err(|e| Diagnostic::error("E0902", format!("cannot write {}: {e}", path.display())))?;
    let mut cmd = Command::new(&exe);
    cmd.arg("-sass").arg(&path);
    // cuobjdump runs nvdisasm, which it looks for on PATH or in NVDISASM_PATH.
    if let Some(dir) = find_tool("TILEC_NVDISASM", "nvdisasm").and_then(|n| n.parent().map(PathBuf::from)) {
        let path_var = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir.clone()];
        dirs.extend(std::env::split_paths(&path_var));
        if let Ok(joined) = std::env::join_paths(dirs) {
            cmd.env("PATH", joined);
        }
        cmd.env("NVDISASM_PATH", dir);
    }
    let result = run_with_timeout(cmd, "cuobjdump", &exe);
    let _ = std::fs::remove_file(&path);
    let (status, stdout, stderr) = result?;
    if !status.success() {
        return Err(Diagnostic::error("E0902", "cuobjdump could not read the cubin")
            .with_note(String::from_utf8_lossy(&stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// How many instructions of each opcode (the mnemonic before its first `.`: `HMMA`,
/// `HGMMA`, `UTMALDG`, `LDL`) a SASS listing holds.
pub fn opcode_counts(sass: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in sass.lines() {
        // `        /*0080*/                   @P0 HMMA.16816.F32 R8, R4, R10, R8 ;`
        let Some((_, rest)) = line.trim_start().strip_prefix("/*").and_then(|l| l.split_once("*/")) else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(mut w) = words.next() else { continue };
        if w.starts_with('@') {
            let Some(next) = words.next() else { continue };
            w = next;
        }
        let op = w.split('.').next().unwrap_or(w).trim_end_matches(';');
        if !op.is_empty() && op.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
            *counts.entry(op.to_string()).or_default() += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_are_read_past_predicates_and_modifiers() {
        let s = "        /*0000*/                   LDC R1, c[0x0][0x28] ;   /* 0x00000a00ff017b82 */\n\
                 /*0080*/                   @P0 HMMA.16816.F32 R8, R4, R10, R8 ;\n\
                 /*0090*/                   @!PT LDL.64 R2, [R1] ;\n\
                 /*00a0*/                   UTMALDG.2D [UR8], [UR4] ;\n\
                 .text.k:  not an instruction\n";
        let c = opcode_counts(s);
        assert_eq!(c.get("HMMA"), Some(&1));
        assert_eq!(c.get("LDL"), Some(&1));
        assert_eq!(c.get("UTMALDG"), Some(&1));
        assert_eq!(c.get("LDC"), Some(&1));
        assert_eq!(c.len(), 4);
    }
}
