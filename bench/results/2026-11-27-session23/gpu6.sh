#!/usr/bin/env bash
# Session 23, call 6: the committed decode kernels over issue 30's grid beside the peers of
# the same call (torch SDPA: cuDNN and flash for grouped decode; SDPA over the decompressed
# latent for MLA): MLA at B 1-64 x L 1k-32k, paged at B 1-16 x L 1k-16k; checks of the three
# on sm_90a and under --emulate sm_103a.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
timeout 150 python3 bench/peers.py --only decode,mla_decode --out $R/peers.json > $R/peers.txt 2>&1; save
timeout 120 /tmp/tilec check attention_decode_grouped paged_attention_decode mla_decode --md $R/check.md > $R/check.log 2>&1; save
timeout 120 /tmp/tilec check attention_decode_grouped paged_attention_decode mla_decode --emulate sm_103a --md $R/check_emu103.md > $R/check_emu103.log 2>&1; save
timeout 150 /tmp/tilec bench mla_decode --peers $R/peers.json --json $R/mla_decode.json --md $R/mla_decode.md > $R/mla_decode.log 2>&1; save
P=$(for b in 1 4 16; do for l in 1024 4096 16384; do printf "%sx28x4x%sx128:f16," $b $l; done; done)
timeout 150 /tmp/tilec bench paged_attention_decode --shapes ${P%,} --peers $R/peers.json --json $R/paged_attention_decode.json --md $R/paged_attention_decode.md > $R/paged_attention_decode.log 2>&1; save
rm -rf $OUT/r
