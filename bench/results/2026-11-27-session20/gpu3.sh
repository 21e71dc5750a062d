#!/bin/bash
# Session 20, calls 5-6: the decode kernels and grouped GEMM, whose conversions of index tiles
# no longer pass through shared memory (barriers: attention_decode_grouped 65 -> 50 on sm_90a,
# paged_attention_decode 69 -> 32) and group_gemm (179 -> 208 registers on sm_90a), timed with
# this session's binary (`new`) and the one before it (`old`, with its kernels) on the same
# warm machine. Usage: gpu3.sh new|old
B=$1; R=/tmp/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
KD=kernels; [ -d .carry/kold ] && KD=.carry/kold
save() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu_decode_$B.txt; save
for k in attention_decode_grouped paged_attention_decode group_gemm; do
  timeout 70 /tmp/tilec bench $k --quick --kernels-dir $KD --md $R/${k}_$B.md --json $R/${k}_$B.json > $R/${k}_$B.log 2>&1; save
done
