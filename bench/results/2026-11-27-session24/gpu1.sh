#!/bin/bash
# Session 24, call 1: the Qwen2-7B decoder (28 layers, batch 16, prompt 512, 50 new tokens,
# graph replay) with programmatic dependent launch off (the default), on (TILEC_PDL=1: the
# split-K and gate/up products issue their weights' first TMA copies before
# griddepcontrol.wait, `tile-grid-dependency`), and on without that pass (every kernel waits
# first thing, as before this session). Interleaved, twice each for the first two.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
timeout 150 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; save
run() { name=$1; shift; timeout 100 env "$@" --weights /tmp/q2 --json $R/$name.json > $R/$name.txt 2>&1; save; }
run off-1 TILEC_PDL=0 /tmp/qwen2
run pdl-1 TILEC_PDL=1 /tmp/qwen2
run pdl-nogd-1 TILEC_PDL=1 /tmp/qwen2 --disable-pass tile-grid-dependency
run off-2 TILEC_PDL=0 /tmp/qwen2
run pdl-2 TILEC_PDL=1 /tmp/qwen2
grep -h "decode step ms\|tilec (graph)\|tilec (launches)\|copy floor\|logits:" $R/*.txt
