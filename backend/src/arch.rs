//! The arch capability table: the one place that knows what each target has.
//!
//! Lowerings ask this table (`arch.smem_per_block`, `arch.has(Feature::Wgmma)`) instead of
//! comparing arch names. Facts: sm_90a has wgmma, TMA and setmaxnreg with 227 KB of shared
//! memory per block; sm_103a (B300) has tcgen05/TMEM and TMA; sm_121a (DGX Spark, GB10)
//! has neither wgmma nor tcgen05 — warp-level mma.sync, including block-scaled fp8/fp4 —
//! and about 99 KB of shared memory per block.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Feature {
    MmaSync,
    Ldmatrix,
    CpAsync,
    Tma,
    Wgmma,
    Setmaxnreg,
    Tcgen05,
    Fp8Mma,
    Fp4Mma,
}

#[derive(Clone, Debug, Serialize)]
pub struct Arch {
    /// Canonical name, the LLVM cpu and the ptxas `-arch` (`sm_90a`, …).
    pub name: &'static str,
    /// Compute capability ×10 (90, 103, 121).
    pub sm: u32,
    /// What the chip is.
    pub chip: &'static str,
    /// PTX ISA version LLVM emits for it (`+ptx88` → 8.8).
    pub ptx_feature: &'static str,
    /// Shared memory one block may use, in bytes (opt-in maximum).
    pub smem_per_block: u32,
    /// Streaming multiprocessors of the reference part (a hint for grid sizing).
    pub sm_count_hint: u32,
    pub features: &'static [Feature],
}

impl Arch {
    pub fn has(&self, f: Feature) -> bool {
        self.features.contains(&f)
    }
}

use Feature::*;

pub const ARCHS: &[Arch] = &[
    Arch {
        name: "sm_90a",
        sm: 90,
        chip: "Hopper (H100/H200)",
        ptx_feature: "+ptx88",
        smem_per_block: 227 * 1024,
        sm_count_hint: 132,
        features: &[MmaSync, Ldmatrix, CpAsync, Tma, Wgmma, Setmaxnreg, Fp8Mma],
    },
    Arch {
        name: "sm_103a",
        sm: 103,
        chip: "Blackwell Ultra (B300)",
        ptx_feature: "+ptx88",
        smem_per_block: 227 * 1024,
        sm_count_hint: 148,
        features: &[MmaSync, Ldmatrix, CpAsync, Tma, Setmaxnreg, Tcgen05, Fp8Mma, Fp4Mma],
    },
    Arch {
        name: "sm_121a",
        sm: 121,
        chip: "Blackwell (DGX Spark, GB10)",
        ptx_feature: "+ptx88",
        smem_per_block: 99 * 1024,
        sm_count_hint: 48,
        features: &[MmaSync, Ldmatrix, CpAsync, Tma, Fp8Mma, Fp4Mma],
    },
];

/// Resolves a user's `--arch`: `sm_90`, `sm_90a`, `sm_103`, `sm_103a`, `sm_121`, `sm_121a`.
/// Returns the arch and whether the `a` variant was substituted for a plain name.
pub fn resolve(name: &str) -> Result<(&'static Arch, bool), String> {
    let n = name.trim().to_ascii_lowercase();
    if let Some(a) = ARCHS.iter().find(|a| a.name == n) {
        return Ok((a, false));
    }
    if let Some(a) = ARCHS.iter().find(|a| a.name.strip_suffix('a') == Some(n.as_str())) {
        return Ok((a, true));
    }
    let names: Vec<String> =
        ARCHS.iter().flat_map(|a| [a.name.trim_end_matches('a').to_string(), a.name.to_string()]).collect();
    Err(format!("unknown arch `{name}`; supported: {}", names.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_plain_and_a_variants() {
        assert_eq!(resolve("sm_121").unwrap().0.name, "sm_121a");
        assert!(resolve("sm_121").unwrap().1);
        assert!(!resolve("sm_90a").unwrap().1);
        let e = resolve("sm_80").unwrap_err();
        assert!(e.contains("sm_103a") && e.contains("sm_90"), "{e}");
    }

    #[test]
    fn table_facts() {
        let spark = resolve("sm_121a").unwrap().0;
        assert!(!spark.has(Feature::Wgmma) && !spark.has(Feature::Tcgen05));
        assert!(resolve("sm_90a").unwrap().0.has(Feature::Wgmma));
        assert!(resolve("sm_103a").unwrap().0.has(Feature::Tcgen05));
    }
}
