#!/bin/bash
# Session 30, call 1 (NVIDIA H200): the top-k network (issue 34) — checks of every kernel with
# a sort, with the network and without it (`topk-network=false`: the sort's, as before),
# racecheck of the small sorts (the guarded last shares), then timing on / off interleaved.
R=/tmp/r30a; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r30a; }
xz -dc .carry/tilec.xz > /tmp/tilec && chmod +x /tmp/tilec
T=/tmp/tilec
OFF='tile-to-llvm{topk-network=false}'
K="topk_partial topk_merge lang_sort moe_route"
timeout 120 $T check $K --md $R/check-on.md > $R/check-on.txt 2>&1; echo "rc=$?" >> $R/check-on.txt; save
timeout 120 $T check $K --pass-option "$OFF" --md $R/check-off.md > $R/check-off.txt 2>&1; echo "rc=$?" >> $R/check-off.txt; save
timeout 150 compute-sanitizer --tool racecheck --racecheck-report hazard $T check lang_sort moe_route > $R/racecheck.txt 2>&1; echo "rc=$?" >> $R/racecheck.txt; save
b() { timeout 90 $T bench $1 --shapes $2 --json $R/bench-$1-$3-$4.json "${@:5}" > $R/bench-$1-$3-$4.txt 2>&1; save; }
for i in 1 2; do
  b topk_partial 16x152064:f16,256x152064:f16 on $i
  b topk_partial 16x152064:f16,256x152064:f16 off $i --pass-option "$OFF"
  b topk_merge 16x608:f32,256x608:f32 on $i
  b topk_merge 16x608:f32,256x608:f32 off $i --pass-option "$OFF"
  b moe_route 256x64:f16,16384x64:f16 on $i
  b moe_route 256x64:f16,16384x64:f16 off $i --pass-option "$OFF"
done
tail -n 4 $R/check-*.txt; tail -n 15 $R/racecheck.txt
grep -h "^| [a-z]" $R/bench-*.txt
