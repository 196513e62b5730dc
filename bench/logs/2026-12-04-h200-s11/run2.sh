#!/usr/bin/env bash
# Session 11 call 2. Before it: tools/stage_gpu.sh build; carry [".gpu", "third_party"].
#   The 22 non-deep gpu tests plus beside_launches' CPU test on the GPU
#   host (the model tests run the Q4_K_M bundles' V projections beside
#   their q/k projections: decode on two streams for the first time);
#   then the 8B Q4_K_M decode compiled with and without
#   --no-concurrent-launches (serial), alternated twice, and a profile.
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-beside
KILN_CALL_TEST_TIMEOUT=270 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
mv "$OUT/logs.tgz" "$OUT/tests-logs.tgz"
rm -f "$OUT/check.txt"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p "$W"
T=Q4_K_M
timeout 150 "$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1
"$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/conc-$T.kiln" > "$OUT/compile.txt" 2>&1
"$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/serial-$T.kiln" --no-concurrent-launches >> "$OUT/compile.txt" 2>&1
"$B/kilnc" inspect "$W/conc-$T.kiln" | grep -c "beside_next: true" > "$OUT/pairs.txt"
for L in serial conc serial conc; do
  timeout 60 "$B/kiln" bench -b "$W/$L-$T.kiln" -m "$W/8b-$T.gguf" --prompt-lengths 64 --depths 0,4096 --steps 64 \
    > "$W/bench-$L.txt" 2>&1
  echo "== $L" >> "$OUT/decode.txt"
  grep -E "probe|^ +(0|4096) " "$W/bench-$L.txt" >> "$OUT/decode.txt"
done
timeout 60 "$B/kiln" profile -b "$W/conc-$T.kiln" -m "$W/8b-$T.gguf" --steps 16 --attribution > "$OUT/profile-conc.txt" 2>&1
tail -3 "$OUT/gpu-tests.log"
cat "$OUT/pairs.txt" "$OUT/decode.txt"
