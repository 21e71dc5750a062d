#!/usr/bin/env python3
"""Whole-process cold compiles (`--no-cache`, PTX to /dev/null) of every library kernel x
target with several tilec binaries, the binaries alternated within each repetition (their
order rotating from one repetition to the next); the best and median wall time of REPS.
A binary given as TILEC@ROOT compiles ROOT's kernel library in ROOT (a checkout of its own
commit; session 45); the kernels listed are the last binary's. A kernel x target that a
binary fails to compile (matmul_mx on sm_90a) is left out.

Usage: python3 ab_all.py REPS OUT.json NAME=TILEC[@ROOT] [NAME=TILEC[@ROOT] ...]   (run from the repo root)
"""
import glob, json, os, re, statistics, subprocess, sys, time

reps, out = int(sys.argv[1]), sys.argv[2]
bins = [(n, *(v.split("@", 1) if "@" in v else (v, "."))) for n, v in (a.split("=", 1) for a in sys.argv[3:])]
rows = []
for f in sorted(glob.glob(os.path.join(bins[-1][2], "kernels/*.tile"))):
    for k in re.findall(r"^kernel\s+([A-Za-z_]\w*)", open(f).read(), re.M):
        for a in ("sm_90a", "sm_103a", "sm_121a"):
            rows.append((os.path.relpath(f, bins[-1][2]), k, a))
res = []
for f, k, a in rows:
    t = {n: [] for n, _, _ in bins}
    ok = True
    for r in range(reps):
        for i in range(len(bins)):
            n, b, root = bins[(i + r) % len(bins)]
            if not os.path.exists(os.path.join(root, f)):
                ok = False
                continue
            t0 = time.perf_counter()
            p = subprocess.run([b, "compile", f, "--kernel", k, "--arch", a, "--no-cache", "-o", "/dev/null"], cwd=root, capture_output=True)
            t[n].append((time.perf_counter() - t0) * 1e3)
            ok &= p.returncode == 0
    if not ok:
        continue
    row = {"kernel": k, "target": a}
    for n, v in t.items():
        row[f"{n}_best_ms"], row[f"{n}_median_ms"] = min(v), statistics.median(v)
    res.append(row)
    print(k, a, " ".join(f"{n} {row[n + '_best_ms']:.0f}/{row[n + '_median_ms']:.0f}" for n, _, _ in bins), flush=True)
json.dump(res, open(out, "w"), indent=1)
for n, _, _ in bins:
    best = [r[f"{n}_best_ms"] for r in res]
    print(f"{n}: {len(res)} compiles, median of best {statistics.median(best):.1f} ms, sum {sum(best) / 1e3:.2f} s, "
          f"<= 50 ms {sum(b <= 50 for b in best)}, <= 300 ms {sum(b <= 300 for b in best)}, slowest {max(best):.0f} ms")
