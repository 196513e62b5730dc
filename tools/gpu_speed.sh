#!/usr/bin/env bash
# Decode-speed baseline on the GPU host: synthesize Qwen3-8B in the given
# types, compile, and run a 512-token prompt with 256 greedy tokens; prints
# kiln's speed line. Until `kiln bench` exists this is the end-to-end number.
# usage: tools/gpu_speed.sh BIN_DIR WORK_DIR [TYPES...]
set -uo pipefail
BIN=$1 W=$2
shift 2
[ $# -gt 0 ] || set -- Q8_0 Q4_K_M
mkdir -p "$W"
TOKENS=$(python3 -c "import random; r=random.Random(3); print(','.join(str(r.randrange(0, 30000)) for _ in range(512)))")
for TYPE in "$@"; do
  echo "== 8b $TYPE"
  TIMEFORMAT="synth %R s"
  time "$BIN/kilnc" synth --preset 8b --type "$TYPE" --seed 1 -o "$W/8b-$TYPE.gguf" >/dev/null 2>&1
  TIMEFORMAT="compile %R s"
  time "$BIN/kilnc" compile "$W/8b-$TYPE.gguf" -o "$W/8b-$TYPE.kiln" >/dev/null 2>&1
  "$BIN/kiln" run -b "$W/8b-$TYPE.kiln" -m "$W/8b-$TYPE.gguf" --tokens "$TOKENS" -n 256 --ignore-eos -c 1024 2>&1 >/dev/null | tail -4
done
