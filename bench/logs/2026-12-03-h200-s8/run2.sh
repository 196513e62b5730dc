#!/usr/bin/env bash
# Session 8, GPU call 2 (.gpu/ staged with matvec.pipeline_rows and
# matvec.blocks_per_sm). codegen_gpu_test (every pipelined case, now also
# row by row and register-capped, against the reference), then kilnc tune
# over rows-spaces.txtpb with a fresh cache (Q4_K_M, then Q8_0, in a fixed
# budget), its winners exported as t1, then one A/B round at depths 0 and
# 4096 on both 8B models:
#   base  the shipped table
#   t1    this call's tune
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-ab
S=bench/logs/2026-12-03-h200-s8
export KILN_CALL_WORK=$W
mkdir -p "$W"
KILN_CALL_TESTS="-R codegen_gpu_test" KILN_CALL_TEST_TIMEOUT=150 bash tools/gpu_call.sh > "$OUT/tests.txt" 2>&1
cp /tmp/logs/gpu-tests.log "$OUT/" 2>/dev/null
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
echo "tests and synth done at $(( $(date +%s) - start ))s" > "$OUT/tune.txt"
for T in Q4_K_M Q8_0; do
  budget=130
  [ "$T" = Q8_0 ] && budget=$(( 330 - ($(date +%s) - start) ))
  [ "$budget" -gt 20 ] || budget=20
  echo "== $T tune, budget ${budget}s" >> "$OUT/tune.txt"
  timeout $((budget + 60)) "$B/kilnc" tune -m "$W/8b-$T.gguf" --target sm_90 --families matvec --budget "${budget}s" \
    --spaces $S/rows-spaces.txtpb --cache "$OUT/tune.tsv" >> "$OUT/tune.txt" 2>&1
  echo "tune exit $?" >> "$OUT/tune.txt"
done
"$B/kilnc" tune --export "$OUT/t1.txtpb" --cache "$OUT/tune.tsv" >> "$OUT/tune.txt" 2>&1
echo "tune done at $(( $(date +%s) - start ))s" >> "$OUT/tune.txt"
if [ -s "$OUT/t1.txtpb" ]; then
  KILN_CALL_TESTS="" KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
    KILN_CALL_AB_TIMEOUT=$(( 585 - ($(date +%s) - start) )) \
    bash tools/gpu_call.sh "Q4_K_M Q8_0" base=%B/kilnc t1=%B/kilnc,"$OUT/t1.txtpb"
fi
grep -v "^tune: matvec" "$OUT/tune.txt" | tail -30
