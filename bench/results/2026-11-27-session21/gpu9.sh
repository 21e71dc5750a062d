#!/bin/bash
# Session 21, call 9: the Qwen2-7B-shaped decoder (28 layers, batch 16, prompt 512, 50 new
# tokens) with matmul_swiglu and matmul_splitk computed transposed: decode step as a graph replay (issue 30: <= 5.75
# ms goal, 6.2 floor), logits against transformers at every step.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; nproc >> $R/gpu.txt; save
t0=$(date +%s); timeout 200 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; echo "reference: $(( $(date +%s) - t0 )) s" >> $R/reference.log; save
timeout 200 /tmp/qwen2 --weights /tmp/q2 --json $R/tilec-28-layers.json > $R/tilec-28-layers.txt 2>&1; echo "rc $?" >> $R/tilec-28-layers.txt; save
