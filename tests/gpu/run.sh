#!/usr/bin/env bash
# The tests that need a GPU (an H100/H200: sm_90a), from the repository root:
#   1. tests/gpu/launch_ctypes.py — a launcher written from docs/abi.md alone (ctypes over the
#      CUDA driver) runs tilec's PTX and checks it against PyTorch;
#   2. tests/gpu/test_torch.py — the Python package on PyTorch tensors (every memory-bound
#      kernel, FMHA, views, streams, errors, the python blocks of docs/python.md);
#   3. every `sh gpu` command of docs/*.md.
# The `tilec` package must be importable (PYTHONPATH) and the `tilec` command on the PATH
# (pip puts it beside the package: `pip install --target DIR` → DIR/bin).
# Usage: bash tests/gpu/run.sh [OUT_DIR]   — each part's output goes to OUT_DIR/<part>.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-out/gpu-tests}
mkdir -p "$out"
status=0
run() {
  local name=$1; shift
  echo "== $name: $*"
  if "$@" > "$out/$name.txt" 2>&1; then echo "   passed"; else echo "   FAILED (exit $?)"; status=1; fi
  tail -n 40 "$out/$name.txt"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
run launch_ctypes python3 tests/gpu/launch_ctypes.py tilec
run test_torch python3 tests/gpu/test_torch.py
# The `sh gpu` blocks of the docs, one command a line.
python3 - > "$out/docs_gpu_commands.sh" <<'PY'
import glob
for page in sorted(glob.glob("docs/*.md")):
    text = open(page).read()
    for block in text.split("```sh gpu\n")[1:]:
        for line in block.split("```")[0].splitlines():
            if line.strip() and not line.strip().startswith("#"):
                print(line.strip())
PY
run docs_gpu_commands bash -e -x "$out/docs_gpu_commands.sh"
exit $status
