#!/usr/bin/env bash
# Session 22, call 6: mla_decode's combine with its statistics gathered in the rows' layout
# (this tree) against the committed kernel (.carry/kold), and its chunk size (MIN_TILES 8,
# the default; 4; 2); the checks of the new kernel on sm_90a and under --emulate sm_121a.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
timeout 90 /tmp/tilec check mla_decode --md $R/check.md > $R/check.log 2>&1
timeout 90 /tmp/tilec check mla_decode --emulate sm_121a --md $R/check_emu121.md > $R/check_emu121.log 2>&1; save
M=1x16x1024x512x64:f16,1x16x4096x512x64:f16,1x16x16384x512x64:f16,1x16x32768x512x64:f16,4x16x4096x512x64:f16,4x16x16384x512x64:f16,16x16x4096x512x64:f16
b() { local n=$1; shift; timeout 100 /tmp/tilec bench mla_decode --shapes $M "$@" --json $R/$n.json --md $R/$n.md > $R/$n.log 2>&1; save; }
b m_old --kernels-dir .carry/kold
b m_new
b m_new_t4 --const MIN_TILES=4
b m_new_t2 --const MIN_TILES=2
b m_old2 --kernels-dir .carry/kold
rm -rf $OUT/r
