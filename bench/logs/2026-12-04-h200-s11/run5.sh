#!/usr/bin/env bash
# Session 11 call 5. Before it: tools/stage_gpu.sh build; carry [".gpu", "third_party"].
# The decode attention's stage_rows (K rows copied into shared memory and
# the first V round loaded before griddepcontrol.wait, the new row from the
# block's own rotation), on in the built-in sm_90 table (the 8B entry and
# the catch-all): the non-deep gpu tests (codegen_gpu_test's
# rope_staged_dec_* against the reference and bit for bit against the
# unstaged fused kernel; the model tests run it), then both 8B models with
# the table before it (attn/base.txtpb) against the new one, one round.
A=bench/logs/2026-12-04-h200-s11/attn
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-ab5
mkdir -p "$W"
for T in Q8_0 Q4_K_M; do  # synthesized while the tests run (gpu_check.sh clears only its own folder)
  (sleep 20; timeout 150 "$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/part-$T.gguf" > /dev/null 2>&1 &&
    mv "$W/part-$T.gguf" "$W/8b-$T.gguf") &
done
KILN_CALL_WORK=$W KILN_CALL_TEST_TIMEOUT=200 KILN_CALL_AB_TIMEOUT=190 KILN_AB_ROUNDS=1 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 48" \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=%B/kilnc,"$A/base.txtpb" staged=%B/kilnc > "$OUT/call.log" 2>&1
rm -f "$OUT/check.txt"
tail -3 "$OUT/gpu-tests.log"
grep -E "depth|vs base" "$OUT/ab.txt"
