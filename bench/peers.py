#!/usr/bin/env python3
"""The peers tilec is measured against, on the GPU at hand: what a user would pick instead.

PyTorch (cuBLAS and cuBLASLt, SDPA's cuDNN and FlashAttention-2 backends, eager and
torch.compile elementwise code) and Triton kernels of the same algorithms (an
FlashAttention-2-style forward and a grouped-order GEMM, each the best of a small
configuration list), on the shapes of `tilec bench` (the suite's `peer_config` strings).

    python3 bench/peers.py [--out peers.json] [--quick]
        [--only copy,membound,gemm,gemm_triton,gemm_fp8,fmha,fmha_triton,topk,decode,mla_decode]

Timing: triton.testing.do_bench (CUDA events, the L2 cleared between runs, the median of
100 ms after 25 ms of warm-up), inputs random normal. Every row is {kernel, provider,
config, ms, tflops | gbps, note}; `tilec bench --peers peers.json` joins them with its own
rows by kernel and config, in the same GPU run (bench/run.sh does both).
"""
import argparse, json, math, time

import torch
from triton.testing import do_bench

RESULTS = []


def record(kernel, provider, config, ms, tflops=None, gbps=None, note=""):
    """One row: a time and its figure (TFLOP/s for compute-bound kernels, GB/s otherwise)."""
    RESULTS.append(dict(kernel=kernel, provider=provider, config=config, ms=round(ms, 5),
                        tflops=None if tflops is None else round(tflops, 1),
                        gbps=None if gbps is None else round(gbps, 1), note=note))
    fig = f"{tflops:8.1f} TFLOP/s" if tflops is not None else f"{gbps:8.1f} GB/s"
    print(f"| {kernel:10s} | {provider:14s} | {config:36s} | {ms:9.4f} ms | {fig} |", flush=True)


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def copy(quick):
    """The copy ceiling: a device-to-device copy of 512 MiB (bytes read plus bytes written)."""
    x = torch.randn(1 << 28, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x))
    record("copy", "torch", "512 MiB f16", ms, gbps=2 * x.numel() * 2 / ms / 1e6)


def membound(quick):
    """The elementwise and row-wise kernels as PyTorch runs them, eager and torch.compile'd,
    on the shapes of the suite's bench cases. Bytes: what must cross DRAM once."""
    M, N = 16384, 4096
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.randn(N, device="cuda", dtype=torch.float16)
    gate_up = torch.randn(M, 2 * N, device="cuda", dtype=torch.float16)
    rows = torch.randn(16, 4096, 32, 128, device="cuda", dtype=torch.float16)  # B, S, H, D
    cos = torch.randn(4096, 64, device="cuda", dtype=torch.float16)
    sin = torch.randn(4096, 64, device="cuda", dtype=torch.float16)

    def rope():
        # Rotates the two halves of each head (the library's convention), q only.
        lo, hi = rows[..., :64], rows[..., 64:]
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return torch.cat([lo * c - hi * s, hi * c + lo * s], dim=-1)

    cases = [
        ("rmsnorm", lambda: torch.nn.functional.rms_norm(x, (N,), w, 1e-6), 2 * M * N * 2, f"M={M} N={N} f16"),
        ("softmax", lambda: torch.softmax(x, dim=-1), 2 * M * N * 2, f"M={M} N={N} f16"),
        ("silu_mul", lambda: torch.nn.functional.silu(gate_up[:, :N]) * gate_up[:, N:], 3 * M * N * 2,
         f"M={M} N={N} f16 (in 2N)"),
        ("rope", rope, 2 * rows.numel() * 2, "B16 S4096 H32 D128 f16"),
        ("dropout", lambda: torch.nn.functional.dropout(x, p=0.1, training=True), 2 * M * N * 2,
         f"M={M} N={N} f16 p=0.1"),
    ]
    for name, fn, nbytes, cfg in cases:
        ms = bench(fn)
        record(name, "torch-eager", cfg, ms, gbps=nbytes / ms / 1e6)
        try:
            compiled = torch.compile(fn)
            ms = bench(compiled)
        except Exception as e:  # no compiler toolchain for inductor on this machine
            print(f"  torch.compile {name} failed: {str(e)[:80]}")
            continue
        record(name, "torch-compile", cfg, ms, gbps=nbytes / ms / 1e6)


def gemm_shapes(quick):
    square = [(n, n, n) for n in ((4096, 8192) if quick else (2048, 4096, 8192))]
    return square + [(8192, 10752, 3584)]


def gemm_config(m, n, k, dt):
    cfg = f"M=N=K={m}" if m == n == k else f"M={m} N={n} K={k}"
    return f"{cfg} {str(dt)[6:]}"


def gemm(quick):
    """cuBLAS through torch.matmul."""
    for (m, n, k) in gemm_shapes(quick):
        for dt in (torch.float16, torch.bfloat16):
            a = torch.randn(m, k, device="cuda", dtype=dt)
            b = torch.randn(k, n, device="cuda", dtype=dt)
            ms = bench(lambda: a @ b)
            record("gemm", "cublas", gemm_config(m, n, k, dt), ms, tflops=2.0 * m * n * k / ms / 1e9)


