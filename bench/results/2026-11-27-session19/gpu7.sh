#!/bin/bash
# Session 19, calls 2-3: matmul_swiglu's A (one load, both products) now one cp.async ring
# instead of a register load. Call 2 (`new`): checked on sm_90a and under sm_121a/sm_103a
# emulation, then timed twice; call 3 (`old`, the binary before the change, on the same warm
# machine): timed twice. Usage: gpu7.sh new|old
B=$1; R=/tmp/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
save() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu_$B.txt; save
if [ $B = newcheck ]; then
  timeout 150 /tmp/tilec check matmul_swiglu --md $R/check_sm90a.md > $R/check.log 2>&1
  timeout 100 /tmp/tilec check --emulate sm_121a matmul_swiglu --md $R/check_emu121.md >> $R/check.log 2>&1
  timeout 100 /tmp/tilec check --emulate sm_103a matmul_swiglu --md $R/check_emu103.md >> $R/check.log 2>&1
  save
fi
S=1x18944x3584:f16,16x18944x3584:f16
for i in 1 2; do
  timeout 150 /tmp/tilec bench matmul_swiglu --shapes $S --md $R/bench_${B}_$i.md > $R/bench_${B}_$i.log 2>&1; save
done
