#!/usr/bin/env python3
"""Roofline estimates of the tensor-core kernels on the two targets we cannot run: B300
(sm_103a, tcgen05) and DGX Spark's GB10 (sm_121a, mma.sync). ESTIMATES, never measurements:
they come from published peak rates, the tile configuration and instruction mix tilec
compiles for each target (read from `tilec compile --report`), and one latency measured on
the H100. Usage: python3 bench/estimates.py TILEC OUT_DIR (writes estimates.json and
README.md there).

The model, per kernel and shape:
- work: the kernel's FLOPs (2·M·N·K for a GEMM; 2·S²·(2D + DR) per head for attention — DR
  MLA's rope part, 0 for FMHA —, half of it under a causal mask), its compulsory DRAM bytes (every input read once, every output
  written once);
- roofline: max(FLOPs / tensor peak, bytes / DRAM bandwidth);
- the lowering's serialisation, from the instruction mix in the report: a tcgen05 product
  waited for where it is issued (`tcgen05.commit`, an mbarrier wait) costs its tensor time
  plus a wait; a GEMM's products kept in flight across K steps (the report says "in flight
  across iterations": each stage released by a commit) cost their tensor time only, and each
  tile adds what is not overlapped with another tile's products (one block an SM, not
  persistent): the pipeline's first fill (one DRAM round trip, TMA_FILL_US, assumed) and the
  epilogue's store of the tile at the SM's share of DRAM bandwidth. A persistent kernel whose
  accumulator is double-buffered in Tensor Memory (the report's "in the region of the tile's
  slot": `tile-epilogue-overlap`) runs each tile's epilogue while the next tile's products
  are on the tensor core: it pays the fill once a block, and a tile only the part of its
  epilogue (and, without a producer warpgroup to copy the next tile's stages ahead, of the
  next fill) longer than the products queued when the last one of a tile is issued — the
  ring's stages but one (assumed: the issuing thread runs ahead of the tensor core by the
  stages that hold data); mma.sync is synchronous
  per warp and other warps cover it (no wait term: its GEMM estimate is the roofline, an
  upper bound). The wait is the one we measured on the H100:
  wgmma waited for at every K step against kept in flight, GEMM 4096³ 128x256x64 at 585.9
  against 669.6 TFLOP/s (bench/results/2026-11-24-h100-wgmma/ablation.md): 0.114 µs a step.
  FMHA adds its softmax per key tile: one exp2 per score at the SFU rate (16 a clock per SM
  for compute capability 9.0, 10.x and 12.x: CUDA C++ Programming Guide, "Arithmetic
  Instructions" throughput table; twice that on Blackwell Ultra, B300: NVIDIA technical blog
  "Making Softmax More Efficient with NVIDIA Blackwell Ultra"). Waited for at once (the report's "loaded into registers"),
  a key tile costs both products, two waits and the softmax in turn. Left in flight (the
  report's "left in flight": `tile-mma-overlap` on FlashAttention-4's order, `Q·K_jᵀ` then
  `P_{j-1}·V_{j-1}` issued back to back), it costs the first product and its wait, then the
  longer of the second product (with its wait) and the softmax, which run side by side:
  t/2 + wait + max(t/2 + wait, t_exp) for t both products' tensor time. With two query
  tiles a block (six products in the report, three a query tile: `S_A`, `P_A·V`, `S_B`,
  `P_B·V` issued at once), a key tile costs max(2t + wait, max(t/2 + wait + t_exp, 3t/2 + wait) + t_exp): A's
  softmax after `S_A`, B's after `S_B` and A's, the next products after both; with the
  scores a key tile ahead (the report's "until the end of its loop's iteration": the next key
  tile's `S_A`, `S_B` issued at the top beside the previous tile's two P·V, read by the next
  iteration), both softmaxes run on scores already in registers under the four products, and
  a key tile costs max(2t + wait, 2 t_exp + wait) — as it does for one tile of 256 rows (its
  two 128-row blocks a warpgroup each, a thread a row: FlashAttention-4's softmax warpgroups
  in one instruction stream, since 2026-11-28 session 28) whose scores go a key tile ahead;
  Under a causal mask a block walks the key tiles up to its last row (the mean over a head's
  blocks; a block of two query tiles walks its second tile's);
- sm_103a only: the instruction issue. Each of an SM's four schedulers issues one warp
  instruction a clock (CUDA C++ Programming Guide, compute capability 10.x: four warp
  schedulers an SM, one instruction a clock each), and the softmax of a key tile is
  hundreds of them a warp. The script assembles the kernel with ptxas 13.0 and disassembles
  it (cuobjdump -sass), finds the main loop (the backward branch whose body holds the most
  tensor-core instructions, the innermost of those with as many; MUFU where none has any)
  and walks one iteration's common path: a wait's retry branch
  not taken, the ragged-tile mask skipped (a region with `FSEL … -INF`: only the last key
  tile, and a causal block's diagonal, take it), and a region of 16 or more FMULs and no
  MUFU — the accumulator's rescale — skipped where the kernel's running maximum moves only
  past a threshold (FlashAttention-4's conditional rescale: `RESCALE_THRESHOLD`; the PTX
  votes on those factors), taken otherwise. A region the issuing thread alone enters (a tensor-core or TMA instruction in
  it) counts for its warp only; the scheduler of that warp issues it and the other warps'
  whole iterations (`warps / 4` a scheduler, one block an SM). A key tile (a K step) then
  costs at least that many clocks: the estimate is the larger of the two terms. Latencies
  and dual issue are not modelled: an upper bound of the throughput, a lower bound of the
  instructions' cost;
- estimate = roofline stretched by that serialisation, per SM, over the waves of tiles.

Every other tensor-core kernel of the library (the latent-attention prefill, the decode
kernels, the split-K, grouped, rowwise and blockwise GEMMs) gets its roofline alone — max(FLOPs
/ the peak at its operands' precision, compulsory bytes / DRAM bandwidth), an upper bound with
no latency or issue model — for each of `tilec bench --list --quick`'s cases (the suite's own
FLOP and byte counts), compiled for the target to name the products' family and tile.

Published figures (cited in the README this writes):
- B300 (HGX, per GPU): dense FP16/BF16 tensor 2,250 TFLOP/s, HBM3e 8 TB/s; 148 SMs.
- GB10 (DGX Spark): 1 PFLOP/s FP4 with sparsity → 500 dense FP4 → 125 TFLOP/s dense BF16 at
  the usual 2x per halving of precision (issue 28 quotes "about 125"); LPDDR5x 273 GB/s;
  48 SMs.
Clocks are not published for either: 1.9 GHz is assumed for the SFU term on both (stated
in the output).
"""

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TARGETS = {
    "sm_103a": {
        "chip": "B300 (HGX)",
        "tensor_tflops": 2250.0,
        # Dense tensor peaks by operand precision (the same table: FP8 4,500, FP4 13,125).
        "peaks": {"16-bit": 2250.0, "fp8": 4500.0, "fp4": 13125.0},
        "dram_tbps": 8.0,
        "sms": 148,
        # Blackwell Ultra doubles the SFU's MUFU.EX2 throughput over Blackwell (B200's 16 a
        # clock per SM, the programming guide's 10.x figure): NVIDIA technical blog, "Making
        # Softmax More Efficient with NVIDIA Blackwell Ultra".
        "sfu_exp2_per_clk_per_sm": 32,
        "sources": [
            "NVIDIA HGX B300 datasheet figures as tabulated at glennklockwood.com/garden/processors/B300 "
            "(dense FP16/BF16 2,250 TFLOP/s, FP8 4,500, FP4 13,125; 8 TB/s HBM3e)",
        ],
    },
    "sm_121a": {
        "chip": "GB10 (DGX Spark)",
        "tensor_tflops": 125.0,
        # 1 PFLOP/s FP4 with sparsity: 500 dense FP4, 250 FP8, 125 BF16.
        "peaks": {"16-bit": 125.0, "fp8": 250.0, "fp4": 500.0},
        "dram_tbps": 0.273,
        "sms": 48,
        "sfu_exp2_per_clk_per_sm": 16,
        "sources": [
            "NVIDIA DGX Spark product page: 1 PFLOP/s FP4 with sparsity, 128 GB LPDDR5x at 273 GB/s "
            "(dense BF16 = 1000 / 2 (sparsity) / 4 (FP4 -> BF16) = 125 TFLOP/s)",
        ],
    },
}
CLOCK_GHZ = 1.9
# One DRAM round trip before a tile's first product (assumed: about the H100's global load
# latency, ~600-800 ns, rounded up).
TMA_FILL_US = 1.0
# H100: GEMM 4096^3, 128x256x64 tiles, 64 K steps a tile, 512 tiles on 132 SMs (4 waves):
# (t_wait0 - t_inflight) / (4 waves x 64 steps).
H100_WAIT_US = ((2 * 4096**3 / 585.9e12) - (2 * 4096**3 / 669.6e12)) / (4 * 64) * 1e6

