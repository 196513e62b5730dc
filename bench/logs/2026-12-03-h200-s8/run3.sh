#!/usr/bin/env bash
# Session 8, GPU call 3 (.gpu/ staged at a53c763: the 6/10/12-warp
# pipelined cases in codegen_gpu_test; Q4_K's high nibbles masked in place;
# one division a quad in the int8 staging). The 22 non-deep gpu tests, then kilnc tune
# over wide-{192,384,320}.txtpb in turn with one fresh cache (blocks of 6,
# 12 and 10 warps, so an SM stages the activations fewer times), its
# winners exported as t2, then one A/B round at depths 0 and 4096:
#   old   ecb9fce's bundles (session 8's first tune, the codegen before)
#   base  the shipped table with this codegen
#   t2    this call's tune
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-ab
S=bench/logs/2026-12-03-h200-s8
export KILN_CALL_WORK=$W
mkdir -p "$W"
KILN_CALL_TEST_TIMEOUT=220 bash tools/gpu_call.sh > "$OUT/tests.txt" 2>&1
mv "$OUT/logs.tgz" "$OUT/tests-logs.tgz"
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
echo "tests and synth done at $(( $(date +%s) - start ))s" > "$OUT/tune.txt"
for SP in 192 384 320; do
  for T in Q4_K_M Q8_0; do
    [ "$SP" != 384 ] && [ "$T" = Q8_0 ] && continue
    echo "== $T tune, wide-$SP" >> "$OUT/tune.txt"
    timeout 150 "$B/kilnc" tune -m "$W/8b-$T.gguf" --target sm_90 --families matvec --budget 90s \
      --spaces $S/wide-$SP.txtpb --cache "$OUT/tune.tsv" >> "$OUT/tune.txt" 2>&1
    echo "tune exit $? at $(( $(date +%s) - start ))s" >> "$OUT/tune.txt"
  done
done
"$B/kilnc" tune --export "$OUT/t2.txtpb" --cache "$OUT/tune.tsv" >> "$OUT/tune.txt" 2>&1
echo "tune done at $(( $(date +%s) - start ))s" >> "$OUT/tune.txt"
if [ -s "$OUT/t2.txtpb" ]; then
  KILN_CALL_TESTS="" KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
    KILN_CALL_AB_TIMEOUT=$(( 585 - ($(date +%s) - start) )) \
    bash tools/gpu_call.sh "Q4_K_M Q8_0" old=bundle:%W/old-%T.kiln base=%B/kilnc t2=%B/kilnc,"$OUT/t2.txtpb"
fi
grep -v "^tune: matvec" "$OUT/tune.txt" | tail -40
