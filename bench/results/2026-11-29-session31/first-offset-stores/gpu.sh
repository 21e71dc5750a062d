#!/bin/bash
# Session 31 (NVIDIA H200): global loads/stores of 16 or more chunks a thread outside loops
# addressed from the thread's first offset (tile-to-llvm{first-offset-chunks=16}, issue 34).
# The kernels whose sm_90a PTX changed, checked with the new form, then timed old
# (first-offset-chunks=0, the previous form: same PTX as before) and new, interleaved twice.
R=/tmp/r31; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r31; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 200 $T check mla_decode group_gemm_aligned moe_permute --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
OLD="tile-to-llvm{first-offset-chunks=0}"
for i in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=(--pass-option "$OLD"); else P=(); fi
    timeout 90 $T bench mla_decode group_gemm_aligned --quick --reps 200 "${P[@]}" --json $R/bench-$v-$i.json > $R/bench-$v-$i.txt 2>&1; save
    timeout 40 $T bench moe_permute --shapes 16x64x6x2048:f16,4096x64x6x2048:f16 --reps 200 "${P[@]}" --json $R/bench-moe-$v-$i.json > $R/bench-moe-$v-$i.txt 2>&1; save
  done
done
tail -n 3 $R/check.txt; grep -E "fail|FAIL" $R/check.txt | head
for f in $R/bench-*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel"; done
