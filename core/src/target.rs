//! The targets: the one place that knows what each chip has.
//!
//! Every other crate derives its view of the targets from [`ARCHS`]: the frontend's
//! `by_target` keys, the runtime's device → target mapping, the passes' lowering decisions,
//! the backend's LLVM cpu and PTX version, the test matrices. Lowerings ask this table
//! (`arch.smem_per_block`, `arch.has(Feature::Wgmma)`) instead of comparing arch names.
//!
//! Facts (`docs/toolchain.md`, the PTX ISA): sm_90a has wgmma, TMA and setmaxnreg with 227 KB of
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
    /// Block-scaled `mma.sync` (`kind::mxf8f6f4`, `kind::mxf4`, `kind::mxf4nvf4` with
    /// `.block_scale`; PTX ISA 8.7): sm_120a/sm_121a only — ptxas refuses it on sm_90a and
    /// sm_103a ("mma with block scale not supported", ptxas 13.0; `docs/toolchain.md`), where
    /// block scaling is `tcgen05.mma … block_scale` (sm_100a/sm_103a) or absent (sm_90a).
    BlockScaledMmaSync,
    /// `griddepcontrol` (PTX 7.8, sm_90+): a kernel launched with programmatic stream
    /// serialization may start while the kernel before it finishes, and waits for it in
    /// `griddepcontrol.wait`.
    GridDepControl,
    /// Paired f32 arithmetic: `add`/`sub`/`mul`/`fma` `.f32x2` (PTX ISA 8.6), one
    /// instruction for two lanes' worth of f32 each (SASS `FADD2`/`FMUL2`/`FFMA2`) — half
    /// the issue slots of a softmax's scale, sums and rescale. Datacenter Blackwell only:
    /// ptxas 13.0 assembles the PTX for sm_121a too but splits it into scalar FFMA/FADD
    /// there (checked on its SASS), so sm_121a does not list it.
    PackedF32,
    /// Thread block clusters whose CTAs share data: TMA multicast
    /// (`cp.async.bulk.tensor … .multicast::cluster`), `mapa` and remote mbarrier arrivals in
    /// distributed shared memory, `.reqnctapercluster` (PTX ISA 8.0, sm_90+). Not on sm_12x:
    /// issue 28 records GB10 without multicast or distributed shared memory, and ptxas 13.0,
    /// which assembles `.multicast::cluster` for sm_121a, warns that it "should be used on
    /// .target sm_90a/sm_100a/sm_100f/sm_103a/sm_103f/sm_110a/sm_110f … expected to have
    /// substantially reduced performance" elsewhere.
    ClusterMulticast,
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
    /// Per-SM limits that decide how many blocks share an SM (the CUDA C++ Programming
    /// Guide, "Technical Specifications per Compute Capability"): shared memory per SM in
    /// bytes (of which each resident block also takes [`SMEM_RESERVED_PER_BLOCK`]), resident
    /// threads, resident blocks, 32-bit registers.
    pub smem_per_sm: u32,
    pub threads_per_sm: u32,
    pub blocks_per_sm: u32,
    pub regs_per_sm: u32,
    pub features: &'static [Feature],
}

/// Shared memory the CUDA runtime reserves for each resident block (compute capability 8.0
/// and later), on top of what the kernel declares.
pub const SMEM_RESERVED_PER_BLOCK: u32 = 1024;

