#!/usr/bin/env bash
# Session 22, call 5 (call 4's two benches ran past their time limit in the CPU checks of
# the largest cases): attention_decode_grouped over issue 30's whole grid and
# paged_attention_decode at B 1-16, L 1k-16k, beside the peers of this call.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
timeout 100 python3 bench/peers.py --only decode --out $R/peers.json > $R/peers.txt 2>&1; save
timeout 300 /tmp/tilec bench attention_decode_grouped --peers $R/peers.json --json $R/attention_decode_grouped.json --md $R/attention_decode_grouped.md > $R/attention_decode_grouped.log 2>&1; save
P=$(for b in 1 4 16; do for l in 1024 4096 16384; do printf "%sx28x4x%sx128:f16," $b $l; done; done)
timeout 170 /tmp/tilec bench paged_attention_decode --shapes ${P%,} --peers $R/peers.json --json $R/paged_attention_decode.json --md $R/paged_attention_decode.md > $R/paged_attention_decode.log 2>&1; save
rm -rf $OUT/r
