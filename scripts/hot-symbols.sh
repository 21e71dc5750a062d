#!/bin/bash
# Regenerates cli/hot-symbols.txt: the functions a compile runs, which the `tilec` binary's
# link places first in its code (cli/build.rs says why and when).
#
#   bash scripts/hot-symbols.sh [TILEC]
#
# TILEC (default target/release/tilec) compiles a fixed set of library kernels -- memory-bound
# and tensor-core ones, on each target -- under callgrind, which records every function that
# executed. The list is those functions' symbols: first those that ran in the most of the
# compiles (what every compile runs lies together, so a small kernel's compile touches few
# pages), then by instructions executed, then by name. The names are the same in another
# checkout's build with the same LLVM, rustc and Cargo.lock (Cargo's crate metadata, which
# Rust's symbol hashes derive from, does not depend on the checkout's path); a function
# renamed since is skipped by the link.
# Needs valgrind (callgrind_annotate). Takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
TILEC=$(realpath "${1:-target/release/tilec}")
OUT=cli/hot-symbols.txt
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
command -v valgrind >/dev/null || { echo "hot-symbols: needs valgrind" >&2; exit 1; }

n=0
while read -r file arch kernel; do
  [ -n "$file" ] || continue
  args=(compile "kernels/$file" --arch "$arch" --no-cache -o "$WORK/out.ptx")
  [ "$kernel" = "-" ] || args+=(--kernel "$kernel")
  n=$((n + 1))
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$WORK/cg.$n" "$TILEC" "${args[@]}" \
    > /dev/null 2> "$WORK/log.$n" || { cat "$WORK/log.$n" >&2; exit 1; }
  callgrind_annotate --threshold=100 "$WORK/cg.$n" > "$WORK/fn.$n"
done <<'EOF'
softmax.tile sm_90a -
argmax.tile sm_103a -
rmsnorm.tile sm_121a rmsnorm
gelu.tile sm_121a -
rope.tile sm_90a rope
fmha.tile sm_90a -
matmul.tile sm_121a -
matmul_fp8.tile sm_90a matmul_fp8_rowwise
mla.tile sm_103a -
attention_decode_grouped.tile sm_103a -
EOF

python3 - "$WORK" "$TILEC" "$OUT" <<'PY'
import glob, re, sys
work, tilec, out = sys.argv[1:]
# callgrind_annotate: "  1,234 (0.5%)  file:function [object]"; recursion adds a '2 suffix.
line = re.compile(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?\S*?:(\S+)\s+\[(.*)\]\s*$")
cost, runs = {}, {}
for path in sorted(glob.glob(f"{work}/fn.*")):
    for text in open(path):
        m = line.match(text)
        if not m or m.group(3) != tilec:
            continue
        name = re.sub(r"'\d+$", "", m.group(2))
        if name.startswith("0x"):
            continue
        cost[name] = cost.get(name, 0) + int(m.group(1).replace(",", ""))
        runs.setdefault(name, set()).add(path)
names = sorted(cost, key=lambda n: (-len(runs[n]), -cost[n], n))
with open(out, "w") as f:
    f.write("".join(n + "\n" for n in names))
print(f"hot-symbols: {len(names)} functions -> {out}")
PY
