#!/usr/bin/env bash
# Session 7, GPU call 4 (.gpu/ as calls 1-3: 8c396cc's binaries, plus
# tools/gpu_call.sh keeping models synthesized earlier in the call). First
# kilnc tune over pl-spaces4.txtpb with calls 1-3's cache (Q4_K_M, then
# Q8_0, in a fixed budget), its union exported as t5; then the A/B at
# depths 0 and 4096 on both 8B models:
#   base  shipped table
#   t5    the union of calls 1-4's tunes (t4, call 3's union, measured there)
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-ab
export KILN_CALL_WORK=$W
mkdir -p "$W" /tmp/kiln-gpu && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
cp .gpu/tables/tune3.tsv "$OUT/tune.tsv"
for T in Q4_K_M Q8_0; do
  budget=120
  [ "$T" = Q8_0 ] && budget=$(( 280 - ($(date +%s) - start) ))
  [ "$budget" -gt 20 ] || budget=20
  echo "== $T tune, budget ${budget}s" >> "$OUT/tune.txt"
  timeout $((budget + 60)) "$B/kilnc" tune -m "$W/8b-$T.gguf" --target sm_90 --families matvec --budget "${budget}s" \
    --spaces bench/logs/2026-12-03-h200-s7/pl-spaces4.txtpb --cache "$OUT/tune.tsv" >> "$OUT/tune.txt" 2>&1
  echo "tune exit $?" >> "$OUT/tune.txt"
done
"$B/kilnc" tune --export "$OUT/t5.txtpb" --cache "$OUT/tune.tsv" >> "$OUT/tune.txt" 2>&1
echo "tune done at $(( $(date +%s) - start ))s" >> "$OUT/tune.txt"
[ -s "$OUT/t5.txtpb" ] || cp .gpu/tables/t4.txtpb "$OUT/t5.txtpb"
KILN_CALL_TESTS="" KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  KILN_CALL_AB_TIMEOUT=$(( 585 - ($(date +%s) - start) )) \
  bash tools/gpu_call.sh "Q4_K_M Q8_0" base=%B/kilnc t5=%B/kilnc,"$OUT/t5.txtpb"
grep -v "^tune: matvec" "$OUT/tune.txt" | tail -24
