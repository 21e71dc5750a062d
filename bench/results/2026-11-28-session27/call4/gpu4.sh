#!/bin/bash
# Session 27, call 4 (the final binary): fmha checked under --emulate sm_103a with the scores
# a key tile ahead (AHEAD=1, tcgen05's order, here on mma.sync products) and in the order
# mma.sync takes by default (AHEAD=0).
R=/tmp/r4; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r4; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
timeout 200 $T check fmha --emulate sm_103a --const AHEAD=1 > $R/check-emu103-ahead.txt 2>&1; save
timeout 200 $T check fmha --emulate sm_103a > $R/check-emu103.txt 2>&1; save
for f in $R/*.txt; do echo "$f: $(tail -n 1 $f)"; done
