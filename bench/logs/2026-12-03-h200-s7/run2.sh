#!/usr/bin/env bash
# Session 7, GPU call 2 (.gpu/ as call 1: 8c396cc; no tests, no kernel code
# changed). The A/B at depths 0 and 4096 on both 8B models:
#   base  shipped table
#   t1    call 1's exported table (its tune: pipelined candidates around
#         each shape's shipped schedule; 13 tuned shapes)
# then kilnc tune over pl-spaces2.txtpb (pipelined and unpipelined side by
# side; Q4_K at two rows per group) with call 1's cache, Q4_K_M then Q8_0,
# in the time left.
start=$(date +%s)
KILN_CALL_TESTS="" KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" KILN_CALL_AB_TIMEOUT=230 \
  bash tools/gpu_call.sh "Q4_K_M Q8_0" base=%B/kilnc t1=%B/kilnc,.gpu/tables/t1.txtpb
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/ab
cp .gpu/tables/tune1.tsv "$OUT/tune.tsv"
for T in Q4_K_M Q8_0; do
  left=$((560 - ($(date +%s) - start)))
  [ "$left" -gt 40 ] || { echo "no time left for the $T tune" >> "$OUT/tune.txt"; continue; }
  budget=$(( (left - 25) / 2 ))
  [ "$T" = "Q8_0" ] && budget=$((left - 25))
  echo "== $T tune, budget ${budget}s" >> "$OUT/tune.txt"
  timeout "$((left - 5))" "$B/kilnc" tune -m "$W/8b-$T.gguf" --target sm_90 --families matvec --budget "${budget}s" \
    --spaces bench/logs/2026-12-03-h200-s7/pl-spaces2.txtpb --cache "$OUT/tune.tsv" --export "$OUT/sm_90.txtpb" \
    >> "$OUT/tune.txt" 2>&1
  echo "tune exit $?" >> "$OUT/tune.txt"
done
grep -v "^tune: matvec" "$OUT/tune.txt" | tail -30
