#!/bin/bash
# Session 18, call 2: issue 30 B1 decode experiments (the combine's cost, tile/ring sizes),
# the session-16 re-checks through the parallel `tilec check`, issue 34's tune reuse/ahead.
mkdir -p /tmp/b && [ -x /tmp/b/tilec ] || xz -dc .carry/tilec.xz > /tmp/b/tilec; chmod +x /tmp/b/tilec
T=/tmp/b/tilec
O=$OUT/r; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/device.csv; nproc >> $O/device.csv
s=$(date +%s); tick() { echo "$1 $(( $(date +%s) - s )) s" >> $O/times.txt; }
export TILEC_CACHE_DIR=/tmp/tcb
SH="--shapes 1x28x4x4096x128:f16,1x28x4x16384x128:f16,1x28x4x32768x128:f16,4x28x4x16384x128:f16"
b() { n=$1; shift; timeout 90 $T bench attention_decode_grouped $SH --json $O/b1_$n.json --md $O/b1_$n.md "$@" > $O/b1_$n.txt 2>&1; tick "bench $n"; }
b base
b nocombine --kernels-dir .carry/k0 --const SMS=132
b lat1 --const LATENCY=1
b tn64 --const TILE_N=64
b tn64_sms264 --const TILE_N=64 --const SMS=264
b base_again
export TILEC_CACHE_DIR=/tmp/tc_check
timeout 200 $T check attention_decode_grouped paged_attention_decode mla_decode fmha_step3_exp2 fmha_step4_load_order fmha_step5_latency fmha_step6_occupancy fmha_step7_approx_div --json $O/check.json --md $O/check.md > $O/check.txt 2>&1; echo "check rc $?" >> $O/check.txt; tick check
A="--arg 4096x4096:f16 --arg 4096x4096:f16 --arg zeros:4096x4096:f16 --reps 30"
export TILEC_CACHE_DIR=/tmp/tc1
t() { n=$1; shift; { /usr/bin/time -f "wall %e s" timeout 120 $T tune kernels/matmul.tile $A "$@" ; } > $O/tune_$n.txt 2>&1; tick "tune $n"; }
t small --space TILE_M=64,128 --space TILE_N=128,256 --space TILE_K=64
t grown --space TILE_M=64,128 --space TILE_N=64,128,256 --space TILE_K=32,64
t again --space TILE_M=64,128 --space TILE_N=64,128,256 --space TILE_K=32,64
for th in 2 16; do export TILEC_CACHE_DIR=/tmp/tc_$th TILEC_COMPILE_THREADS=$th; t full_threads$th; done
cd $OUT && tar czf r.tgz r && rm -rf r
