#!/usr/bin/env bash
# Session 9, GPU call 5 (.gpu/ staged with `kiln profile --attribution`):
# its gpu tests (perf_test_gpu: swapped decode graphs and the attribution
# on the toy bundle; bench_gpu_tiny_*: the profile's JSON), then
# `kiln profile --attribution` on both 8B models (depth 0, 64 steps).
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-final L=$OUT
mkdir -p "$W"
KILN_CALL_TEST_TIMEOUT=100 KILN_CALL_TESTS="-j3 -R perf_test_gpu|bench_gpu_tiny" bash tools/gpu_call.sh > "$L/call.log" 2>&1
rm -f "$L/check.txt"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
for T in Q4_K_M Q8_0; do
  timeout 60 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
echo "tests and synth done at $(( $(date +%s) - start ))s" >> "$L/call.log"
for T in Q4_K_M Q8_0; do
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/8b-$T.kiln" > /dev/null 2>&1
  timeout 60 "$B/kiln" profile -b "$W/8b-$T.kiln" -m "$W/8b-$T.gguf" --steps 64 --attribution > "$L/profile-$T.txt" 2>&1
  echo "profile $T exit $? at $(( $(date +%s) - start ))s" >> "$L/profile-$T.txt"
done
tail -4 "$L/gpu-tests.log"
grep -A30 "^decode step in the graph" "$L"/profile-*.txt
