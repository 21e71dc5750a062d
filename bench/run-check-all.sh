#!/bin/bash
# `tilec run --gpu --check` on every kernel of the library that lowers: each runs on the GPU
# and on the CPU interpreter with the same inputs, every tensor compared. Integer inputs
# (ids, group offsets, sequence lengths, block tables) come from .npy files written by NumPy.
# Usage (on a GPU machine with NumPy): bash bench/run-check-all.sh TILEC OUTDIR
set -u
T=${1:?tilec binary}; OUT=${2:?output folder}; K=${TILEC_KERNELS:-$(cd "$(dirname "$0")/.." && pwd)/kernels}
mkdir -p "$OUT/npy" && cd "$OUT/npy" || exit 1
python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(0)
i32 = lambda a: np.asarray(a, dtype=np.int32)
half, s = 64, 100
ang = np.arange(s)[:, None] * 10000.0 ** (-np.arange(half)[None, :] / half)
np.save('cos.npy', np.cos(ang).astype(np.float16)); np.save('sin.npy', np.sin(ang).astype(np.float16))
ids = rng.integers(0, 500, 100); ids[7::16] = -1; ids[11::16] = 500
np.save('ids.npy', i32(ids))
np.save('offsets.npy', i32([0, 100, 100, 300]))
np.save('lens3.npy', i32([100, 250, 300])); np.save('lens2.npy', i32([200, 300]))
np.save('tables.npy', i32(rng.permutation(60)[:57].reshape(3, 19)))
PY
run() { # NAME ARGS…
  local name=$1; shift
  echo "== $name: tilec run $*"
  "$T" run "$@" > out.txt 2>&1; local rc=$?
  grep -E "^  [A-Za-z_]+: max abs|^error|MISMATCH" out.txt
  echo "exit $rc"
}
f16() { echo "--arg $1:f16"; }
z() { echo "--arg zeros:$1:${2:-f16}"; }
G="--gpu --check"
run softmax $K/softmax.tile $G $(f16 64x1000) $(z 64x1000)
run softmax_online $K/softmax_online.tile $G $(f16 8x5000) $(z 8x5000)
run silu_mul $K/silu_mul.tile $G $(f16 33x4096) $(f16 33x4096) $(z 33x4096)
run swiglu $K/swiglu.tile $G $(f16 33x1000) $(f16 33x1000) $(z 33x1000)
run rmsnorm $K/rmsnorm.tile --kernel rmsnorm $G $(f16 16x4096) $(f16 4096) $(z 16x4096) --arg 0.000001
run rmsnorm_persistent $K/rmsnorm.tile --kernel rmsnorm_persistent $G $(f16 1000x4096) $(f16 4096) $(z 1000x4096) --arg 0.000001
run rope $K/rope.tile --kernel rope $G --const H=4 --const HK=2 $(f16 2x100x4x128) $(f16 2x100x2x128) --arg @cos.npy --arg @sin.npy
run rope_table $K/rope.tile --kernel rope_table $G $(z 100x64) $(z 100x64) --arg 10000.0
run row_max $K/row_max.tile $G $(f16 100x1000) $(z 100x1) $(z 13x1)
run dropout $K/dropout.tile $G $(f16 64x1000) $(z 64x1000) $(z 64x1000) --arg 0.1 --arg 42 --arg 0
run embedding $K/embedding.tile $G --arg @ids.npy $(f16 500x256) $(z 100x256)
run gelu $K/gelu.tile $G $(f16 33x777) $(z 33x777)
run transpose $K/transpose.tile $G $(f16 300x200) $(z 200x300)
run matmul $K/matmul.tile $G $(f16 200x136) $(f16 136x328) $(z 200x328)
run bmm $K/bmm.tile $G $(f16 2x200x136) $(f16 2x136x328) $(z 2x200x328)
run group_gemm $K/group_gemm.tile $G $(f16 300x128) $(f16 3x128x256) $(z 300x256) --arg @offsets.npy --arg 200
for k in fmha tutorial/fmha_step2_mma tutorial/fmha_step3_exp2 tutorial/fmha_step4_load_order tutorial/fmha_step5_latency tutorial/fmha_step6_occupancy tutorial/fmha_step7_approx_div; do
  f=$(ls $K/$k*.tile 2>/dev/null | head -1)
  run "$(basename $k)" $f $G --const H=2 $(f16 1x2x300x128) $(f16 1x2x300x128) $(f16 1x2x300x128) $(z 1x2x300x128) --arg 0.0883883
  run "$(basename $k) causal D64" $f $G --const H=2 --const TILE_D=64 --const CAUSAL=true $(f16 1x2x300x64) $(f16 1x2x300x64) $(f16 1x2x300x64) $(z 1x2x300x64) --arg 0.125
done
run mla $K/mla.tile $G --const H=2 --const D=128 --const DR=64 --arg 1x2x256x128:bf16 --arg 1x2x256x64:bf16 --arg 1x2x256x128:bf16 --arg 1x256x64:bf16 --arg 1x2x256x128:bf16 --arg zeros:1x2x256x128:bf16 --arg 0.0721688
run mla_decode $K/mla_decode.tile $G $(f16 2x16x512) $(f16 2x16x64) $(f16 2x300x512) $(f16 2x300x64) --arg @lens2.npy $(z 2x16x512) --arg 0.0416667
run attention_decode_grouped $K/attention_decode_grouped.tile $G --const G=4 $(f16 3x8x128) $(f16 3x2x300x128) $(f16 3x2x300x128) $(z 3x8x128) --arg @lens3.npy --arg 0.0883883
run paged_attention_decode $K/paged_attention_decode.tile $G --const G=4 $(f16 3x8x128) $(f16 60x16x2x128) $(f16 60x16x2x128) --arg @tables.npy --arg @lens3.npy $(z 3x8x128) --arg 0.0883883
