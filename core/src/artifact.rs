//! The compiled kernel as it leaves the compiler: one type for what `tilec compile` writes
//! (the PTX and a metadata JSON beside it), what the compile cache stores and what the
//! runtime loads.
//!
//! The metadata is the kernel's ABI ([`Signature`]: parameters, grid expressions, block size,
//! shared memory, the constants it was specialised with), the kernel hints after evaluation,
//! the report of what the passes decided, and the compiler version. The PTX travels beside it
//! (a `.ptx` file, a cache entry's second file), never inside the JSON.

use crate::abi::Signature;
use serde::{Deserialize, Serialize};

/// Kernel hints after evaluation (`hints { … }` of the source, `by_target` resolved).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hints {
    pub num_warps: u32,
    /// Blocks per SM the author asks for (`.minnctapersm` in the PTX).
    pub occupancy: Option<u32>,
    pub opt_level: u32,
    /// `warp_specialize = true`: a producer warpgroup issues the pipelined loop's TMA copies
    /// (`tile-warp-specialize`, where the target and the kernel allow it).
    #[serde(default)]
    pub warp_specialize: bool,
    /// `persistent = true`: the kernel walks its grid's x tiles on as many blocks as the GPU
    /// holds at once (`tile-persistent`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
    /// `tma = false`: rings stay `cp.async` where TMA could fill them (as `--no-tma`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_tma: bool,
    /// `cta_pair = true`: each block runs on a 2-CTA cluster, half of its products' rows a CTA
    /// (`tile-cta-pair`, where the target has clusters with TMA multicast).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cta_pair: bool,
    /// `strength_reduction = false`: LLVM's NVPTX code generation without straight-line
    /// strength reduction (a compile-time saving where its search finds little: see
    /// `tilec_backend::Pipeline::without_strength_reduction`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_strength_reduction: bool,
}

impl Default for Hints {
    fn default() -> Self {
        Hints {
            num_warps: 4,
            occupancy: None,
            opt_level: 3,
            warp_specialize: false,
            persistent: false,
            no_tma: false,
            cta_pair: false,
            no_strength_reduction: false,
        }
    }
}

/// A compiled kernel: PTX plus everything needed to launch and explain it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// PTX entry name (the kernel's name).
    pub kernel: String,
    /// Canonical target (`sm_121a`, …).
    pub target: String,
    pub signature: Signature,
    pub hints: Hints,
    /// What the passes decided, one line each (`tilec compile --report`).
    pub report: Vec<String>,
    pub tilec_version: String,
    /// The PTX text; stored beside the metadata, not inside its JSON.
    #[serde(skip)]
    pub ptx: String,
}

impl Artifact {
    /// The metadata JSON (everything but the PTX).
    pub fn metadata_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// An artifact from its metadata JSON and its PTX; `Err` says what is wrong with the JSON.
    pub fn from_parts(metadata_json: &str, ptx: String) -> Result<Artifact, String> {
        let mut a: Artifact =
            serde_json::from_str(metadata_json).map_err(|e| format!("not tilec kernel metadata: {e}"))?;
        if a.kernel != a.signature.name || a.target != a.signature.target {
            return Err(format!(
                "inconsistent metadata: kernel `{}` for {} but the signature is `{}` for {}",
                a.kernel, a.target, a.signature.name, a.signature.target
            ));
        }
        a.ptx = ptx;
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{HostExpr, ParamSig};
    use crate::DType;

    #[test]
    fn metadata_round_trips_without_the_ptx() {
        let sig = Signature {
            name: "k".into(),
            target: "sm_90a".into(),
            params: vec![ParamSig::Scalar { name: "n".into(), dtype: DType::I32 }],
            grid: vec![HostExpr::Int(1), HostExpr::Int(1), HostExpr::Int(1)],
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
        let a = Artifact {
            kernel: "k".into(),
            target: "sm_90a".into(),
            signature: sig,
            hints: Hints::default(),
            report: vec!["tile-layout: 4 warps".into()],
            tilec_version: "0.1.0".into(),
            ptx: ".entry k".into(),
        };
        let j = a.metadata_json();
        assert!(!j.contains(".entry"), "{j}");
        assert_eq!(Artifact::from_parts(&j, a.ptx.clone()), Ok(a.clone()));
        assert!(Artifact::from_parts("{}", String::new()).is_err());
        let bad = j.replace("\"kernel\": \"k\"", "\"kernel\": \"other\"");
        assert!(Artifact::from_parts(&bad, String::new()).unwrap_err().contains("inconsistent"));
    }
}
