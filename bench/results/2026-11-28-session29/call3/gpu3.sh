#!/bin/bash
# Session 29, call 3 (NVIDIA H200): why is the CTA pair slower? The default with empty
# mbarriers (no pair), the pair with more slack (TILE_K=32, LATENCY=4), and ncu of one 4096³
# bf16 launch of the default and of the pair (stall reasons, throughput).
R=/tmp/r29c; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r29c; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
P="--const CTA_PAIR=1 --const TILE_M=256"
timeout 60 $T bench matmul --quick --empty-barriers --json $R/bench-default-empty.json > $R/bench-default-empty.txt 2>&1; save
timeout 60 $T bench matmul --quick $P --const TILE_K=32 --const LATENCY=4 --json $R/bench-pair-k32l4.json > $R/bench-pair-k32l4.txt 2>&1; save
timeout 60 $T bench matmul --quick $P --const TILE_N=128 --json $R/bench-pair-n128.json > $R/bench-pair-n128.txt 2>&1; save
timeout 60 $T bench matmul --quick --json $R/bench-default.json > $R/bench-default.txt 2>&1; save
for v in default pair; do
  X=""; [ $v = pair ] && X="$P"
  timeout 150 ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" $T bench matmul --quick --reps 5 $X > $R/ncu-$v.txt 2>&1; save
done
tail -n 5 $R/bench*.txt
grep -E "Duration|Throughput|stalled|Warp Cycles|Active Warps|Cluster|Waves|Block Limit|Issued" $R/ncu-*.txt | head -80
