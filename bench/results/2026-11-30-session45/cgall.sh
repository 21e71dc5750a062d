#!/bin/bash
# cgall.sh BIN ROOT OUT: callgrind instructions (whole process, `tilec compile --no-cache
# -o /dev/null`) of every kernel of ROOT/kernels/*.tile for sm_90a, sm_103a, sm_121a, run in
# ROOT (a binary compiles its own commit's kernel library). A failed compile reports `fail`.
B=$1; ROOT=$2; OUT=$3; : > $OUT
cd $ROOT
for f in kernels/*.tile; do
  for k in $(grep -oE "^kernel\s+[A-Za-z_][A-Za-z_0-9]*" $f | awk '{print $2}'); do
    for a in sm_90a sm_103a sm_121a; do
      r=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $B compile $f --kernel $k --arch $a --no-cache -o /dev/null 2>&1)
      if echo "$r" | grep -q "^wrote"; then n=$(echo "$r" | grep refs | awk '{print $NF}' | tr -d ,); else n=fail; fi
      echo "$k $a $n" >> $OUT
    done
  done
done
