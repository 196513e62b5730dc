#!/usr/bin/env bash
# Prepared in session 10 for the next session; NOT RUN. After next-call.sh
# (whose gpu tests must pass on the shipped 128x128 GEMM tiles): a second
# sweep of the prefill GEMM tiles around them (gemm2/hN.txtpb, whole tables):
#   h1 planar Q8_0 with tile_k 64 (shipped: 32)
#   h2 128x128 on 512 threads      h3 256x128 on 256 threads
#   h4 128x256 on 256 threads      h5 256x128 on 512 threads
# against the shipped table, prefill of 512 and 3700 tokens, both 8B
# models. A winner needs the model_gpu tests on it before it ships.
# Carry [".gpu", "third_party"].
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gemm2 G=bench/logs/2026-12-03-h200-s10/gemm2
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
rm -rf /tmp/kiln-gpu "$W" && mkdir -p /tmp/kiln-gpu "$W" && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
for T in Q8_0 Q4_K_M; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
for T in Q8_0 Q4_K_M; do
  for N in base h1 h2 h3 h4 h5; do
    TABLE=; [ "$N" != base ] && TABLE="--schedules $G/$N.txtpb"
    "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/$N-$T.kiln" $TABLE > "$W/compile-$N-$T.txt" 2>&1 ||
      { echo "$T $N compile failed" >> "$OUT/gemm2.txt"; continue; }
    timeout 60 "$B/kiln" bench -b "$W/$N-$T.kiln" -m "$W/8b-$T.gguf" --prompt-lengths 512,3700 --depths 0 --steps 4 \
      > "$W/bench-$N-$T.txt" 2>&1
    echo "$T $N: $(grep -E 'first request|^ +(512|3700) ' "$W/bench-$N-$T.txt" | tr -s ' ' | tr '\n' ';')" >> "$OUT/gemm2.txt"
  done
done
cat "$OUT/gemm2.txt"