# (kernel file, kernel) → cases. GEMM-like kernels: M, N, K (and a batch), the operands'
# precision class and bytes an element; attention: B, H, S, D.
SHAPES = {
    "matmul": [("GEMM 4096³ bf16", {"M": 4096, "N": 4096, "K": 4096}), ("GEMM 8192³ bf16", {"M": 8192, "N": 8192, "K": 8192})],
    "bmm": [("BMM 16 x 1024³ bf16", {"M": 1024, "N": 1024, "K": 1024, "batch": 16})],
    "matmul_fp8": [("GEMM 8192³ e4m3, per-tensor scales", {"M": 8192, "N": 8192, "K": 8192, "prec": "fp8", "elem": 1})],
    "matmul_mx": [("GEMM 8192³ NVFP4 (ue4m3 every 16)", {"M": 8192, "N": 8192, "K": 8192, "prec": "fp4", "elem": 0.5})],
    "fmha_fp8": [("FMHA fp8 B4 H32 S8192 D128", {"B": 4, "H": 32, "S": 8192, "D": 128, "causal": False, "prec": "fp8", "elem": 1})],
    "mla": [("MLA prefill B4 H16 S4096 D128 DR64 causal", {"B": 4, "H": 16, "S": 4096, "D": 128, "DR": 64, "causal": True})],
    "fmha": [
        ("FMHA B4 H32 S8192 D128", {"B": 4, "H": 32, "S": 8192, "D": 128, "causal": False}),
        ("FMHA B4 H32 S8192 D128 causal", {"B": 4, "H": 32, "S": 8192, "D": 128, "causal": True}),
        ("FMHA B8 H32 S8192 D64", {"B": 8, "H": 32, "S": 8192, "D": 64, "causal": False}),
    ],
}


