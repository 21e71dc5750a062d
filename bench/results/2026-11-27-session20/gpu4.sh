#!/bin/bash
# Session 20, call 7: the committed binary (exact index differences, the shared-memory rule):
# FMHA checked on sm_90a and timed.
R=/tmp/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
save() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu_final.txt; save
timeout 230 /tmp/tilec check fmha --md $R/check_fmha_final.md > $R/check_fmha_final.log 2>&1; echo "rc $?" >> $R/check_fmha_final.log; save
timeout 60 /tmp/tilec bench fmha --quick --md $R/fmha_final.md --json $R/fmha_final.json > $R/fmha_final.log 2>&1; save
