#!/bin/bash
# Session 38 (H200): mla_decode compiled without SLSR in code generation (new, its
# `strength_reduction = false` hint) against HEAD cced71c (old): check, then timing in the
# orders old-new-new-old, natively and under --emulate sm_121a.
R=/tmp/r38; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r38; }
for v in old new; do xz -dc .carry/tilec-$v.xz > /tmp/tilec-$v && chmod +x /tmp/tilec-$v; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt
timeout 170 /tmp/tilec-new check mla_decode --json $R/check.json --md $R/check.md > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
timeout 120 /tmp/tilec-new check mla_decode --emulate sm_121a --json $R/check121.json --md $R/check121.md > $R/check121.txt 2>&1; echo "rc=$?" >> $R/check121.txt; save
S="--shapes 1x16x4096x512x64:f16,4x16x16384x512x64:f16,64x16x4096x512x64:f16 --reps 300"
run() { # variant label args...
  local v=$1 l=$2; shift 2
  local d=kernels; [ $v = old ] && d=.carry/kold
  TILEC_CACHE_DIR=/tmp/cache-$v timeout 90 /tmp/tilec-$v bench mla_decode --kernels-dir $d "$@" --json $R/$l-$v.json > $R/$l-$v.txt 2>&1; echo "rc=$?" >> $R/$l-$v.txt; save
}
i=0
for v in old new new old; do i=$((i+1)); run $v s$i $S; done
i=0
for v in old new new old; do i=$((i+1)); run $v q$i --quick --reps 300; done
for v in old new; do run $v e121 --emulate sm_121a $S; done
for f in $R/*.txt; do echo "== $f $(tail -1 $f)"; done
grep -h "| mla_decode" $R/s*.txt $R/e121*.txt | cut -c1-150
