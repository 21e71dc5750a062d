#!/bin/bash
# Session 19, call 4: matmul_swiglu (Qwen2's gate/up product with its SwiGLU epilogue, 44 %
# of the decode step) over tile shapes and pipeline depths, one call, median of 100 each.
R=/tmp/r; mkdir -p $R
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
save() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
S=16x18944x3584:f16,1x18944x3584:f16
run() { name=$1; shift; timeout 75 /tmp/tilec bench matmul_swiglu --shapes $S "$@" --md $R/$name.md > $R/$name.log 2>&1; grep "^| matmul_swiglu" $R/$name.md | sed "s/^/$name /" >> $R/all.txt; save; }
run base
run n64 --const TILE_N=64
run k128 --const TILE_K=128
run n64k128 --const TILE_N=64 --const TILE_K=128
run d3 --pass-option 'tile-pipeline{distance=3}'
run k128d3 --const TILE_K=128 --pass-option 'tile-pipeline{distance=3}'
run base2
