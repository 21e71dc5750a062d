#!/bin/bash
# Session 31, call 2 (NVIDIA H200): mla_decode old (first-offset-chunks=0) / new (16),
# alternated four times, 500 reps, three shapes: is call 1's +0.5-1 % real?
R=/tmp/r31b; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r31b; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
for i in 1 2 3 4; do
  for v in old new; do
    if [ $v = old ]; then P=(--pass-option "tile-to-llvm{first-offset-chunks=0}"); else P=(--pass-option "tile-to-llvm{first-offset-chunks=16}"); fi
    timeout 60 $T bench mla_decode --shapes 1x16x4096x512x64:f16,16x16x4096x512x64:f16,1x16x16384x512x64:f16 --reps 500 "${P[@]}" --json $R/$v-$i.json > $R/$v-$i.txt 2>&1; save
  done
done
for f in $R/*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-5; done
