#!/bin/bash
# Session 35, call 1 (H200): straight-line strength reduction left out of NVPTX code
# generation (TILEC_XLLVM=-opt-disable=slsr). Check every library spec whose sm_90a PTX
# changes, with the new PTX.
R=/tmp/r35a; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r35a; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
K="attention_decode_grouped bmm fmha fmha_fp8 matmul_fp8_blockwise matmul_fp8_rowwise matmul_splitk mla mla_decode mla_fp8 moe_align moe_combine moe_permute moe_route paged_attention_decode acc_bias_rope_kv_append rope_kv_append rope topk_merge topk_partial fmha_step2_mma fmha_step3_exp2 fmha_step4_load_order lang_atomics lang_bits lang_ints lang_masked lang_math lang_scan"
export TILEC_CACHE_DIR=/tmp/cache-new TILEC_XLLVM=-opt-disable=slsr
timeout 400 $T check $K --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
tail -n 3 $R/check.txt; grep -ciE "fail|mismatch" $R/check.txt
