#!/bin/bash
# Session 43, call 2 (NVIDIA H200): the new binary's checks of every kernel whose PTX changed
# (quant_fp4, quant_mxfp8, moe_align, moe_permute) and of the library's other memory-bound
# kernels with reshapes, then quant_fp4 and quant_mxfp8 timed with the old binary and
# library (call 1) and the new ones alternated, old-new-new-old, twice.
R=/tmp/r43; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r43; }
xz -dc ${C:-.carry}/tilec.xz > /tmp/tilec-new && chmod +x /tmp/tilec-new
[ -x /tmp/tilec-old ] || { echo "no old binary: the machine went cold"; }
[ -n "$SKIP_CHECK" ] || timeout 240 /tmp/tilec-new check quant_fp4 quant_mxfp8 moe_align moe_permute moe_combine lang_fp4 --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
for k in quant_fp4 quant_mxfp8; do
  for i in 1 2; do
    for v in old new new old; do
      [ -x /tmp/tilec-$v ] || continue
      d=kernels; [ $v = old ] && d=/tmp/kold
      timeout 60 /tmp/tilec-$v bench $k --kernels-dir $d --quick --reps 200 --json $R/bench-$k-$v-$i-$RANDOM.json > $R/bench-$k-$v-$i.$RANDOM.txt 2>&1; save
    done
  done
done
[ -f $R/check.txt ] && tail -n 4 $R/check.txt
for f in $R/bench-*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel"; done
