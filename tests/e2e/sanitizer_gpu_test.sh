#!/usr/bin/env bash
# compute-sanitizer on the tiny model (label gpu): memcheck (with leak check)
# and racecheck over a whole kiln run — load, warm-up of every plan, a
# chunked prefill and graph-launched decode steps. Any report fails the test.
# usage: sanitizer_gpu_test.sh TYPE
set -euo pipefail
TYPE=$1
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${KILN_BIN_DIR:-$HERE}
[ -x "$BIN/kilnc" ] && [ -x "$BIN/kiln" ] || { echo "no kilnc/kiln in $BIN (set KILN_BIN_DIR)"; exit 1; }
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$SAN" ] || { echo "compute-sanitizer not found (PATH or /usr/local/cuda/bin)"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$BIN/kilnc" synth --preset tiny --type "$TYPE" --seed 11 -o "$W/m.gguf"
"$BIN/kilnc" compile "$W/m.gguf" -o "$W/m.kiln" >/dev/null
# 600 prompt tokens: two prefill chunks (512 tokens each) on the tiny model.
TOKENS=$(python3 -c "import random; r=random.Random(5); print(','.join(str(r.randrange(0, 300)) for _ in range(600)))")
RUN=("$BIN/kiln" run -b "$W/m.kiln" -m "$W/m.gguf" --tokens "$TOKENS" -n 8 --ignore-eos -c 700)
for tool in "memcheck --leak-check full" racecheck; do
  echo "== compute-sanitizer --tool $tool"
  # shellcheck disable=SC2086
  "$SAN" --tool $tool --error-exitcode 3 --print-limit 20 "${RUN[@]}" > "$W/out.txt" 2> "$W/err.txt" || {
    rc=$?; cat "$W/out.txt" "$W/err.txt"; echo "compute-sanitizer --tool $tool: exit $rc"; exit 1; }
  grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|LEAK SUMMARY" "$W/out.txt" "$W/err.txt" || true
  tail -n 1 "$W/out.txt"
done
echo "sanitizers clean"
