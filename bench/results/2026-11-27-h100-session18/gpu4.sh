#!/bin/bash
# Session 18, call 4: the decode kernels' checks (ragged lengths, splits, counters) through the
# parallel `tilec check`, results tarred after each step.
mkdir -p /tmp/b && [ -x /tmp/b/tilec ] || xz -dc .carry/tilec.xz > /tmp/b/tilec; chmod +x /tmp/b/tilec
T=/tmp/b/tilec
R=/tmp/r; mkdir -p $R
s=$(date +%s); tick() { echo "$1 $(( $(date +%s) - s )) s" >> $R/times.txt; tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.csv; nproc >> $R/device.csv; tick start
export TILEC_CACHE_DIR=/tmp/tc_check
for k in attention_decode_grouped paged_attention_decode mla_decode; do
  timeout 70 $T check $k --json $R/check_$k.json --md $R/check_$k.md > $R/check_$k.txt 2>&1; echo "rc $?" >> $R/check_$k.txt; tick $k
done
