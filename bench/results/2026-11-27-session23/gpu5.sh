#!/bin/bash
# Session 23, call 5: the DeepSeek-V2-Lite decoder (4 layers: the dense one and three MoE,
# batch 16, prompt 512, 30 new tokens, graph replay) with mla_decode's split partials in f16:
# its decode attention splits each sequence's 512-561 cached keys into 5 chunks, so every
# step goes through the combine; logits against transformers at every step.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/deepseek_v2.xz > /tmp/deepseek_v2 && chmod +x /tmp/deepseek_v2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
timeout 240 python3 examples/deepseek_v2/reference.py --out /tmp/ds --layers 4 --batch 16 --prompt-len 512 --new-tokens 30 > $R/reference.log 2>&1; save
timeout 150 /tmp/deepseek_v2 --weights /tmp/ds --json $R/deepseek_v2.json > $R/run.txt 2>&1; save