/// Why `occupancy` blocks of a kernel of `threads` threads and `shared` bytes of shared memory
/// cannot share one SM of `arch`, with the arithmetic; `None` when they can (registers are
/// ptxas's to fit: `.minnctapersm` asks it to).
pub fn occupancy_refusal(arch: &Arch, occupancy: u32, threads: u32, shared: u32) -> Option<String> {
    let per_block = u64::from(shared) + u64::from(SMEM_RESERVED_PER_BLOCK);
    let o = u64::from(occupancy);
    if o * per_block > u64::from(arch.smem_per_sm) {
        let fit = u64::from(arch.smem_per_sm) / per_block;
        return Some(format!(
            "{occupancy} blocks of {shared} bytes of shared memory (+ {SMEM_RESERVED_PER_BLOCK} reserved each) need {} bytes; an SM of {} has {}: {fit} block(s) fit",
            o * per_block,
            arch.name,
            arch.smem_per_sm
        ));
    }
    if o * u64::from(threads) > u64::from(arch.threads_per_sm) {
        return Some(format!(
            "{occupancy} blocks of {threads} threads are {}; an SM of {} holds {} threads",
            o * u64::from(threads),
            arch.name,
            arch.threads_per_sm
        ));
    }
    if occupancy > arch.blocks_per_sm {
        return Some(format!("an SM of {} holds at most {} blocks", arch.name, arch.blocks_per_sm));
    }
    None
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
        // Compute capability 9.0: 228 KB of shared memory per SM, 2048 threads, 32 blocks.
        smem_per_sm: 228 * 1024,
        threads_per_sm: 2048,
        blocks_per_sm: 32,
        regs_per_sm: 65536,
        features: &[MmaSync, Ldmatrix, CpAsync, Tma, Wgmma, Setmaxnreg, Fp8Mma, GridDepControl, ClusterMulticast],
    },
    Arch {
        name: "sm_103a",
        cc: (10, 3),
        chip: "Blackwell Ultra (B300)",
        ptx_feature: "+ptx88",
        smem_per_block: 227 * 1024,
        pipeline_distance: 2,
        sm_count_hint: 148,
        // Compute capability 10.x: as 9.0.
        smem_per_sm: 228 * 1024,
        threads_per_sm: 2048,
        blocks_per_sm: 32,
        regs_per_sm: 65536,
        features: &[
            MmaSync,
            Ldmatrix,
            CpAsync,
            Tma,
            Setmaxnreg,
            Tcgen05,
            Fp8Mma,
            Fp4Mma,
            GridDepControl,
            PackedF32,
            ClusterMulticast,
        ],
    },
    Arch {
        name: "sm_121a",
        cc: (12, 1),
        chip: "Blackwell (DGX Spark, GB10)",
        ptx_feature: "+ptx88",
        smem_per_block: 99 * 1024,
        pipeline_distance: 1,
        sm_count_hint: 48,
        // Compute capability 12.x (GB10, issue 28's figures): 99 KB a block and 100 KB per SM,
        // 1536 threads (48 warps), 32 blocks. The guide's table has listed up to 128 KB per
        // SM for 12.x; the smaller is kept, so that a configuration admitted here fits either.
        smem_per_sm: 100 * 1024,
        threads_per_sm: 1536,
        blocks_per_sm: 32,
        regs_per_sm: 65536,
        // setmaxnreg: PTX ISA 8.0+ on sm_90a, sm_100a/103a/110a and sm_120a/121a (the PTX ISA's
        // `setmaxnreg` target notes, as CCCL's `cuda::ptx::setmaxnreg_inc` lists them); ptxas
        // 13.0 assembles it for sm_121a. Warp specialization is there on request only (no
        // library kernel asks for it on sm_121a by default).
        features: &[MmaSync, Ldmatrix, CpAsync, Tma, Setmaxnreg, Fp8Mma, Fp4Mma, BlockScaledMmaSync, GridDepControl],
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

/// Blocks of a kernel (`threads`, `shared` bytes) one SM of `target` holds, by shared memory,
/// threads and its block limit (registers are left to ptxas).
pub fn resident_blocks(target: &Arch, threads: u32, shared: u32) -> u32 {
    let by_smem = target.smem_per_sm / (shared + SMEM_RESERVED_PER_BLOCK);
    let by_threads = target.threads_per_sm / threads.max(1);
    by_smem.min(by_threads).min(target.blocks_per_sm)
}

/// For a kernel compiled to emulate `target` on `host` (`--emulate`): the blocks one SM of
/// `target` holds, and the shared memory to add to each block on `host` so that it holds no
/// more (the smallest padding p with `host.smem_per_sm / (shared + p + reserved)` at most
/// that count; 0 where the host holds no more anyway).
pub fn emulation_padding(target: &Arch, host: &Arch, threads: u32, shared: u32) -> (u32, u32) {
    let want = resident_blocks(target, threads, shared).max(1);
    if resident_blocks(host, threads, shared) <= want {
        return (want, 0);
    }
    let per_block = host.smem_per_sm / (want + 1) + 1;
    let padded = per_block.saturating_sub(SMEM_RESERVED_PER_BLOCK).clamp(shared, host.smem_per_block);
    (want, padded - shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_is_refused_where_the_blocks_do_not_fit_an_sm() {
        let spark = by_name("sm_121a").unwrap();
        // FMHA at D = 128: 96 KB a block, one fits GB10's 100 KB; at D = 64, 48 KB, two do.
        let why = occupancy_refusal(spark, 2, 128, 98304).unwrap();
        assert!(why.contains("198656") && why.contains("1 block(s) fit"), "{why}");
        assert_eq!(occupancy_refusal(spark, 2, 128, 49152), None);
        assert_eq!(occupancy_refusal(spark, 1, 128, 99 * 1024), None);
        // Threads: 1536 on sm_121a, 2048 on sm_90a.
        assert!(occupancy_refusal(spark, 2, 1024, 0).unwrap().contains("1536"));
        let h100 = by_name("sm_90a").unwrap();
        assert_eq!(occupancy_refusal(h100, 2, 1024, 0), None);
        assert!(occupancy_refusal(h100, 33, 32, 0).unwrap().contains("32 blocks"));
        // bmm's four 32 KB stages at two blocks: over the H100's 228 KB; three stages fit.
        assert!(occupancy_refusal(h100, 2, 256, 131136).is_some());
        assert_eq!(occupancy_refusal(h100, 2, 256, 98368), None);
    }

    #[test]
    fn emulation_pads_shared_memory_to_the_targets_residency() {
        let (spark, h100) = (by_name("sm_121a").unwrap(), by_name("sm_90a").unwrap());
        for (threads, shared) in [(128, 98304), (128, 49152), (256, 16384), (128, 0), (512, 8192)] {
            let (want, pad) = emulation_padding(spark, h100, threads, shared);
            assert_eq!(want, resident_blocks(spark, threads, shared).max(1));
            let on_host = resident_blocks(h100, threads, shared + pad);
            assert!(on_host <= want, "{threads} threads, {shared} B: {on_host} blocks on the H100 against {want}");
            // The padding is the least that does it (or none).
            if pad > 0 {
                assert!(resident_blocks(h100, threads, shared + pad - 1) > want);
            }
        }
        // FMHA D128 on GB10: one 96 KB block; the H100 would hold two without the padding.
        assert_eq!(emulation_padding(spark, h100, 128, 98304), (1, 115713 - 98304));
    }

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