def gemm_fp8(quick):
    # cuBLASLt's fp8 GEMM through torch._scaled_mm (per-tensor scales, bf16 out), B given
    # column-major as the weights of the tilec kernel are (N x K, K contiguous).
    for n in (4096, 8192):
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        sa = torch.tensor(1.0, device="cuda")
        sb = torch.tensor(1.0, device="cuda")
        fn = lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        ms = bench(fn)
        record("gemm_fp8", "cublaslt", f"M=N=K={n} fp8", ms, tflops=2.0 * n**3 / ms / 1e9)


def fmha_shapes(quick):
    seqs = (4096, 16384) if quick else (1024, 2048, 4096, 8192, 16384)
    return [(4, 32, s, d, causal) for d in (128, 64) for causal in (False, True) for s in seqs]


def fmha(quick):
    """SDPA's cuDNN and FlashAttention-2 backends."""
    from torch.nn.attention import SDPBackend
    for B, H, S, D, causal in fmha_shapes(quick):
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        cfg = f"B{B} H{H} S{S} D{D} causal={int(causal)}"
        backends = (("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION), ("sdpa-flash2", SDPBackend.FLASH_ATTENTION))
        time_sdpa("fmha", cfg, backends, lambda: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal), flops=flops)
        del q, k, v


def best_triton(launch, reference, configs, tolerance):
    """The fastest of `configs` whose output (launch(cfg) returns it) is within `tolerance`
    of `reference` (max abs): (ms, cfg), or None when none runs."""
    best = None
    for cfg in configs:
        try:
            out = launch(cfg)
            if (out.float() - reference.float()).abs().max().item() > tolerance:
                print(f"  triton {cfg}: wrong results, skipped")
                continue
            ms = bench(lambda: launch(cfg))
        except Exception as e:  # a configuration the compiler or the GPU refuses
            print(f"  triton {cfg} failed: {str(e)[:60]}")
            continue
        if best is None or ms < best[0]:
            best = (ms, cfg)
    return best


def gemm_triton(quick):
    """A Triton GEMM (tiles in grouped order), the best of a few configurations."""
    import triton
    from triton_kernels import matmul_kernel
    configs = [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 64, 8, 3), (256, 128, 64, 8, 3),
               (128, 256, 32, 8, 4), (64, 128, 64, 4, 4)]
    for (m, n, k) in gemm_shapes(quick):
        for dt in (torch.float16, torch.bfloat16):
            a = torch.randn(m, k, device="cuda", dtype=dt)
            b = torch.randn(k, n, device="cuda", dtype=dt)
            c = torch.empty(m, n, device="cuda", dtype=dt)

            def launch(cfg):
                bm, bn, bk, warps, stages = cfg
                grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
                matmul_kernel[grid](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, GROUP=8, num_warps=warps, num_stages=stages)
                return c
            best = best_triton(launch, a @ b, configs, tolerance=1.0)
            if best:
                record("gemm", "triton", gemm_config(m, n, k, dt), best[0], tflops=2.0 * m * n * k / best[0] / 1e9,
                       note=f"best of {len(configs)}: {best[1]}")


def fmha_triton(quick):
    """A Triton FlashAttention-2-style forward, the best of a few configurations."""
    from triton_kernels import attention_forward
    configs = [(bm, bn, w, s) for bm in (64, 128) for bn in (64, 128) for w in (4, 8) for s in (2, 3)]
    for B, H, S, D, causal in fmha_shapes(quick):
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
        reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        best = best_triton(lambda cfg: attention_forward(q, k, v, causal, cfg), reference, configs, tolerance=2e-2)
        if best:
            record("fmha", "triton-fa2", f"B{B} H{H} S{S} D{D} causal={int(causal)}", best[0],
                   tflops=flops / best[0] / 1e9, note=f"best of {len(configs)}: {best[1]}")
        del q, k, v


def topk(quick):
    # A vocabulary's top 8 over a batch of rows (the two-pass top-k of kernels/topk.tile).
    for (m, n) in [(16, 152064)]:
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        ms = bench(lambda: torch.topk(x, 8, dim=1))
        record("topk", "torch", f"M={m} N={n} k=8 float16", ms, gbps=m * n * 2 / ms / 1e6)


# The decode points of issue 30 (Qwen2-7B's 28 query and 4 KV heads of dim 128), every
# sequence at the full length, B = 1, 4, 16, 64 by L = 1k, 4k, 16k, 32k. The same list is
# the suite's bench cases (`decode_points` in suite/src/kernels/compute.rs).
DECODE_POINTS = [(b, l) for b in (1, 4, 16, 64) for l in (1024, 4096, 16384, 32768)]


