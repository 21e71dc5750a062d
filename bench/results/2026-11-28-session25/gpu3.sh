#!/bin/bash
# Session 25, call 3: the same with per-thread (load/store unit) L2
# prefetch before griddepcontrol.wait (PREFETCH depths split-K,gate/up), against none.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 150 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; save
run() { name=$1; shift; timeout 100 "$@" --weights /tmp/q2 --json $R/$name.json > $R/$name.txt 2>&1; save; }
run p0-1 /tmp/qwen2 --prefetch 0,0
run pd-1 /tmp/qwen2
run p0-2 /tmp/qwen2 --prefetch 0,0
run pd-2 /tmp/qwen2
run p64-8 /tmp/qwen2 --prefetch 64,8
run p0-3 /tmp/qwen2 --prefetch 0,0
run pd-3 /tmp/qwen2
for f in $R/p*.txt; do echo "== $f"; grep -h "prefetch depths\|tilec (graph)\|tilec (launches)\|copy floor\|logits:\|qkv proj\|o proj\|down proj\|gate-up" $f; done
