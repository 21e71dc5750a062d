#!/bin/bash
# Session 34, calls 3-4 (NVIDIA H200): old (TILEC_NO_NOUNDEF=1: the session's starting PTX)
# and new timing of the kernels whose sm_90a PTX changed, at shapes whose bench check is
# quick; `bash .carry/gpu3.sh I ORDER...` (call 3: old new, call 4: new old).
I=$1; shift; R=/tmp/r34c-$I; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r34c-$I; }
[ -x /tmp/tilec ] || { xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec; }
T=/tmp/tilec
run() { # variant label timeout bench-args...
  local v=$1 l=$2 t=$3; shift 3
  if [ $v = old ]; then E="TILEC_NO_NOUNDEF=1"; else E="TILEC_NOTHING=1"; fi
  env $E TILEC_CACHE_DIR=/tmp/cache-$v timeout $t $T bench "$@" --json $R/$l-$v.json > $R/$l-$v.txt 2>&1; echo "rc=$?" >> $R/$l-$v.txt; save
}
for v in "$@"; do
  run $v decode 80 mla_decode paged_attention_decode attention_decode_grouped --quick --reps 300
  run $v fmha 60 fmha --shapes 2x16x2048x128:f16,2x16x2048x64:f16 --reps 200
  run $v transpose 30 transpose --shapes 16384x4096:f16 --reps 500
  run $v mla 40 mla --shapes 2x16x2048x128x64:bf16 --reps 200
  run $v gg 40 group_gemm group_gemm_aligned --shapes 6x64x2048x2816:bf16 --reps 200
  run $v fp8 40 fmha_fp8 --shapes 2x16x2048x128:f8e4m3 --reps 200
done
for f in $R/*.txt; do echo "== $f $(tail -1 $f)"; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6; done
