#!/usr/bin/env bash
# Session 11 call 3. Before it: tools/stage_gpu.sh build; carry [".gpu", "third_party"].
#   The side stream's edges made programmatic in the decode graph
#   (Stream::MakeCaptureDependenciesProgrammatic): the gpu tests that run
#   Q4_K_M bundles (their V projections beside q/k) and the executor's;
#   then the 8B Q4_K_M decode with and without --no-concurrent-launches,
#   alternated twice, its profile; and the 8B Q8_0 (no pairs) once, for the
#   session's final numbers.
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-beside
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p "$W"
KILN_CALL_TESTS="-j4 -R Q4_K_M|executor|kiln_run|perf|driver" KILN_CALL_TEST_TIMEOUT=200 \
  bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
mv "$OUT/logs.tgz" "$OUT/tests-logs.tgz"
rm -f "$OUT/check.txt"
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
T=Q4_K_M
"$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/conc-$T.kiln" > "$OUT/compile.txt" 2>&1
"$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/serial-$T.kiln" --no-concurrent-launches >> "$OUT/compile.txt" 2>&1
"$B/kilnc" compile "$W/8b-Q8_0.gguf" -o "$W/conc-Q8_0.kiln" >> "$OUT/compile.txt" 2>&1
for L in serial-$T conc-$T serial-$T conc-$T conc-Q8_0; do
  timeout 60 "$B/kiln" bench -b "$W/$L.kiln" -m "$W/8b-${L#*-}.gguf" --prompt-lengths 64 --depths 0,4096 --steps 64 \
    > "$W/bench-$L.txt" 2>&1
  echo "== $L" >> "$OUT/decode.txt"
  grep -E "probe|^ +(0|4096) " "$W/bench-$L.txt" >> "$OUT/decode.txt"
done
cp "$W/bench-conc-Q8_0.txt" "$W/bench-conc-Q4_K_M.txt" "$OUT/"
timeout 60 "$B/kiln" profile -b "$W/conc-$T.kiln" -m "$W/8b-$T.gguf" --steps 16 --attribution > "$OUT/profile-conc.txt" 2>&1
tail -3 "$OUT/gpu-tests.log"
cat "$OUT/decode.txt"
