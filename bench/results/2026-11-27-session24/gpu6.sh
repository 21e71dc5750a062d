#!/usr/bin/env bash
# Session 24, call 6: the two kernels whose PTX a smaller SLP scheduling budget changes
# (LLVM's -slp-schedule-budget=2000 against its default 100000; a tilec built to pass
# TILEC_LLVM_ARGS to LLVM, each setting with a cache of its own): gelu as sm_121a compiles it
# (--emulate sm_121a) and acc_bias_rope_kv_append on sm_90a, checked and timed, two rounds.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec_exp.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
for round in 1 2; do
for b in default 2000; do
  if [ $b = default ]; then A=""; else A="-slp-schedule-budget=2000"; fi
  export TILEC_LLVM_ARGS="$A" TILEC_CACHE_DIR=/tmp/cache-$b
  timeout 100 /tmp/tilec bench gelu --emulate sm_121a --json $R/gelu-$b-$round.json --md $R/gelu-$b-$round.md > $R/gelu-$b-$round.log 2>&1; save
  timeout 100 /tmp/tilec bench acc_bias_rope_kv_append --json $R/rope-$b-$round.json --md $R/rope-$b-$round.md > $R/rope-$b-$round.log 2>&1; save
done
done
for f in $R/*.json; do python3 -c "
import json,sys
d=json.load(open('$f'))
print('$f'.split('/')[-1], [(r['shape'], round(r['median_ms'],4)) for r in d['rows']])
"; done