def time_sdpa(kernel, cfg, backends, fn, nbytes=None, flops=None, note=""):
    """Times `fn` (an SDPA call) under each of `backends` ((name, SDPBackend) pairs), a row
    for each that runs (TFLOP/s of `flops`, or GB/s of `nbytes`); a backend that refuses the
    shapes is said so."""
    from torch.nn.attention import sdpa_kernel
    for name, be in backends:
        try:
            with sdpa_kernel(be):
                ms = bench(fn)
        except Exception as e:
            print(f"  {name} {cfg} failed: {str(e)[:80]}")
            continue
        if flops is not None:
            record(kernel, name, cfg, ms, tflops=flops / ms / 1e9, note=note)
        else:
            record(kernel, name, cfg, ms, gbps=nbytes / ms / 1e6, note=note)


def decode(quick):
    """GQA decode attention through SDPA's FlashAttention-2 and cuDNN backends (bytes: K and V
    read once, plus q and out)."""
    from torch.nn.attention import SDPBackend
    for B, L in POINTS or DECODE_POINTS:
        Hq, Hkv, D = 28, 4, 128
        q = torch.randn(B, Hq, 1, D, device="cuda", dtype=torch.float16)
        k = torch.randn(B, Hkv, L, D, device="cuda", dtype=torch.float16)
        v = torch.randn(B, Hkv, L, D, device="cuda", dtype=torch.float16)
        nbytes = 2 * (k.numel() + v.numel() + 2 * q.numel())
        cfg = f"B{B} Hq{Hq} Hkv{Hkv} L{L} D{D} f16"
        backends = (("sdpa-flash", SDPBackend.FLASH_ATTENTION), ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION))
        time_sdpa("decode", cfg, backends,
                  lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True), nbytes=nbytes)
        del q, k, v


# `--points`: other (B, L) decode points instead of the grid, for both decode parts.
POINTS = []


# MLA decode's points (DeepSeek-V2-Lite: 16 heads, latent 512, rope 64): the same grid.
MLA_POINTS = DECODE_POINTS


def mla_decode(quick):
    """MLA decode as SDPA computes it over the latent cache (FlashMLA is not installable
    here): queries [q, q_rope] (576), one key head [C, C_rope] shared by the 16 heads
    (expanded, a stride-0 view), values the latent part C (512, a view of the keys). Bytes as tilec counts
    them: the latent and rope rows once, plus q and the output."""
    from torch.nn.attention import SDPBackend
    H, DC, DR = 16, 512, 64
    for B, L in POINTS or MLA_POINTS:
        q = torch.randn(B, H, 1, DC + DR, device="cuda", dtype=torch.float16)
        k = torch.randn(B, 1, L, DC + DR, device="cuda", dtype=torch.float16)
        # No fused backend takes one key head for 16 query heads at this head dim: the key
        # head expanded (a stride-0 view, the same bytes) for the memory-efficient kernel.
        k = k.expand(B, H, L, DC + DR)
        v = k[..., :DC]
        nbytes = 2 * (B * L * (DC + DR) + 2 * B * H * (DC + DR))
        cfg = f"B{B} H{H} L{L} DC{DC} DR{DR} f16"
        backends = (("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION), ("sdpa-efficient", SDPBackend.EFFICIENT_ATTENTION),
                    ("sdpa-flash", SDPBackend.FLASH_ATTENTION))
        time_sdpa("mla_decode", cfg, backends, lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                  nbytes=nbytes, note="SDPA over the latent cache")
        del q, k, v


PARTS = {"copy": copy, "membound": membound, "gemm": gemm, "gemm_triton": gemm_triton, "gemm_fp8": gemm_fp8,
         "fmha": fmha, "fmha_triton": fmha_triton, "topk": topk, "decode": decode, "mla_decode": mla_decode}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="peers.json")
    ap.add_argument("--quick", action="store_true", help="fewer shapes (the suite's bench cases are in both)")
    ap.add_argument("--only", default="copy,membound,gemm,fmha", help=f"comma-separated, of {','.join(PARTS)}")
    ap.add_argument("--points", default="", help="decode points instead of the grid: `1x4096,16x562` (B x L)")
    a = ap.parse_args()
    try:
        POINTS.extend(tuple(int(x) for x in p.split("x")) for p in a.points.split(",") if p)
    except ValueError:
        ap.error(f"--points takes BxL pairs separated by commas, not {a.points!r}")
    if any(len(p) != 2 or min(p) < 1 for p in POINTS):
        ap.error(f"--points takes BxL pairs of positive numbers, not {a.points!r}")
    parts = a.only.split(",")
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        ap.error(f"unknown part(s) {unknown}; the parts are {list(PARTS)}")
    p = torch.cuda.get_device_properties(0)
    print(f"# device: {p.name}, {p.multi_processor_count} SMs, torch {torch.__version__}")
    print("| kernel | provider | config | median | figure |\n|---|---|---|---|---|")
    t0 = time.time()
    for part in parts:
        PARTS[part](a.quick)
    with open(a.out, "w") as f:
        json.dump(dict(device=p.name, torch=torch.__version__, results=RESULTS, seconds=round(time.time() - t0, 1)),
                  f, indent=1)
    print(f"# wrote {a.out} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
