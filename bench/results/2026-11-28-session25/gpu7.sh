#!/bin/bash
# Session 25, call 7: the Qwen2-7B decode step with decode attention's key/value tiles
# prefetched into L2 before its wait (attention_decode_grouped PREFETCH 5, `seq_lens`
# independent) against none (--attention-prefetch 0), interleaved.
R=/tmp/r7; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r7; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 150 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; save
run() { name=$1; shift; timeout 100 "$@" --weights /tmp/q2 --json $R/$name.json > $R/$name.txt 2>&1; save; }
for r in 1 2 3; do run a5-$r /tmp/qwen2; run a0-$r /tmp/qwen2 --attention-prefetch 0; done
for f in $R/a*.txt; do echo "$(basename $f) $(grep -h 'tilec (graph)' $f | awk -F'|' '{print $5}') $(grep -h 'tilec (launches)' $f | awk -F'|' '{print $5}') $(grep -h '| attention |' $f) $(grep -c 'every step within the bound' $f)"; done
