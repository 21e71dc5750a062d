#!/bin/bash
# Session 25, call 1: split-K factor sweep of matmul_splitk at Qwen2-7B's decode shapes
# (Q/K/V 16x4608x3584, O 16x3584x3584, down 16x3584x18944), the committed kernel and one that
# deals K steps evenly (keven); then the Qwen2 decode step with --splits 4,4,4 and 7,7,7.
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r; }
xz -dc .carry/bins.tar.xz | tar xf - -C /tmp && chmod +x /tmp/bins/*
T=/tmp/bins/tilec
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt; save
SH=16x4608x3584:f16,16x3584x3584:f16,16x3584x18944:f16
for s in 4 7 2 3 5 6 8 9 10 12 14 4; do
  timeout 60 $T bench matmul_splitk --shapes $SH --const SPLIT=$s --json $R/s$s.json --md $R/s$s.md > $R/s$s.log 2>&1
done; save
for s in 7 9 11 5; do
  timeout 60 $T bench matmul_splitk --kernels-dir .carry/keven --shapes $SH --const SPLIT=$s --json $R/e$s.json --md $R/e$s.md > $R/e$s.log 2>&1
done; save
for f in $R/s*.md $R/e*.md; do echo "== $f"; grep matmul_splitk $f | awk -F'|' '{print $3, $5, $9}'; done
timeout 150 python3 examples/qwen2/reference.py --out /tmp/q2 --layers 28 --batch 16 --prompt-len 512 --new-tokens 50 > $R/reference.log 2>&1; save
run() { name=$1; shift; timeout 100 "$@" --weights /tmp/q2 --json $R/$name.json > $R/$name.txt 2>&1; save; }
run q444-1 /tmp/bins/qwen2 --splits 4,4,4
run q777-1 /tmp/bins/qwen2 --splits 7,7,7
run q444-2 /tmp/bins/qwen2 --splits 4,4,4
run q777-2 /tmp/bins/qwen2 --splits 7,7,7
grep -h "split-K factors\|tilec (graph)\|tilec (launches)\|copy floor\|logits:\|qkv proj\|o proj\|down proj" $R/q*.txt
