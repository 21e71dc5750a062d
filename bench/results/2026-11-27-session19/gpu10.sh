#!/bin/bash
# Session 19, call 7: the Qwen2 warm-up with cubins loaded (ptxas's, from the cache) against
# the driver assembling the PTX (TILEC_DRIVER_JIT=1), both with an empty tilec cache and the
# driver's own JIT cache off (CUDA_CACHE_DISABLE=1: a fresh machine's first process); then
# once more with the tilec cache warm.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/qwen2.xz > /tmp/qwen2 && chmod +x /tmp/qwen2
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; which ptxas >> $R/gpu.txt; ls /usr/local/cuda/bin/ptxas >> $R/gpu.txt 2>&1; save
timeout 200 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 --no-fp32 > $R/reference.log 2>&1; save
export CUDA_CACHE_DISABLE=1
run() { name=$1; shift; env "$@" timeout 120 /tmp/qwen2 --weights /tmp/q2 --new-tokens 8 --json $R/$name.json > $R/$name.txt 2>&1; echo "rc $?" >> $R/$name.txt; grep "warm-up" $R/$name.txt | sed "s/^/$name: /" >> $R/warmups.txt; save; }
run driver_jit_cold TILEC_CACHE_DIR=/tmp/c1 TILEC_DRIVER_JIT=1
run cubin_cold TILEC_CACHE_DIR=/tmp/c2
run cubin_warm TILEC_CACHE_DIR=/tmp/c2
run driver_jit_warm TILEC_CACHE_DIR=/tmp/c1 TILEC_DRIVER_JIT=1
