#!/bin/bash
# Session 29, call 2 (NVIDIA H200): tile-cta-pair on sm_90a — matmul as 2-CTA clusters with
# B multicast: checks (plain, persistent, warp-specialized + persistent), then timing against
# the default configuration, interleaved twice.
R=/tmp/r29b; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r29b; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
P="--const CTA_PAIR=1 --const TILE_M=256"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
timeout 60 $T check matmul $P --md $R/check-pair.md > $R/check-pair.txt 2>&1; echo "rc=$?" >> $R/check-pair.txt; save
timeout 60 $T check matmul $P --persistent --md $R/check-pair-persistent.md > $R/check-pair-persistent.txt 2>&1; echo "rc=$?" >> $R/check-pair-persistent.txt; save
timeout 60 $T check matmul $P --persistent --warp-specialize --md $R/check-pair-ws.md > $R/check-pair-ws.txt 2>&1; echo "rc=$?" >> $R/check-pair-ws.txt; save
timeout 60 $T check matmul --md $R/check-default.md > $R/check-default.txt 2>&1; echo "rc=$?" >> $R/check-default.txt; save
for i in 1 2; do
  timeout 90 $T bench matmul --json $R/bench-default-$i.json > $R/bench-default-$i.txt 2>&1; save
  timeout 90 $T bench matmul $P --json $R/bench-pair-$i.json > $R/bench-pair-$i.txt 2>&1; save
done
timeout 90 $T bench matmul $P --persistent --json $R/bench-pair-persistent.json > $R/bench-pair-persistent.txt 2>&1; save
timeout 90 $T bench matmul $P --persistent --warp-specialize --json $R/bench-pair-ws.json > $R/bench-pair-ws.txt 2>&1; save
tail -n 8 $R/*.txt
