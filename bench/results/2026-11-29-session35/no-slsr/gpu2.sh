#!/bin/bash
# Session 35, calls 2-3 (H200): old (HEAD's PTX) and new (no SLSR) timing of the kernels
# whose sm_90a PTX changes, alternated; `bash .carry/gpu2.sh I` runs pair I (odd: old first).
I=$1; R=/tmp/r35b-$I; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r35b-$I; }
[ -x /tmp/tilec ] || { xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec; }
T=/tmp/tilec
B1="fmha mla_decode mla attention_decode_grouped paged_attention_decode bmm fmha_fp8 mla_fp8 matmul_fp8_rowwise matmul_fp8_blockwise"
B2="matmul_splitk moe_align moe_combine moe_permute moe_route rope rope_kv_append acc_bias_rope_kv_append topk_merge topk_partial"
run() { # variant label kernels...
  local v=$1 l=$2; shift 2
  if [ $v = old ]; then X=""; else X="-opt-disable=slsr"; fi
  env TILEC_XLLVM="$X" TILEC_CACHE_DIR=/tmp/cache-$v timeout 140 $T bench "$@" --quick --reps 200 --json $R/$l-$v.json > $R/$l-$v.txt 2>&1; echo "rc=$?" >> $R/$l-$v.txt; save
}
if [ $((I % 2)) = 1 ]; then O="old new"; else O="new old"; fi
for v in $O; do run $v b1-$I $B1; run $v b2-$I $B2; done
for f in $R/*.txt; do echo "== $f $(tail -1 $f)"; done
