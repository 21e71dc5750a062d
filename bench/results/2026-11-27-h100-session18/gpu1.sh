#!/bin/bash
# Session 18, call 1: issue 30 (grouped decode's split cap: half the SMs vs all; the combine
# 4 vs 8 chunks an iteration; the combine's cost), issue 34 (tune reuse/compile-ahead on a GPU).
mkdir -p /tmp/b && [ -x /tmp/b/tilec ] || xz -dc .carry/tilec.xz > /tmp/b/tilec; chmod +x /tmp/b/tilec
T=/tmp/b/tilec
O=$OUT/r; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/device.csv; nproc >> $O/device.csv
export TILEC_CACHE_DIR=/tmp/tcb
s=$(date +%s)
PYTHONUNBUFFERED=1 python3 bench/peers.py --only copy,decode --out $O/peers.json > $O/peers.md 2>&1
echo "peers $(( $(date +%s) - s )) s" >> $O/times.txt
B="attention_decode_grouped --peers $O/peers.json"
$T bench $B --json $O/adg_sms132.json --md $O/adg_sms132.md > $O/adg_sms132.txt 2>&1
echo "bench1 $(( $(date +%s) - s )) s" >> $O/times.txt
$T bench $B --kernels-dir .carry/k264 --json $O/adg_sms264.json --md $O/adg_sms264.md > $O/adg_sms264.txt 2>&1
$T bench $B --kernels-dir .carry/k8 --json $O/adg8_sms264.json --md $O/adg8_sms264.md > $O/adg8_sms264.txt 2>&1
$T bench $B --kernels-dir .carry/k0 --json $O/adg0_sms264.json --md $O/adg0_sms264.md > $O/adg0_sms264.txt 2>&1
$T bench $B --kernels-dir .carry/k0 --const SMS=132 --json $O/adg0_sms132.json --md $O/adg0_sms132.md > $O/adg0_sms132.txt 2>&1
echo "benches $(( $(date +%s) - s )) s" >> $O/times.txt
$T check attention_decode_grouped --kernels-dir .carry/k264 --md $O/check_adg264.md > $O/check_adg264.txt 2>&1; echo "rc $?" >> $O/check_adg264.txt
$T check attention_decode_grouped --kernels-dir .carry/k8 --md $O/check_adg8.md > $O/check_adg8.txt 2>&1; echo "rc $?" >> $O/check_adg8.txt
echo "checks $(( $(date +%s) - s )) s" >> $O/times.txt
A="--arg 4096x4096:f16 --arg 4096x4096:f16 --arg zeros:4096x4096:f16 --reps 30"
export TILEC_CACHE_DIR=/tmp/tc1
{ /usr/bin/time -f "wall %e s" $T tune kernels/matmul.tile $A --space TILE_M=64,128 --space TILE_N=128,256 --space TILE_K=64 ; } > $O/tune_small.txt 2>&1
{ /usr/bin/time -f "wall %e s" $T tune kernels/matmul.tile $A --space TILE_M=64,128 --space TILE_N=64,128,256 --space TILE_K=32,64 ; } > $O/tune_grown.txt 2>&1
{ /usr/bin/time -f "wall %e s" $T tune kernels/matmul.tile $A --space TILE_M=64,128 --space TILE_N=64,128,256 --space TILE_K=32,64 ; } > $O/tune_again.txt 2>&1
for th in 2 16; do
  export TILEC_CACHE_DIR=/tmp/tc_$th
  { TILEC_COMPILE_THREADS=$th /usr/bin/time -f "wall %e s" $T tune kernels/matmul.tile $A ; } > $O/tune_full_threads$th.txt 2>&1
done
echo "tunes $(( $(date +%s) - s )) s" >> $O/times.txt
export TILEC_CACHE_DIR=/tmp/tc_check
$T check fmha_step3_exp2 fmha_step4_load_order fmha_step5_latency fmha_step6_occupancy fmha_step7_approx_div paged_attention_decode mla_decode --json $O/check.json --md $O/check.md > $O/check.txt 2>&1; echo "check rc $?" >> $O/check.txt
echo "end $(( $(date +%s) - s )) s" >> $O/times.txt
