#!/bin/bash
# Session 33, call 1 (NVIDIA H200): the arg-reductions' combine in fewer ops (issue 34).
# Check argmax and the new lang_argreduce (argmin, i32, all three combine paths) with the new
# binary (c2), then time argmax with the session-start binary (c1) and the new one, alternated
# three times in both orders.
R=/tmp/r33a; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r33a; }
xz -dc .carry/tilec.xz > /tmp/tilec.c2 && xz -dc .carry/tilec-c1.xz > /tmp/tilec.c1 && chmod +x /tmp/tilec.c1 /tmp/tilec.c2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
timeout 120 /tmp/tilec.c2 check argmax lang_argreduce --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
S=1x152064:f16,16x152064:f16,64x152064:f32,256x32000:bf16
for i in 1 2 3; do
  for v in $( [ $((i % 2)) = 1 ] && echo "c1 c2" || echo "c2 c1" ); do
    timeout 60 /tmp/tilec.$v bench argmax --shapes $S --reps 500 --json $R/argmax-$v-$i.json > $R/argmax-$v-$i.txt 2>&1; save
  done
done
tail -n 3 $R/check.txt; grep -iE "fail|mismatch" $R/check.txt | head
for f in $R/argmax-*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6; done
