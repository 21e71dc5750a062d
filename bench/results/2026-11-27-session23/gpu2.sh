#!/usr/bin/env bash
# Session 23, call 2: mla_decode with its split partials in T (normalised) and two slots an
# combine iteration, and mma.sync products of few accumulator blocks a warp over a long K
# dealt to partial accumulators (tile-to-llvm's mma-chains, 4 by default; 1 = one chain a
# block, as before): checks of the decode kernels on sm_90a and under --emulate sm_121a,
# then MLA and paged decode with mma-chains 4 and 1, the grouped kernel emulating sm_121a.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
timeout 150 /tmp/tilec check mla_decode paged_attention_decode attention_decode_grouped --md $R/check.md > $R/check.log 2>&1; save
timeout 150 /tmp/tilec check mla_decode paged_attention_decode attention_decode_grouped --emulate sm_121a --md $R/check_emu121.md > $R/check_emu121.log 2>&1; save
M=1x16x1024x512x64:f16,1x16x4096x512x64:f16,1x16x16384x512x64:f16,1x16x32768x512x64:f16,4x16x4096x512x64:f16,4x16x16384x512x64:f16,16x16x4096x512x64:f16,16x16x16384x512x64:f16,64x16x4096x512x64:f16
P=1x28x4x1024x128:f16,1x28x4x4096x128:f16,1x28x4x16384x128:f16,4x28x4x4096x128:f16,4x28x4x16384x128:f16,16x28x4x562x128:f16,16x28x4x4096x128:f16
G=1x28x4x4096x128:f16,4x28x4x4096x128:f16,16x28x4x562x128:f16,16x28x4x4096x128:f16
b() { local k=$1 n=$2 s=$3; shift 3; local t0=$(date +%s); timeout 150 /tmp/tilec bench $k --shapes $s "$@" --json $R/$n.json --md $R/$n.md > $R/$n.log 2>&1; echo "$n $(( $(date +%s) - t0 )) s" >> $R/times.txt; save; }
C1="--pass-option tile-to-llvm{mma-chains=1}"
b mla_decode m_new $M
b mla_decode m_new_c1 $M $C1
b paged_attention_decode p_new $P
b paged_attention_decode p_new_c1 $P $C1
b attention_decode_grouped g121 $G --emulate sm_121a
b attention_decode_grouped g121_c1 $G --emulate sm_121a $C1
b mla_decode m_new2 $M
rm -rf $OUT/r
