#!/bin/bash
# Session 27, call 3: FMHA's two query tiles with the scores a key tile ahead (sm_103a's
# order) checked on the H200 under --emulate sm_103a (its mma.sync configuration: the same
# tile program, synchronous products) and natively; then timed against the previous order
# (.carry/kold) under --emulate sm_103a, interleaved twice.
R=/tmp/r3; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r3; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
timeout 150 $T check fmha --emulate sm_103a > $R/check-emu103.txt 2>&1; save
timeout 100 $T check fmha > $R/check-native.txt 2>&1; save
S="--shapes 4x32x4096x128:f16,8x32x4096x64:f16 --reps 100"
for r in 1 2; do
  timeout 80 $T bench fmha --emulate sm_103a $S --json $R/new-$r.json > $R/new-$r.txt 2>&1; save
  timeout 80 $T bench fmha --emulate sm_103a --kernels-dir .carry/kold $S --json $R/old-$r.json > $R/old-$r.txt 2>&1; save
done
timeout 80 $T bench fmha --emulate sm_103a $S --const CAUSAL=1 --json $R/new-causal.json > $R/new-causal.txt 2>&1; save
timeout 80 $T bench fmha --emulate sm_103a --kernels-dir .carry/kold $S --const CAUSAL=1 --json $R/old-causal.json > $R/old-causal.txt 2>&1; save
tail -2 $R/check-emu103.txt $R/check-native.txt; grep -H "| fmha" $R/new*.txt $R/old*.txt | sed 's/.tmp.r3.//' | cut -c1-150
