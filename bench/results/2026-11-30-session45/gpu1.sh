#!/bin/bash
# Session 45, call 1 (NVIDIA H200): issue 34 from end to end. The binary of bed2f00c (the
# issue's first compile-time table, 2026-11-27: before the lowering work) on its own kernel
# library (.carry/kold) against this session's binary (1fc4871) on today's, alternated
# old-new-new-old, `tilec bench K --quick --reps 200` at each binary's default shapes.
R=/tmp/r45; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r45; }
xz -dc .carry/tilec.xz > /tmp/tilec-new && chmod +x /tmp/tilec-new
xz -dc .carry/tilec-before.xz > /tmp/tilec-old && chmod +x /tmp/tilec-old
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt; save
for k in ${K:-fmha matmul mla_decode attention_decode_grouped softmax rmsnorm topk_partial moe_align mla}; do
  for v in old new new old; do
    d=kernels; [ $v = old ] && d=.carry/kold/kernels
    timeout 70 /tmp/tilec-$v bench $k --kernels-dir $d --quick --reps 200 --json $R/bench-$k-$v-$RANDOM.json > $R/bench-$k-$v.$RANDOM.txt 2>&1; save
  done
done
cat $R/gpu.txt
for f in $R/bench-*.txt; do echo "== $(basename $f) $(grep -E "^\| [a-z]" $f | grep -v "^| kernel" | cut -d'|' -f2-6 | tr '\n' ';')"; done
