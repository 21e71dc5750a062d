#!/usr/bin/env bash
# Sets up (idempotent), builds tilec and runs the main job: compile the library's flagship
# kernel for the DGX Spark (sm_121). kernels/fmha.tile does not exist yet (its lowering needs
# mma layouts), so until then the main job compiles kernels/softmax.tile.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
kernel=kernels/fmha.tile
[ -f "$kernel" ] || kernel=kernels/softmax.tile
mkdir -p out
cargo run --release --locked -q -- compile "$kernel" --arch sm_121 --report --ptxas -o "out/$(basename "$kernel" .tile).sm_121a.ptx"
