#!/bin/bash
# Session 26, call 5: sm_121a's matmul tiles under --emulate sm_121a: the default (128x128x32,
# 4 warps, two blocks an SM, two ahead) against 128x256x32 at 8 warps one block an SM (two and
# one ahead) and 128x128x32 at 4 warps one block three ahead; interleaved twice; sm_103a's
# emulated configuration once for the ratio.
R=/tmp/r5; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r5; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
S="--shapes 4096x4096x4096:f16,8192x8192x8192:f16,4096x4096x4096:bf16"
for r in 1 2; do
  timeout 60 $T bench matmul --emulate sm_121a $S --json $R/default-$r.json > $R/default-$r.txt 2>&1; save
  timeout 60 $T bench matmul --emulate sm_121a $S --const TILE_N=256 --const NUM_WARPS=8 --const OCCUPANCY=1 --json $R/n256w8-$r.json > $R/n256w8-$r.txt 2>&1; save
  timeout 60 $T bench matmul --emulate sm_121a $S --const TILE_N=256 --const NUM_WARPS=8 --const OCCUPANCY=1 --const LATENCY=1 --json $R/n256w8l1-$r.json > $R/n256w8l1-$r.txt 2>&1; save
  timeout 60 $T bench matmul --emulate sm_121a $S --const OCCUPANCY=1 --const LATENCY=3 --json $R/o1l3-$r.json > $R/o1l3-$r.txt 2>&1; save
done
timeout 60 $T bench matmul --emulate sm_103a $S --json $R/sm103a.json > $R/sm103a.txt 2>&1; save
grep -H "| matmul" $R/*.txt | sed 's/.tmp.r5.//' | awk -F'|' '{print $1, $3, $4, $6}'
