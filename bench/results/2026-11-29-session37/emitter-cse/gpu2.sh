#!/bin/bash
# Session 37, call 2 (H200): call 1 had attention_decode_grouped at batch 1 0.1 µs slower
# with the new PTX in both pairs (12.5 µs); time the two decode kernels again, eight runs
# alternated old-new-new-old-old-new-new-old, 1000 repetitions each.
R=/tmp/r37b; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r37b; }
for v in old new; do xz -dc .carry/$v.xz > /tmp/tilec-$v && chmod +x /tmp/tilec-$v; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
i=0
for v in old new new old old new new old; do i=$((i+1))
  env TILEC_CACHE_DIR=/tmp/cache-$v timeout 100 /tmp/tilec-$v bench attention_decode_grouped paged_attention_decode --quick --reps 1000 --json $R/dec-$i-$v.json > $R/dec-$i-$v.txt 2>&1; echo "rc=$?" >> $R/dec-$i-$v.txt; save
done
for f in $R/*.txt; do echo "== $f $(tail -1 $f)"; done
