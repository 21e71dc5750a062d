#!/bin/bash
# Session 44, call 2 (NVIDIA H200): the new binary's checks of every kernel that sorts
# (lang_sort with -0.0 in its inputs, the new lang_sort_int, topk_partial, topk_merge,
# moe_route), then the three library sorts timed with the old binary (call 1) and the new one
# alternated, old-new-new-old, twice.
R=/tmp/r44; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r44; }
xz -dc ${C:-.carry2}/tilec.xz > /tmp/tilec-new && chmod +x /tmp/tilec-new
[ -x /tmp/tilec-old ] || { echo "no old binary: the machine went cold"; }
timeout 240 /tmp/tilec-new check lang_sort lang_sort_int topk_partial topk_merge moe_route --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
for ks in "topk_partial 16x152064:f16" "topk_merge 4096x1024:f16" "moe_route 8192x64:bf16"; do
  set -- $ks
  for i in 1 2; do
    for v in old new new old; do
      [ -x /tmp/tilec-$v ] || continue
      timeout 60 /tmp/tilec-$v bench $1 --shapes $2 --quick --reps 200 --json $R/bench-$1-$v-$i-$RANDOM.json > $R/bench-$1-$v-$i.$RANDOM.txt 2>&1; save
    done
  done
done
tail -n 12 $R/check.txt
for f in $R/bench-*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel"; done
