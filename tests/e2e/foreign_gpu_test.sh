#!/usr/bin/env bash
# Whole-model check on the GPU (label gpu) of the small Qwen3 GGUF that
# tests/models/write_foreign_gguf.py writes as Python converters do (F16
# weights, tied embeddings), plain, with YaRN rope scaling (factor 4 over
# an original context of 128, or its magnitude alone), or with an F32 ffn_up
# beside the F16 gate (unpacked: the up matvec's SiLU-times epilogue reads
# the gate's output), compiled and run by
# kiln, every logits row against the CPU reference (fp16 KV cache like the
# GPU) over 300 prompt positions and 32 decode steps, and the greedy tokens.
# usage: foreign_gpu_test.sh [yarn | yarn-magnitude | mixed] (env KILN_FOREIGN_WRITER:
# the writer script)
set -euo pipefail
MODE=${1:-}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${KILN_BIN_DIR:-$HERE}
WRITER=${KILN_FOREIGN_WRITER:-$HERE/../models/write_foreign_gguf.py}
[ -x "$BIN/kilnc" ] && [ -x "$BIN/kiln" ] || { echo "no kilnc/kiln in $BIN (set KILN_BIN_DIR)"; exit 1; }
[ -f "$WRITER" ] || { echo "no $WRITER (set KILN_FOREIGN_WRITER)"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
python3 "$WRITER" "$W/m.gguf" $MODE
"$BIN/kilnc" compile "$W/m.gguf" -o "$W/m.kiln" --prefill-logits all > /dev/null
NPROMPT=300 CTX=340
TOKENS=$(python3 -c "import random; r=random.Random(5); print(','.join(str(r.randrange(0, 256)) for _ in range($NPROMPT)))")
"$BIN/kiln" run -b "$W/m.kiln" -m "$W/m.gguf" --tokens "$TOKENS" -n 32 --ignore-eos -c $CTX \
  --dump-logits "$W/gpu.npy" > "$W/gpu.txt"
GEN=$(tail -n 1 "$W/gpu.txt" | tr ' ' ',')
"$BIN/kilnc" reference -m "$W/m.gguf" --tokens "$TOKENS,$GEN" -n 0 -c $CTX --kv-f16 \
  --dump-logits "$W/cpu.npy" > /dev/null 2>&1
"$BIN/kilnc" reference -m "$W/m.gguf" --tokens "$TOKENS" -n 32 --ignore-eos -c $CTX --kv-f16 > "$W/cpu.txt" 2>/dev/null
echo "foreign GGUF ${MODE:-plain}, $NPROMPT prompt tokens"
python3 "$HERE/compare_logits.py" "$W/gpu.npy" "$W/cpu.npy" 5e-3
if ! diff <(tail -n 1 "$W/gpu.txt") <(tail -n 1 "$W/cpu.txt"); then
  echo "greedy tokens differ from the CPU reference"
  exit 1
fi
echo "greedy tokens identical over 32 steps"
