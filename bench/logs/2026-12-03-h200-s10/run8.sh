#!/usr/bin/env bash
# Session 10, call 8: prefill GEMM tiles. The shipped table's 64x64 tiles on
# 128 threads against bigger tiles for the 8B's quantized GEMMs (q8_0_planar,
# q4_k, q6_k entries; gemm/gN.txtpb, the whole tables), prefill of
# 512 tokens (g5 and the 3700-token prefill left out: 311 s of device time left). Results stream into $OUT/gemm.txt as they come.
# Carry [".gpu", "third_party"].
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gemm G=bench/logs/2026-12-03-h200-s10/gemm
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
rm -rf /tmp/kiln-gpu "$W" && mkdir -p /tmp/kiln-gpu "$W" && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
for T in Q8_0 Q4_K_M; do
  timeout 120 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
for T in Q8_0 Q4_K_M; do
  for N in base g3 g2 g1 g4; do
    TABLE=; [ "$N" != base ] && TABLE="--schedules $G/$N.txtpb"
    "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/$N-$T.kiln" $TABLE > "$W/compile-$N-$T.txt" 2>&1 || { echo "$T $N compile failed" >> "$OUT/gemm.txt"; continue; }
    timeout 40 "$B/kiln" bench -b "$W/$N-$T.kiln" -m "$W/8b-$T.gguf" --prompt-lengths 512 --depths 0 --steps 4 > "$W/bench-$N-$T.txt" 2>&1
    echo "$T $N: $(grep -E 'first request|^ +(512|3700) ' "$W/bench-$N-$T.txt" | tr -s ' ' | tr '\n' ';')" >> "$OUT/gemm.txt"
  done
done
cat "$OUT/gemm.txt"
