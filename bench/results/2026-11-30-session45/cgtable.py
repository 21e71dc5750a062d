#!/usr/bin/env python3
"""Markdown table of callgrind counts (lines `kernel target count` from cgall.sh), one
column per file, the last as a ratio to the first. Usage: cgtable.py NAME=FILE ..."""
import statistics, sys
cols = [a.split("=", 1) for a in sys.argv[1:]]
data = []
for _, f in cols:
    d = {}
    for l in open(f):
        k, a, n = l.split()
        d[(k, a)] = None if n == "fail" else int(n)
    data.append(d)
keys = sorted(set().union(*data), key=lambda x: (x[0], ["sm_90a", "sm_103a", "sm_121a"].index(x[1])))
print("| kernel | target | " + " | ".join(f"{n} (M)" for n, _ in cols) + f" | {cols[-1][0]} / {cols[0][0]} |")
print("|---|---|" + "---:|" * (len(cols) + 1))
ratios = []
for k in keys:
    v = [d.get(k) for d in data]
    if any(x is None for x in v):
        print(f"| {k[0]} | {k[1]} | " + " | ".join("—" if x is None else f"{x / 1e6:.0f}" for x in v) + " | — |")
        continue
    r = v[-1] / v[0]
    ratios.append((r, k, v))
    print(f"| {k[0]} | {k[1]} | " + " | ".join(f"{x / 1e6:.0f}" for x in v) + f" | {r:.2f} |")
print()
for i, (n, _) in enumerate(cols):
    xs = [v[i] for _, _, v in ratios]
    print(f"- {n}: {len(xs)} compiles, sum {sum(xs) / 1e9:.2f} G instructions, median {statistics.median(xs) / 1e6:.0f} M, "
          f"largest {max(xs) / 1e6:.0f} M ({max(ratios, key=lambda t: t[2][i])[1][0]} {max(ratios, key=lambda t: t[2][i])[1][1]}), "
          f"at or under 115 M: {sum(x <= 115e6 for x in xs)}")
rs = sorted(r for r, _, _ in ratios)
print(f"- {cols[-1][0]} / {cols[0][0]}: median {statistics.median(rs):.2f}, range {rs[0]:.2f}–{rs[-1]:.2f}; "
      f"{sum(r < 1 for r in rs)} of {len(rs)} fewer")
