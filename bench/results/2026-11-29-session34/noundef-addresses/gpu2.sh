#!/bin/bash
# Session 34, call 2 (NVIDIA H200): old (TILEC_NO_NOUNDEF=1: the session's starting PTX) and
# new timing of the kernels whose sm_90a PTX changed, alternated; `bash .carry/gpu2.sh I` runs pair I.
I=$1; R=/tmp/r34b-$I; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r34b-$I; }
[ -x /tmp/tilec ] || { xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec; }
T=/tmp/tilec
B1="fmha mla_decode mla attention_decode_grouped paged_attention_decode group_gemm group_gemm_aligned fmha_fp8 mla_fp8 matmul_fp8_rowwise"
B2="matmul_fp8_blockwise matmul_splitk moe_combine moe_permute quant_fp4 acc_bias_rope_kv_append rope rope_kv_append row_max transpose embedding"
run() { # variant label kernels...
  local v=$1 l=$2; shift 2
  if [ $v = old ]; then E="TILEC_NO_NOUNDEF=1"; else E="TILEC_NOTHING=1"; fi
  env $E TILEC_CACHE_DIR=/tmp/cache-$v timeout 120 $T bench "$@" --quick --reps 200 --json $R/$l-$v.json > $R/$l-$v.txt 2>&1; echo "rc=$?" >> $R/$l-$v.txt; save
}
if [ $((I % 2)) = 1 ]; then O="old new"; else O="new old"; fi
for v in $O; do run $v b1-$I $B1; run $v b2-$I $B2; done
for f in $R/*.txt; do echo "== $f $(tail -1 $f)"; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -c1-140; done
