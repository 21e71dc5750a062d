#!/bin/bash
# Session 35, call 4 (H200): old/new/new/old timing of the rest of the changed compute kernels.
R=/tmp/r35d; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r35d; }
[ -x /tmp/tilec ] || { xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec; }
T=/tmp/tilec
run() { # variant label args...
  local v=$1 l=$2; shift 2
  if [ $v = old ]; then X=""; else X="-opt-disable=slsr"; fi
  env TILEC_XLLVM="$X" TILEC_CACHE_DIR=/tmp/cache-$v timeout 60 $T bench "$@" --json $R/$l-$v.json > $R/$l-$v.txt 2>&1; echo "rc=$?" >> $R/$l-$v.txt; save
}
i=0
for v in old new new old; do i=$((i+1))
  run $v bmm-$i bmm --shapes 16x512x512x512:f16 --reps 200
  run $v rw-$i matmul_fp8_rowwise --shapes 1024x1024x2048:f8e4m3 --reps 200
  run $v bw-$i matmul_fp8_blockwise --shapes 1024x1024x2048:f8e4m3 --reps 200
  run $v ffp8-$i fmha_fp8 --shapes 2x16x2048x128:f8e4m3 --reps 200
  run $v mfp8-$i mla_fp8 --shapes 2x16x2048x128x64:f8e4m3 --reps 200
  run $v tm-$i topk_merge --quick --reps 300
done
for f in $R/*.txt; do echo "== $f $(tail -1 $f)"; done
