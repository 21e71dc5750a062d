#!/usr/bin/env bash
# Session 22, call 9: the decode kernels on more warps (`.carry/kexp`: the library's kernels
# with `num_warps = NUM_WARPS`, a constant, default 4): 4 / 8 / 16 warps a block, and the
# checks at 8 warps.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
K=.carry/kexp
G=16x28x4x562x128:f16,16x28x4x1024x128:f16,16x28x4x4096x128:f16,16x28x4x16384x128:f16,4x28x4x4096x128:f16,1x28x4x1024x128:f16,1x28x4x4096x128:f16,1x28x4x16384x128:f16
M=1x16x1024x512x64:f16,1x16x4096x512x64:f16,4x16x4096x512x64:f16,16x16x4096x512x64:f16,16x16x16384x512x64:f16
P=1x28x4x4096x128:f16,4x28x4x4096x128:f16,16x28x4x562x128:f16,16x28x4x4096x128:f16
b() { local k=$1 n=$2 s=$3; shift 3; timeout 100 /tmp/tilec bench $k --kernels-dir $K --shapes $s "$@" --json $R/$n.json --md $R/$n.md > $R/$n.log 2>&1; save; }
b attention_decode_grouped g_w4 $G --const NUM_WARPS=4
b attention_decode_grouped g_w8 $G --const NUM_WARPS=8
b attention_decode_grouped g_w16 $G --const NUM_WARPS=16
b mla_decode m_w4 $M --const NUM_WARPS=4
b mla_decode m_w8 $M --const NUM_WARPS=8
b mla_decode m_w16 $M --const NUM_WARPS=16
b paged_attention_decode p_w4 $P --const NUM_WARPS=4
b paged_attention_decode p_w8 $P --const NUM_WARPS=8
timeout 100 /tmp/tilec check attention_decode_grouped paged_attention_decode mla_decode --kernels-dir .carry/kexp8 > $R/check_w8.log 2>&1; save
rm -rf $OUT/r
