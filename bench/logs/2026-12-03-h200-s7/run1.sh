#!/usr/bin/env bash
# Session 7, GPU call 1 (.gpu/ staged at the pipeline_loads commit). Every
# non-deep gpu test (the new pipelined matvecs of codegen_gpu_test against
# the reference; the tied LM head reading planes and the simplified
# pack_q6_k of session 6, first run here), then the A/B at depths 0 and
# 4096 on both 8B models:
#   base  this kilnc, shipped table (its kernels are main's before the change)
#   pl    the same table with pipeline_loads on every q4_k, q6_k and
#         q8_0_planar matvec entry (.gpu/tables/pl.txtpb)
# then kilnc tune over pl-spaces.txtpb (pipelined candidates around each
# shape's shipped schedule, which is timed first), Q4_K_M then Q8_0, in the
# time left; cache and exported table to $OUT.
start=$(date +%s)
KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" KILN_CALL_AB_TIMEOUT=230 \
  bash tools/gpu_call.sh "Q4_K_M Q8_0" base=%B/kilnc pl=%B/kilnc,.gpu/tables/pl.txtpb
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/ab
for T in Q4_K_M Q8_0; do
  left=$((560 - ($(date +%s) - start)))
  [ "$left" -gt 40 ] || { echo "no time left for the $T tune" >> "$OUT/tune.txt"; continue; }
  budget=$(( (left - 25) / 2 ))
  [ "$T" = "Q8_0" ] && budget=$((left - 25))
  echo "== $T tune, budget ${budget}s" >> "$OUT/tune.txt"
  timeout "$((left - 5))" "$B/kilnc" tune -m "$W/8b-$T.gguf" --target sm_90 --families matvec --budget "${budget}s" \
    --spaces bench/logs/2026-12-03-h200-s7/pl-spaces.txtpb --cache "$OUT/tune.tsv" --export "$OUT/sm_90.txtpb" \
    >> "$OUT/tune.txt" 2>&1
  echo "tune exit $?" >> "$OUT/tune.txt"
done
tail -30 "$OUT/tune.txt"
