#!/bin/bash
# Session 28, call 5 (NVIDIA H200): the final binary (mla gained ragged GPU cases):
# mla's sm_103a order under --emulate sm_103a and its default order, natively on sm_90a too.
R=/tmp/r28e; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r28e; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
timeout 150 $T check mla --emulate sm_103a --const AHEAD=1 --md $R/check-mla-emu103-ahead.md > $R/check-mla-emu103-ahead.txt 2>&1; save
timeout 100 $T check mla --md $R/check-mla-native.md > $R/check-mla-native.txt 2>&1; save
tail -n 6 $R/*.txt
