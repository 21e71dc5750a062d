#!/bin/bash
# Session 41, call 3 (NVIDIA H200): one kernel a bench (a bench of five memory-bound kernels
# outlasted 85 s in call 2, checks included), old (vector-lanes=0) then new, twice.
R=/tmp/r41c; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r41c; }
[ -x /tmp/tilec ] || { xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec; }
T=/tmp/tilec
OLD="tile-to-llvm{vector-lanes=0}"
for i in 1 2; do
  for k in gelu silu_mul swiglu softmax_online; do
    for v in old new; do
      if [ $v = old ]; then P=(--pass-option "$OLD"); else P=(); fi
      timeout 40 $T bench $k --quick --reps 100 "${P[@]}" --json $R/$k-$v-$i.json > $R/$k-$v-$i.txt 2>&1; save
    done
  done
done
for f in $R/*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel"; done
