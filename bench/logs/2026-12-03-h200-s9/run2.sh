#!/usr/bin/env bash
# Session 9, GPU call 2 (.gpu/ staged at 396dbb5, as call 1). kilnc tune over
# int8-spaces.txtpb (int8 activations for the planar Q8_0 and Q6_K
# matvecs) on both 8B models, the cache seeded with call 1's, exported as
# i1; the decode attention alone at position 100 (its own cache: how long
# a short-context attention takes by itself); then one A/B round at depths
# 0 and 4096:
#   base  the shipped table
#   w1    call 1's export (warp_reduce search)
#   i1    this call's export (call 1's results and the int8 ones)
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-ab
S=bench/logs/2026-12-03-h200-s9
export KILN_CALL_WORK=$W
mkdir -p "$W"
KILN_CALL_TESTS="" bash tools/gpu_call.sh > "$OUT/call.log" 2>&1  # unpacks .gpu/
rm -f "$OUT/logs.tgz"
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
zcat $S/call1/tune.tsv.gz > "$OUT/tune.tsv"
echo "synth done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
for T in Q8_0:150 Q4_K_M:80; do
  timeout $(( ${T#*:} + 15 )) "$B/kilnc" tune -m "$W/8b-${T%:*}.gguf" --target sm_90 --families matvec \
    --budget "${T#*:}s" --spaces $S/int8-spaces.txtpb --cache "$OUT/tune.tsv" >> "$OUT/call.log" 2>&1
  echo "tune ${T%:*} exit $? at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
done
timeout 45 "$B/kilnc" tune -m "$W/8b-Q8_0.gguf" --target sm_90 --families attention_decode --budget 30s \
  --attention-position 100 --cache "$OUT/attention-100.tsv" > "$OUT/attention-100.txt" 2>&1
"$B/kilnc" tune --export "$OUT/i1.txtpb" --cache "$OUT/tune.tsv" >> "$OUT/call.log" 2>&1
gzip "$OUT/tune.tsv"
if [ -s "$OUT/i1.txtpb" ]; then
  KILN_CALL_TESTS="" KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
    KILN_CALL_AB_TIMEOUT=$(( 585 - ($(date +%s) - start) )) \
    bash tools/gpu_call.sh "Q4_K_M Q8_0" base=%B/kilnc w1=%B/kilnc,$S/call1/w1.txtpb i1=%B/kilnc,"$OUT/i1.txtpb"
fi
grep -v "^tune: matvec" "$OUT/call.log" | tail -30
