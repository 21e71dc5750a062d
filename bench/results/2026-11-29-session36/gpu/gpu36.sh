#!/bin/bash
# Session 36 (H200): the binary with tilec's own MLIR registration and the huge-page heap
# runs the GPU commands as before: `tilec check` of a few kernels (memory-bound, GEMM,
# attention, decode), with the process's page faults and start time on that machine.
R=/tmp/r36; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r36; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
$T --version >> $R/gpu.txt
for i in 1 2 3 4 5; do /usr/bin/time -f "version %e s" $T --version 2>&1 | tail -1; done >> $R/gpu.txt 2>&1
for i in 1 2 3; do /usr/bin/time -f "softmax compile %e s, %R faults, %M KB" $T compile kernels/softmax.tile --arch sm_90a --no-cache -o /tmp/s.ptx 2>&1 | tail -1; done >> $R/gpu.txt 2>&1
save
export TILEC_CACHE_DIR=/tmp/cache36
timeout 330 $T check softmax rmsnorm silu_mul matmul fmha mla_decode attention_decode_grouped --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
cat $R/gpu.txt; tail -n 5 $R/check.txt; grep -ciE "fail|mismatch" $R/check.txt
