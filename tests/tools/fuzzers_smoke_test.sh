#!/usr/bin/env bash
# The two libFuzzer targets (GGUF reader; bundle parser + manifest validator)
# still build with clang++-19, ASan and UBSan from their scripts'
# source lists, and each runs a short fuzz from its seed corpus without a
# finding. Their scripts are outside the CMake build, so this is what keeps
# them from rotting (a source the bundle writer came to need was missing
# from tools/build_bundle_fuzzer.sh's list for several sessions). Long runs
# are by hand: docs/architecture.md "Testing".
set -uo pipefail
SRC=$1
OUT=$2   # build folder for the fuzzers (kept between runs; the bundle fuzzer's objects are reused when unchanged)
RUNS=${KILN_FUZZ_SMOKE_RUNS:-20000}
# shellcheck source=../script_checks.sh
source "$SRC/tests/script_checks.sh"
mkdir -p "$OUT"

build_and_fuzz() {  # <name> <build command...>: builds, then fuzzes a copy of the seeds
  local name=$1; shift
  check "$name builds" "$@"
  local corpus="$T/$name-corpus"
  mkdir -p "$corpus"
  local seeds=$OUT/seeds
  [ "$name" = gguf_fuzz ] && seeds=$OUT/gguf_corpus
  cp "$seeds"/* "$corpus"/ 2>/dev/null
  check "$name has seeds" test -n "$(ls -A "$corpus")"
  local dict=()
  [ "$name" = gguf_fuzz ] && dict=(-dict="$SRC/tests/models/gguf/gguf_fuzz.dict")
  # A finding's reproducer goes to $OUT (crash-*, leak-*, timeout-*), which outlives the test.
  (cd "$T" && "$OUT/$name" "${dict[@]}" -artifact_prefix="$OUT/" -runs="$RUNS" -max_total_time=120 "$corpus" \
     > "$T/$name.log" 2>&1)
  local rc=$?
  check "$name: $RUNS runs from the seeds, no finding (exit $rc)" test "$rc" -eq 0
  check "$name ran its runs" grep -q "^Done $RUNS runs" "$T/$name.log"
  [ "$rc" -eq 0 ] || tail -40 "$T/$name.log"
}

build_and_fuzz gguf_fuzz "$SRC/tools/build_fuzzers.sh" "$OUT"
build_and_fuzz bundle_fuzz "$SRC/tools/build_bundle_fuzzer.sh" "$OUT"
finish
