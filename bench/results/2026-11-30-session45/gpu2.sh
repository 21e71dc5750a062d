#!/bin/bash
# Session 45, calls 2 and 3 (NVIDIA H200): `tilec check` of every kernel with a GPU test,
# this session's binary, in two halves (GROUP=a: elementwise, reductions, the language's
# tests, MoE, sorts, quantizers; GROUP=b: GEMMs and attention).
R=/tmp/r45c$GROUP; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r45c$GROUP; }
[ -x /tmp/tilec-new ] || { xz -dc .carry/tilec.xz > /tmp/tilec-new && chmod +x /tmp/tilec-new; }
A="softmax softmax_online silu_mul swiglu rmsnorm rmsnorm_persistent rope dropout transpose embedding gelu rope_table row_max argmax bias_add residual_add kv_append acc_bias acc_residual acc_swiglu acc_residual_rmsnorm rope_kv_append acc_bias_rope_kv_append moe_route moe_align moe_permute moe_combine lang_bits lang_ints lang_math lang_masked lang_atomics histogram lang_slices lang_sort lang_sort_int topk_partial topk_merge lang_offsets lang_scan lang_argreduce lang_dtypes quant_fp4 quant_mxfp8 lang_fp4 quant_fp8_rowwise quant_fp8_blockwise quant_fp8_block2d"
B="matmul matmul_fp8 matmul_fp8_rowwise matmul_fp8_blockwise matmul_mx fmha_fp8 mla_fp8 matmul_splitk matmul_swiglu bmm group_gemm group_gemm_aligned fmha fmha_step2_mma fmha_step3_exp2 fmha_step4_load_order fmha_step5_latency fmha_step6_occupancy fmha_step7_approx_div mla mla_decode attention_decode_grouped paged_attention_decode"
[ "$GROUP" = a ] && L=$A || L=$B
timeout ${T:-560} /tmp/tilec-new check $L --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
tail -n 5 $R/check.txt; grep -iE "fail|error" $R/check.txt | head -20
