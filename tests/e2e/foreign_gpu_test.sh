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
. "$HERE/check_vs_reference.sh"
python3 "$WRITER" "$W/m.gguf" $MODE
NPROMPT=300
TOKENS=$(python3 -c "import random; r=random.Random(5); print(','.join(str(r.randrange(0, 256)) for _ in range($NPROMPT)))")
echo "foreign GGUF ${MODE:-plain}, $NPROMPT prompt tokens"
check_vs_reference "$W/m.gguf" "$TOKENS" "$NPROMPT" 340 5e-3
