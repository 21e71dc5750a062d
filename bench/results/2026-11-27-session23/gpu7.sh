#!/usr/bin/env bash
# Session 23, call 7: mla_decode's two combine levels written as one loop over the level (the
# combine compiled once: 2.86 -> 2.39 G compile instructions for sm_90a) against the two
# copies of calls 3-6 (.carry/kold); checks on sm_90a, --emulate sm_121a and sm_103a.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
timeout 100 /tmp/tilec check mla_decode --md $R/check.md > $R/check.log 2>&1; save
timeout 100 /tmp/tilec check mla_decode --emulate sm_121a --md $R/check_emu121.md > $R/check_emu121.log 2>&1; save
timeout 100 /tmp/tilec check mla_decode --emulate sm_103a --md $R/check_emu103.md > $R/check_emu103.log 2>&1; save
M=1x16x1024x512x64:f16,1x16x4096x512x64:f16,1x16x16384x512x64:f16,1x16x32768x512x64:f16,4x16x4096x512x64:f16,4x16x16384x512x64:f16,16x16x4096x512x64:f16,16x16x16384x512x64:f16,64x16x4096x512x64:f16
b() { local n=$1; shift; timeout 120 /tmp/tilec bench mla_decode --shapes $M "$@" --json $R/$n.json --md $R/$n.md > $R/$n.log 2>&1; save; }
b m_copies --kernels-dir .carry/kold
b m_loop
b m_copies2 --kernels-dir .carry/kold
b m_loop2
rm -rf $OUT/r
