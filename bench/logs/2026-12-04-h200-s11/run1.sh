#!/usr/bin/env bash
# Session 11 call 1 (prepared in session 10 as next-call.sh).
# Before it, on the build machine: tools/stage_gpu.sh build. Carry [".gpu",
# "third_party"]. It runs:
#   the 22 non-deep gpu tests: the whole suite on the 128x128 GEMM tiles
#   (session 10 ran only the model tests on them), model_gpu_test.sh's new
#   --prefill-logits last section (greedy tokens; token-by-token logits),
#   perf_test_gpu after OpenReadRing, tune_gpu_test after NamedPtx (kilnc
#   tune now assembles the code pass's PTX renamed);
#   then time to first token and prefill of both 8B models compiled with
#   --prefill-logits all (the default) and last, twice each, and a kiln
#   profile of the last-row Q8_0 bundle's prefill chunk.
# If last passes and is faster, make it kilnc compile's default
# (compile_command.cc) and say so in docs/cli.md and bench/RESULTS.md.
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-last
KILN_CALL_TEST_TIMEOUT=260 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
mv "$OUT/logs.tgz" "$OUT/tests-logs.tgz"
rm -f "$OUT/check.txt"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p "$W"
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
for T in Q8_0 Q4_K_M; do
  for L in all last; do
    "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/$L-$T.kiln" --prefill-logits "$L" > /dev/null 2>&1 ||
      echo "$T $L: compile failed" >> "$OUT/ttft.txt"
  done
  for L in all last all last; do
    timeout 60 "$B/kiln" bench -b "$W/$L-$T.kiln" -m "$W/8b-$T.gguf" --prompt-lengths 512,3700 --depths 0 --steps 8 \
      > "$W/bench-$L-$T.txt" 2>&1
    echo "$T $L: $(grep -E 'first request|^ +(512|3700) ' "$W/bench-$L-$T.txt" | tr -s ' ' | tr '\n' ';')" >> "$OUT/ttft.txt"
  done
done
timeout 60 "$B/kiln" profile -b "$W/last-Q8_0.kiln" -m "$W/8b-Q8_0.gguf" --steps 8 > "$OUT/profile-last-Q8_0.txt" 2>&1
tail -3 "$OUT/gpu-tests.log"
cat "$OUT/ttft.txt"
