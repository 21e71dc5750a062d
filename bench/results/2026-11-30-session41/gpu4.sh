#!/bin/bash
# Session 41, call 4 (NVIDIA H200, the session's last device minutes): the two other changed
# kernels with bench cases, old (vector-lanes=0) then new.
R=/tmp/r41d; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r41d; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
OLD="tile-to-llvm{vector-lanes=0}"
for i in 1 2; do
  for k in softmax matmul_swiglu; do
    for v in old new; do
      if [ $v = old ]; then P=(--pass-option "$OLD"); else P=(); fi
      timeout 30 $T bench $k --quick --reps 100 "${P[@]}" --json $R/$k-$v-$i.json > $R/$k-$v-$i.txt 2>&1; save
    done
  done
done
for f in $R/*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel"; done
