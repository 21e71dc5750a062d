#!/bin/bash
# Session 30, calls 3-5 (NVIDIA H200): global addresses from the thread's first offset in
# loops (issue 34). `bash .carry/gpu.sh LABEL [KERNELS to check]`: the carried binary's
# timing of the kernels whose sm_90a PTX changed (the quick cases), twice; first the checks
# of KERNELS if given. (Call 2 ran the whole library's check, 367 passes up to fmha_step5
# in its 420 s: the rest are checked here.)
L=$1; shift; R=/tmp/r30-$L; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r30-$L; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
if [ $# -gt 0 ]; then
  timeout 240 $T check "$@" --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
fi
for i in 1 2; do
  timeout 100 $T bench mla_decode paged_attention_decode rmsnorm_persistent matmul_fp8_blockwise softmax_online --quick --reps 200 --json $R/bench-$i.json > $R/bench-$i.txt 2>&1; save
  timeout 40 $T bench moe_align --shapes 4096x64x6:i32,65536x64x6:i32 --reps 200 --json $R/bench-moe-$i.json > $R/bench-moe-$i.txt 2>&1; save
done
tail -n 3 $R/check.txt 2>/dev/null; grep -E "fail|FAIL" $R/check.txt | head
grep -h "^| [a-z]" $R/bench-*.txt | grep -v "^| kernel"
