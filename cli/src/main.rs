//! The `tilec` binary: the command line of `tilec_cli` with tilec's own passes.

use std::process::ExitCode;

fn main() -> ExitCode {
    heap::prepare();
    tilec_cli::run_with(&[])
}

/// The process's heap, set up before the compiler allocates (glibc on Linux; elsewhere
/// nothing). A cold compile is one process that allocates 60–80 MB in small pieces and
/// exits: its cost beyond the instructions is the kernel's page faults, one a 4 KiB page
/// on first touch — 4,300 for FMHA sm_90a, 5,800 for mla_decode (issue 34; slow in a VM,
/// where a fault costs microseconds). Two settings cut them to 1,100–1,500:
/// - blocks up to 32 MiB come from the heap and freed memory stays there, so a large
///   buffer LLVM or MLIR frees and asks for again reuses touched pages instead of a fresh
///   `mmap` each time;
/// - the heap's first 120 MiB are reserved at once and advised as transparent huge pages
///   (`MADV_HUGEPAGE`, which the kernel honours in its default `madvise` mode and ignores
///   when THP is off), so the compiler's allocations fault in 2 MiB at a time;
/// - the rest of the 2 MiB page below the advised range is taken by an allocation nothing
///   touches. The static initialisers' allocations already fault that page in 4 KiB at a
///   time, so it can never be a huge page, and without the plug the compiler's first
///   allocations filled it a page at a time: 0 to 550 faults a compile, as address-space
///   randomisation placed the heap (FMHA sm_90a 1,380–1,650 faults, 1,060 with it).
///
/// The reservation is address space, not memory: pages are touched only as the compiler
/// uses them. The `tilec` command only — a program embedding tilec keeps its allocator.
mod heap {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub fn prepare() {
        const MIB: usize = 1 << 20;
        // glibc's largest `M_MMAP_THRESHOLD`: a block below it comes from the heap.
        const MMAP_THRESHOLD: usize = 32 * MIB;
        // The reservation, in blocks just under the threshold, so that each is heap.
        const BLOCK: usize = 30 * MIB;
        const RESERVE: usize = 4;
        // The plug ends this far below the advised range, so that the heap's top chunk
        // (and its header) begins right under it.
        const PLUG_SLACK: usize = 64;
        // SAFETY: allocator settings and a malloc/free of blocks nothing else sees, before
        // the program's first thread starts; `madvise` is given a range inside them.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as i32);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 512 * MIB as i32);
            let blocks: Vec<usize> = (0..RESERVE).map(|_| libc::malloc(BLOCK) as usize).collect();
            let (first, last) = (blocks[0], blocks[RESERVE - 1]);
            // One contiguous heap (each block right above the last) is advised as a whole;
            // anything else (a failed malloc, a heap that could not grow in place) is left
            // to the kernel's default.
            let contiguous = blocks.iter().all(|&b| b != 0) && last > first && last - first < RESERVE * (BLOCK + MIB);
            let huge = 2 * MIB;
            let start = (first + huge - 1) & !(huge - 1);
            if contiguous {
                let end = (last + BLOCK) & !(huge - 1);
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
            for &b in blocks.iter().rev() {
                libc::free(b as *mut libc::c_void);
            }
            // The freed blocks are one top chunk again, from `first`: the plug is carved
            // from its bottom and never freed; malloc writes only its header, below `first`.
            // `black_box`: LLVM deletes an allocation nothing reads.
            if contiguous && start - first > PLUG_SLACK {
                std::hint::black_box(libc::malloc(start - first - PLUG_SLACK));
            }
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub fn prepare() {}
}
