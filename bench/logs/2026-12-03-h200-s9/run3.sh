#!/usr/bin/env bash
# Session 9, GPU call 3 (.gpu/ staged after the table of call 2 shipped).
# The 22 non-deep gpu tests on that table; kilnc tune over
# refine-spaces.txtpb: the planar Q8_0 matvecs (cache tune.tsv, exported as
# q1) and the decode attention timed at positions 4095 and 100 (caches of
# their own, in attention.tgz); then one A/B round at depths 0 and 4096:
#   base  the shipped table
#   q1    q1 (the Q8_0 refinement)
#   a128  the shipped table, decode attention 128 threads, splits of at least 32 positions
#   a256  the same at 256 threads, 2 blocks an SM (the shipped entry but the shortest split)
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-ab
S=bench/logs/2026-12-03-h200-s9
export KILN_CALL_WORK=$W
mkdir -p "$W" /tmp/att
KILN_CALL_TEST_TIMEOUT=200 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
mv "$OUT/logs.tgz" "$OUT/tests-logs.tgz"
mv "$OUT/gpu-tests.log" /tmp/att/tests.log
rm -f "$OUT/check.txt"
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
echo "tests and synth done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
timeout 115 "$B/kilnc" tune -m "$W/8b-Q8_0.gguf" --target sm_90 --families matvec --budget 100s \
  --spaces $S/refine-spaces.txtpb --cache "$OUT/tune.tsv" >> "$OUT/call.log" 2>&1
echo "tune Q8_0 exit $? at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
for P in 4095 100; do
  timeout 60 "$B/kilnc" tune -m "$W/8b-Q8_0.gguf" --target sm_90 --families attention_decode --budget 45s \
    --spaces $S/refine-spaces.txtpb --attention-position $P --cache /tmp/att/attention-$P.tsv > /tmp/att/attention-$P.txt 2>&1
done
tar -C /tmp/att -czf "$OUT/attention.tgz" .
echo "attention tunes done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
"$B/kilnc" tune --export "$OUT/q1.txtpb" --cache "$OUT/tune.tsv" >> "$OUT/call.log" 2>&1
gzip "$OUT/tune.tsv"
SHIPPED='  attention { threads: 256 split_positions: 1280 max_splits: 32 min_split_positions: 64 blocks_per_sm: 2 }'
for v in 128:1 256:2; do
  sed "s/^$SHIPPED\$/  attention { threads: ${v%:*} split_positions: 1280 max_splits: 32 min_split_positions: 32 blocks_per_sm: ${v#*:} }/" \
    schedules/sm_90.txtpb > "$W/a${v%:*}.txtpb"
  cmp -s schedules/sm_90.txtpb "$W/a${v%:*}.txtpb" && echo "a${v%:*}: the sed changed nothing" >> "$OUT/call.log"
done
if [ -s "$OUT/q1.txtpb" ]; then
  KILN_CALL_TESTS="" KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
    KILN_CALL_AB_TIMEOUT=$(( 585 - ($(date +%s) - start) )) \
    bash tools/gpu_call.sh "Q4_K_M Q8_0" base=%B/kilnc q1=%B/kilnc,"$OUT/q1.txtpb" a128=%B/kilnc,"$W/a128.txtpb" \
      a256=%B/kilnc,"$W/a256.txtpb"
fi
rm -f "$OUT/check.txt" "$OUT/gpu-tests.log"
tail -3 /tmp/att/tests.log
grep "attention_decode  \|candidates" /tmp/att/attention-*.txt
grep -v "^tune: matvec" "$OUT/call.log" | tail -22
