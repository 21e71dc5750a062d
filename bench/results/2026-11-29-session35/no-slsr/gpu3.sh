#!/bin/bash
# Session 35, call 3 (H200): old (HEAD's PTX) and new (no SLSR) timing, orders old-new-new-old,
# of the changed kernels at shapes whose CPU check is quick.
R=/tmp/r35c; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r35c; }
[ -x /tmp/tilec ] || { xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec; }
T=/tmp/tilec
run() { # variant label args...
  local v=$1 l=$2; shift 2
  if [ $v = old ]; then X=""; else X="-opt-disable=slsr"; fi
  env TILEC_XLLVM="$X" TILEC_CACHE_DIR=/tmp/cache-$v timeout 100 $T bench "$@" --json $R/$l-$v.json > $R/$l-$v.txt 2>&1; echo "rc=$?" >> $R/$l-$v.txt; save
}
i=0
for v in old new new old; do i=$((i+1))
  run $v fmha-$i fmha --shapes 2x16x2048x128:f16 --reps 200
  run $v mla-$i mla --shapes 2x16x2048x128x64:bf16 --reps 200
  run $v dec-$i mla_decode paged_attention_decode attention_decode_grouped --quick --reps 300
  run $v mem-$i rope topk_partial matmul_splitk --quick --reps 300
done
for f in $R/*.txt; do echo "== $f $(tail -1 $f)"; done
