#!/bin/bash
# Session 32, call 5 (NVIDIA H200): swizzle-split now only for TMA-store epilogues and
# cp.async chunks (local_alloc left as before: decode kernels' sm_90a PTX is the old one).
# Check the kernels whose sm_90a PTX differs from the all-split binary's (fmha_fp8, mla_fp8)
# and mla; then old/new timing, interleaved twice, of the changed compute kernels.
R=/tmp/r32e; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r32e; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
timeout 150 $T check fmha_fp8 mla_fp8 mla --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
run() { # name timeout args...
  local n=$1 t=$2; shift 2
  for v in old new; do
    P=(--pass-option "tile-to-llvm{swizzle-split=$([ $v = old ] && echo false || echo true)}")
    timeout $t $T bench "$@" "${P[@]}" --json $R/$n-$v.json > $R/$n-$v.txt 2>&1; echo "rc=$?" >> $R/$n-$v.txt; save
  done
}
for i in 1 2; do
  run fp8-$i 45 fmha_fp8 --shapes 2x16x2048x128:f8e4m3 --reps 200
  run mla-$i 30 mla --shapes 2x16x2048x128x64:bf16 --reps 200
  run mlafp8-$i 30 mla_fp8 --shapes 2x16x2048x128x64:f8e4m3 --reps 200
  run gemm-$i 45 matmul_fp8_rowwise matmul_fp8_blockwise matmul_fp8 --shapes 2048x2048x2048:f8e4m3 --reps 200
  run bmm-$i 30 bmm --shapes 8x1024x1024x1024:f16 --reps 200
done
tail -n 3 $R/check.txt; grep -ciE ": pass" $R/check.txt; grep -iE "fail|mismatch" $R/check.txt | head
for f in $R/*-*.txt; do echo "== $f $(tail -1 $f)"; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6; done
