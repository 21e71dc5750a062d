#!/bin/bash
# instruction counts (callgrind Ir) of whole compile processes, old (session start) vs new
out=/tmp/s22/cg.txt; : > $out
for spec in "topk.tile topk_partial" "topk.tile topk_merge" "attention_decode_grouped.tile attention_decode_grouped" "mla_decode.tile mla_decode" "paged_attention_decode.tile paged_attention_decode" "moe_route.tile moe_route"; do
  set -- $spec
  for a in sm_90a sm_103a; do
    for v in old new; do
      if [ $v = old ]; then b=/tmp/s22/tilec-old; k=/tmp/s22/k0/kernels; else b=/tmp/s22/tilec-4; k=/work/main/kernels; fi
      ir=$(valgrind --tool=callgrind --callgrind-out-file=/tmp/s22/cg.out $b compile $k/$1 --kernel $2 --arch $a --no-cache -o /tmp/s22/cg.ptx 2>&1 | grep -o "Collected : [0-9]*" | awk '{print $3}')
      echo "$2 $a $v $ir" >> $out
    done
  done
done
echo done >> $out
