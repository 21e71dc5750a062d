#!/bin/bash
# Session 27, call 1: every kernel checked natively (a regression guard for this session's
# lowering changes, which are sm_103a-only), then mla_decode at LLVM O1 / O2 against O3 (its
# default): checked and timed natively and under --emulate sm_121a, interleaved twice.
R=/tmp/r1; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r1; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
timeout 240 $T check > $R/check-native.txt 2>&1; echo "rc=$?" >> $R/check-native.txt; save
for o in 1 2; do mkdir -p /tmp/k$o && cp kernels/*.tile /tmp/k$o/ && sed -i "s/hints { num_warps = 4 }/hints { num_warps = 4, opt_level = $o }/" /tmp/k$o/mla_decode.tile; grep -c "opt_level = $o" /tmp/k$o/mla_decode.tile >> $R/sed.txt; done
for o in 1 2; do
  timeout 60 $T check mla_decode --kernels-dir /tmp/k$o > $R/check-O$o.txt 2>&1; save
  timeout 60 $T check mla_decode --kernels-dir /tmp/k$o --emulate sm_121a > $R/check-O$o-121.txt 2>&1; save
done
for r in 1 2; do
  for o in 3 1 2; do
    d=kernels; [ $o != 3 ] && d=/tmp/k$o
    timeout 60 $T bench mla_decode --kernels-dir $d --json $R/O$o-$r.json > $R/O$o-$r.txt 2>&1; save
    timeout 60 $T bench mla_decode --kernels-dir $d --emulate sm_121a --json $R/O$o-121-$r.json > $R/O$o-121-$r.txt 2>&1; save
  done
done
tail -3 $R/check-native.txt; grep -h "passed\|failed\|FAIL" $R/check-O*.txt | head; grep -H "| mla_decode" $R/O*.txt | sed 's/.tmp.r1.//' | cut -c1-160
