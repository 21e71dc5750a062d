#!/bin/bash
# Session 19, call 1: sm_103a's two-query-tile FMHA checked under emulation (mma.sync on the
# H100 with sm_103a's constants), and timed against the one-tile configuration.
R=/tmp/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
save() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 330 /tmp/tilec check --emulate sm_103a fmha --md $R/check_emulate_sm103a.md --json $R/check_emulate_sm103a.json > $R/check.log 2>&1; echo "rc $?" >> $R/check.log; save
S=4x32x4096x128:f16,4x32x8192x128:f16,2x28x512x128:f16
timeout 110 /tmp/tilec bench --emulate sm_103a fmha --shapes $S --md $R/bench_two.md --json $R/bench_two.json > $R/bench_two.log 2>&1; save
timeout 110 /tmp/tilec bench --emulate sm_103a fmha --shapes $S --const Q_TILES=1 --md $R/bench_one.md --json $R/bench_one.json > $R/bench_one.log 2>&1; save
