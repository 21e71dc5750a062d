#!/usr/bin/env python3
"""Markdown table of `tilec bench --json` runs named bench-K-old-….json / bench-K-new-….json
under the folders given: per (kernel, shape, dtype) every old and new median, and new/old of
their means. Usage: abtable.py DIR..."""
import collections, glob, json, statistics, sys
rows = collections.defaultdict(lambda: {"old": [], "new": []})
for d in sys.argv[1:]:
    for f in sorted(glob.glob(d + "/bench-*.json")):
        v = "old" if "-old-" in f else "new"
        j = json.load(open(f))
        for r in j["rows"] if isinstance(j, dict) else j:
            rows[(r["kernel"], r["shape"], r["dtype"])][v].append(r["median_ms"])
print("| kernel | shape | dtype | old ms | new ms | new / old |")
print("|---|---|---|---|---|---:|")
for (k, s, t), v in sorted(rows.items()):
    if not v["old"] or not v["new"]:
        continue
    r = statistics.mean(v["new"]) / statistics.mean(v["old"])
    f = lambda xs: " / ".join(f"{x:.4f}" for x in xs)
    print(f"| {k} | {s} | {t} | {f(v['old'])} | {f(v['new'])} | {r:.3f} |")
