#!/usr/bin/env bash
# Session 23, call 1: where the decode kernels' time goes at the issue's short points.
# The committed kernels; the same without their split combine (.carry/knc: partials written,
# no counter, no combine: the main phase alone, outputs wrong); two blocks an SM (MLA:
# LATENCY=1, 93 KB; grouped: TILE_N=64, 104 KB) with the split rules counting 2 blocks an
# SM (SMS=264) or 4 (528, grouped); a near-empty launch (B1, one key tile) as the floor of a
# timed launch. Nsight Compute on MLA B16 L4096 and grouped B4 L4096.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
G=1x28x4x128x128:f16,1x28x4x1024x128:f16,1x28x4x4096x128:f16,1x28x4x16384x128:f16,4x28x4x4096x128:f16,4x28x4x16384x128:f16,16x28x4x562x128:f16,16x28x4x4096x128:f16,16x28x4x16384x128:f16
M=1x16x32x512x64:f16,1x16x1024x512x64:f16,1x16x4096x512x64:f16,1x16x16384x512x64:f16,4x16x4096x512x64:f16,4x16x16384x512x64:f16,16x16x4096x512x64:f16,16x16x16384x512x64:f16
b() { local k=$1 n=$2 s=$3; shift 3; local t0=$(date +%s); timeout 120 /tmp/tilec bench $k --shapes $s "$@" --json $R/$n.json --md $R/$n.md > $R/$n.log 2>&1; echo "$n $(( $(date +%s) - t0 )) s" >> $R/times.txt; save; }
b mla_decode m_base $M
b mla_decode m_nc $M --kernels-dir .carry/knc
b mla_decode m_lat1_sms264 $M --const LATENCY=1 --const SMS=264
b mla_decode m_lat1 $M --const LATENCY=1
b attention_decode_grouped g_base $G
b attention_decode_grouped g_nc $G --kernels-dir .carry/knc
b attention_decode_grouped g_t64_sms264 $G --const TILE_N=64 --const SMS=264
b attention_decode_grouped g_t64_sms528 $G --const TILE_N=64 --const SMS=528
mla() { # B L
  echo --kernel mla_decode --const SPLITS=64 --arg $1x16x512:f16 --arg $1x16x64:f16 --arg $1x$2x512:f16 --arg $1x$2x64:f16 \
    --arg full:$2:$1:i32 --arg zeros:$1x16x512:f16 --arg zeros:296x16x512:f32 --arg zeros:296x2x16:f32 --arg zeros:$1x1x9:i32 --arg 0.0417
}
dec() { # B L
  echo --kernel attention_decode_grouped --const G=7 --const GP=16 --const D=128 --const SPLITS=32 \
    --arg $1x28x128:f16 --arg $1x4x$2x128:f16 --arg $1x4x$2x128:f16 --arg zeros:$1x28x128:f16 \
    --arg full:$2:$1:i32 --arg zeros:$1x4x32x8x128:f32 --arg zeros:$1x4x32x2x8:f32 --arg zeros:$1x4:i32 --arg 0.0884
}
timeout 120 ncu --set full -k regex:mla_decode -c 1 /tmp/tilec run --gpu kernels/mla_decode.tile $(mla 16 4096) > $R/ncu_mla_b16_l4096.txt 2>&1; save
timeout 120 ncu --set full -k regex:attention_decode -c 1 /tmp/tilec run --gpu kernels/attention_decode_grouped.tile $(dec 4 4096) > $R/ncu_g_b4_l4096.txt 2>&1; save
rm -rf $OUT/r
