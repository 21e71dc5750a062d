//! The targets: the one place that knows what each chip has.
//!
//! Every other crate derives its view of the targets from [`ARCHS`]: the frontend's
//! `by_target` keys, the runtime's device → target mapping, the passes' lowering decisions,
//! the backend's LLVM cpu and PTX version, the test matrices. Lowerings ask this table
//! (`arch.smem_per_block`, `arch.has(Feature::Wgmma)`) instead of comparing arch names.
//!
//! Facts (`../shared/TOOLCHAIN.md`): sm_90a has wgmma, TMA and setmaxnreg with 227 KB of
//! shared memory per block; sm_103a (B300) has tcgen05/TMEM and TMA; sm_121a (DGX Spark,
//! GB10) has neither wgmma nor tcgen05 — warp-level mma.sync, including block-scaled
//! fp8/fp4 — and about 99 KB of shared memory per block. LLVM aborts the process on an
//! intrinsic the target lacks, so an arch-specific op is emitted only after asking here.

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

/// Shared memory a kernel may declare statically (CUDA's limit). A kernel that needs more
/// uses dynamic shared memory: the lowering declares it so, and the runtime passes the size at
/// launch and raises the function's limit to it.
pub const STATIC_SMEM_LIMIT: u32 = 48 * 1024;

#[derive(Clone, Debug, Serialize)]
pub struct Arch {
    /// Canonical name, the LLVM cpu and the ptxas `-arch` (`sm_90a`, …).
    pub name: &'static str,
    /// Compute capability (major, minor).
    pub cc: (u32, u32),
    /// What the chip is.
    pub chip: &'static str,
    /// PTX ISA version LLVM emits for it (`+ptx88` → 8.8).
    pub ptx_feature: &'static str,
    /// Shared memory one block may use, in bytes (the opt-in maximum).
    pub smem_per_block: u32,
    /// How many loop iterations ahead `tile-pipeline` issues a load that has no `latency=`
    /// hint (a ring of one more stage): two on the 227 KB parts, one on the 99 KB one.
    pub pipeline_distance: u32,
    /// Streaming multiprocessors of the reference part (a hint for grid sizing).
    pub sm_count_hint: u32,
    pub features: &'static [Feature],
}

impl Arch {
    pub fn has(&self, f: Feature) -> bool {
        self.features.contains(&f)
    }

    /// The name without the arch-specific `a` (`sm_121`), as users and `by_target` write it.
    pub fn plain_name(&self) -> &'static str {
        self.name.strip_suffix('a').unwrap_or(self.name)
    }
}

use Feature::*;

pub const ARCHS: &[Arch] = &[
    Arch {
        name: "sm_90a",
        cc: (9, 0),
        chip: "Hopper (H100/H200)",
        ptx_feature: "+ptx88",
        smem_per_block: 227 * 1024,
        pipeline_distance: 2,
        sm_count_hint: 132,
        features: &[MmaSync, Ldmatrix, CpAsync, Tma, Wgmma, Setmaxnreg, Fp8Mma],
    },
    Arch {
        name: "sm_103a",
        cc: (10, 3),
        chip: "Blackwell Ultra (B300)",
        ptx_feature: "+ptx88",
        smem_per_block: 227 * 1024,
        pipeline_distance: 2,
        sm_count_hint: 148,
        features: &[MmaSync, Ldmatrix, CpAsync, Tma, Setmaxnreg, Tcgen05, Fp8Mma, Fp4Mma],
    },
    Arch {
        name: "sm_121a",
        cc: (12, 1),
        chip: "Blackwell (DGX Spark, GB10)",
        ptx_feature: "+ptx88",
        smem_per_block: 99 * 1024,
        pipeline_distance: 1,
        sm_count_hint: 48,
        features: &[MmaSync, Ldmatrix, CpAsync, Tma, Fp8Mma, Fp4Mma],
    },
];

/// The canonical names of every target, in table order.
pub fn names() -> impl Iterator<Item = &'static str> {
    ARCHS.iter().map(|a| a.name)
}

/// The target of a canonical name (`sm_90a`, …), and nothing else.
pub fn by_name(name: &str) -> Option<&'static Arch> {
    ARCHS.iter().find(|a| a.name == name)
}

/// The target a `by_target` key names: the canonical name or the plain one, exactly.
pub fn by_key(key: &str) -> Option<&'static Arch> {
    ARCHS.iter().find(|a| a.name == key || a.plain_name() == key)
}

/// Resolves a user's `--arch`: `sm_90`, `sm_90a`, `sm_103`, `sm_103a`, `sm_121`, `sm_121a`.
/// Returns the arch and whether the `a` variant was substituted for a plain name.
pub fn resolve(name: &str) -> Result<(&'static Arch, bool), String> {
    let n = name.trim().to_ascii_lowercase();
    if let Some(a) = by_name(&n) {
        return Ok((a, false));
    }
    if let Some(a) = ARCHS.iter().find(|a| a.plain_name() == n) {
        return Ok((a, true));
    }
    let names: Vec<String> = ARCHS.iter().flat_map(|a| [a.plain_name().to_string(), a.name.to_string()]).collect();
    Err(format!("unknown arch `{name}`; supported: {}", names.join(", ")))
}

/// The target of a device with compute capability `major.minor`, if tilec compiles for it.
pub fn from_compute_capability(major: u32, minor: u32) -> Option<&'static Arch> {
    ARCHS.iter().find(|a| a.cc == (major, minor))
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
        assert_eq!(from_compute_capability(12, 1).map(|a| a.name), Some("sm_121a"));
        assert_eq!(from_compute_capability(8, 0).map(|a| a.name), None);
        assert_eq!(names().collect::<Vec<_>>(), ["sm_90a", "sm_103a", "sm_121a"]);
    }
}
