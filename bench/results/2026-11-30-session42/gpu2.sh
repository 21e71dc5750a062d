#!/bin/bash
# Session 42, call 2 (NVIDIA H200): the new binary's checks of every kernel whose sm_90a PTX
# changed (quant_fp4, lang_fp4, lang_bits), then quant_fp4 timed with the old binary (call 1)
# and the new one alternated, old-new-new-old, twice.
R=/tmp/r42; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r42; }
xz -dc .carry/tilec.xz > /tmp/tilec-new && chmod +x /tmp/tilec-new
[ -x /tmp/tilec-old ] || { echo "no old binary: the machine went cold"; }
timeout 200 /tmp/tilec-new check quant_fp4 lang_fp4 lang_bits --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
for i in 1 2; do
  for v in old new new old; do
    [ -x /tmp/tilec-$v ] || continue
    timeout 60 /tmp/tilec-$v bench quant_fp4 --quick --reps 200 --json $R/bench-$v-$i-$RANDOM.json > $R/bench-$v-$i.$v.$RANDOM.txt 2>&1; save
  done
done
tail -n 3 $R/check.txt
for f in $R/bench-*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel"; done
