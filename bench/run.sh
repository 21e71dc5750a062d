#!/usr/bin/env bash
# One GPU run: `tilec check`, `tilec bench` and the peer baselines (anchors.py) side by side,
# then one joined table with ratios. Usage (from the repository root, on a machine with an
# NVIDIA GPU, PyTorch and Triton):
#   bash bench/run.sh [OUT_DIR]        (default bench/results/latest)
# TILEC (default target/release/tilec) and ANCHORS (default ../shared/bench/anchors.py)
# override the binary and the peer script; ANCHORS_ONLY (default membound) picks its parts.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/latest}
mkdir -p "$out"
tilec=${TILEC:-target/release/tilec}
anchors=${ANCHORS:-../shared/bench/anchors.py}
only=${ANCHORS_ONLY:-membound}
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/device.csv" 2>&1 || true
"$tilec" check --json "$out/check.json" --md "$out/check.md" || status=1
"$tilec" bench --json "$out/bench.json" --md "$out/bench.md" || status=1
PYTHONUNBUFFERED=1 python3 "$anchors" --only "$only" --out "$out/anchors.json" > "$out/anchors.md" || status=1
python3 bench/join.py "$out" > "$out/joined.md" || status=1
cat "$out/joined.md"
exit $status
