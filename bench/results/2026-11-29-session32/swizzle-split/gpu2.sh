#!/bin/bash
# Session 32, call 2 (NVIDIA H200): old (swizzle-split=false) / new timing, interleaved,
# small shapes so that each bench's own check is quick.
R=/tmp/r32b; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r32b; }
[ -x /tmp/tilec ] || { xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec; }
T=/tmp/tilec
run() { # name timeout args...
  local n=$1 t=$2; shift 2
  for v in old new; do
    P=(--pass-option "tile-to-llvm{swizzle-split=$([ $v = old ] && echo false || echo true)}")
    timeout $t $T bench "$@" "${P[@]}" --json $R/$n-$v.json > $R/$n-$v.txt 2>&1; echo "rc=$?" >> $R/$n-$v.txt; save
  done
}
for i in 1 2; do
  run decode-$i 70 mla_decode paged_attention_decode attention_decode_grouped --quick --reps 300
  run fmha-$i 50 fmha --shapes 2x16x2048x128:f16,2x16x2048x64:f16 --reps 200
  run matmul-$i 40 matmul --shapes 2048x2048x2048:f16 --reps 200
done
for f in $R/*.txt; do echo "== $f $(tail -1 $f)"; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6; done
