#!/bin/bash
# Session 45, call 6 (NVIDIA H200): the scan's warp steps with each register's scratch
# offset computed once and, for add and mul, no second combine (PTX changed: group_gemm,
# moe_align, lang_scan). Checks of the kernels that scan across warps, then group_gemm timed
# with the commit before (686550d, `old`) and the new binary alternated, old-new-new-old twice.
R=/tmp/r45s; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r45s; }
xz -dc .carry/tilec.xz > /tmp/tilec-new && chmod +x /tmp/tilec-new
xz -dc .carry/tilec-old.xz > /tmp/tilec-old && chmod +x /tmp/tilec-old
timeout 200 /tmp/tilec-new check lang_scan moe_align moe_permute group_gemm group_gemm_aligned --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
for i in 1 2; do
  for v in old new new old; do
    timeout 60 /tmp/tilec-$v bench group_gemm --quick --reps 200 --json $R/bench-group_gemm-$v-$i-$RANDOM.json > $R/bench-group_gemm-$v-$i.$RANDOM.txt 2>&1; save
  done
done
tail -n 3 $R/check.txt
for f in $R/bench-*.txt; do echo "== $(basename $f) $(grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6 | tr '\n' ';')"; done
