#!/bin/bash
# Session 23, call 4: the Qwen2-7B decoder (28 layers, batch 16, prompt 512, 50 new tokens,
# graph replay) on this session's kernels (decode attention normalised by one reciprocal a row), split-K
# factors at their defaults (4, 4, 4).
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
timeout 120 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; save
timeout 100 /tmp/qwen2 --weights /tmp/q2 --json $R/qwen2.json > $R/qwen2.txt 2>&1; save
timeout 100 /tmp/qwen2 --weights /tmp/q2 --json $R/qwen2-2.json > $R/qwen2-2.txt 2>&1; save
