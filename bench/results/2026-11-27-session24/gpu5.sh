#!/bin/bash
# Session 24, call 5: the DeepSeek-V2-Lite decoder (4 layers: the dense one and three MoE,
# batch 16, prompt 512, 30 new tokens; its dense, shared-expert and router products are
# matmul_splitk / matmul_swiglu) with programmatic launch at its new default (on), then off.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/deepseek_v2.xz > /tmp/deepseek_v2 && chmod +x /tmp/deepseek_v2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
timeout 240 python3 examples/deepseek_v2/reference.py --out /tmp/ds --layers 4 --batch 16 --prompt-len 512 --new-tokens 30 > $R/reference.log 2>&1; save
timeout 150 /tmp/deepseek_v2 --weights /tmp/ds --json $R/on.json > $R/on.txt 2>&1; save
timeout 150 env TILEC_PDL=0 /tmp/deepseek_v2 --weights /tmp/ds --json $R/off.json > $R/off.txt 2>&1; save
for f in on off; do echo "== $f"; tail -n 12 $R/$f.txt; done
