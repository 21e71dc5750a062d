#!/bin/bash
# Session 21, call 6: matmul_swiglu computed transposed (wgmma m64n16, TMA rings) — checked,
# then timed against the kernel before (same binary, the old kernel file via --kernels-dir)
# on Qwen2-7B's and DeepSeek-V2-Lite's decode shapes, twice, beside cuBLAS.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
timeout 150 /tmp/tilec check matmul_swiglu --md $R/check.md > $R/check.log 2>&1; save
timeout 150 /tmp/tilec check --graph matmul_swiglu --md $R/check_graph.md > $R/check_graph.log 2>&1; save
S=16x18944x3584:f16,1x18944x3584:f16,16x10944x2048:f16,16x1408x2048:bf16
for i in 1 2; do
timeout 120 /tmp/tilec bench matmul_swiglu --shapes $S --md $R/new$i.md > $R/new$i.log 2>&1; save
timeout 120 /tmp/tilec bench matmul_swiglu --kernels-dir .carry/kold --shapes $S --md $R/old$i.md > $R/old$i.log 2>&1; save
done
timeout 90 python3 .carry/peer_gu.py > $R/peer.json 2> $R/peer.err; save
