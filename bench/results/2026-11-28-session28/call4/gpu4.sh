#!/bin/bash
# Session 28, call 4 (NVIDIA H200): mla's sm_103a order (the scores a key tile ahead, P·V of
# the previous key tile beside them, the conditional rescale) checked on the GPU under
# --emulate sm_103a (mma.sync products, 128-row tiles). The binary is call 1's (tilec_new):
# the kernel is read from this checkout, and the compiler changes since touch tcgen05 only.
R=/tmp/r28d; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r28d; }
[ -x /tmp/bin/tilec_new ] || { mkdir -p /tmp/bin && xz -dc .carry/pair.tar.xz | tar xf - -C /tmp/bin && chmod +x /tmp/bin/*; }
N=/tmp/bin/tilec_new
timeout 150 $N check mla --emulate sm_103a --const AHEAD=1 --md $R/check-mla-emu103-ahead.md > $R/check-mla-emu103-ahead.txt 2>&1; save
timeout 100 $N check mla --emulate sm_103a --md $R/check-mla-emu103.md > $R/check-mla-emu103.txt 2>&1; save
tail -n 4 $R/*.txt
