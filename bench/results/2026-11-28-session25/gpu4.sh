#!/bin/bash
# Session 25, call 4: the prefetch depths (split-K, gate/up) of the Qwen2-7B decode step,
# graph replay, the committed binary of call 3 (per-thread L2 prefetches).
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 150 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; save
run() { name=$1; shift; timeout 100 "$@" --weights /tmp/q2 --json $R/$name.json > $R/$name.txt 2>&1; save; }
for round in 1 2; do
  for p in 0,0 16,8 8,8 16,0 0,8 32,8 16,16 24,4; do run p${p/,/-}-$round /tmp/qwen2 --prefetch $p; done
done
for f in $R/p*.txt; do echo "$(basename $f) $(grep -h 'tilec (graph)' $f | awk -F'|' '{print $5}') $(grep -h 'tilec (launches)' $f | awk -F'|' '{print $5}') $(grep -c 'every step within the bound' $f)"; done
