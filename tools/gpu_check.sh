#!/usr/bin/env bash
# One whole GPU run, on the GPU host, from the repository root with .gpu/
# (made by tools/stage_gpu.sh) beside it: unpack the binaries, check they
# start, run every CTest test labelled `gpu`, then the benchmark table.
# Logs go to the folder given as $1 (default $OUT).
# usage: tools/gpu_check.sh [LOGDIR] [extra ctest arguments, e.g. -E deep]
# The device tool returns at most 8 files from $OUT: give a scratch LOGDIR and
# tar it into $OUT, e.g.
#   timeout 570 bash tools/gpu_check.sh /tmp/logs -j4; tar -C /tmp/logs -czf $OUT/logs.tgz .
# env: KILN_BENCH_TYPES (default "Q8_0 Q4_K_M"; "" skips the 8B bench),
#      KILN_TUNE_BUDGET (e.g. 100s: tune the 8B models first; tools/gpu_bench.sh)
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

# Every test's own output goes to gpu-tests-verbose.log; the summary to the console.
(cd "$PKG" && ctest -L gpu -V --timeout 900 -j1 "$@") > "$LOG/gpu-tests-verbose.log" 2>&1
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|Total Test time" "$LOG/gpu-tests-verbose.log" | tee "$LOG/gpu-tests.log"

# Then Qwen3-8B bench + profile, after a tuning run when KILN_TUNE_BUDGET is set (tools/gpu_bench.sh).
# KILN_BENCH_TYPES="" skips it.
BENCH_TYPES=${KILN_BENCH_TYPES-Q8_0 Q4_K_M}
if [ -n "$BENCH_TYPES" ]; then
  bash tools/gpu_bench.sh "$BIN" "$LOG" $BENCH_TYPES 2>&1 | tee "$LOG/bench.txt"
  rm -rf /tmp/kiln-gpu/bench
fi

