#!/usr/bin/env bash
# Session 22, call 2: Nsight Compute on decode attention (B16 L562: Qwen2's step; B1 L4096:
# 8 splits) and on cuDNN's decode at B1 L4096; the sort kernels' checks and old/new bench.
set -u
R=$OUT/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
D=bench/results/2026-11-27-session22
T="timeout 120"
dec() { # B L: the args of one grouped decode launch
  echo --kernel attention_decode_grouped --const G=7 --const GP=16 --const D=128 --const SPLITS=32 \
    --arg $1x28x128:f16 --arg $1x4x$2x128:f16 --arg $1x4x$2x128:f16 --arg zeros:$1x28x128:f16 \
    --arg full:$2:$1:i32 --arg zeros:$1x4x32x8x128:f32 --arg zeros:$1x4x32x2x8:f32 --arg zeros:$1x4:i32 --arg 0.0884
}
$T ncu --set full -k regex:attention_decode -c 1 /tmp/tilec run --gpu kernels/attention_decode_grouped.tile $(dec 16 562) > $R/ncu_b16_l562.txt 2>&1
$T ncu --set full -k regex:attention_decode -c 1 /tmp/tilec run --gpu kernels/attention_decode_grouped.tile $(dec 1 4096) > $R/ncu_b1_l4096.txt 2>&1
$T ncu --section LaunchStats --section SpeedOfLight -c 12 python3 $D/cudnn1.py 1 4096 > $R/ncu_cudnn_b1_l4096.txt 2>&1
$T ncu --section LaunchStats --section SpeedOfLight -c 12 python3 $D/cudnn1.py 16 562 > $R/ncu_cudnn_b16_l562.txt 2>&1
export TILEC_CACHE_DIR=/tmp/cache-new
$T /tmp/tilec check topk_partial topk_merge lang_sort moe_route > $R/check_sort.log 2>&1
B="topk_partial topk_merge moe_route"
$T /tmp/tilec bench $B --json $R/sort_new.json --md $R/sort_new.md > $R/sort_new.log 2>&1
TILEC_SORT_OLD=1 TILEC_CACHE_DIR=/tmp/cache-old $T /tmp/tilec bench $B --json $R/sort_old.json --md $R/sort_old.md > $R/sort_old.log 2>&1
$T /tmp/tilec bench $B --json $R/sort_new2.json --md $R/sort_new2.md > $R/sort_new2.log 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
