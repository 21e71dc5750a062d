#!/bin/bash
# Session 32, call 7 (NVIDIA H200): topk_merge and moe_route, the binary after the sort's
# comparator change (c2) first in each pair this time, 1000 reps, four alternations.
R=/tmp/r32g; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r32g; }
[ -x /tmp/tilec.c2 ] || { xz -dc .carry/tilec.xz > /tmp/tilec.c2 && chmod +x /tmp/tilec.c2; }
[ -x /tmp/tilec.c1 ] || { xz -dc .carry/tilec-c1.xz > /tmp/tilec.c1 && chmod +x /tmp/tilec.c1; }
for i in 1 2 3 4; do
  for v in c2 c1; do
    T=/tmp/tilec.$v
    timeout 40 $T bench moe_route --shapes 4096x64:f16,16384x64:f16 --reps 1000 --json $R/route-$v-$i.json > $R/route-$v-$i.txt 2>&1; save
    timeout 40 $T bench topk_merge --shapes 256x1024:f16,1024x1024:f16 --reps 1000 --json $R/merge-$v-$i.json > $R/merge-$v-$i.txt 2>&1; save
  done
done
for f in $R/*-c*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6; done
