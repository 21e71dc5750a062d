#!/bin/bash
# Session 37, call 1 (H200): the emitter's sharing of repeated pure ops (new) against the
# session start (old). The sm_90a PTX changes in attention_decode_grouped,
# paged_attention_decode and matmul_swiglu only: time them old-new-new-old (each variant its
# own compile cache), then `tilec check` them with the new binary.
R=/tmp/r37a; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r37a; }
for v in old new; do xz -dc .carry/$v.xz > /tmp/tilec-$v && chmod +x /tmp/tilec-$v; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
run() { # variant label args...
  local v=$1 l=$2; shift 2
  env TILEC_CACHE_DIR=/tmp/cache-$v timeout 90 /tmp/tilec-$v bench "$@" --json $R/$l-$v.json > $R/$l-$v.txt 2>&1; echo "rc=$?" >> $R/$l-$v.txt; save
}
i=0
for v in old new new old; do i=$((i+1))
  run $v dec-$i paged_attention_decode attention_decode_grouped --quick --reps 300
  run $v swi-$i matmul_swiglu --reps 300
done
export TILEC_CACHE_DIR=/tmp/cache-new
timeout 200 /tmp/tilec-new check attention_decode_grouped paged_attention_decode matmul_swiglu softmax mla_decode --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
for f in $R/*.txt; do echo "== $f $(tail -1 $f)"; done
tail -n 4 $R/check.txt; grep -ciE "fail|mismatch" $R/check.txt
