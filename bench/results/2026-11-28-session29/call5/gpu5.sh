#!/bin/bash
# Session 29, call 5 (NVIDIA H200): bmm as CTA pairs (tile-cta-pair through its [1, M, K]
# tiles): checks, then timing against the default, interleaved twice.
R=/tmp/r29e; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r29e; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
P="--const CTA_PAIR=1 --const TILE_M=256"
timeout 60 $T check bmm $P --md $R/check-bmm-pair.md > $R/check-bmm-pair.txt 2>&1; echo "rc=$?" >> $R/check-bmm-pair.txt; save
timeout 60 $T check bmm --md $R/check-bmm-default.md > $R/check-bmm-default.txt 2>&1; echo "rc=$?" >> $R/check-bmm-default.txt; save
timeout 60 $T check matmul --const CTA_PAIR=1 --const TILE_M=256 --md $R/check-matmul-pair.md > $R/check-matmul-pair.txt 2>&1; echo "rc=$?" >> $R/check-matmul-pair.txt; save
for i in 1 2; do
  timeout 90 $T bench bmm --json $R/bench-bmm-default-$i.json > $R/bench-bmm-default-$i.txt 2>&1; save
  timeout 90 $T bench bmm $P --json $R/bench-bmm-pair-$i.json > $R/bench-bmm-pair-$i.txt 2>&1; save
done
tail -n 9 $R/*.txt
