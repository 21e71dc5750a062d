#!/usr/bin/env python3
"""Whole-process cold compiles (`--no-cache`, PTX to /dev/null) of every library kernel x
target with several tilec binaries, the binaries alternated within each repetition (their
order rotating from one repetition to the next); the best and median wall time of REPS.

Usage: python3 ab_all.py REPS OUT.json NAME=TILEC [NAME=TILEC ...]   (run from the repo root)
"""
import glob, json, re, statistics, subprocess, sys, time

reps, out = int(sys.argv[1]), sys.argv[2]
bins = [a.split("=", 1) for a in sys.argv[3:]]
rows = []
for f in sorted(glob.glob("kernels/*.tile")):
    for k in re.findall(r"^kernel\s+([A-Za-z_]\w*)", open(f).read(), re.M):
        for a in ("sm_90a", "sm_103a", "sm_121a"):
            rows.append((f, k, a))
res = []
for f, k, a in rows:
    t = {n: [] for n, _ in bins}
    ok = True
    for r in range(reps):
        for i in range(len(bins)):
            n, b = bins[(i + r) % len(bins)]
            t0 = time.perf_counter()
            p = subprocess.run([b, "compile", f, "--kernel", k, "--arch", a, "--no-cache", "-o", "/dev/null"], capture_output=True)
            t[n].append((time.perf_counter() - t0) * 1e3)
            ok &= p.returncode == 0
    if not ok:
        continue
    row = {"kernel": k, "target": a}
    for n, v in t.items():
        row[f"{n}_best_ms"], row[f"{n}_median_ms"] = min(v), statistics.median(v)
    res.append(row)
    print(k, a, " ".join(f"{n} {row[n + '_best_ms']:.0f}/{row[n + '_median_ms']:.0f}" for n, _ in bins), flush=True)
json.dump(res, open(out, "w"), indent=1)
for n, _ in bins:
    best = [r[f"{n}_best_ms"] for r in res]
    print(f"{n}: {len(res)} compiles, median of best {statistics.median(best):.1f} ms, sum {sum(best) / 1e3:.2f} s, "
          f"<= 50 ms {sum(b <= 50 for b in best)}, <= 300 ms {sum(b <= 300 for b in best)}, slowest {max(best):.0f} ms")
