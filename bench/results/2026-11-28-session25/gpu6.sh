#!/bin/bash
# Session 25, call 6: the DeepSeek-V2-Lite decoder (4 layers: the dense one and three MoE,
# batch 16, prompt 512, 30 new tokens; its dense and shared-expert gate/up products are
# matmul_swiglu) with the gate/up prefetch at its default (8) and off (0), interleaved.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/deepseek_v2.xz > /tmp/deepseek_v2 && chmod +x /tmp/deepseek_v2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 240 python3 examples/deepseek_v2/reference.py --out /tmp/ds --layers 4 --batch 16 --prompt-len 512 --new-tokens 30 > $R/reference.log 2>&1; save
run() { name=$1; shift; timeout 120 "$@" --weights /tmp/ds --json $R/$name.json > $R/$name.txt 2>&1; save; }
run p8-1 /tmp/deepseek_v2
run p0-1 /tmp/deepseek_v2 --prefetch 0
run p8-2 /tmp/deepseek_v2
run p0-2 /tmp/deepseek_v2 --prefetch 0
for f in $R/p*.txt; do echo "$(basename $f) $(grep -h 'tilec (graph)' $f | awk -F'|' '{print $5}') $(grep -h 'tilec (launches)' $f | awk -F'|' '{print $5}') $(grep -h 'logits:' $f)"; done
