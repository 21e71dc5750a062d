#!/bin/bash
# Session 32, call 4 (NVIDIA H200, new first in each pair): attention_decode_grouped at B1 (call 2: new 0.0133 ms in
# both pairs, old 0.0131/0.0132): old/new alternated four times, 1000 reps.
R=/tmp/r32d; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r32d; }
[ -x /tmp/tilec ] || { xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec; }
T=/tmp/tilec
for i in 1 2 3 4; do
  for v in new old; do
    P=(--pass-option "tile-to-llvm{swizzle-split=$([ $v = old ] && echo false || echo true)}")
    timeout 40 $T bench attention_decode_grouped paged_attention_decode --shapes 1x28x4x4096x128:f16,1x28x4x1024x128:f16 --reps 1000 "${P[@]}" --json $R/$v-$i.json > $R/$v-$i.txt 2>&1; save
  done
done
for f in $R/*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6; done
