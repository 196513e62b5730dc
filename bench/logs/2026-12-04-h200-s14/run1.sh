#!/usr/bin/env bash
# Session 14, call 1 (.gpu/ staged at 0ce73f8: tools/stage_gpu.sh build, then
# KILN_EXP_STAGE=cheap|none tools/stage_variants.sh build late=exp-stage, the
# bundles renamed cheap-* and none-*). Carry [".gpu", "third_party"].
# An ablation (values wrong by design) of the int8 activation staging that
# every block of every int8 matvec runs after griddepcontrol.wait (the Q4_K
# kernels and the planar Q8_0 ones but the down projection):
#   base   0ce73f8 (main)
#   cheap  branch exp-stage 05221bd+: x and norm_w loaded and stored as is,
#          no quantization (no max shuffles, division, rounding, sums)
#   none   the same branch: no staging at all (no x loads)
# What the two save bounds what sharing the staging across a cluster's
# blocks (cheap) or quantizing once upstream (none) could gain.
KILN_CALL_TESTS="" KILN_AB_ROUNDS=2 KILN_CALL_AB_TIMEOUT=420 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0 --steps 64" \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=%B/kilnc cheap=bundle:%W/cheap-%T.kiln none=bundle:%W/none-%T.kiln > "$OUT/call.log" 2>&1
grep -E "vs |ms/token" "$OUT/ab.txt"
