#!/bin/bash
# Session 26, call 3: the fp8 GEMMs now persistent with a producer on sm_103a: checked and
# timed under --emulate sm_103a (mma.sync fp8, emulated with f16 products on sm_90a) against
# one block a tile; matmul and bmm checked again with the final binary (natively and both
# emulations).
R=/tmp/r3; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r3; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
K="matmul_fp8 matmul_fp8_rowwise matmul_fp8_blockwise matmul bmm"
timeout 150 $T check $K --emulate sm_103a --json $R/check-emu103.json > $R/check-emu103.txt 2>&1; save
timeout 150 $T check $K --json $R/check.json > $R/check.txt 2>&1; save
timeout 150 $T check $K --emulate sm_121a --json $R/check-emu121.json > $R/check-emu121.txt 2>&1; save
P="--disable-pass tile-persistent --disable-pass tile-warp-specialize"
for r in 1 2; do
  for k in matmul_fp8 matmul_fp8_rowwise; do
    timeout 90 $T bench $k --emulate sm_103a --json $R/$k-persistent-$r.json > $R/$k-persistent-$r.txt 2>&1; save
    timeout 90 $T bench $k --emulate sm_103a $P --json $R/$k-plain-$r.json > $R/$k-plain-$r.txt 2>&1; save
  done
done
for f in $R/check*.txt; do echo "$f: $(tail -n 1 $f)"; done
grep -H "| matmul" $R/*-[12].txt
