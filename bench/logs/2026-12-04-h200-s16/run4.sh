#!/usr/bin/env bash
# Session 16 call 4 (.gpu staged at e849a1d with tools/stage_gpu.sh build;
# carry [".gpu", "third_party"]): the gpu tests that run kiln's command
# line (an empty text-flag value is now a usage error), then the record of
# the session's final code: the default `kiln bench` (prompts 512 and 3700,
# depths 0, 4096 and 16384) and `kiln profile --attribution` of the 8B Q8_0
# and Q4_K_M, shipped table.
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-final
KILN_CALL_TESTS="-j4 -R kiln_run|bench_gpu|perf_test|executor_test" KILN_CALL_TEST_TIMEOUT=120 \
  bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
rm -f "$OUT/logs.tgz"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p "$W"
for T in Q8_0 Q4_K_M; do
  timeout 150 "$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
for T in Q8_0 Q4_K_M; do
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/8b-$T.kiln" > "$OUT/compile-$T.txt" 2>&1
  timeout 150 "$B/kiln" bench -b "$W/8b-$T.kiln" -m "$W/8b-$T.gguf" > "$OUT/bench-$T.txt" 2>&1
  timeout 100 "$B/kiln" profile -b "$W/8b-$T.kiln" -m "$W/8b-$T.gguf" --steps 16 --attribution \
    > "$OUT/profile-$T.txt" 2>&1
done
tail -3 "$OUT/gpu-tests.log"
cat "$OUT/bench-Q8_0.txt" "$OUT/bench-Q4_K_M.txt"
