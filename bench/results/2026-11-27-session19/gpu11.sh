#!/bin/bash
# Session 19, call 8: sm_103a's FMHA at D = 64 now two query tiles of 64-key tiles too;
# checked under emulation (every fmha case) and timed against sm_103a's previous D = 64
# configuration (one tile, 128-key tiles, cp.async rings), one call.
R=/tmp/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
save() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
timeout 300 /tmp/tilec check --emulate sm_103a fmha --md $R/check_emulate_sm103a.md > $R/check.log 2>&1; echo "rc $?" >> $R/check.log; save
S=8x32x4096x64:f16,4x32x8192x64:f16
timeout 100 /tmp/tilec bench --emulate sm_103a fmha --shapes $S --md $R/bench_d64_two.md > $R/bench_two.log 2>&1; save
timeout 100 /tmp/tilec bench --emulate sm_103a fmha --shapes $S --const Q_TILES=1 --const TILE_N=128 --md $R/bench_d64_one.md > $R/bench_one.log 2>&1; save
