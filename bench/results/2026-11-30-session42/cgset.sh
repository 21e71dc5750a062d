#!/bin/bash
# cgset.sh OLD NEW: callgrind instruction counts (whole process) of a set of compiles.
cg(){ valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | grep "refs" | awk '{print $NF}' | tr -d ,; }
cd /work/main
while read f k a; do
  o=$(cg $1 compile $f --kernel $k --arch $a --no-cache -o /dev/null); n=$(cg $2 compile $f --kernel $k --arch $a --no-cache -o /dev/null)
  echo "$k $a $o $n $(python3 -c "print(f'{($n-$o)/$o*100:+.1f} %')")"
done <<LIST
kernels/quant_mx.tile quant_fp4 sm_90a
kernels/quant_mx.tile quant_fp4 sm_103a
kernels/quant_mx.tile quant_fp4 sm_121a
kernels/lang/fp4.tile fp4_pack sm_90a
kernels/lang/fp4.tile fp4_pack sm_103a
kernels/lang/fp4.tile fp4_pack sm_121a
kernels/lang/bits.tile bits sm_90a
kernels/softmax.tile softmax sm_90a
kernels/argmax.tile argmax sm_103a
kernels/topk.tile topk_partial sm_90a
kernels/moe_route.tile moe_route sm_103a
kernels/fmha.tile fmha sm_90a
kernels/mla_decode.tile mla_decode sm_90a
kernels/rope.tile rope_kv_append sm_121a
kernels/quant_fp8.tile quant_fp8_block2d sm_90a
LIST
