#!/bin/bash
# Session 34, call 1 (NVIDIA H200): `noundef` on the pointer operands of every call and on
# the kernel's parameters (issue 34: straight-line strength reduction's poison walks were a
# sixth of mla_decode's compile). Check every kernel whose sm_90a PTX changed (TMA and the
# cp.async rings), then time old (TILEC_NO_NOUNDEF=1: the previous PTX byte for byte) and
# new, alternated, each with its own compile cache.
R=/tmp/r34a; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r34a; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
K="fmha mla_decode mla attention_decode_grouped paged_attention_decode group_gemm group_gemm_aligned fmha_fp8 mla_fp8 matmul_fp8_blockwise matmul_fp8_rowwise matmul_splitk moe_combine moe_permute quant_fp4 acc_bias_rope_kv_append rope rope_kv_append row_max transpose embedding lang_atomics lang_bits lang_dtypes lang_fp4 lang_ints lang_math lang_scan"
export TILEC_CACHE_DIR=/tmp/cache-new
timeout 330 $T check $K --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
timeout 100 $T check fmha mla_decode mla group_gemm paged_attention_decode --no-tma --md $R/check-notma.md --json $R/check-notma.json > $R/check-notma.txt 2>&1; echo "rc=$?" >> $R/check-notma.txt; save
tail -n 3 $R/check.txt $R/check-notma.txt; grep -iE "fail|mismatch" $R/check*.txt | head
