#!/usr/bin/env bash
# Session 22, call 3: decode kernels with their K/V rings filled by TMA on sm_90a
# (`tile-swizzle{tma=true}`: mma.sync operands in the NVMMA layout) against cp.async, and
# attention_decode_grouped's combine without shared-memory exchanges (this tree's kernel)
# against the committed one (.carry/kold); checks of the three decode kernels with TMA.
set -u
R=$OUT/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
T="timeout 150"
TMA="--pass-option tile-swizzle{tma=true}"
$T python3 bench/peers.py --only decode --points 1x1024,1x4096,1x16384,4x4096,16x562,16x1024,16x4096,16x16384 --out $R/peers.json > $R/peers.txt 2>&1
S=16x28x4x562x128:f16,16x28x4x1024x128:f16,16x28x4x4096x128:f16,16x28x4x16384x128:f16,4x28x4x4096x128:f16,1x28x4x1024x128:f16,1x28x4x4096x128:f16,1x28x4x16384x128:f16
b() { # name, extra args...
  local n=$1; shift
  $T /tmp/tilec bench "$@" --peers $R/peers.json --json $R/$n.json --md $R/$n.md > $R/$n.log 2>&1
}
b g_old attention_decode_grouped --shapes $S --kernels-dir .carry/kold
b g_old_tma attention_decode_grouped --shapes $S --kernels-dir .carry/kold $TMA
b g_new attention_decode_grouped --shapes $S
b g_new_tma attention_decode_grouped --shapes $S $TMA
b g_new_tma_s264 attention_decode_grouped --shapes $S $TMA --const SMS=264
P=16x28x4x4096x128:f16,1x28x4x4096x128:f16,4x28x4x16384x128:f16,16x28x4x562x128:f16
b p_base paged_attention_decode --shapes $P
b p_tma paged_attention_decode --shapes $P $TMA
M=1x16x4096x512x64:f16,16x16x4096x512x64:f16,4x16x16384x512x64:f16
b m_base mla_decode --shapes $M
b m_tma mla_decode --shapes $M $TMA
$T /tmp/tilec check attention_decode_grouped paged_attention_decode mla_decode $TMA > $R/check_tma.log 2>&1
$T /tmp/tilec check attention_decode_grouped > $R/check_new.log 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
