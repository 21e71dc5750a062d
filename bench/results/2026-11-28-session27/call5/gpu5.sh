#!/bin/bash
# Session 27, call 5 (the final binary): fmha checked under --emulate sm_103a with the scores
# a key tile ahead (AHEAD = 1, tcgen05's order, here on mma.sync products; `tilec check` takes
# no --const: the kernel folder .carry/kahead has AHEAD's default set to 1).
R=/tmp/r5; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r5; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
timeout 200 $T check fmha --emulate sm_103a --kernels-dir .carry/kahead > $R/check-emu103-ahead.txt 2>&1; save
tail -n 1 $R/check-emu103-ahead.txt
