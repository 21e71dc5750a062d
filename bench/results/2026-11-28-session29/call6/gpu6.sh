#!/bin/bash
# Session 29, call 6 (NVIDIA H200): the launcher written from docs/abi.md alone
# (tests/gpu/launch_ctypes.py) over CTA-pair matmuls too (`cluster` 2), plain and persistent.
R=/tmp/r29f; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r29f; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
timeout 300 python3 .carry/launch_ctypes.py /tmp/tilec --arch sm_90a > $R/launch-ctypes.txt 2>&1; echo "rc=$?" >> $R/launch-ctypes.txt; save
cat $R/launch-ctypes.txt
