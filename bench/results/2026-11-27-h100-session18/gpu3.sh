#!/bin/bash
# Session 18, call 3: the session-16 re-checks through the parallel `tilec check`, and
# issue 34's tune reuse (a grown space times only what is new). The results are tarred after
# every step, so a cut-off run still brings back what finished.
mkdir -p /tmp/b && [ -x /tmp/b/tilec ] || xz -dc .carry/tilec.xz > /tmp/b/tilec; chmod +x /tmp/b/tilec
T=/tmp/b/tilec
R=/tmp/r; mkdir -p $R
s=$(date +%s); tick() { echo "$1 $(( $(date +%s) - s )) s" >> $R/times.txt; tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.csv; nproc >> $R/device.csv; tick start
export TILEC_CACHE_DIR=/tmp/tc_check
timeout 170 $T check attention_decode_grouped paged_attention_decode mla_decode fmha_step3_exp2 fmha_step4_load_order fmha_step5_latency fmha_step6_occupancy fmha_step7_approx_div --json $R/check.json --md $R/check.md > $R/check.txt 2>&1; echo "check rc $?" >> $R/check.txt; tick check
A="--arg 4096x4096:f16 --arg 4096x4096:f16 --arg zeros:4096x4096:f16 --reps 30"
export TILEC_CACHE_DIR=/tmp/tc1
t() { n=$1; shift; { /usr/bin/time -f "wall %e s" timeout 35 $T tune kernels/matmul.tile $A "$@" ; } > $R/tune_$n.txt 2>&1; tick "tune $n"; }
t small --space TILE_M=64,128 --space TILE_N=128,256 --space TILE_K=64
t grown --space TILE_M=64,128 --space TILE_N=64,128,256 --space TILE_K=32,64
t again --space TILE_M=64,128 --space TILE_N=64,128,256 --space TILE_K=32,64
