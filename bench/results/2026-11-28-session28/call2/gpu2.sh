#!/bin/bash
# Session 28, call 2 (NVIDIA H200): the fp8 conversions' change (two f32 a cvt, 8-bit register
# stores as words) timed against the previous compiler (5986d80: tilec_old) on sm_90a,
# interleaved old/new twice (call 1 ran out of time after its checks and the first new run).
R=/tmp/r28b; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r28b; }
[ -x /tmp/bin/tilec_new ] || { mkdir -p /tmp/bin && xz -dc .carry/pair.tar.xz | tar xf - -C /tmp/bin && chmod +x /tmp/bin/*; }
N=/tmp/bin/tilec_new; O=/tmp/bin/tilec_old
for r in 1 2; do
  for b in old new; do
    B=$N; [ $b = old ] && B=$O
    timeout 60 $B bench fmha_fp8 --shapes 4x32x4096x128:f8e4m3,4x32x4096x64:f8e4m3 --reps 100 --json $R/fmha_fp8-$b-$r.json > $R/fmha_fp8-$b-$r.txt 2>&1; save
    timeout 40 $B bench mla_fp8 --reps 100 --json $R/mla_fp8-$b-$r.json > $R/mla_fp8-$b-$r.txt 2>&1; save
    timeout 40 $B bench quant_fp8_rowwise quant_mxfp8 --quick --json $R/quant-$b-$r.json > $R/quant-$b-$r.txt 2>&1; save
  done
done
grep -H "| fmha_fp8\|| mla_fp8\|| quant" $R/*.txt | sed 's/.tmp.r28b.//' | cut -c1-120
