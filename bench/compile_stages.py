#!/usr/bin/env python3
"""Cold compile time of every library kernel for every target, by stage, with the time the
process spends outside the stages and the IR's size at each stage (issue 34, item 1).

Usage: python3 bench/compile_stages.py TILEC OUT_DIR [--reps N]

For each kernel of kernels/*.tile and each of sm_90a, sm_103a, sm_121a: N processes of
`tilec compile FILE --kernel K --arch A --no-cache -T -o /dev/null` (best of N by total), the
`time:` lines grouped into frontend, MLIR context + verify, the tile-level passes, tile-to-llvm,
the upstream conversions, translation to LLVM IR and LLVM O3 + NVPTX; the process's wall time
and, as "outside", wall minus the stages' total (process start, the binary paging in, argument
parsing, writing). Then one `--emit` per stage for its size in lines (`tile`, `tilegpu`,
`nvgpu`, `ptx`). Writes compile-stages.json and table.md (a summary and the table) into OUT_DIR.
"""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

TARGETS = ["sm_90a", "sm_103a", "sm_121a"]
GROUPS = [
    ("frontend", lambda w: w.startswith("frontend")),
    ("mlir", lambda w: w.startswith("MLIR context")),
    ("tile passes", lambda w: w.startswith("tile-") and not w.startswith("tile-to-llvm")),
    ("tile-to-llvm", lambda w: w.startswith("tile-to-llvm")),
    ("upstream", lambda w: w.split("{")[0] in ("convert-nvgpu-to-nvvm", "convert-arith-to-llvm", "reconcile-unrealized-casts")),
    ("to LLVM IR", lambda w: w.startswith("translate to LLVM IR")),
    ("LLVM + NVPTX", lambda w: w.startswith("LLVM O")),
]


def kernels(root):
    out = []
    for f in sorted(Path(root, "kernels").glob("*.tile")):
        for m in re.finditer(r"^kernel\s+([A-Za-z_][A-Za-z_0-9]*)", f.read_text(), re.M):
            out.append((str(f), m.group(1)))
    return out


def timed(tilec, f, k, arch):
    t0 = time.perf_counter()
    p = subprocess.run([tilec, "compile", f, "--kernel", k, "--arch", arch, "--no-cache", "-T", "-o", "/dev/null"], capture_output=True, text=True)
    wall = (time.perf_counter() - t0) * 1e3
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[0] if p.stderr.strip() else "does not compile"}
    stages = {g: 0.0 for g, _ in GROUPS}
    total = 0.0
    for m in re.finditer(r"^time:\s+([\d.]+) ms  (.*)$", p.stderr, re.M):
        ms, what = float(m.group(1)), m.group(2)
        if what == "total":
            total = ms
            continue
        for g, match in GROUPS:
            if match(what):
                stages[g] += ms
                break
    return {"stages_ms": stages, "total_ms": total, "wall_ms": wall, "outside_ms": wall - total}


def lines(tilec, f, k, arch, stage):
    p = subprocess.run([tilec, "compile", f, "--kernel", k, "--arch", arch, "--no-cache", "--emit", stage, "-o", "-"], capture_output=True, text=True)
    return p.stdout.count("\n") if p.returncode == 0 else None


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    tilec, out = sys.argv[1], Path(sys.argv[2])
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 3
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for f, k in kernels("."):
        for arch in TARGETS:
            runs = [timed(tilec, f, k, arch) for _ in range(reps)]
            if "error" in runs[0]:
                rows.append({"kernel": k, "target": arch, "error": runs[0]["error"]})
                continue
            best = min(runs, key=lambda r: r["total_ms"])
            best["lines"] = {s: lines(tilec, f, k, arch, s) for s in ("tile", "tilegpu", "nvgpu", "ptx")}
            rows.append({"kernel": k, "target": arch, **best})
            print(f"{k:28} {arch:8} {best['total_ms']:8.1f} ms in the stages, {best['wall_ms']:8.1f} ms wall", flush=True)
    (out / "compile-stages.json").write_text(json.dumps(rows, indent=1))
    head = "| kernel | target | " + " | ".join(g for g, _ in GROUPS) + " | stages ms | wall ms | outside ms | lines tile / tilegpu / nvgpu / ptx |"
    md = [head, "|" + "---|" * (len(GROUPS) + 6)]
    for r in rows:
        if "error" in r:
            md.append(f"| {r['kernel']} | {r['target']} | {r['error']} |")
            continue
        s = r["stages_ms"]
        ln = " / ".join(str(r["lines"][x]) for x in ("tile", "tilegpu", "nvgpu", "ptx"))
        md.append(f"| {r['kernel']} | {r['target']} | " + " | ".join(f"{s[g]:.1f}" for g, _ in GROUPS)
                  + f" | **{r['total_ms']:.0f}** | {r['wall_ms']:.0f} | {r['outside_ms']:.0f} | {ln} |")
    ok = [r for r in rows if "error" not in r]
    summary = []
    for arch in TARGETS:
        rs = [r for r in ok if r["target"] == arch]
        if rs:
            worst = max(rs, key=lambda r: r["wall_ms"])
            summary.append(f"- {arch}: {len(rs)} kernels, median wall {sorted(r['wall_ms'] for r in rs)[len(rs)//2]:.0f} ms, slowest {worst['kernel']} {worst['wall_ms']:.0f} ms; {sum(r['wall_ms'] <= 300 for r in rs)} at or under 300 ms")
    (out / "table.md").write_text("\n".join(summary) + "\n\n" + "\n".join(md) + "\n")


if __name__ == "__main__":
    main()
