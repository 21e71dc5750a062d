#!/bin/bash
# ptxall.sh BIN OUTDIR: PTX of every kernel (library, lang, tutorial, frontend ok) x target.
B=$1; O=$2; mkdir -p $O; cd /work/main
for f in kernels/*.tile kernels/lang/*.tile kernels/tutorial/*.tile tests/frontend/ok/*.tile; do
  [ -f "$f" ] || continue
  for k in $(grep -oE "^kernel\s+[A-Za-z_][A-Za-z_0-9]*" $f | awk '{print $2}'); do
    for a in sm_90a sm_103a sm_121a; do
      n=$(echo "$f" | tr '/' '_')_${k}_$a.ptx
      $B compile $f --kernel $k --arch $a --no-cache -o $O/$n > /dev/null 2>&1 || echo "FAIL $f $k $a"
    done
  done
done
