#!/bin/bash
# Session 26, call 2: under --emulate sm_103a (its mma.sync configuration on the H200), matmul
# and bmm at sm_103a's new defaults (persistent, a producer warpgroup) against one block a
# tile (tile-persistent and tile-warp-specialize disabled), interleaved; sm_121a's
# configuration of matmul beside them.
R=/tmp/r2; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r2; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
P="--disable-pass tile-persistent --disable-pass tile-warp-specialize"
for r in 1 2; do
  for k in matmul bmm; do
    timeout 90 $T bench $k --emulate sm_103a --json $R/$k-persistent-$r.json > $R/$k-persistent-$r.txt 2>&1; save
    timeout 90 $T bench $k --emulate sm_103a $P --json $R/$k-plain-$r.json > $R/$k-plain-$r.txt 2>&1; save
  done
done
timeout 90 $T bench matmul --emulate sm_121a --json $R/matmul-sm121a.json > $R/matmul-sm121a.txt 2>&1; save
grep -H "| matmul\|| bmm" $R/*.txt
