#!/usr/bin/env bash
# Compile time against kernel size: a kernel of N statements (a chain of elementwise ops on
# one tile, and as many scalar lets), compiled to the tile stage and to PTX, for N = 1k, 10k,
# 100k. Compile time should grow linearly. Usage: bash bench/compile_time.sh [TILEC] > table.md
set -euo pipefail
tilec=${1:-target/release/tilec}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "| statements | tile stage (s) | to PTX (s) |"
echo "|---|---|---|"
for n in 1000 10000 100000; do
  python3 - "$n" > "$dir/k.tile" <<'PY'
import sys
n = int(sys.argv[1])
print("kernel chain(x: tensor<f32, 1>, y: tensor<f32, 1>) grid = (cdiv(x.shape[0], 256),) {")
print("    let t = load(x, index=(bid(0),), shape=(256,));")
for i in range(n // 2):
    print(f"    let s{i} = {i} + 1;")
    print(f"    t = t * 1.0001 + 0.5;")
print("    store(y, index=(bid(0),), tile=t);")
print("}")
PY
  t0=$(date +%s.%N); "$tilec" compile "$dir/k.tile" --arch sm_90a --emit tile -o /dev/null; t1=$(date +%s.%N)
  "$tilec" compile "$dir/k.tile" --arch sm_90a -o "$dir/k.ptx" 2>/dev/null; t2=$(date +%s.%N)
  printf '| %d | %.2f | %.2f |\n' "$n" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
done
