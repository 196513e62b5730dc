#!/usr/bin/env bash
# kiln's main job on the embedded default model: synthesize the tiny Qwen3,
# inspect it, and generate from it. (The GPU path is described in README.md.)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/demo}
mkdir -p "$OUT"
KILNC=build/bin/kilnc

$KILNC synth --preset tiny --type Q8_0 --seed 1 -o "$OUT/tiny-q8_0.gguf"
$KILNC inspect "$OUT/tiny-q8_0.gguf" | tail -n 6
echo "demo: no GPU runtime yet in this build; generating through the CPU reference"
$KILNC reference -m "$OUT/tiny-q8_0.gguf" -p "The quick brown fox" -n 16
