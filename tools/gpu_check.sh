#!/usr/bin/env bash
# One whole GPU run, on the GPU host, from the repository root with .gpu/
# (made by tools/stage_gpu.sh) beside it: unpack the binaries, check they
# start, run every CTest test labelled `gpu`, then the benchmark table.
# Logs go to the folder given as $1 (default $OUT).
# usage: tools/gpu_check.sh [LOGDIR] [extra ctest arguments, e.g. -E deep]
set -uo pipefail
LOG=${1:-${OUT:-/tmp/kiln-gpu-logs}}
shift || true
mkdir -p "$LOG"
export KILN_GPU_ROOT=$PWD
# The Qwen3 vocabulary for synthesizing real-shaped models (carried third_party/).
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
PKG=/tmp/kiln-gpu/pkg
rm -rf /tmp/kiln-gpu && mkdir -p /tmp/kiln-gpu && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
BIN=$PKG/bin
export KILN_BIN_DIR=$BIN
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  "$BIN/kilnc" --help | head -3
  "$BIN/kiln" devices
} 2>&1 | tee "$LOG/machine.txt"

# End-to-end decode speed first (a run cut short by the time limit keeps it).
# KILN_SPEED_TYPES="" skips it.
SPEED_TYPES=${KILN_SPEED_TYPES-Q8_0 Q4_K_M}
if [ -n "$SPEED_TYPES" ]; then
  bash tools/gpu_speed.sh "$BIN" /tmp/kiln-gpu/speed $SPEED_TYPES 2>&1 | tee "$LOG/speed.txt"
  rm -rf /tmp/kiln-gpu/speed
fi

(cd "$PKG" && ctest -L gpu --output-on-failure --timeout 900 -j1 "$@") 2>&1 | tee "$LOG/gpu-tests.log"
