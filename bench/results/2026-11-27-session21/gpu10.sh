#!/bin/bash
# Session 21, call 10: the committed binary's checks of the two transposed kernels on sm_90a
# and under emulation of sm_121a (TMA-fed mma.sync, M-major ldmatrix.trans) and sm_103a.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
timeout 150 /tmp/tilec check matmul_swiglu matmul_splitk --md $R/check_sm90a.md > $R/check_sm90a.log 2>&1; save
timeout 150 /tmp/tilec check --emulate sm_121a matmul_swiglu matmul_splitk --md $R/check_emulate_sm121a.md > $R/check_emulate_sm121a.log 2>&1; save
timeout 150 /tmp/tilec check --emulate sm_103a matmul_swiglu matmul_splitk --md $R/check_emulate_sm103a.md > $R/check_emulate_sm103a.log 2>&1; save
