#!/usr/bin/env bash
# Session 22, call 7: paged_attention_decode with the grouped kernel's combine (this tree)
# against the committed kernel (.carry/kold), and MIN_PAGES 16 (default) / 8; mla_decode at
# its new MIN_TILES = 4 against the committed kernel over the whole B1-B16 grid; the checks of
# both kernels as committed next (sm_90a, --emulate sm_121a).
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
timeout 100 /tmp/tilec check paged_attention_decode mla_decode --md $R/check.md > $R/check.log 2>&1
timeout 100 /tmp/tilec check paged_attention_decode mla_decode --emulate sm_121a --md $R/check_emu121.md > $R/check_emu121.log 2>&1; save
P=1x28x4x1024x128:f16,1x28x4x4096x128:f16,1x28x4x16384x128:f16,4x28x4x4096x128:f16,16x28x4x562x128:f16,16x28x4x4096x128:f16
b() { local k=$1 n=$2 s=$3; shift 3; timeout 100 /tmp/tilec bench $k --shapes $s "$@" --json $R/$n.json --md $R/$n.md > $R/$n.log 2>&1; save; }
b paged_attention_decode p_old $P --kernels-dir .carry/kold
b paged_attention_decode p_new $P
b paged_attention_decode p_new_mp8 $P --const MIN_PAGES=8
M=1x16x1024x512x64:f16,1x16x4096x512x64:f16,1x16x8192x512x64:f16,4x16x1024x512x64:f16,4x16x4096x512x64:f16,16x16x1024x512x64:f16
b mla_decode m_old $M --kernels-dir .carry/kold
b mla_decode m_new $M
rm -rf $OUT/r
