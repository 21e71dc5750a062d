#!/usr/bin/env bash
# Session 22, call 4: the committed binary's decode kernels (TMA-fed mma.sync rings on
# sm_90a, the grouped kernel's new combine and split rule) over issue 30's whole grid beside
# the peers, and the checks: the three decode kernels and the sort kernels on sm_90a, the
# grouped kernel under emulation of sm_121a and sm_103a.
set -u
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf r.tgz r); }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
timeout 150 python3 bench/peers.py --only decode,mla_decode --out $R/peers.json > $R/peers.txt 2>&1; save
timeout 120 /tmp/tilec check attention_decode_grouped paged_attention_decode mla_decode topk_partial topk_merge lang_sort moe_route --md $R/check.md > $R/check.log 2>&1; save
timeout 60 /tmp/tilec check attention_decode_grouped --emulate sm_121a --md $R/check_emu121.md > $R/check_emu121.log 2>&1
timeout 60 /tmp/tilec check attention_decode_grouped --emulate sm_103a --md $R/check_emu103.md > $R/check_emu103.log 2>&1; save
for k in attention_decode_grouped paged_attention_decode mla_decode; do
  timeout 120 /tmp/tilec bench $k --peers $R/peers.json --json $R/$k.json --md $R/$k.md > $R/$k.log 2>&1; save
done
rm -rf $OUT/r
