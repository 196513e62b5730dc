#!/usr/bin/env bash
# Session 9, GPU call 1 (.gpu/ staged at 396dbb5: session 8's
# matvec.warp_reduce, never run on a GPU before). The 22 non-deep gpu tests
# (codegen_gpu_test's WarpReduceMatVecs() among them); kilnc tune over
# warp-spaces.txtpb on both 8B models with a fresh cache, exported as w1;
# then one A/B round at depths 0 and 4096:
#   base  the shipped table
#   w1    the same kilnc with w1
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-ab
S=bench/logs/2026-12-03-h200-s9
export KILN_CALL_WORK=$W
mkdir -p "$W"
KILN_CALL_TEST_TIMEOUT=200 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
mv "$OUT/logs.tgz" "$OUT/tests-logs.tgz"
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
echo "tests and synth done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
for T in Q4_K_M Q8_0; do
  timeout 110 "$B/kilnc" tune -m "$W/8b-$T.gguf" --target sm_90 --families matvec --budget 95s \
    --spaces $S/warp-spaces.txtpb --cache "$OUT/tune.tsv" >> "$OUT/call.log" 2>&1
  echo "tune $T exit $? at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
done
"$B/kilnc" tune --export "$OUT/w1.txtpb" --cache "$OUT/tune.tsv" >> "$OUT/call.log" 2>&1
gzip "$OUT/tune.tsv"
if [ -s "$OUT/w1.txtpb" ]; then
  KILN_CALL_TESTS="" KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
    KILN_CALL_AB_TIMEOUT=$(( 585 - ($(date +%s) - start) )) \
    bash tools/gpu_call.sh "Q4_K_M Q8_0" base=%B/kilnc w1=%B/kilnc,"$OUT/w1.txtpb"
fi
grep -v "^tune: matvec" "$OUT/call.log" | tail -30
