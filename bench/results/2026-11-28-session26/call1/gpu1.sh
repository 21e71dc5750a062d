#!/bin/bash
# Session 26, call 1: bmm's one-axis grid (the tiles walked M fastest, then N, then the batch,
# so that sm_103a's persistent kernel walks all of them) against the three-axis grid of HEAD
# (.carry/kernels_old), interleaved, on sm_90a; checks of matmul and bmm natively and under
# --emulate sm_121a / sm_103a (sm_103a's by_target now makes both persistent with a producer
# warpgroup; under emulation that is the mma.sync configuration), and their bench there
# against the one-block-a-tile configuration.
R=/tmp/r1; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r1; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 120 $T check matmul bmm --json $R/check.json --md $R/check.md > $R/check.txt 2>&1; save
timeout 120 $T check matmul bmm --emulate sm_121a --json $R/check-emu121.json > $R/check-emu121.txt 2>&1; save
timeout 120 $T check matmul bmm --emulate sm_103a --json $R/check-emu103.json > $R/check-emu103.txt 2>&1; save
for r in 1 2; do
  timeout 90 $T bench bmm --json $R/bmm-new-$r.json > $R/bmm-new-$r.txt 2>&1; save
  timeout 90 $T bench bmm --kernels-dir .carry/kernels_old --json $R/bmm-old-$r.json > $R/bmm-old-$r.txt 2>&1; save
done
timeout 90 $T bench matmul --emulate sm_103a --json $R/emu103-matmul-persistent.json > $R/emu103-matmul-persistent.txt 2>&1; save
timeout 90 $T bench matmul --emulate sm_103a --const PERSISTENT=false --const WARP_SPECIALIZE=false --json $R/emu103-matmul-plain.json > $R/emu103-matmul-plain.txt 2>&1; save
timeout 90 $T bench bmm --emulate sm_103a --json $R/emu103-bmm-persistent.json > $R/emu103-bmm-persistent.txt 2>&1; save
timeout 90 $T bench bmm --emulate sm_103a --const PERSISTENT=false --json $R/emu103-bmm-plain.json > $R/emu103-bmm-plain.txt 2>&1; save
tail -3 $R/check*.txt; grep -h "TFLOP\|ms" $R/bmm-*.txt | head -20
