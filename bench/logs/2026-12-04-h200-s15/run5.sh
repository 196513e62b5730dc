#!/usr/bin/env bash
# Session 15, call 5 (staged at 25b459d: the command-line scanner, the GGUF
# model-key check, kiln run's prompt checked before the GPU): the non-deep
# gpu tests, then kiln run on the tiny model with the new checks.
KILN_CALL_TESTS="-j4 -E deep" KILN_CALL_TEST_TIMEOUT=300 bash tools/gpu_call.sh
B=/tmp/kiln-gpu/pkg/bin W=/tmp/s15
mkdir -p $W
{
  $B/kilnc synth --preset tiny --type Q8_0 --seed 1 -o $W/t.gguf 2>&1 | tail -1
  $B/kilnc synth --preset tiny --type Q8_0 --seed 1 --untied -o $W/u.gguf 2>&1 | tail -1
  $B/kilnc compile $W/t.gguf -o $W/t.kiln 2>&1 | tail -1
  for args in "-p - a - b -n 8" "--tokens 1,2,3 -n 4" "--tokens 1,2,99999 -n 2" "-p hi --temp -1" "-p hi --bogus"; do
    echo "\$ kiln run $args"
    # shellcheck disable=SC2086  # the words of args are the flags
    set -- $args
    [ "$1" = "-p" ] && [ "$2" = "-" ] && set -- -p "- a - b" -n 8
    $B/kiln run -b $W/t.kiln -m $W/t.gguf "$@" 2>&1 | tail -3
    echo "rc=${PIPESTATUS[0]}"
  done
  echo "\$ kiln run (tied bundle, untied GGUF)"
  $B/kiln run -b $W/t.kiln -m $W/u.gguf -p hi -n 2 2>&1 | tail -2
} > "$OUT/run-checks.txt" 2>&1
cat "$OUT/run-checks.txt"
