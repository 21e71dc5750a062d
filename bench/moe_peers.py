#!/usr/bin/env python3
"""Peers of tilec's grouped GEMM (kernels/group_gemm.tile) on the shapes of `tilec bench
group_gemm`: the same group sizes (suite's `group_offsets`: quadratic, most groups empty or of
one or two rows when the rows are few, group 1 empty), the same dtype.

  loop        one torch matmul per non-empty group: what transformers' DeepseekV2Experts does
              (an `nn.functional.linear` per expert hit)
  grouped_mm  torch._grouped_mm (CUTLASS's grouped GEMM in PyTorch), where this torch has it
  copy        reading the non-empty groups' weights once (a device copy of those bytes): the
              floor of a memory-bound grouped GEMM

    python3 bench/moe_peers.py [--out moe_peers.json] [--shapes 96x64x2048x2816,...]
"""
import argparse
import json
import statistics

import torch


def group_offsets(groups, rows):
    cuts = [(rows * i * i) // (groups * groups) for i in range(1, groups)]
    if groups >= 3:
        cuts[1] = cuts[0]
    return [0] + cuts + [rows]


def timed(fn, reps):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="moe_peers.json")
    ap.add_argument("--shapes", default="96x64x2048x2816,96x64x1408x2048,6x64x2048x2816,3072x64x2048x2816")
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    dt = torch.bfloat16
    rows_out = []
    for shape in a.shapes.split(","):
        rows, g, k, n = (int(x) for x in shape.split("x"))
        off = group_offsets(g, rows)
        used = [i for i in range(g) if off[i + 1] > off[i]]
        x = torch.randn(rows, k, device="cuda", dtype=dt)
        w = torch.randn(g, k, n, device="cuda", dtype=dt)
        y = torch.empty(rows, n, device="cuda", dtype=dt)
        nbytes = (rows * k + len(used) * k * n + rows * n) * 2
        flops = 2 * rows * k * n

        def loop():
            for i in used:
                torch.matmul(x[off[i]:off[i + 1]], w[i], out=y[off[i]:off[i + 1]])

        res = {"shape": shape, "dtype": "bf16", "groups_used": len(used), "bytes": nbytes}
        ms = timed(loop, a.reps)
        res["loop_ms"] = ms
        res["loop_gbps"] = nbytes / ms / 1e6
        ends = torch.tensor(off[1:], device="cuda", dtype=torch.int32)
        try:
            ref = torch._grouped_mm(x, w, offs=ends)
            loop()
            torch.cuda.synchronize()
            err = ((ref.float() - y.float()).norm() / y.float().norm().clamp_min(1e-30)).item()
            ms = timed(lambda: torch._grouped_mm(x, w, offs=ends), a.reps)
            res.update(grouped_mm_ms=ms, grouped_mm_gbps=nbytes / ms / 1e6, grouped_mm_rel_err=err)
        except Exception as e:  # recorded: not every torch has it for every shape
            res["grouped_mm_error"] = f"{type(e).__name__}: {e}"[:300]
        src = torch.cat([w[i].reshape(-1) for i in used])
        dst = torch.empty_like(src)
        ms = timed(lambda: dst.copy_(src), a.reps)
        # read + write of the used weights: the copy ceiling
        res.update(copy_ms=ms, copy_gbps=2 * src.numel() * 2 / ms / 1e6)
        res["read_floor_ms"] = nbytes / (res["copy_gbps"] * 1e6)
        res["tflops_loop"] = flops / res["loop_ms"] / 1e9
        rows_out.append(res)
        print(json.dumps(res), flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": rows_out},
              open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
