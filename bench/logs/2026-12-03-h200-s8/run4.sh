#!/usr/bin/env bash
# Session 8, GPU call 4 (.gpu/ staged at 17de247: the register cap counted
# per scheduler partition). The 22 non-deep gpu tests; kilnc tune over
# out-spaces.txtpb (Q4_K_M only) seeded with call 3's cache, exported as t3;
# then one A/B round at depths 0 and 4096:
#   old  ecb9fce's bundles (session 8's first tune, the codegen before)
#   t3   this codegen with t3
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-ab
S=bench/logs/2026-12-03-h200-s8
export KILN_CALL_WORK=$W
mkdir -p "$W"
KILN_CALL_TEST_TIMEOUT=200 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
mv "$OUT/logs.tgz" "$OUT/tests-logs.tgz"
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
zcat $S/call3/tune.tsv.gz > "$OUT/tune.tsv"
echo "tests and synth done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
timeout 120 "$B/kilnc" tune -m "$W/8b-Q4_K_M.gguf" --target sm_90 --families matvec --budget 60s \
  --spaces $S/out-spaces.txtpb --cache "$OUT/tune.tsv" >> "$OUT/call.log" 2>&1
echo "tune exit $? at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
"$B/kilnc" tune --export "$OUT/t3.txtpb" --cache "$OUT/tune.tsv" >> "$OUT/call.log" 2>&1
gzip "$OUT/tune.tsv"
if [ -s "$OUT/t3.txtpb" ]; then
  KILN_CALL_TESTS="" KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
    KILN_CALL_AB_TIMEOUT=$(( 585 - ($(date +%s) - start) )) \
    bash tools/gpu_call.sh "Q4_K_M Q8_0" old=bundle:%W/old-%T.kiln t3=%B/kilnc,"$OUT/t3.txtpb"
fi
grep -v "^tune: matvec" "$OUT/call.log" | tail -24
