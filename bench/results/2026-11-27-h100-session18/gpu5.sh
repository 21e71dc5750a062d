#!/bin/bash
# Session 18, call 5: the sort network as two loops (not one copy a stage) — every sort kernel
# checked, topk_partial timed against the unrolled network (`unroll-sort=true`) in the same call.
mkdir -p /tmp/b && [ -x /tmp/b/tilec ] || xz -dc .carry/tilec.xz > /tmp/b/tilec; chmod +x /tmp/b/tilec
T=/tmp/b/tilec
R=/tmp/r; rm -rf $R; mkdir -p $R
s=$(date +%s); tick() { echo "$1 $(( $(date +%s) - s )) s" >> $R/times.txt; tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.csv; tick start
export TILEC_CACHE_DIR=/tmp/tc5
timeout 60 $T check lang_sort topk_partial topk_merge moe_route --json $R/check.json --md $R/check.md > $R/check.txt 2>&1; echo "rc $?" >> $R/check.txt; tick check
U="--pass-option tile-to-llvm{unroll-sort=true}"
SH="--shapes 16x152064:f16,256x152064:f16"
b() { n=$1; shift; timeout 30 $T bench topk_partial $SH --json $R/bench_$n.json --md $R/bench_$n.md "$@" > $R/bench_$n.txt 2>&1; tick "bench $n"; }
b loops; b unrolled $U; b loops_again; b unrolled_again $U
