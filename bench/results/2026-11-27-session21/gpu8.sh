#!/bin/bash
# Session 21, call 8: matmul_splitk computed transposed (the weights as the wgmma's M-major A
# operand, m64n16, TMA rings; .carry/knew) against today's (mma.sync, 16x64 tiles) on Qwen2-7B's
# decode projections (Q/K/V, O, down) at splits 2-16, one process each, twice for the splits the
# model uses.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; save
S=16x4608x3584:f16,16x3584x3584:f16,16x3584x18944:f16
run() { name=$1; shift; timeout 60 /tmp/tilec bench matmul_splitk --shapes $S "$@" --md $R/$name.md > $R/$name.log 2>&1; grep "^| matmul" $R/$name.md | sed "s/^/$name /" >> $R/all.txt; save; }
timeout 100 /tmp/tilec check matmul_splitk --kernels-dir .carry/knew --md $R/check_new.md > $R/check_new.log 2>&1; save
for s in 2 4 8 16; do run old_s$s --const SPLIT=$s; run new_s$s --kernels-dir .carry/knew --const SPLIT=$s; done
for s in 4 8; do run old_s${s}_b --const SPLIT=$s; run new_s${s}_b --kernels-dir .carry/knew --const SPLIT=$s; done
