#!/usr/bin/env python3
"""Before/after by stage: two compile-stages.json (bench/compile_stages.py) side by side, per
kernel x target (ms, best of the runs), and the stages summed over the compiles both have.
Usage: stagediff.py BEFORE.json AFTER.json"""
import json, sys
b = {(r["kernel"], r["target"]): r for r in json.load(open(sys.argv[1])) if r.get("stages_ms")}
a = {(r["kernel"], r["target"]): r for r in json.load(open(sys.argv[2])) if r.get("stages_ms")}
stages = ["frontend", "mlir", "tile passes", "tile-to-llvm", "upstream", "to LLVM IR", "LLVM + NVPTX"]
keys = sorted(set(a) & set(b), key=lambda k: (k[0], ["sm_90a", "sm_103a", "sm_121a"].index(k[1])))
print("| kernel | target | " + " | ".join(stages) + " | outside | wall | nvgpu lines |")
print("|---|---|" + "---|" * (len(stages) + 3))
def st(r, s):
    return sum(v for k, v in r["stages_ms"].items() if k.startswith(s.split()[0]) or k == s) if s not in r["stages_ms"] else r["stages_ms"][s]
for k in keys:
    x, y = b[k], a[k]
    cells = [f"{x['stages_ms'].get(s, 0):.1f} → {y['stages_ms'].get(s, 0):.1f}" for s in stages]
    print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + f" | {x['outside_ms']:.0f} → {y['outside_ms']:.0f} | **{x['wall_ms']:.0f} → {y['wall_ms']:.0f}** | {x['lines']['nvgpu']} → {y['lines']['nvgpu']} |")
print()
tb = {s: sum(b[k]["stages_ms"].get(s, 0) for k in keys) for s in stages}
ta = {s: sum(a[k]["stages_ms"].get(s, 0) for k in keys) for s in stages}
ob, oa = sum(b[k]["outside_ms"] for k in keys), sum(a[k]["outside_ms"] for k in keys)
wb, wa = sum(b[k]["wall_ms"] for k in keys), sum(a[k]["wall_ms"] for k in keys)
print(f"Summed over the {len(keys)} compiles both have (seconds, before → after):")
print()
print("| stage | before | after | after / before |")
print("|---|---:|---:|---:|")
for s in stages:
    print(f"| {s} | {tb[s] / 1e3:.2f} | {ta[s] / 1e3:.2f} | {ta[s] / max(tb[s], 1e-9):.2f} |")
print(f"| outside the stages | {ob / 1e3:.2f} | {oa / 1e3:.2f} | {oa / ob:.2f} |")
print(f"| **wall** | **{wb / 1e3:.2f}** | **{wa / 1e3:.2f}** | **{wa / wb:.2f}** |")