GEMMS = ("matmul", "bmm", "matmul_fp8", "matmul_mx")
# Constants of each kernel's cases besides its defaults.
CONSTS = {"matmul": {"T": "bf16"}, "bmm": {"T": "bf16"}, "fmha": {"T": "bf16"}}


def report(tilec, kernel, arch, consts, ptx):
    """The `--report` of the kernel's compile, its PTX written to `ptx`."""
    args = [tilec, "compile", f"kernels/{kernel}.tile", "--kernel", kernel, "--arch", arch, "--report", "-o", str(ptx)]
    for k, v in consts.items():
        args += ["--const", f"{k}={v}"]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{kernel} {arch}: {out.stderr}")
    return out.stdout + out.stderr


def pipeline_facts(rep):
    """(the first ring's stages, whether a producer warpgroup copies, whether the chain is
    double-buffered across a persistent tile loop) from the report."""
    m = re.search(r"tile-pipeline: load of \S+: latency=\d+ → distance \d+, (\d+) stages", rep)
    return (int(m.group(1)) if m else 1, "warp-specialized:" in rep, "in the region of the tile's slot" in rep)


# A product as the lowering reports it: its tile (M, N, K: K in elements, or a packed fp4
# tile's bytes for a tcgen05 block-scaled one — `estimate` converts), its MMA family, K steps
# an issue, whether it stays in flight across iterations, whether it is block-scaled, whether
# it is left in flight past its issue (or chained into the next product, whose commit covers
# it) and whether its accumulator starts at zero (D not read).
Product = collections.namedtuple("Product", "m n k family k_steps in_flight scaled deferred zero_acc")


def products(rep):
    """The `Product`s the lowering's report lists, in its order."""
    found = []
    pat = r"tile-to-llvm: (mma|mma_scaled) \[(\d+), (\d+), (\d+)\] [^:\n]*: (\S+)[^\n]*?(\d+) K steps([^\n]*)"
    for m in re.finditer(pat, rep):
        fam = "tcgen05" if m.group(5).startswith("tcgen05") else "mma.sync"
        in_flight = "in flight across iterations" in m.group(7)
        # (A product chained into the next one is in flight with it: its commit covers both.)
        deferred = "left in flight" in m.group(7) or "the next product accumulates onto it" in m.group(7)
        # K in elements (a block-scaled mma.sync's line says so; the others give a packed
        # fp4 tile's K in bytes, which `estimate` converts).
        k = int(m.group(4))
        found.append(
            Product(
                int(m.group(2)), int(m.group(3)), k, fam, int(m.group(6)), in_flight,
                m.group(1) == "mma_scaled", deferred, "zero (D not read)" in m.group(7),
            )
        )
    return found


def tool(name):
    """ptxas / cuobjdump: on PATH, or where `scripts/setup.sh` put them."""
    local = Path(".tools/cuda/bin") / name
    return str(local) if local.exists() else name


def sass_of(ptx):
    """The SASS of the PTX `report` wrote, and the kernel's warps."""
    cubin = ptx.with_suffix(".cubin")
    subprocess.run([tool("ptxas"), f"-arch={ptx_target(ptx)}", "-O3", str(ptx), "-o", str(cubin)], check=True, capture_output=True)
    env = dict(os.environ, PATH=str(Path(tool("cuobjdump")).parent) + os.pathsep + os.environ.get("PATH", ""))
    sass = subprocess.run([tool("cuobjdump"), "-sass", str(cubin)], check=True, capture_output=True, text=True, env=env).stdout
    threads = int(re.search(r"\.maxntid (\d+)", ptx.read_text()).group(1))
    return sass, threads // 32


def ptx_target(ptx):
    return re.search(r"^\.target (\S+)", ptx.read_text(), re.M).group(1)


SASS_LINE = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
TENSOR = ("UTCHMMA", "UTCQMMA", "UTCOMMA", "UTCMMA", "HGMMA", "HMMA", "QMMA", "MUFU")
ISSUER_ONLY = ("UTCHMMA", "UTCQMMA", "UTCOMMA", "UTCMMA", "UTMALDG", "UTMASTG", "UTCBAR")


