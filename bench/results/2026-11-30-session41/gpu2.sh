#!/bin/bash
# Session 41, call 2 (NVIDIA H200): the checks call 1 did not reach (its 240 s ran out in
# fmha_step5_latency: 152 passed, 0 failed), then the memory-bound kernels whose sm_90a PTX
# changed, old (vector-lanes=0) and new, interleaved twice (call 1's 100 s a bench ran out in
# fmha_fp8's check).
R=/tmp/r41b; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r41b; }
[ -x /tmp/tilec ] || { xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec; }
T=/tmp/tilec
timeout 150 $T check mla fmha_step6_occupancy fmha_step7_approx_div --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
K="gelu softmax softmax_online silu_mul swiglu rope_table acc_swiglu moe_route"
OLD="tile-to-llvm{vector-lanes=0}"
for i in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=(--pass-option "$OLD"); else P=(); fi
    timeout 85 $T bench $K --quick --reps 100 "${P[@]}" --json $R/bench-$v-$i.json > $R/bench-$v-$i.txt 2>&1; save
  done
done
tail -n 2 $R/check.txt
for f in $R/bench-*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel"; done
