#!/bin/bash
# Session 28, call 1 (NVIDIA H200, the only GPU lent): the tile programs of sm_103a's new
# orders checked on the GPU under --emulate sm_103a (mma.sync products, same tile program):
# fmha's one query tile with the scores a key tile ahead, fmha_fp8's FlashAttention-4 order;
# the fp8 conversions' change (two f32 a cvt, 8-bit register stores as words) checked natively
# and under --emulate sm_121a on every kernel whose PTX it changed, then timed against the
# previous compiler (5986d80, .carry pair: tilec_old) interleaved twice. Also fmha's two key
# tiles an iteration (KEY_TILES = 2, sm_103a's D = 64 default) under --emulate sm_103a.
R=/tmp/r28; rm -rf $R; mkdir -p $R
save() { tar czf $OUT/r.tgz -C /tmp r28; }
mkdir -p /tmp/bin && xz -dc .carry/pair.tar.xz | tar xf - -C /tmp/bin && chmod +x /tmp/bin/*
N=/tmp/bin/tilec_new; O=/tmp/bin/tilec_old
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
FP8="fmha_fp8 mla_fp8 quant_fp8_rowwise quant_fp8_blockwise quant_fp8_block2d quant_mxfp8"
timeout 120 $N check $FP8 --md $R/check-fp8-native.md > $R/check-fp8-native.txt 2>&1; save
timeout 90 $N check fmha_fp8 mla_fp8 --emulate sm_121a --md $R/check-fp8-emu121.md > $R/check-fp8-emu121.txt 2>&1; save
timeout 90 $N check fmha_fp8 --emulate sm_103a --const AHEAD=1 --md $R/check-fp8-emu103-ahead.md > $R/check-fp8-emu103-ahead.txt 2>&1; save
timeout 120 $N check fmha --emulate sm_103a --const Q_TILES=1 --const AHEAD=1 --md $R/check-fmha-emu103-one-tile-ahead.md > $R/check-fmha-emu103-one-tile-ahead.txt 2>&1; save
timeout 120 $N check fmha --emulate sm_103a --const Q_TILES=1 --const AHEAD=1 --const KEY_TILES=2 --const K_LATENCY=1 --const V_LATENCY=1 --md $R/check-fmha-emu103-two-key-tiles.md > $R/check-fmha-emu103-two-key-tiles.txt 2>&1; save
for r in 1 2; do
  for b in new old; do
    B=$N; [ $b = old ] && B=$O
    timeout 60 $B bench fmha_fp8 --shapes 4x32x4096x128:f8e4m3,4x32x4096x64:f8e4m3 --reps 50 --json $R/fmha_fp8-$b-$r.json > $R/fmha_fp8-$b-$r.txt 2>&1; save
    timeout 40 $B bench mla_fp8 --reps 50 --json $R/mla_fp8-$b-$r.json > $R/mla_fp8-$b-$r.txt 2>&1; save
    timeout 40 $B bench quant_fp8_rowwise quant_mxfp8 --quick --reps 50 --json $R/quant-$b-$r.json > $R/quant-$b-$r.txt 2>&1; save
  done
done
tail -n 3 $R/check-*.txt; grep -h "| fmha_fp8\|| mla_fp8\|| quant" $R/*-new-*.txt $R/*-old-*.txt | cut -c1-160
