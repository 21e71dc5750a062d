#!/bin/bash
# cgmem.sh BIN OUT (session 43): callgrind instructions of every memory-bound library kernel x target.
B=$1; OUT=$2; : > $OUT
cd /work/main
for k in bias_add kv_append acc_bias acc_swiglu acc_residual_rmsnorm rope_kv_append acc_bias_rope_kv_append moe_route moe_align moe_permute moe_combine argmax histogram topk_partial topk_merge quant_fp4 quant_mxfp8 softmax softmax_online silu_mul rmsnorm rmsnorm_persistent rope rope_table dropout transpose embedding gelu row_max swiglu residual_add acc_residual; do
  f=$(grep -lE "^kernel\s+$k\b" kernels/*.tile | head -1); [ -z "$f" ] && continue
  for a in sm_90a sm_103a sm_121a; do
    n=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $B compile $f --kernel $k --arch $a --no-cache -o /dev/null 2>&1 | grep refs | awk '{print $NF}' | tr -d ,)
    echo "$k $a $n" >> $OUT
  done
done