def branch_target(t):
    m = re.search(r"\bBRA(?:\.[A-Z.]+)?\s+(?:!?U?P[T\d]+,\s*)?0x([0-9a-f]+)", t)
    return int(m.group(1), 16) if m else None


def conditional(t):
    return t.startswith("@") or re.match(r"BRA\.U\s+!?UP", t) is not None


def loop_issue(sass, conditional_rescale):
    """(instructions a warp, of them the issuing thread's alone) on one iteration's common
    path through the main loop (the walk the docstring describes)."""
    ins = [(int(m.group(1), 16), m.group(2).strip()) for m in map(SASS_LINE.match, sass.splitlines()) if m]
    best = None
    for a, t in ins:
        tg = branch_target(t)
        if tg is not None and tg < a and "ANY" not in t and conditional(t):
            body = [x for b, x in ins if tg <= b <= a]
            tc = sum(1 for x in body if any(k in x for k in TENSOR if k != "MUFU"))
            # The most tensor-core instructions; among loops with as many (a persistent tile
            # loop around its K loop, whose index division is MUFU.RCP), the innermost.
            key = (tc, 0 if tc else sum("MUFU" in x for x in body), tg - a)
            if best is None or key > best[2]:
                best = (tg, a, key)
    if best is None:
        return None
    lo, hi, _ = best
    at = {a: i for i, (a, _) in enumerate(ins)}
    i, n, issuer, issuer_end = at[lo], 0, 0, -1
    while True:
        a, t = ins[i]
        n += 1
        issuer += a < issuer_end
        if a == hi:
            break
        tg = branch_target(t)
        if tg is not None and "ANY" not in t and lo < tg <= hi and tg > a:
            if not conditional(t):
                i = at[tg]
                continue
            region = [x for _, x in ins[i + 1 : at[tg]]]
            mask = any("FSEL" in x and "-INF" in x for x in region)
            rescale = sum(x.startswith("FMUL") for x in region) >= 16 and not any("MUFU" in x for x in region)
            if mask or (rescale and conditional_rescale):
                i = at[tg]
                continue
            if any(x.split()[0].startswith(ISSUER_ONLY) for x in region if x.split()):
                issuer_end = max(issuer_end, tg)
        i += 1
    return n, issuer


