#!/bin/bash
# Session 21, call 12: the Qwen2-7B decoder with matmul_splitk three tiles ahead, at the split
# factors before (4, 4, 8) and with the down product at 4 splits (4, 4, 4).
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
timeout 120 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; save
timeout 100 /tmp/qwen2 --weights /tmp/q2 --splits 4,4,8 --json $R/s448.json > $R/s448.txt 2>&1; save
timeout 100 /tmp/qwen2 --weights /tmp/q2 --splits 4,4,4 --json $R/s444.json > $R/s444.txt 2>&1; save
