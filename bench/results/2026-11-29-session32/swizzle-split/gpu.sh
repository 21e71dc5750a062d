#!/bin/bash
# Session 32 (NVIDIA H200): swizzled shared-memory addresses as the thread's part plus a
# register constant (tile-to-llvm{swizzle-split}, issue 34). The kernels whose sm_90a PTX
# changed, checked with the new form (TMA and, --no-tma, the cp.async rings), then timed
# old (swizzle-split=false: the previous PTX byte for byte) and new, interleaved.
R=/tmp/r32; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r32; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
K="attention_decode_grouped bmm fmha fmha_fp8 group_gemm matmul matmul_fp8 matmul_fp8_blockwise matmul_fp8_rowwise mla mla_decode mla_fp8 paged_attention_decode fmha_step5_latency"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 240 $T check $K --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
timeout 150 $T check fmha fmha_fp8 group_gemm matmul matmul_fp8 mla mla_decode paged_attention_decode --no-tma --md $R/check-notma.md --json $R/check-notma.json > $R/check-notma.txt 2>&1; echo "rc=$?" >> $R/check-notma.txt; save
B="attention_decode_grouped fmha fmha_fp8 group_gemm matmul matmul_fp8_rowwise mla mla_decode mla_fp8 paged_attention_decode"
for i in 1 2; do
  for v in old new; do
    P=(--pass-option "tile-to-llvm{swizzle-split=$([ $v = old ] && echo false || echo true)}")
    timeout 100 $T bench $B --quick --reps 200 "${P[@]}" --json $R/bench-$v-$i.json > $R/bench-$v-$i.txt 2>&1; echo "rc=$?" >> $R/bench-$v-$i.txt; save
  done
done
tail -n 3 $R/check.txt $R/check-notma.txt; grep -iE "fail|mismatch" $R/check*.txt | head
for f in $R/bench-*.txt; do echo "== $f"; tail -1 $f; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -c1-150; done
