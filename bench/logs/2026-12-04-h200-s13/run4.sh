#!/usr/bin/env bash
# Session 13, call 4 (.gpu/ staged at b4a4495:
# tools/stage_gpu.sh build && tools/stage_variants.sh build
# rmstail=exp-rmstail). Carry [".gpu", "third_party"].
# Call 1's loss was 0.043 ms in Q8_0 (output projections only) but 0.025 in
# Q4_K_M (output projections and the Q4_K q/k projection): the q/k one, which
# follows the down projection, may have gained. rmstail (branch exp-rmstail,
# 05296df) loads the tail's first step early only for short splits with an
# RMSNorm prologue: Q4_K_M's q/k projection and Q6_K LM head; the Q8_0
# bundle has no such kernel (a control). A/B, two rounds, depths 0 and 4096:
#   base     main (no early tail loads)
#   rmstail  05296df
KILN_CALL_TESTS="" KILN_AB_ROUNDS=2 KILN_CALL_AB_TIMEOUT=420 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  bash tools/gpu_call.sh "Q4_K_M Q8_0" base=%B/kilnc rmstail=bundle:%W/rmstail-%T.kiln > "$OUT/call.log" 2>&1
grep -E "vs |ms/token" "$OUT/ab.txt"
