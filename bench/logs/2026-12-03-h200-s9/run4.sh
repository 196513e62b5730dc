#!/usr/bin/env bash
# Session 9, GPU call 4 (.gpu/ as call 3: the shipped table of call 2).
# `kiln bench` with its defaults (prefill 512 and 3700 tokens; decode at
# depths 0, 4096 and 16384) and `kiln profile` on both 8B models.
set -uo pipefail
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-final L=$OUT
rm -rf /tmp/kiln-gpu && mkdir -p /tmp/kiln-gpu "$W" && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
for T in Q4_K_M Q8_0; do
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/8b-$T.kiln" > "$L/compile-$T.txt" 2>&1
  timeout 100 "$B/kiln" bench -b "$W/8b-$T.kiln" -m "$W/8b-$T.gguf" > "$L/bench-$T.txt" 2>&1
  echo "bench $T exit $?" >> "$L/bench-$T.txt"
  timeout 40 "$B/kiln" profile -b "$W/8b-$T.kiln" -m "$W/8b-$T.gguf" > "$L/profile-$T.txt" 2>&1
  echo "profile $T exit $?" >> "$L/profile-$T.txt"
done
cat "$L"/bench-*.txt | grep -v '^kiln:' | head -60
