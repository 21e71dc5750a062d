#!/bin/bash
# Session 43, call 3 (NVIDIA H200): the kernels that now compile without LLVM's straight-line
# strength reduction (topk_partial, topk_merge, moe_align, moe_permute, moe_route): checked,
# then timed with the session start's library (the hints without it) and the new one, one
# binary, alternated old-new-new-old twice.
R=/tmp/r43c; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r43c; }
xz -dc .carry2/tilec.xz > /tmp/tilec-new && chmod +x /tmp/tilec-new
rm -rf /tmp/kold && cp -r kernels /tmp/kold && cp .carry2/kold/*.tile /tmp/kold/
timeout 240 /tmp/tilec-new check topk_partial topk_merge moe_align moe_permute moe_route --md $R/check.md --json $R/check.json > $R/check.txt 2>&1; echo "rc=$?" >> $R/check.txt; save
bench() { # kernel shapes
  for i in 1 2; do for v in old new new old; do
    d=kernels; [ $v = old ] && d=/tmp/kold
    timeout 60 /tmp/tilec-new bench $1 --kernels-dir $d $2 --quick --reps 200 --json $R/bench-$1-$v-$i-$RANDOM.json > $R/bench-$1-$v-$i.$RANDOM.txt 2>&1
  done; done; save
}
bench topk_partial "--shapes 16x152064:f16,64x152064:f32"
bench moe_route "--shapes 8192x64:bf16,16x64:f16"
bench moe_align "--shapes 8192x64x6:i32"
bench moe_permute "--shapes 4096x64x6x2048:bf16"
tail -n 4 $R/check.txt
for f in $R/bench-*.txt; do echo "== $f"; grep -E "^\| [a-z]" $f | grep -v "^| kernel"; done
