#!/usr/bin/env python3
"""Joins tilec's bench JSON with anchors.py's JSON (same GPU run) into one markdown table.

    python3 bench/join.py OUT_DIR  ->  markdown on stdout

For each tilec row, the peers of the same kernel and config are listed with the ratio
tilec / best peer, and tilec / copy bandwidth for memory-bound kernels.
"""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
bench = json.loads((out / "bench.json").read_text())
anchors = json.loads((out / "anchors.json").read_text()) if (out / "anchors.json").exists() else {"results": []}
check = json.loads((out / "check.json").read_text()) if (out / "check.json").exists() else {"rows": []}

peer_copy = next((r["gbps"] for r in anchors["results"] if r["kernel"] == "copy"), None)
print(f"## {bench['device']} — {bench['date']}\n")
print(f"copy bandwidth: tilec-measured {bench['copy_gbps']:.0f} GB/s"
      + (f", torch-measured {peer_copy:.0f} GB/s" if peer_copy else "") + "\n")
passed = sum(1 for r in check["rows"] if r["pass"])
print(f"tilec check: {passed} passed, {len(check['rows']) - passed} failed\n")
print("| kernel | config | tilec GB/s | tilec ms | best peer | peer GB/s | tilec / best peer | tilec / copy |")
print("|---|---|---|---|---|---|---|---|")
for r in bench["rows"]:
    m, n = (int(x) for x in r["shape"].split()[0].split("x")[:2])
    cfg = f"M={m} N={n} {r['dtype']}"
    peers = [a for a in anchors["results"] if a["kernel"] == r["kernel"] and a["config"] == cfg and a["gbps"]]
    best = max(peers, key=lambda a: a["gbps"]) if peers else None
    ratio = f"{r['gbps'] / best['gbps']:.2f}" if best else "—"
    print(f"| {r['kernel']} | {r['shape']} {r['dtype']} | {r['gbps']:.0f} | {r['median_ms']:.4f} | "
          f"{best['provider'] if best else '—'} | {best['gbps'] if best else '—'} | {ratio} | {r['gbps'] / r['copy_gbps']:.2f} |")
for e in bench.get("errors", []):
    print(f"\nFAILED: {e}")
