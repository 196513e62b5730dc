#!/usr/bin/env bash
# kiln's main job on the embedded default model: synthesize the tiny Qwen3,
# compile it to a bundle with IR dumps, and generate from it — on the GPU
# when one is present, otherwise through the CPU reference (saying so).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/demo}
mkdir -p "$OUT"
BIN=build/bin

$BIN/kilnc synth --preset tiny --type Q8_0 --seed 1 -o "$OUT/tiny-q8_0.gguf"
$BIN/kilnc compile "$OUT/tiny-q8_0.gguf" -o "$OUT/tiny-q8_0.kiln" --dump-dir "$OUT/dump"
echo "demo: IR dumps, per-kernel .ll and .ptx in $OUT/dump (index: $OUT/dump/index.tsv)"
if $BIN/kiln devices >/dev/null 2>&1; then
  echo "demo: generating on the GPU"
  $BIN/kiln run -b "$OUT/tiny-q8_0.kiln" -m "$OUT/tiny-q8_0.gguf" -p "The quick brown fox" -n 16
else
  echo "demo: no NVIDIA GPU here ($($BIN/kiln devices 2>&1 | tail -n 1 | cut -c1-80)...)"
  echo "demo: generating through the CPU reference instead"
  $BIN/kilnc reference -m "$OUT/tiny-q8_0.gguf" -p "The quick brown fox" -n 16
fi
