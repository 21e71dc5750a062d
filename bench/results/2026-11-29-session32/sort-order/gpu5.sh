#!/bin/bash
# Session 32, call 6 (NVIDIA H200): the sort's float order as (ord b & ugt a,b) / (ord a &
# ult a,b) instead of the NaN chain (issue 34: 10-12 % fewer compile instructions for the
# sorting kernels). Check the sort kernels with the new binary, then time the binary before
# the change (c1) and after (c2), alternated three times.
R=/tmp/r32f; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r32f; }
xz -dc .carry/tilec.xz > /tmp/tilec.c2 && xz -dc .carry/tilec-c1.xz > /tmp/tilec.c1 && chmod +x /tmp/tilec.c1 /tmp/tilec.c2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
timeout 150 /tmp/tilec.c2 check topk_partial topk_merge moe_route lang_sort --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
for i in 1 2 3; do
  for v in c1 c2; do
    T=/tmp/tilec.$v
    timeout 40 $T bench topk_partial --shapes 1x152064:f16,16x152064:f16,64x152064:f16 --reps 300 --json $R/topk-$v-$i.json > $R/topk-$v-$i.txt 2>&1; save
    timeout 40 $T bench moe_route --shapes 16x64:f16,4096x64:f16 --reps 300 --json $R/route-$v-$i.json > $R/route-$v-$i.txt 2>&1; save
    timeout 40 $T bench topk_merge --shapes 16x64:f16,256x1024:f16 --reps 300 --json $R/merge-$v-$i.json > $R/merge-$v-$i.txt 2>&1; save
  done
done
tail -n 2 $R/check.txt; grep -iE "fail|mismatch" $R/check.txt | head
for f in $R/*-c*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6; done
