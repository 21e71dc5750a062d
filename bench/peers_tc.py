#!/usr/bin/env python3
"""cuBLAS and cuDNN on the tensor-core shapes of issue 25, quickly (no Triton autotuning):
the figures `tilec bench` is compared with in the same GPU call.

    python3 bench/peers_tc.py [--out peers.json] [--only gemm,gemm_fp8,fmha,topk,decode,mla_decode]

Timing as `anchors.py` (../shared/bench/): triton.testing.do_bench (CUDA events, L2 cleared
between runs, median of 100 ms), inputs random normal. Rows in anchors.py's JSON format, so
that `tilec bench --peers` reads them.
"""
import argparse, json, math, time

import torch
from triton.testing import do_bench

RESULTS = []


def record(kernel, provider, config, ms, tflops):
    RESULTS.append(dict(kernel=kernel, provider=provider, config=config, ms=round(ms, 5),
                        tflops=round(tflops, 1), gbps=None, note=""))
    print(f"| {kernel:6s} | {provider:10s} | {config:34s} | {ms:9.4f} ms | {tflops:7.1f} TFLOP/s |", flush=True)


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def gemm():
    for (m, n, k) in [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 10752, 3584)]:
        for dt in (torch.float16, torch.bfloat16):
            a = torch.randn(m, k, device="cuda", dtype=dt)
            b = torch.randn(k, n, device="cuda", dtype=dt)
            cfg = f"M=N=K={m}" if m == n == k else f"M={m} N={n} K={k}"
            ms = bench(lambda: a @ b)
            record("gemm", "cublas", f"{cfg} {str(dt)[6:]}", ms, 2.0 * m * n * k / ms / 1e9)


def gemm_fp8():
    # cuBLASLt's fp8 GEMM through torch._scaled_mm (per-tensor scales, bf16 out), B given
    # column-major as the weights of the tilec kernel are (N x K, K contiguous); and the same
    # shapes in f16 on cuBLAS for the fp8/f16 ratio.
    for n in (4096, 8192):
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        sa = torch.tensor(1.0, device="cuda")
        sb = torch.tensor(1.0, device="cuda")
        fn = lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        ms = bench(fn)
        record("gemm_fp8", "cublaslt", f"M=N=K={n} fp8", ms, 2.0 * n**3 / ms / 1e9)


def fmha():
    from torch.nn.attention import sdpa_kernel, SDPBackend
    for D in (128, 64):
        for causal in (False, True):
            for S in (4096, 16384):
                B, H = 4, 32
                q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
                flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    fn = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    ms = bench(fn)
                record("fmha", "sdpa-cudnn", f"B{B} H{H} S{S} D{D} causal={int(causal)}", ms, flops / ms / 1e9)


def topk():
    # A vocabulary's top 8 over a batch of rows (the two-pass top-k of kernels/topk.tile).
    for (m, n) in [(16, 152064)]:
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        ms = bench(lambda: torch.topk(x, 8, dim=1))
        gbps = m * n * 2 / ms / 1e6
        RESULTS.append(dict(kernel="topk", provider="torch", config=f"M={m} N={n} k=8 float16", ms=round(ms, 5),
                            tflops=None, gbps=round(gbps, 1), note=""))
        print(f"| topk   | torch      | M={m} N={n} k=8 float16        | {ms:9.4f} ms | {gbps:7.1f} GB/s |", flush=True)


# The decode points of issue 30 (Qwen2-7B's 28 query and 4 KV heads of dim 128), every
# sequence at the full length, B = 1, 4, 16, 64 by L = 1k, 4k, 16k, 32k. The same list is
# the suite's bench cases (`decode_points` in suite/src/kernels/compute.rs).
DECODE_POINTS = [(b, l) for b in (1, 4, 16, 64) for l in (1024, 4096, 16384, 32768)]


def time_sdpa(kernel, cfg, nbytes, backends, fn, note=""):
    """Times `fn` (an SDPA call) under each of `backends` ((name, SDPBackend) pairs), a row
    in GB/s of `nbytes` for each that runs; a backend that refuses the shapes is said so."""
    from torch.nn.attention import sdpa_kernel
    for name, be in backends:
        try:
            with sdpa_kernel(be):
                ms = bench(fn)
        except Exception as e:
            print(f"  {name} {cfg} failed: {str(e)[:80]}")
            continue
        gbps = nbytes / ms / 1e6
        RESULTS.append(dict(kernel=kernel, provider=name, config=cfg, ms=round(ms, 5), tflops=None,
                            gbps=round(gbps, 1), note=note))
        print(f"| {kernel} | {name:10s} | {cfg:34s} | {ms:9.4f} ms | {gbps:7.1f} GB/s |", flush=True)


def decode():
    """GQA decode attention through SDPA's FlashAttention-2 and cuDNN backends, as
    anchors.py measures it (bytes: K and V read once, plus q and out)."""
    from torch.nn.attention import SDPBackend
    for B, L in DECODE_POINTS:
        Hq, Hkv, D = 28, 4, 128
        q = torch.randn(B, Hq, 1, D, device="cuda", dtype=torch.float16)
        k = torch.randn(B, Hkv, L, D, device="cuda", dtype=torch.float16)
        v = torch.randn(B, Hkv, L, D, device="cuda", dtype=torch.float16)
        nbytes = 2 * (k.numel() + v.numel() + 2 * q.numel())
        cfg = f"B{B} Hq{Hq} Hkv{Hkv} L{L} D{D} f16"
        backends = (("sdpa-flash", SDPBackend.FLASH_ATTENTION), ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION))
        time_sdpa("decode", cfg, nbytes, backends,
                  lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True))
        del q, k, v


# MLA decode's points (DeepSeek-V2-Lite: 16 heads, latent 512, rope 64): the same grid.
MLA_POINTS = DECODE_POINTS


def mla_decode():
    """MLA decode as SDPA computes it over the latent cache (FlashMLA is not installable
    here): queries [q, q_rope] (576), one key head [C, C_rope] shared by the 16 heads
    (expanded, a stride-0 view), values the latent part C (512, a view of the keys). Bytes as tilec counts
    them: the latent and rope rows once, plus q and the output."""
    from torch.nn.attention import SDPBackend
    H, DC, DR = 16, 512, 64
    for B, L in MLA_POINTS:
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
        time_sdpa("mla_decode", cfg, nbytes, backends,
                  lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v), note="SDPA over the latent cache")
        del q, k, v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="peers.json")
    ap.add_argument("--only", default="gemm,fmha")
    a = ap.parse_args()
    p = torch.cuda.get_device_properties(0)
    print(f"# device: {p.name}, {p.multi_processor_count} SMs, torch {torch.__version__}")
    print("| kernel | provider | config | median | figure |\n|---|---|---|---|---|")
    t0 = time.time()
    for part in a.only.split(","):
        {"gemm": gemm, "gemm_fp8": gemm_fp8, "fmha": fmha, "topk": topk, "decode": decode,
         "mla_decode": mla_decode}[part]()
    json.dump(dict(device=p.name, torch=torch.__version__, results=RESULTS, seconds=round(time.time() - t0, 1)),
              open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
