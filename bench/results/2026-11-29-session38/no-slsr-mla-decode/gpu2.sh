#!/bin/bash
# Session 38, call 2 (H200): the emulated sm_121a timing of call 1, alternated
# old-new-new-old twice (call 1 had one pair, new before old).
R=/tmp/r38b; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r38b; }
for v in old new; do [ -x /tmp/tilec-$v ] || { xz -dc .carry/tilec-$v.xz > /tmp/tilec-$v && chmod +x /tmp/tilec-$v; }; done
S="--shapes 1x16x4096x512x64:f16,4x16x16384x512x64:f16,64x16x4096x512x64:f16 --reps 300"
run() { local v=$1 l=$2; shift 2; local d=kernels; [ $v = old ] && d=.carry/kold
  TILEC_CACHE_DIR=/tmp/cache-$v timeout 90 /tmp/tilec-$v bench mla_decode --kernels-dir $d "$@" --json $R/$l-$v.json > $R/$l-$v.txt 2>&1; echo "rc=$?" >> $R/$l-$v.txt; save; }
i=0
for v in old new new old old new new old; do i=$((i+1)); run $v e$i --emulate sm_121a $S; done
grep -H "| mla_decode" $R/e*.txt | cut -c1-110
