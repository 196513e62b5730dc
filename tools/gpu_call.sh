#!/usr/bin/env bash
# One GPU call as the device tool runs it, from the repository root with
# .gpu/ (tools/stage_gpu.sh) and, for A/B runs, .gpu/variants/
# (tools/stage_variants.sh) carried: the `gpu` tests through
# tools/gpu_check.sh (without its 8B bench), then, when variants are given,
# tools/gpu_ab.sh on the 8B models. Logs go to /tmp/logs; the summaries
# (gpu-tests.log, check.txt, ab.txt) and a tarball of all of it to $OUT.
# usage: tools/gpu_call.sh [TYPES VARIANT ...]
#   e.g. tools/gpu_call.sh "Q8_0 Q4_K_M" base=bundle:%W/base-%T.kiln new=%B/kilnc
#   VARIANT as tools/gpu_ab.sh takes it, with %W for the folder the
#   variants are unpacked into and %B for the staged bin/ (%T stays: the type).
# env: KILN_CALL_TESTS  ctest arguments (default "-j4 -E deep"; "" runs no test)
#      KILN_CALL_TEST_TIMEOUT, KILN_CALL_AB_TIMEOUT  seconds (default 420, 350;
#      the non-deep tests took ~270 s with -j4 in session 21, codegen_gpu_test
#      the longest: 200 s cut it; a call with an A/B after the tests should
#      lower one of them to stay under the device's 600 s a command)
#      KILN_CALL_WORK  the A/B's folder (default /tmp/kiln-gpu/ab, which
#      tools/gpu_check.sh clears: name another to keep models made before)
#      KILN_AB_ROUNDS (default 2), KILN_BENCH_ARGS (default --prompt-lengths 64
#      --depths 0,4096 --steps 64): passed on to tools/gpu_ab.sh
set -uo pipefail
cd "$(dirname "$0")/.."
L=/tmp/logs
OUTDIR=${OUT:-$L}
B=/tmp/kiln-gpu/pkg/bin W=${KILN_CALL_WORK:-/tmp/kiln-gpu/ab}
rm -rf "$L" && mkdir -p "$L" "$OUTDIR"
TESTS=${KILN_CALL_TESTS--j4 -E deep}
# gpu_check.sh unpacks the staged binaries, so it runs even with no test.
[ -n "$TESTS" ] || TESTS="-R ^no-test$"
# shellcheck disable=SC2086  # TESTS is a list of ctest arguments
KILN_BENCH_TYPES= timeout "${KILN_CALL_TEST_TIMEOUT:-420}" bash tools/gpu_check.sh "$L" $TESTS > "$L/check.txt" 2>&1
# Each stage's summary reaches $OUT as soon as it is written (the A/B's as
# it goes), so a call cut short by the device's limit still returns what
# finished.
save() {
  for f in "$@"; do
    [ -e "$L/$f" ] && [ "$L" != "$OUTDIR" ] && cp "$L/$f" "$OUTDIR/"
  done
  return 0
}
save gpu-tests.log check.txt
[ $# -eq 1 ] && echo "gpu_call: types '$1' but no variant: no A/B run"
if [ $# -ge 2 ]; then
  TYPES=$1
  shift
  export KILN_GPU_ROOT=$PWD KILN_BIN_DIR=$B KILN_BENCH_WORK=$W
  export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
  mkdir -p "$W"
  for T in $TYPES; do  # a model synthesized earlier in the call (say, for a tune) is kept
    [ -s "$W/8b-$T.gguf" ] ||
      timeout 120 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
  done
  for f in .gpu/variants/*.gz; do
    [ -e "$f" ] && gunzip -c "$f" > "$W/$(basename "$f" .gz)"
  done
  wait
  VARIANTS=()
  for V in "$@"; do
    V=${V//%W/"$W"}
    VARIANTS+=("${V//%B/"$B"}")
  done
  KILN_AB_ROUNDS=${KILN_AB_ROUNDS:-2} \
    KILN_BENCH_ARGS=${KILN_BENCH_ARGS:---prompt-lengths 64 --depths 0,4096 --steps 64} \
    timeout "${KILN_CALL_AB_TIMEOUT:-350}" bash tools/gpu_ab.sh "$L/ab" "$TYPES" "${VARIANTS[@]}" > "$OUTDIR/ab.txt" 2>&1
  [ "$L" != "$OUTDIR" ] && cp "$OUTDIR/ab.txt" "$L/"
fi
tar -C "$L" -czf "$OUTDIR/logs.tgz" --exclude=logs.tgz .
[ -e "$L/gpu-tests.log" ] && tail -3 "$L/gpu-tests.log"
[ -e "$L/ab.txt" ] && cat "$L/ab.txt"
exit 0
