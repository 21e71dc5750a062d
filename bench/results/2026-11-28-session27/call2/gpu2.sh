#!/bin/bash
# Session 27, call 2: mla_decode at LLVM O1 / O2 against O3 (its default), timed natively and
# under --emulate sm_121a on three decode shapes, interleaved (O3, O1, O2) twice.
R=/tmp/r2; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r2; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
for o in 1 2; do mkdir -p /tmp/k$o && cp kernels/*.tile /tmp/k$o/ && sed -i "s/hints { num_warps = 4 }/hints { num_warps = 4, opt_level = $o }/" /tmp/k$o/mla_decode.tile; done
S="--shapes 1x16x4096x512x64:f16,4x16x16384x512x64:f16,64x16x4096x512x64:f16 --reps 200"
for r in 1 2; do
  for o in 3 1 2; do
    d=kernels; [ $o != 3 ] && d=/tmp/k$o
    timeout 80 $T bench mla_decode --kernels-dir $d $S --json $R/O$o-$r.json > $R/O$o-$r.txt 2>&1; save
  done
done
for o in 3 1 2; do
  d=kernels; [ $o != 3 ] && d=/tmp/k$o
  timeout 80 $T bench mla_decode --kernels-dir $d --emulate sm_121a $S --json $R/O$o-121.json > $R/O$o-121.txt 2>&1; save
done
grep -H "| mla_decode" $R/O*.txt | sed 's/.tmp.r2.//' | cut -c1-170
