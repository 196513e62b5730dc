#!/usr/bin/env bash
# Whole-model check on the GPU (label gpu): for a preset and weight type,
# synthesize, compile, run with kiln, and compare every logits row with the
# CPU reference (fp16 KV cache like the GPU) — at prefill and at decode steps
# deep into the context — and the greedy tokens over 32 steps, on a bundle
# compiled with --prefill-logits all; with joined decode launches (Q4_K_M)
# the same model launched apart, side by side and on one stream; then the
# default bundle (last).
# usage: model_gpu_test.sh PRESET TYPE PROMPT_TOKENS BOUND
set -euo pipefail
PRESET=$1 TYPE=$2 NPROMPT=$3 BOUND=$4
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${KILN_BIN_DIR:-$HERE}  # staged GPU runs keep the binaries beside this script
[ -x "$BIN/kilnc" ] && [ -x "$BIN/kiln" ] || { echo "no kilnc/kiln in $BIN (set KILN_BIN_DIR)"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
. "$HERE/check_vs_reference.sh"
"$BIN/kilnc" synth --preset "$PRESET" --type "$TYPE" --seed 7 -o "$W/m.gguf"
TOKENS=$(python3 -c "import random; r=random.Random(3); print(','.join(str(r.randrange(0, 300)) for _ in range($NPROMPT)))")
CTX=$((NPROMPT + 40))
echo "$PRESET $TYPE, $NPROMPT prompt tokens"
check_vs_reference "$W/m.gguf" "$TOKENS" "$NPROMPT" "$CTX" "$BOUND"
# Decode's q/k and v projections of different weight types (Q4_K_M): by
# default one launch (a matvec join); --no-matvec-join launches them apart,
# side by side (Launch.beside_next, which that bundle must then have); with
# --no-concurrent-launches too, one after another on one stream. The same
# matvec code on the same inputs, so the same tokens, and logits equal but
# for the order of split-K atomic adds (1e-4, where a stale, missing or
# misplaced row would be off by its size).
"$BIN/kilnc" inspect "$W/m.kiln" > "$W/m.txt"  # a file: grep -q closing a pipe would fail it under pipefail
if grep -q "matvec_join" "$W/m.txt"; then
  for V in "apart:--no-matvec-join" "serial:--no-matvec-join --no-concurrent-launches"; do
    NAME=${V%%:*}
    read -r -a FLAGS <<< "${V#*:}"
    "$BIN/kilnc" compile "$W/m.gguf" -o "$W/$NAME.kiln" --prefill-logits all "${FLAGS[@]}" >/dev/null
    "$BIN/kilnc" inspect "$W/$NAME.kiln" > "$W/$NAME.txt"
    if grep -q "matvec_join" "$W/$NAME.txt"; then
      echo "${FLAGS[*]}: the bundle still has a matvec join"
      exit 1
    fi
    "$BIN/kiln" run -b "$W/$NAME.kiln" -m "$W/m.gguf" --tokens "$TOKENS" -n 32 --ignore-eos -c $CTX \
      --dump-logits "$W/$NAME.npy" > "$W/$NAME.out"
    if ! diff <(tail -n 1 "$W/gpu.txt") <(tail -n 1 "$W/$NAME.out"); then
      echo "${FLAGS[*]}: greedy tokens differ from the joined bundle's"
      exit 1
    fi
    python3 "$HERE/compare_logits.py" "$W/gpu.npy" "$W/$NAME.npy" 1e-4
  done
  if ! grep -q "beside_next: true" "$W/apart.txt"; then
    echo "--no-matvec-join: no launch runs beside another"
    exit 1
  fi
  echo "matvec join: the apart (side by side) and one-stream plans' greedy tokens and logits"
fi
# --prefill-logits last (the default): each prefill chunk computes its last token's logits
# only (a one-token matvec on that row). Generation reads nothing else, so
# the greedy tokens stay the reference's. Sampling reads that row's values:
# seeded, it draws what the every-row bundle draws (only the first draw
# reads the prefill's row; the rest run the same decode plan). With
# --dump-logits the runtime feeds the prompt a token at a time instead:
# those rows, up to the first generated token's (later ones follow this
# run's own tokens), match the reference.
"$BIN/kilnc" compile "$W/m.gguf" -o "$W/last.kiln" >/dev/null
"$BIN/kiln" run -b "$W/last.kiln" -m "$W/m.gguf" --tokens "$TOKENS" -n 32 --ignore-eos -c $CTX > "$W/last.txt"
if ! diff <(tail -n 1 "$W/last.txt") <(tail -n 1 "$W/cpu.txt"); then
  echo "--prefill-logits last: greedy tokens differ from the CPU reference"
  exit 1
fi
for B in m last; do
  "$BIN/kiln" run -b "$W/$B.kiln" -m "$W/m.gguf" --tokens "$TOKENS" -n 4 --ignore-eos -c $CTX \
    --temp 1 --top-k 0 --seed 11 > "$W/sampled-$B.txt" 2>/dev/null
done
if ! diff <(tail -n 1 "$W/sampled-m.txt") <(tail -n 1 "$W/sampled-last.txt"); then
  echo "--prefill-logits last: seeded sampling draws other tokens than the every-row bundle"
  exit 1
fi
"$BIN/kiln" run -b "$W/last.kiln" -m "$W/m.gguf" --tokens "$TOKENS" -n 32 --ignore-eos -c $CTX \
  --dump-logits "$W/last.npy" > /dev/null
python3 "$HERE/compare_logits.py" "$W/last.npy" "$W/cpu.npy" "$BOUND" 0 $((NPROMPT + 1))
echo "--prefill-logits last: greedy tokens identical, seeded draws identical, logits rows token by token within the bound"
