#!/usr/bin/env bash
# Sets up (idempotent), builds tilec and runs the main job: compile kernels/fmha.tile for the
# DGX Spark (sm_121) — its verified `tile` stage, then PTX on the tensor cores, assembled by
# ptxas — and then kernels/softmax.tile.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
cargo build --release --locked -q -p tilec-cli
tilec=target/release/tilec
echo "== kernels/fmha.tile for sm_121: tile stage"
"$tilec" compile kernels/fmha.tile --arch sm_121 --emit tile -o out/fmha.sm_121a.tile.mlir
echo "wrote out/fmha.sm_121a.tile.mlir ($(wc -l < out/fmha.sm_121a.tile.mlir) lines, verified by MLIR)"
echo "== kernels/fmha.tile for sm_121: PTX"
# Tensor cores (mma.sync m16n8k16, ldmatrix from swizzled shared memory); ptxas checks it.
"$tilec" compile kernels/fmha.tile --arch sm_121 --report --ptxas -o out/fmha.sm_121a.ptx
echo "fmha lowered to out/fmha.sm_121a.ptx ($(grep -c 'mma.sync' out/fmha.sm_121a.ptx) mma.sync, $(grep -c 'ldmatrix' out/fmha.sm_121a.ptx) ldmatrix)"
echo "== kernels/softmax.tile for sm_121: PTX"
"$tilec" compile kernels/softmax.tile --arch sm_121 --report --ptxas -o out/softmax.sm_121a.ptx
