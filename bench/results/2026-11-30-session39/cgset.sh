#!/bin/bash
# cgset2.sh BIN KROOT OUT : callgrind instruction counts of representative compiles (KROOT holds kernels/)
BIN=$1; KR=$2; OUT=$3; : > $OUT
cd $KR
while read f k a; do
  n=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $BIN compile $f --kernel $k --arch $a --no-cache -o /tmp/cgs_$$.ptx 2>&1 | grep -oP 'refs:\s+\K[\d,]+' | tr -d ,)
  echo "$k $a $n" >> $OUT
done <<'LIST'
kernels/argmax.tile argmax sm_90a
kernels/argmax.tile argmax sm_103a
kernels/embedding.tile embedding sm_90a
kernels/softmax.tile softmax sm_90a
kernels/rmsnorm.tile rmsnorm sm_121a
kernels/matmul_splitk.tile matmul_splitk sm_90a
kernels/matmul.tile matmul sm_90a
kernels/matmul.tile matmul sm_121a
kernels/fmha.tile fmha sm_90a
kernels/fmha.tile fmha sm_103a
kernels/fmha.tile fmha sm_121a
kernels/mla_decode.tile mla_decode sm_90a
kernels/mla_decode.tile mla_decode sm_103a
kernels/mla_decode.tile mla_decode sm_121a
kernels/attention_decode_grouped.tile attention_decode_grouped sm_90a
kernels/attention_decode_grouped.tile attention_decode_grouped sm_103a
kernels/paged_attention_decode.tile paged_attention_decode sm_103a
kernels/group_gemm.tile group_gemm sm_90a
kernels/bmm.tile bmm sm_103a
kernels/mla.tile mla sm_103a
LIST
