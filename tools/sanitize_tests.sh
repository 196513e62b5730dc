#!/usr/bin/env bash
# Builds kiln with AddressSanitizer and UndefinedBehaviorSanitizer (g++, the
# main build's compiler; any UB finding stops the program) into its own
# folder and runs the CPU tests there. Not part of CI: it takes about 12
# minutes to build and 4 to test on 2 cores.
#
#   tools/sanitize_tests.sh [BUILD_DIR]     # default: build-sanitize
#
# Extra arguments after BUILD_DIR go to ctest (say -R gguf).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build-sanitize}"
shift || true
mkdir -p "$out"
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S "$root" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" > "$out/configure.log" \
  || { cat "$out/configure.log"; exit 1; }
ninja -C "$out" -j"$(nproc)"
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$out" -LE gpu --output-on-failure -j"$(nproc)" "$@"
