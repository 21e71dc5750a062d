#!/usr/bin/env bash
# Session 22, call 1: decode attention's split count at batch 16 (Qwen2's step: L 562) and
# TILE_N, beside cuDNN; the bitonic network's one comparison a pair (topk, moe_route) against
# the two it made (TILEC_SORT_OLD, an experiment switch of this call's binary only).
set -u
R=$OUT/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt
T="timeout 150"
$T python3 bench/peers.py --only decode --points 1x1024,1x4096,1x16384,4x4096,16x562,16x1024,16x4096,16x16384 --out $R/peers.json > $R/peers.txt 2>&1
S=16x28x4x562x128:f16,16x28x4x1024x128:f16,16x28x4x4096x128:f16,16x28x4x16384x128:f16,4x28x4x4096x128:f16,1x28x4x1024x128:f16,1x28x4x4096x128:f16,1x28x4x16384x128:f16
for cfg in "SMS=132" "SMS=264" "SMS=396" "SMS=132 TILE_N=64" "SMS=264 TILE_N=64"; do
  name=$(echo $cfg | tr ' =' '_-')
  args=""; for c in $cfg; do args="$args --const $c"; done
  $T /tmp/tilec bench attention_decode_grouped --shapes $S $args --peers $R/peers.json --json $R/dec_$name.json --md $R/dec_$name.md > $R/dec_$name.log 2>&1
done
export TILEC_CACHE_DIR=/tmp/cache-new
$T /tmp/tilec check topk moe_route > $R/check_sort.log 2>&1
$T /tmp/tilec bench topk moe_route --json $R/sort_new.json --md $R/sort_new.md > $R/sort_new.log 2>&1
TILEC_SORT_OLD=1 TILEC_CACHE_DIR=/tmp/cache-old $T /tmp/tilec bench topk moe_route --json $R/sort_old.json --md $R/sort_old.md > $R/sort_old.log 2>&1
$T /tmp/tilec bench topk moe_route --json $R/sort_new2.json --md $R/sort_new2.md > $R/sort_new2.log 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
