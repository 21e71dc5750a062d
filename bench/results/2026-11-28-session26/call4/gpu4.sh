#!/bin/bash
# Session 26, call 4: sm_121a's configuration of the GEMMs under --emulate sm_121a, one block a
# tile (the default) against --persistent, and against --persistent --warp-specialize,
# interleaved twice; sm_103a's emulated configuration beside them (the ratio issue 28 asks for).
R=/tmp/r4; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r4; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
for r in 1 2; do
  for k in matmul bmm matmul_fp8; do
    timeout 60 $T bench $k --emulate sm_121a --json $R/$k-default-$r.json > $R/$k-default-$r.txt 2>&1; save
    timeout 60 $T bench $k --emulate sm_121a --persistent --json $R/$k-persistent-$r.json > $R/$k-persistent-$r.txt 2>&1; save
    timeout 60 $T bench $k --emulate sm_121a --persistent --warp-specialize --json $R/$k-pws-$r.json > $R/$k-pws-$r.txt 2>&1; save
  done
done
for k in matmul bmm matmul_fp8; do
  timeout 60 $T bench $k --emulate sm_103a --json $R/$k-sm103a.json > $R/$k-sm103a.txt 2>&1; save
done
timeout 120 $T check matmul bmm matmul_fp8 --emulate sm_121a --persistent --json $R/check-persistent.json > $R/check-persistent.txt 2>&1; save
tail -n 1 $R/check-persistent.txt
grep -H "| matmul\|| bmm" $R/*.txt | sed 's/.tmp.r4.//' | awk -F'|' '{print $1, $3, $4, $6}'
