#!/bin/bash
# Session 28, call 3 (NVIDIA H200): the quantization kernels (whose PTX the paired fp8
# conversion changed) timed old/new interleaved; call 2's old runs ran out of their 40 s.
R=/tmp/r28c; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r28c; }
[ -x /tmp/bin/tilec_new ] || { mkdir -p /tmp/bin && xz -dc .carry/pair.tar.xz | tar xf - -C /tmp/bin && chmod +x /tmp/bin/*; }
N=/tmp/bin/tilec_new; O=/tmp/bin/tilec_old
for r in 1 2; do
  for b in old new; do
    B=$N; [ $b = old ] && B=$O
    timeout 100 $B bench quant_fp8_rowwise quant_mxfp8 --quick --json $R/quant-$b-$r.json > $R/quant-$b-$r.txt 2>&1; save
  done
done
grep -H "| quant" $R/*.txt | sed 's/.tmp.r28c.//' | cut -c1-120
