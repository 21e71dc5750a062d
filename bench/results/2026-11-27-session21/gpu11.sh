#!/bin/bash
# Session 21, call 11: the transposed matmul_splitk's ring depth, K tile and split on Qwen2-7B's
# decode projections (Q/K/V, O, down), one process each.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
S=16x4608x3584:f16,16x3584x3584:f16,16x3584x18944:f16
run() { name=$1; shift; timeout 45 /tmp/tilec bench matmul_splitk --shapes $S "$@" --md $R/$name.md > $R/$name.log 2>&1; grep "^| matmul" $R/$name.md | sed "s/^/$name /" >> $R/all.txt; save; }
run s4 --const SPLIT=4
run s4_l3 --const SPLIT=4 --const LATENCY=3
run s4_l4 --const SPLIT=4 --const LATENCY=4
run s4_k128 --const SPLIT=4 --const TILE_K=128 --const LATENCY=1
run s2_k128_l2 --const SPLIT=2 --const TILE_K=128 --const LATENCY=2
run s6_l3 --const SPLIT=6 --const LATENCY=3
run s8_l3 --const SPLIT=8 --const LATENCY=3
run s8 --const SPLIT=8
run s5_k128 --const SPLIT=5 --const TILE_K=128 --const LATENCY=1
