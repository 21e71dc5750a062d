#!/bin/bash
# Session 29, call 4 (NVIDIA H200): the pair's remote releases without `.release.cluster`
# (no MEMBAR.ALL.GPU in the loop): checks again, then timing against the default,
# interleaved twice, and the persistent / warp-specialized pairs; ncu of the pair.
R=/tmp/r29d; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r29d; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
P="--const CTA_PAIR=1 --const TILE_M=256"
timeout 60 $T check matmul $P --md $R/check-pair.md > $R/check-pair.txt 2>&1; echo "rc=$?" >> $R/check-pair.txt; save
timeout 60 $T check matmul $P --persistent --warp-specialize --md $R/check-pair-ws.md > $R/check-pair-ws.txt 2>&1; echo "rc=$?" >> $R/check-pair-ws.txt; save
for i in 1 2; do
  timeout 90 $T bench matmul --json $R/bench-default-$i.json > $R/bench-default-$i.txt 2>&1; save
  timeout 90 $T bench matmul $P --json $R/bench-pair-$i.json > $R/bench-pair-$i.txt 2>&1; save
done
timeout 90 $T bench matmul $P --persistent --warp-specialize --json $R/bench-pair-ws.json > $R/bench-pair-ws.txt 2>&1; save
timeout 90 $T bench matmul $P --persistent --json $R/bench-pair-persistent.json > $R/bench-pair-persistent.txt 2>&1; save
timeout 150 ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section LaunchStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" $T bench matmul --quick --reps 5 $P > $R/ncu-pair.txt 2>&1; save
tail -n 8 $R/bench*.txt $R/check*.txt
grep -E "Duration|Compute \(SM\)|L2 Cache|stalled_(membar|barrier|long|wait|gmma)|Warp Cycles Per Issued|Max Active Clusters" $R/ncu-*.txt
