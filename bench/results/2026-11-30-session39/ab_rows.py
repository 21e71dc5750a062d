#!/usr/bin/env python3
"""Whole-process cold compiles of a few rows with two tilec binaries, each with its own kernels
directory (the hint in mla_decode.tile changed with the binary), alternated old/new and new/old
run by run; the best and median of REPS a row.

Usage: python3 ab_rows.py OLD_TILEC OLD_ROOT NEW_TILEC NEW_ROOT REPS OUT.json
"""
import json, statistics, subprocess, sys, time

old, old_root, new, new_root, reps, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
ROWS = [("mla_decode", a) for a in ("sm_90a", "sm_103a", "sm_121a")] + [
    ("attention_decode_grouped", "sm_103a"), ("paged_attention_decode", "sm_103a"), ("fmha", "sm_103a")]
res = []
for k, a in ROWS:
    t = {"old": [], "new": []}
    for r in range(reps):
        order = [("old", old, old_root), ("new", new, new_root)]
        for name, b, root in (order if r % 2 == 0 else order[::-1]):
            t0 = time.perf_counter()
            subprocess.run([b, "compile", f"{root}/kernels/{k}.tile", "--kernel", k, "--arch", a, "--no-cache", "-o", "/dev/null"], check=True, capture_output=True)
            t[name].append((time.perf_counter() - t0) * 1e3)
    row = {"kernel": k, "target": a, **{f"{n}_{s}": f(v) for n, v in t.items() for s, f in (("best_ms", min), ("median_ms", statistics.median))}}
    res.append(row)
    print(f"{k} {a}: best {row['old_best_ms']:.0f} -> {row['new_best_ms']:.0f} ms, median {row['old_median_ms']:.0f} -> {row['new_median_ms']:.0f} ms", flush=True)
json.dump(res, open(out, "w"), indent=1)
