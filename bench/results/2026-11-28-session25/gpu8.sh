#!/bin/bash
# Session 25, call 8: the committed Qwen2-7B decoder, the gate/up prefetch at its default (8)
# against none (--prefetch 0), interleaved three times, on another machine than calls 3-4.
R=/tmp/r8; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r8; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 150 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; save
run() { name=$1; shift; timeout 100 "$@" --weights /tmp/q2 --json $R/$name.json > $R/$name.txt 2>&1; save; }
for r in 1 2 3; do run p8-$r /tmp/qwen2; run p0-$r /tmp/qwen2 --prefetch 0; done
for f in $R/p*.txt; do echo "$(basename $f) $(grep -h 'tilec (graph)' $f | awk -F'|' '{print $5}') $(grep -h 'tilec (launches)' $f | awk -F'|' '{print $5}') $(grep -h 'gate-up' $f) $(grep -c 'every step within the bound' $f)"; done