def issue_term(ptx, producer_warps=0):
    """Clocks the busiest scheduler spends issuing one iteration of the main loop, with the
    walk's counts (see the docstring); None where the SASS has no such loop. The rescale is
    conditional where the lowering votes on its factors (`vote.sync.any`: the factor of a
    running maximum that moves only past a threshold)."""
    conditional_rescale = "vote.sync.any.pred" in ptx.read_text()
    sass, warps = sass_of(ptx)
    # A producer warpgroup runs its own copy loop, not the main loop's instructions.
    warps -= producer_warps
    walk = loop_issue(sass, conditional_rescale)
    if walk is None:
        return None
    n, issuer = walk
    per_scheduler = max(1, warps // 4)
    clocks = n + (per_scheduler - 1) * (n - issuer)
    return {"instructions_per_warp": n, "issuer_only": issuer, "warps": warps, "issue_clocks": clocks,
            "conditional_rescale": conditional_rescale}


def estimate(kernel, shape, arch, prods, issue=None, facts=(1, False, False), rep_text=""):
    t = TARGETS[arch]
    peak = t["peaks"][shape.get("prec", "16-bit")]
    elem = shape.get("elem", 2)
    per_sm_flops = peak * 1e12 / t["sms"]
    # mma.sync is synchronous per warp: other warps (and GB10's second block) cover its
    # latency, so no wait term; the asynchronous family waits for each product group.
    once = 0.0
    fam0 = prods[0].family
    wait = H100_WAIT_US * 1e-6 if fam0 == "tcgen05" else 0.0
    if kernel in GEMMS:
        M, N, K, batch = shape["M"], shape["N"], shape["K"], shape.get("batch", 1)
        flops = 2 * M * N * K * batch
        # Operands at their precision, the output in 16 bits.
        bytes_ = batch * (elem * (M * K + K * N) + 2 * M * N)
        (bm, bn, bk, fam, _, in_flight, in_elements, *_) = prods[0]
        # (The report gives a packed fp4 tile's K in bytes.)
        bk = int(bk / elem) if elem < 1 and not in_elements else bk
        tiles = (M // bm) * (N // bn) * batch
        steps = K // bk
        t_step = 2 * bm * bn * bk / per_sm_flops
        stages, producer, double = facts
        fill, epilogue = TMA_FILL_US * 1e-6, 2 * bm * bn / (t["dram_tbps"] * 1e12 / t["sms"])
        if in_flight and double:
            wait = 0.0
            queued = max(0, stages - 1) * t_step
            edges = max(0.0, epilogue + (0.0 if producer else fill) - queued)
            once = fill
        elif in_flight:
            wait = 0.0
            edges = fill + epilogue
        else:
            edges = 0.0
        per_tile = steps * (t_step + wait) + edges
        if issue:
            per_tile = max(per_tile, steps * issue["issue_clocks"] / (CLOCK_GHZ * 1e9) + edges)
        serial = {
            "tile": [bm, bn, bk],
            "family": fam + (" (in flight, two TMEM accumulators)" if double else " (in flight)" if in_flight else ""),
            "k_steps_per_tile": steps,
            "tensor_us_per_step": t_step * 1e6,
            "tile_fill_and_epilogue_us": edges * 1e6,
            "fill_once_per_block_us": once * 1e6,
        }
    else:
        B, H, S, D = shape["B"], shape["H"], shape["S"], shape["D"]
        # MLA's scores take a rope part of DR besides the D of its keys (0 for FMHA); its
        # shared rope keys are one head's.
        DR = shape.get("DR", 0)
        frac = 0.5 if shape["causal"] else 1.0
        flops = 2 * B * H * S * S * (2 * D + DR) * frac
        bytes_ = elem * (B * H * S * (4 * D + DR) + B * S * DR)
        (bm, bn, _, fam, *_) = prods[0]
        overlapped = fam == "tcgen05" and all(p.deferred for p in prods)
        ahead = "until the end of its loop's iteration" in rep_text
        # Query tiles a block: in `OVERLAP`'s order each has three products (Q·Kᵀ and P·V
        # in the loop, the last P·V after it); with the scores ahead one next-scores product
        # each is waited for at the iteration's end, and a query tile's Q·Kᵀ products beyond
        # the one before the loop are the key tiles an iteration (`KEY_TILES`).
        q_tiles = max(1, len(prods) // 3) if overlapped else 1
        key_tiles = 1
        if overlapped and ahead:
            q_tiles = rep_text.count("until the end of its loop's iteration")
            key_tiles = max(1, (sum(1 for p in prods if p.zero_acc) - q_tiles) // q_tiles)
        tiles = B * H * (S // (bm * q_tiles))
        if shape["causal"]:
            # A block walks the key tiles up to its last row: the mean over a head's blocks
            # (with two query tiles, tile A's rows also see B's key tiles, masked).
            rows = bm * q_tiles
            blocks = S // rows
            steps = sum(-(-(i + 1) * rows // bn) for i in range(blocks)) / blocks
        else:
            steps = S // bn
        # Both products of one query tile against one key tile.
        t_step = 2 * bm * bn * (2 * D + DR) / per_sm_flops
        t_exp = bm * bn / t["sfu_exp2_per_clk_per_sm"] / (CLOCK_GHZ * 1e9)
        # The next key tile's scores issued a key tile ahead (`tile-mma-overlap` waits for them
        # at the end of the iteration: FlashAttention-4's order since 2026-11-28): the two
        # softmaxes read scores already in registers while the four products (the previous
        # P·V of both tiles, the next S of both) run; a key tile costs the longer of the
        # products and the two softmaxes, each with one wait.
        if overlapped and ahead:
            # (One 256-row tile, a warpgroup a 128-row block, is the same four products and
            # two blocks' softmaxes: t_step and t_exp are already twice a 128-row tile's.)
            # With two key tiles an iteration the second one's scores are read after the
            # next products are issued: one wait in `key_tiles` is exposed.
            per_tile = steps * max(q_tiles * t_step + wait / key_tiles, q_tiles * t_exp + wait / key_tiles)
        elif overlapped and q_tiles == 2:
            # S_A, P_A·V, S_B, P_B·V issued at once (t/2 each, back to back on the tensor
            # core); A's softmax after S_A's wait, B's after S_B is done and A's softmax; the
            # next key tile's products after both and the last product's wait.
            per_tile = steps * max(2 * t_step + wait, max(t_step / 2 + wait + t_exp, 1.5 * t_step + wait) + t_exp)
        elif overlapped:
            per_tile = steps * (t_step / 2 + wait + max(t_step / 2 + wait, t_exp))
        else:
            per_tile = steps * (t_step + 2 * wait + t_exp)
        if issue:
            # (The SASS walk is one iteration: `key_tiles` key tiles.)
            per_tile = max(per_tile, steps * issue["issue_clocks"] / key_tiles / (CLOCK_GHZ * 1e9))
        kind = " (softmax overlapped)" if overlapped else ""
        if overlapped and ahead:
            kind = " (scores a key tile ahead)" if key_tiles == 1 else f" (scores a key tile ahead, {key_tiles} key tiles an iteration)"
        if q_tiles == 2:
            kind = " (two query tiles, softmax overlapped)" if overlapped else " (two query tiles)"
            if overlapped and ahead:
                kind = " (two query tiles, scores a key tile ahead)"
        serial = {
            "tile": [bm, bn, D],
            "query_tiles_per_block": q_tiles,
            "key_tiles_per_iteration": key_tiles,
            "family": fam + kind,
            "key_tiles_per_tile": steps,
            "tensor_us_per_step": t_step * 1e6,
            "softmax_exp2_us_per_step": t_exp * 1e6,
        }
    if issue:
        serial["issue"] = dict(issue, issue_us_per_step=issue["issue_clocks"] / (CLOCK_GHZ * 1e3))
    roof = max(flops / (peak * 1e12), bytes_ / (t["dram_tbps"] * 1e12))
    waves = -(-tiles // t["sms"])
    t_est = max(roof, waves * per_tile + once)
    return {
        "flops": flops,
        "dram_bytes": bytes_,
        "roofline_tflops": flops / roof / 1e12,
        "estimate_tflops": flops / t_est / 1e12,
        "peak_tflops": peak,
        "estimate_of_peak": flops / t_est / 1e12 / peak,
        "tiles": tiles,
        "waves": waves,
        "serialisation": serial,
        "wait_us_per_product_group": wait * 1e6,
    }


def listed_cases(tilec):
    """`tilec bench --list --quick`: every bench case of the library with its constants, bytes
    and FLOPs (the suite's counts)."""
    out = subprocess.run([tilec, "bench", "--list", "--quick"], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def precision(dtype):
    """The peak class of a case's operands."""
    return "fp8" if dtype.startswith("f8") else "fp4" if dtype.startswith("f4") else "16-bit"


def roofline_only(tilec, arch, case, work):
    """The roofline row of a case of a kernel without a latency model (see the docstring), or
    None when its compile for `arch` issues no tensor-core product."""
    t = TARGETS[arch]
    ptx = work / f"{case['name']}.{arch}.{abs(hash(case['label']))}.ptx"
    args = [tilec, "compile", f"kernels/{case['file']}", "--kernel", case["kernel"], "--arch", arch, "--report", "-o", str(ptx)]
    for k, v in case["consts"].items():
        args += ["--const", f"{k}={v}"]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{case['name']} {arch}: {out.stderr}")
    prods = products(out.stdout + out.stderr)
    if not prods:
        return None
    prec = precision(case["dtype"])
    peak = t["peaks"][prec]
    flops, bytes_ = case["flops"], case["bytes"]
    t_mem = bytes_ / (t["dram_tbps"] * 1e12)
    t_roof = max(flops / (peak * 1e12), t_mem) if flops else t_mem
    (bm, bn, bk, fam, *_) = prods[0]
    return {
        "target": arch,
        "chip": t["chip"],
        "kernel": case["name"],
        "case": f"{case['label']} {case['dtype']}",
        "family": f"{fam} {bm}x{bn}x{bk}",
        "flops": flops,
        "dram_bytes": bytes_,
        "peak_tflops": peak,
        "roofline_tflops": flops / t_roof / 1e12 if flops else None,
        "roofline_gbps": bytes_ / t_roof / 1e9,
        "bound": "DRAM" if t_mem >= t_roof else "tensor",
    }


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    tilec, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tilec-estimates-"))
    rows = []
    for arch in TARGETS:
        for kernel, shapes in SHAPES.items():
            for label, shape in shapes:
                consts = dict(CONSTS.get(kernel, {}))
                if kernel in ("fmha", "fmha_fp8"):
                    consts.update({"TILE_D": shape["D"], "CAUSAL": str(shape["causal"]).lower()})
                if kernel == "mla":
                    consts.update({"D": shape["D"], "DR": shape["DR"], "CAUSAL": str(shape["causal"]).lower()})
                ptx = work / f"{kernel}.{arch}.{len(rows)}.ptx"
                rep = report(tilec, kernel, arch, consts, ptx)
                prods = products(rep)
                if not prods:
                    raise SystemExit(f"{kernel} {arch}: no product in the report")
                facts = pipeline_facts(rep)
                issue = issue_term(ptx, 4 if facts[1] else 0) if arch == "sm_103a" else None
                e = estimate(kernel, shape, arch, prods, issue, facts, rep)
                rows.append({"target": arch, "chip": TARGETS[arch]["chip"], "kernel": kernel, "case": label, **e})
    modelled = set(SHAPES)
    roof_rows = []
    for case in listed_cases(tilec):
        if case["name"] in modelled:
            continue
        for arch in TARGETS:
            r = roofline_only(tilec, arch, case, work)
            if r:
                roof_rows.append(r)
    doc = {
        "kind": "ESTIMATES (not measured: no B300 or GB10 here)",
        "targets": TARGETS,
        "assumed_clock_ghz": CLOCK_GHZ,
        "h100_wait_us": H100_WAIT_US,
        "rows": rows,
        "roofline_only": roof_rows,
    }
    (out / "estimates.json").write_text(json.dumps(doc, indent=1) + "\n")
    md = [
        "# Roofline estimates for B300 (sm_103a) and DGX Spark (sm_121a) — ESTIMATES, not measurements",
        "",
        f"Written by `python3 bench/estimates.py target/release/tilec {out}` from tilec's `--report` of each",
        "kernel at its defaults (bf16 for the 16-bit ones) and the model in the script's docstring. Nothing here ran on a B300 or a",
        "GB10; the measured figures of this project are in the other folders and are never mixed with these.",
        "",
        "Published peaks used:",
    ]
    for a, t in TARGETS.items():
        md.append(f"- {a}, {t['chip']}: {t['tensor_tflops']:.0f} TFLOP/s dense BF16, {t['dram_tbps'] * 1000:.0f} GB/s, {t['sms']} SMs — {'; '.join(t['sources'])}")
    md += [
        f"- exp2 on the SFU: 16 a clock per SM on GB10 (CUDA C++ Programming Guide, arithmetic instruction throughput), 32 on B300 (Blackwell Ultra doubles MUFU.EX2 over Blackwell: NVIDIA technical blog, \"Making Softmax More Efficient with NVIDIA Blackwell Ultra\"), at an assumed {CLOCK_GHZ} GHz (no clock is published).",
        f"- the wait after each product group waited for at once: {H100_WAIT_US:.3f} µs, measured on the H100 (wgmma waited at every K step against in flight, bench/results/2026-11-24-h100-wgmma/ablation.md).",
        f"- a GEMM tile whose products stay in flight: its first fill, {TMA_FILL_US:.1f} µs (assumed: one DRAM round trip), and its epilogue's store at the SM's share of DRAM bandwidth, not overlapped.",
        "- sm_103a: the instruction issue of the main loop, one warp instruction a clock a scheduler (four an SM: CUDA C++ Programming Guide, compute capability 10.x), counted on the SASS of ptxas 13.0 along one iteration's common path (the script's docstring); the row's estimate is the larger of it and the model above (`serialisation.issue` in the JSON).",
        "",
        "| target | kernel | case | family, tile | peak TFLOP/s | roofline TFLOP/s | estimate TFLOP/s | of peak |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        s = r["serialisation"]
        md.append(
            f"| {r['target']} | {r['kernel']} | {r['case']} | {s['family']} {'x'.join(map(str, s['tile']))} | {r['peak_tflops']:.0f} | {r['roofline_tflops']:.0f} | {r['estimate_tflops']:.0f} | {r['estimate_of_peak']:.2f} |"
        )
    md += [
        "",
        "The other tensor-core kernels, roofline alone (an upper bound: no latency or issue model), for",
        "`tilec bench --list --quick`'s cases — the FLOPs and compulsory bytes are the suite's:",
        "",
        "| target | kernel | case | first product's family, tile | bound | roofline TFLOP/s | roofline GB/s |",
        "|---|---|---|---|---|---:|---:|",
    ]
    for r in roof_rows:
        tf = r["roofline_tflops"]
        tf = "—" if tf is None else f"{tf:.0f}" if tf >= 10 else f"{tf:.1f}"
        md.append(
            f"| {r['target']} | {r['kernel']} | {r['case']} | {r['family']} | {r['bound']} | {tf} | {r['roofline_gbps']:.0f} |"
        )
    md += [
        "",
        "Anchors on the real hardware (published, not measured here): GB10 FMHA about 90–95 TFLOP/s bf16",
        "(FlashAttention-4 94.5 at B8 S8192 H32 D64), GB10 bf16 GEMM 92; B200 FMHA 1,613 TFLOP/s (FlashAttention-4).",
        "",
        "What the estimates say: the GEMM's products kept in flight across K steps (each ring stage released",
        "by a `tcgen05.commit`, no wait in the K loop) take sm_103a's GEMM past the 70 % goal; since",
        "2026-11-28 (session 26) `matmul`, `bmm` and the fp8 GEMMs are persistent there with a producer warpgroup and two",
        "TMEM accumulators (`tile-epilogue-overlap`: each tile's epilogue under the next tile's products, the",
        "next tile's stages copied meanwhile), so a block pays one fill and a tile only the epilogue time past",
        "the products its ring holds queued — none at these tiles (GEMM 4096³ 0.77 -> 0.83, 8192³ 0.93 ->",
        "0.98, BMM 0.57 -> 0.86; `bench/results/2026-11-27-estimates-issue/` has the rows before); what remains",
        "is the last wave's quantisation (4096³: 512 tiles on 148 SMs, 3.5 waves). FMHA at D = 128 passes",
        "it with two query tiles a block (FlashAttention-4's ping-pong of two softmaxes in one instruction",
        "stream: `S_A`, `P_A·V`, `S_B`, `P_B·V` issued back to back, each left in flight with a TMEM region and",
        "an mbarrier of its own, A's softmax under `S_B` and the products after it, B's under A's `P·V`): only",
        "the first wait of a key tile is exposed, and the next key tile's products wait for both softmaxes and",
        "the last product (modelled as max(2t + wait, max(t/2 + wait + softmax, 3t/2 + wait) + softmax) for",
        "t one query tile's two products; the accumulators' TMEM stores and loads and the rescale are not",
        "modelled). The instruction issue is what the model missed until 2026-11-27 (session 20): a key",
        "tile was 976 instructions a warp on sm_103a (8 warps, two a scheduler: 1,721 clocks against the",
        "products' 1,048), 0.60 of peak at D = 128 with it, not 0.82; issuing the tensor-core and TMA",
        "instructions under `elect.sync` (ptxas had wrapped each in a loop over the active lanes), the",
        "conditional rescale, affine index compares and the ragged-tile mask's offsets no longer live through",
        "the loop, and Blackwell's paired f32 arithmetic (FFMA2/FADD2 for the scale, the sums and the",
        "rescale) bring it to 542 (975 clocks), below the products and the waits: 0.82 again (462 since",
        "O and P stay in Tensor Memory, below). At D = 64 the two tiles take 64-key tiles: the products are",
        "half as long and a key tile's 487 instructions a warp (903 clocks against 524) bound it at 0.57",
        "(0.34 before the changes). Since 2026-11-28 (session 27) the accumulators and P stay in Tensor",
        "Memory across key tiles (O rescaled in place, P stored where the loop yields it, so the four products",
        "follow one TMEM sync; ptxas no longer moves the carried P into `tcgen05.st`'s registers): 420",
        "instructions (746 clocks), and the serial term bound it instead — S_A's product and wait exposed",
        "at each key tile's start, then both softmaxes in turn (t/2 + wait + 2 softmaxes): 0.60. Since the",
        "same session the scores go a key tile ahead where the products take tcgen05 (`AHEAD`): the next",
        "key tile's S_A and S_B are issued at the top of an iteration beside the previous tile's P·V and",
        "waited for at its end, so both softmaxes run on scores already in registers under the four",
        "products (411 instructions, 738 clocks): 0.70, the products and one wait a key tile binding (D =",
        "128 stays 0.82: its products bound it already). Each row of a 128-row tile spanned two warps (8 warps,",
        "the columns split), so every row maximum and sum crossed warps through shared memory with a block",
        "barrier (6 a key tile, not modelled); since session 28 (2026-11-28) the two query tiles are one",
        "256-row tile whose 128-row blocks are a warpgroup's each — FlashAttention-4's softmax warpgroups, a",
        "thread a row: 2 block barriers a key tile, none for the statistics, 364 instructions at D = 64 —",
        "and at D = 64 an iteration takes two key tiles (`KEY_TILES`): the second one's scores are read after",
        "the next key tile's products are issued, so one wait in two is exposed and the issue binds (709",
        "instructions an iteration, 650 clocks a key tile): 0.80. The",
        "block-scaled NVFP4 GEMM is issue-bound too: 425 instructions a warp a K step while its scale",
        "factors went through shared memory a byte at a time (128 LDS.U8, 108 PRMT) — 0.39, not the 0.72",
        "of the model without the term —, 270 since they are loaded in the layout tcgen05.st stores them",
        "from (16-byte loads): 0.60. The",
        "sm_121a rows are upper bounds (mma.sync has no wait term; DRAM traffic is the compulsory bytes,",
        "L2 misses beyond them are not modelled).",
        "",
        "The other tensor-core kernels at the precision of their operands: the batched GEMM's 1024³ products",
        "are 16 K steps a tile, so a tile's fill and epilogue weighed four times what they do in the 4096³",
        "GEMM until the persistent kernel hid them; the fp8 GEMM keeps its products in flight and is",
        "persistent with two accumulators as the bf16 one is (0.84 -> 0.96); the block-scaled",
        "NVFP4 GEMM keeps its products in flight too (its scale factors in a Tensor Memory region a stage of its A ring, so the next stages'",
        "factors are stored while a product runs; its 256-column accumulator and scale regions leave no room",
        "for a second accumulator), 128x256 tiles against FP4's 13 PFLOP/s: what is left is each tile's fill",
        "and epilogue; fp8 FMHA takes FMHA's order since 2026-11-28 (session 28: 256 rows a block, a warpgroup a",
        "128-row block, the scores a key tile ahead, O in Tensor Memory; before, its products were waited for where",
        "they were issued, 0.27): at twice the tensor rate its exponentials weigh as much as its products; P went",
        "through shared memory a byte at a time (488 instructions a warp a key tile, 0.56) until it went into",
        "Tensor Memory four e4m3 a column (kind::f8f6f4 reads A there; 349 instructions): 0.70, the products and",
        "a wait a key tile binding. MLA's prefill (modelled since session 28: its scores over D + DR) takes the",
        "same order on sm_103a, its two score products one chain in Tensor Memory (`TmemPlan::chained`): 0.35 -> 0.70",
        "(32-key tiles: the issue and the products balance at 661 clocks a key tile). The decode kernels",
        "(16-row products since this session's tcgen05 M = 64 path) and the split-K GEMMs are bound by DRAM",
        "bandwidth; their roofline is bytes / bandwidth and no latency model of theirs is written here.",
    ]
    (out / "README.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
