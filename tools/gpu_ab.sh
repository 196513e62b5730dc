#!/usr/bin/env bash
# A/B of compiler variants on the GPU host: the 8B model of each TYPE
# (synthesized once, seed 1) compiled by each variant's kilnc, with its
# schedule table if given, or a bundle compiled elsewhere; then `kiln bench`
# (one line per variant and depth, with the launch floor, then its prefill
# lengths and time to first token; the JSON is kept)
# and `kiln profile`. KILN_AB_ROUNDS rounds, each benching every type's
# variants in turn, so drift of the GPU shows as disagreement between rounds
# and a time limit that cuts the run short leaves every type measured.
# Then each variant greedily continues the same 16-token prompt for 16
# tokens with its logits dumped (compiled variants: from a second bundle
# with --prefill-logits all, so the prompt rows come from the prefill
# kernels; a bundle built elsewhere as it is, which with the default `last`
# feeds the prompt a decode step at a time), and every variant is checked
# against the first: the generated ids, and the logits of every row when they agree,
# else of the 16 prompt rows and the first decoded one (tests/e2e/
# compare_logits.py, relative error bound 5e-3, the model tests').
# usage: tools/gpu_ab.sh LOGDIR "TYPES" VARIANT ...
#   VARIANT: NAME=KILNC[,TABLE]   compile with that kilnc (and schedule table);
#                                 NAME a plain word (it names files)
#            NAME=bundle:PATH     a bundle built elsewhere; %T in PATH is the
#                                 type (a type without one skips the variant)
# env: KILN_BIN_DIR (kiln, kilnc), KILN_BENCH_ARGS (default: --prompt-lengths
#      512 --depths 0,4096 --steps 64), KILN_COMPILE_ARGS (extra `kilnc compile`
#      flags, e.g. --no-programmatic-launch), KILN_AB_ROUNDS (default 1)
set -uo pipefail
LOG=$1 TYPES=$2
shift 2
BIN=${KILN_BIN_DIR:?set KILN_BIN_DIR}
W=${KILN_BENCH_WORK:-/tmp/kiln-gpu/bench}
ARGS=${KILN_BENCH_ARGS:---prompt-lengths 512 --depths 0,4096 --steps 64}
# shellcheck source=greedy_tokens.sh
source "$(dirname "$0")/greedy_tokens.sh"
COMPARE=$(dirname "$0")/../tests/e2e/compare_logits.py
mkdir -p "$W" "$LOG"
declare -A NAMES_OF
for TYPE in $TYPES; do
  [ -s "$W/8b-$TYPE.gguf" ] ||
    "$BIN/kilnc" synth --preset 8b --type "$TYPE" --seed 1 -o "$W/8b-$TYPE.gguf" > /dev/null 2>&1
  NAMES=()
  for V in "$@"; do
    NAME=${V%%=*} REST=${V#*=}
    B="$W/8b-$TYPE-$NAME.kiln"
    if [ "${REST#bundle:}" != "$REST" ]; then
      SRC=${REST#bundle:}
      SRC=${SRC//%T/$TYPE}
      [ -s "$SRC" ] || { echo "$TYPE $NAME: no bundle $SRC; skipped"; continue; }
      cp "$SRC" "$B"
    else
      KILNC=${REST%%,*} TABLE=
      [ "$REST" != "$KILNC" ] && TABLE=${REST#*,}
      compile() {  # OUT [FLAGS...]: this variant's kilnc and table
        "$KILNC" compile "$W/8b-$TYPE.gguf" -o "$1" ${TABLE:+--schedules "$TABLE"} ${KILN_COMPILE_ARGS:-} "${@:2}" \
          >> "$LOG/compile-$TYPE-$NAME.txt" 2>&1
      }
      : > "$LOG/compile-$TYPE-$NAME.txt"
      compile "$B" ||
        { echo "$TYPE $NAME: compile failed"; tail -3 "$LOG/compile-$TYPE-$NAME.txt"; continue; }
      # For the logits check: every prompt row from the prefill kernels.
      compile "${B%.kiln}-all.kiln" --prefill-logits all || rm -f "${B%.kiln}-all.kiln"
    fi
    NAMES+=("$NAME")
  done
  NAMES_OF[$TYPE]="${NAMES[*]}"
done
# Rounds outermost: a time limit that ends the run early still leaves every
# type measured in the rounds before it.
for ROUND in $(seq 1 "${KILN_AB_ROUNDS:-1}"); do
  for TYPE in $TYPES; do
    for NAME in ${NAMES_OF[$TYPE]}; do
      B="$W/8b-$TYPE-$NAME.kiln" J="$LOG/ab-$TYPE-$NAME-r$ROUND.json"
      "$BIN/kiln" bench -b "$B" -m "$W/8b-$TYPE.gguf" --json $ARGS > "$J" 2> "${J%.json}.err"
      python3 - "$J" "$TYPE" "$NAME" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d.get("decode", []):
    floor = r.get("launch_floor_ms_per_token")
    print("%-7s %-12s depth %6d: %7.1f tok/s %6.3f ms/token %5.1f %% of probe (%.0f GB/s)%s" % (
        sys.argv[2], sys.argv[3], r["depth"], r["tok_per_s"], r["ms_per_token"], r["probe_percent"],
        d.get("probe_gb_per_s", 0),
        ", floor %.3f ms (step at %.1f %%)" % (floor, r["launch_floor_percent"]) if floor else ""))
for r in d.get("prefill", []):
    print("%-7s %-12s prefill %5d tokens: %8.2f ms %7.0f tok/s" % (sys.argv[2], sys.argv[3], r["tokens"], r["ms"],
                                                                  r["tok_per_s"]))
if d.get("ttft_prompt_tokens"):
    print("%-7s %-12s time to first token, %d-token prompt: first request %.2f ms, second %.2f ms" % (
        sys.argv[2], sys.argv[3], d["ttft_prompt_tokens"], d["first_ttft_ms"], d["second_ttft_ms"]))
PY
    done
  done
done
for TYPE in $TYPES; do
  for NAME in ${NAMES_OF[$TYPE]}; do
    B="$W/8b-$TYPE-$NAME.kiln"
    "$BIN/kiln" profile -b "$B" -m "$W/8b-$TYPE.gguf" > "$LOG/profile-$TYPE-$NAME.txt" 2>&1
    C="${B%.kiln}-all.kiln"
    [ -s "$C" ] || C=$B
    greedy_tokens "$BIN/kiln" "$C" "$W/8b-$TYPE.gguf" --dump-logits "$W/logits-$TYPE-$NAME.npy" \
      > "$LOG/tokens-$TYPE-$NAME.txt" 2> "$LOG/run-$TYPE-$NAME.err" ||
      { echo "$TYPE $NAME: kiln run failed"; tail -2 "$LOG/run-$TYPE-$NAME.err"; }
  done
  FIRST=
  for NAME in ${NAMES_OF[$TYPE]}; do
    [ -s "$LOG/tokens-$TYPE-$NAME.txt" ] || continue
    if [ -z "$FIRST" ]; then FIRST=$NAME; continue; fi
    if cmp -s "$LOG/tokens-$TYPE-$FIRST.txt" "$LOG/tokens-$TYPE-$NAME.txt"; then
      echo "$TYPE $NAME vs $FIRST: the same 16 greedy tokens; logits $(python3 "$COMPARE" \
        "$W/logits-$TYPE-$NAME.npy" "$W/logits-$TYPE-$FIRST.npy" 5e-3 || echo '(over the bound)')"
    else
      # The prompt rows and the first decoded one saw the same tokens.
      echo "$TYPE $NAME vs $FIRST: greedy tokens differ: $(cat "$LOG/tokens-$TYPE-$NAME.txt") against" \
        "$(cat "$LOG/tokens-$TYPE-$FIRST.txt"); logits $(python3 "$COMPARE" "$W/logits-$TYPE-$NAME.npy" \
        "$W/logits-$TYPE-$FIRST.npy" 5e-3 0 17 || echo '(over the bound)')"
    fi
  done
done
