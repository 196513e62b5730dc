#!/usr/bin/env bash
# Qwen3-8B on the GPU host: synthesize each type, compile, `kiln bench`
# (table + JSON) and `kiln profile`; optionally `kilnc tune` both models
# first and compile with the table it exports. Logs go to LOGDIR.
# usage: tools/gpu_bench.sh BIN_DIR LOGDIR [TYPES...]   (default Q8_0 Q4_K_M)
# env: KILN_TUNE_BUDGET=100s  tune each model for that long before the bench
#      KILN_TUNE_FAMILIES      e.g. attention (default: every family tune knows)
#      KILN_BENCH_ARGS        extra `kiln bench` flags
#      KILN_NCU               a kernel-name regex: Nsight Compute sections for the
#                             first matching kernels of `kiln profile` (ncu-TYPE.txt)
#      KILN_NCU_ARGS          more ncu flags, e.g. "--section SourceCounters
#                             --section InstructionStats -c 2" (stalls per SASS
#                             instruction; a later -c overrides the default 8)
set -uo pipefail
BIN=$1 LOG=$2
shift 2
[ $# -gt 0 ] || set -- Q8_0 Q4_K_M
W=${KILN_BENCH_WORK:-/tmp/kiln-gpu/bench}
mkdir -p "$W" "$LOG"
for TYPE in "$@"; do
  TIMEFORMAT="synth 8b $TYPE: %R s"
  time "$BIN/kilnc" synth --preset 8b --type "$TYPE" --seed 1 -o "$W/8b-$TYPE.gguf" >/dev/null 2>&1
done 2>&1 | tee "$LOG/synth.txt"
TABLE=()
if [ -n "${KILN_TUNE_BUDGET:-}" ]; then
  for TYPE in "$@"; do
    echo "== kilnc tune 8b $TYPE (budget $KILN_TUNE_BUDGET)"
    "$BIN/kilnc" tune -m "$W/8b-$TYPE.gguf" --target sm_90 --budget "$KILN_TUNE_BUDGET" \
      ${KILN_TUNE_FAMILIES:+--families "$KILN_TUNE_FAMILIES"} \
      --cache "$LOG/tune.tsv" --export "$LOG/sm_90.txtpb" 2>&1 | tr '\r' '\n' | grep -v '^\s*$' | tail -60
  done 2>&1 | tee "$LOG/tune.txt"
  [ -s "$LOG/sm_90.txtpb" ] && TABLE=(--schedules "$LOG/sm_90.txtpb")
fi
for TYPE in "$@"; do
  echo "== 8b $TYPE"
  TIMEFORMAT="compile: %R s"
  time "$BIN/kilnc" compile "$W/8b-$TYPE.gguf" -o "$W/8b-$TYPE.kiln" "${TABLE[@]}" 2>&1 | tail -1
  "$BIN/kiln" bench -b "$W/8b-$TYPE.kiln" -m "$W/8b-$TYPE.gguf" --json ${KILN_BENCH_ARGS:-} \
    > "$LOG/bench-$TYPE.json" 2> "$LOG/bench-$TYPE.err"
  echo "bench exit $?"; tail -3 "$LOG/bench-$TYPE.err"
  python3 - "$LOG/bench-$TYPE.json" <<'PY' || cat "$LOG/bench-$TYPE.json" | head -c 3000
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(d, indent=1)[:6000])
PY
  "$BIN/kiln" profile -b "$W/8b-$TYPE.kiln" -m "$W/8b-$TYPE.gguf" > "$LOG/profile-$TYPE.txt" 2>&1
  head -30 "$LOG/profile-$TYPE.txt"
  if [ -n "${KILN_NCU:-}" ]; then
    # Hardware counters; the clocks are left alone (device library METHOD.md).
    NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    # shellcheck disable=SC2086  # KILN_NCU_ARGS is a list of ncu flags
    timeout 120 "$NCU" --clock-control none -k "regex:$KILN_NCU" -c 8 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis ${KILN_NCU_ARGS:-} \
      "$BIN/kiln" profile -b "$W/8b-$TYPE.kiln" -m "$W/8b-$TYPE.gguf" > "$LOG/ncu-$TYPE.txt" 2>&1
    echo "ncu exit $?"
  fi
done
