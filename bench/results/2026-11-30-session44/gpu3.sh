#!/bin/bash
# Session 44, call 3 (NVIDIA H200): one binary (5f4e7c7), two kernel libraries: the new
# one's O1 hints and the old one (.carry/kold: 2df0418's files, these kernels at O3).
# Checks of the newly hinted kernels, then each whose sm_90a code changed timed with the
# old library and the new one alternated, old-new-new-old, twice.
R=/tmp/r44b; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r44b; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 240 /tmp/tilec check rope rope_kv_append quant_fp4 rmsnorm acc_residual_rmsnorm quant_fp8_rowwise acc_bias acc_residual moe_combine bias_add residual_add --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
for ks in "rope -" "rope_kv_append 16x1x28x4x128x4096:f16" "quant_fp4 -" "rmsnorm -" "acc_residual_rmsnorm 8192x3584:bf16" "quant_fp8_rowwise -" "acc_bias 8192x4608:f16" "acc_residual 8192x4608:f16"; do
  set -- $ks; sh=(); [ "$2" != "-" ] && sh=(--shapes $2)
  for i in 1 2; do
    for v in old new new old; do
      d=kernels; [ $v = old ] && d=.carry/kold/kernels
      timeout 60 /tmp/tilec bench $1 "${sh[@]}" --kernels-dir $d --quick --reps 200 --json $R/bench-$1-$v-$i-$RANDOM.json > $R/bench-$1-$v-$i.$RANDOM.txt 2>&1; save
    done
  done
done
tail -n 3 $R/check.txt
for f in $R/bench-*.txt; do echo "== $(basename $f) $(grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-5)"; done
