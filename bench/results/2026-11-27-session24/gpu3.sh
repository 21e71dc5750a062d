#!/bin/bash
# Session 24, call 3: the committed Qwen2-7B decoder (28 layers, batch 16, prompt 512, 50 new
# tokens) with programmatic dependent launch at its new default (on) and off (TILEC_PDL=0),
# interleaved, twice each; every run times the graph replay and the launches one by one.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
timeout 150 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; save
run() { name=$1; shift; timeout 100 env "$@" --weights /tmp/q2 --json $R/$name.json > $R/$name.txt 2>&1; save; }
run on-1 /tmp/qwen2
run off-1 TILEC_PDL=0 /tmp/qwen2
run on-2 /tmp/qwen2
run off-2 TILEC_PDL=0 /tmp/qwen2
for f in on-1 off-1 on-2 off-2; do echo "$f: $(grep -h 'tilec (graph)\|tilec (launches)\|logits:' $R/$f.txt | tr '\n' ' ')"; done
