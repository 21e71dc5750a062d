#!/bin/bash
# Session 45, call 7 (NVIDIA H200): a reduction across warps reads each row's partials at
# constant steps from the row's first slot (PTX changed: moe_combine only). Checks of the
# kernels that reduce across warps, then moe_combine timed with the commit before (d1c53f2,
# `old`) and the new binary alternated, old-new-new-old twice.
R=/tmp/r45r; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r45r; }
xz -dc .carry/tilec.xz > /tmp/tilec-new && chmod +x /tmp/tilec-new
xz -dc .carry/tilec-old.xz > /tmp/tilec-old && chmod +x /tmp/tilec-old
timeout 150 /tmp/tilec-new check moe_combine moe_align softmax rmsnorm argmax lang_argreduce --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
for s in 8192x6x2048:f16 16x6x2048:bf16; do
  for i in 1 2; do
    for v in old new new old; do
      timeout 40 /tmp/tilec-$v bench moe_combine --shapes $s --quick --reps 200 --json $R/bench-moe_combine-$v-$i-$RANDOM.json > $R/bench-moe_combine-$v-$i.$RANDOM.txt 2>&1; save
    done
  done
done
tail -n 3 $R/check.txt
for f in $R/bench-*.txt; do echo "== $(basename $f) $(grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6 | tr '\n' ';')"; done
