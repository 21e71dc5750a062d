#!/usr/bin/env bash
# One GPU run: the peer baselines (bench/peers.py), `tilec check` and `tilec bench`, side by side,
# joined into one table with ratios and one SVG plot per kernel class. From the repository
# root, on a machine with an NVIDIA GPU, PyTorch and Triton:
#   bash bench/run.sh [OUT_DIR]        (default bench/results/latest)
# TILEC (default target/release/tilec), PEERS_ONLY (the parts of bench/peers.py to run,
# default copy,membound), COMMIT (default `git rev-parse --short HEAD`) override.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/latest}
mkdir -p "$out"
tilec=${TILEC:-target/release/tilec}
only=${PEERS_ONLY:-copy,membound}
commit=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/device.csv" 2>&1 || true
PYTHONUNBUFFERED=1 python3 bench/peers.py --only "$only" --out "$out/peers.json" > "$out/peers.md" || status=1
"$tilec" check --json "$out/check.json" --md "$out/check.md" || status=1
"$tilec" bench --peers "$out/peers.json" --plot "$out" --commit "$commit" --json "$out/bench.json" --md "$out/bench.md" || status=1
exit $status
