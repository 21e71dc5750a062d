#!/bin/bash
B=$1; cd /tmp/ns
for f in kernels/*.tile; do
  for k in $(grep -oE "^kernel\s+[A-Za-z_][A-Za-z_0-9]*" $f | awk '{print $2}'); do
    for a in sm_90a sm_103a sm_121a; do
      n=$(basename $f .tile)_${k}_$a
      $B compile $f --kernel $k --arch $a --no-cache -o /tmp/ns/out/$n.ptx > /dev/null 2>/tmp/ns/err.txt || { echo "FAIL $n $(head -c 200 /tmp/ns/err.txt)"; continue; }
      o=/tmp/pc/kernels_$(basename $f)_${k}_$a.ptx
      cmp -s $o /tmp/ns/out/$n.ptx && echo "SAME $n" || echo "DIFF $n"
    done
  done
done
