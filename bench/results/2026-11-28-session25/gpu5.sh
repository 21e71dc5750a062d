#!/bin/bash
# Session 25, call 5: checks of the products with the gate/up prefetch (plain and as graphs),
# issue 30's decode kernels (ragged lengths), matmul_swiglu timed with and without its
# prefetch (a launch alone: nothing before it to overlap), and `tilec tune` keeping each
# configuration's measurement (a grown space times only what is new).
R=$OUT/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
timeout 150 $T check matmul_swiglu matmul_splitk attention_decode_grouped paged_attention_decode mla_decode --md $R/check.md > $R/check.log 2>&1
timeout 100 $T check --graph matmul_swiglu matmul_splitk --md $R/check_graph.md > $R/check_graph.log 2>&1
timeout 60 $T check matmul_swiglu --emulate sm_121a --md $R/check_emu121.md > $R/check_emu121.log 2>&1
SH=16x18944x3584:f16,1x18944x3584:f16,16x10944x2048:f16
for r in 1 2; do for p in 8 0; do
  timeout 60 $T bench matmul_swiglu --shapes $SH --const PREFETCH=$p --json $R/sw$p-$r.json --md $R/sw$p-$r.md > $R/sw$p-$r.log 2>&1
done; done
export TILEC_CACHE_DIR=/tmp/tc
A="--arg 4096x3000:f16 --arg zeros:4096x3000:f16"
timeout 60 $T tune kernels/softmax.tile --space BLOCK_N=1024,2048 $A > $R/tune1.log 2>&1
timeout 60 $T tune kernels/softmax.tile --space BLOCK_N=4096,1024,2048 $A > $R/tune2.log 2>&1
timeout 60 $T tune kernels/softmax.tile --space BLOCK_N=2048,4096 $A > $R/tune3.log 2>&1
(cd $OUT && tar czf r.tgz r && rm -rf r)
cd /tmp && tar xzf $OUT/r.tgz
tail -n 3 /tmp/r/check*.log
for f in /tmp/r/sw*.md; do echo "== $f"; grep matmul_swiglu $f | awk -F'|' '{print $3, $5, $8}'; done
tail -n 12 /tmp/r/tune*.log
