#!/usr/bin/env bash
# Session 22, call 1: claimed row tiles (claim_tiles) on the 8B decode
# matvecs. Runs at ea2ac7b (branch exp/claim-tiles): main has no claim_tiles.
# (1) kilnc tune of both 8B models over claim-spaces.txtpb (the shipped
#     schedule, then claimed variants on 1-16 row tiles a block);
# (2) kilnc tune --export: each shape's fastest alone (shipped or claimed);
# (3) tools/gpu_ab.sh: that table against the built-in one inside the
#     decode graph, both types, two rounds, the same greedy tokens.
# Stage with tools/stage_gpu.sh build; carry [".gpu", "third_party"].
set -uo pipefail
start=$(date +%s)
S=$PWD/bench/logs/2026-12-05-s22
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-claim
el() { echo "$1 at $(( $(date +%s) - start ))s" >> "$OUT/call.log"; }
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/call.log"
KILN_CALL_TESTS="" bash tools/gpu_call.sh > /tmp/unpack.log 2>&1  # unpacks .gpu/
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
mkdir -p "$W"
for T in Q8_0 Q4_K_M; do
  timeout 150 "$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
el synth
for T in Q4_K_M Q8_0; do
  timeout 110 "$B/kilnc" tune -m "$W/8b-$T.gguf" --target sm_90 --families matvec --budget 90s \
    --spaces "$S/claim-spaces.txtpb" --cache "$W/tune.tsv" >> "$OUT/tune.log" 2>&1
  el "tune $T exit $?"
done
gzip -c "$W/tune.tsv" > "$OUT/tune.tsv.gz"
"$B/kilnc" tune --export "$W/claim.txtpb" --cache "$W/tune.tsv" >> "$OUT/call.log" 2>&1
cp "$W/claim.txtpb" "$OUT/claim.txtpb"
el export
export KILN_GPU_ROOT=$PWD KILN_BIN_DIR=$B KILN_BENCH_WORK=$W
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
KILN_AB_ROUNDS=2 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  timeout $(( 585 - ($(date +%s) - start) )) bash tools/gpu_ab.sh "$W/ab" "Q8_0 Q4_K_M" \
  base=$B/kilnc claim=$B/kilnc,$W/claim.txtpb > "$OUT/ab.txt" 2>&1
el "ab exit $?"
tar czf "$OUT/ab-logs.tgz" -C "$W" ab 2>/dev/null
grep -v '^#' "$OUT/ab.txt" | tail -30; cat "$OUT/call.log"
