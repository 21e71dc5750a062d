#!/bin/bash
# Session 41 (NVIDIA H200): elementwise chains as vectors of 4 registers
# (tile-to-llvm{vector-lanes=4}, the new default; issue 34 item 2). The kernels whose sm_90a
# PTX changed checked with the new form, then timed old
# (vector-lanes=0: register by register, the PTX of d11e221 byte for byte) and new,
# interleaved twice.
R=/tmp/r41; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r41; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
K="gelu softmax softmax_online silu_mul swiglu acc_swiglu matmul_swiglu rope_table moe_route fmha fmha_fp8 mla mla_fp8"
C="$K lang_math fmha_step2_mma fmha_step3_exp2 fmha_step4_load_order fmha_step5_latency fmha_step6_occupancy fmha_step7_approx_div"
timeout 240 $T check $C --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
OLD="tile-to-llvm{vector-lanes=0}"
for i in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=(--pass-option "$OLD"); else P=(); fi
    timeout 100 $T bench $K --quick --reps 200 "${P[@]}" --json $R/bench-$v-$i.json > $R/bench-$v-$i.txt 2>&1; save
  done
done
tail -n 3 $R/check.txt; grep -iE "fail" $R/check.txt | head
for f in $R/bench-*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel"; done
