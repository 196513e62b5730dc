#!/usr/bin/env bash
# Prepared in session 12 for the next session's first GPU call; run in session 13
# as bench/logs/2026-12-04-h200-s13/run1.sh (its results: call1/ there). Not run here
# (session 12's device time ran out: its call 7, the tiny-model tests on
# this code, was refused).
# Before it, on the build machine:
#   tools/stage_gpu.sh build && tools/stage_variants.sh build pre=f864ab9
# Carry [".gpu", "third_party"].
# What changed after session 12's last GPU call (call 6, b1effa4):
#  - 3e7c851 (review fixes): Generate's cap on DecodeGreedy's steps
#    (--n-predict), the spare step waited for on error paths, the ring
#    slot's position cleared before its step is queued (Decode and
#    DecodeGreedy), DecodeGreedy's test (a stop's spare step counted, one
#    step then a Decode writing nothing), bench_gpu_test.sh's decode_ahead;
#  - 48549f9: decode matvecs whose split is shorter than one chunk (the 8B
#    output projections, the Q4_K q/k projection) load their tail's first
#    step before griddepcontrol.wait.
# 1. The 22 non-deep gpu tests (codegen_gpu_test's matvec cases and every
#    model test run the early tail loads).
# 2. A/B, two rounds: pre = f864ab9's bundles (no early tail loads) against
#    new, Q8_0 and Q4_K_M, depths 0 and 4096, with the logits check. If new
#    is not faster, revert 48549f9.
KILN_CALL_TEST_TIMEOUT=280 KILN_AB_ROUNDS=2 KILN_CALL_AB_TIMEOUT=280 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" pre=bundle:%W/pre-%T.kiln new=%B/kilnc > "$OUT/call.log" 2>&1
tail -3 "$OUT/gpu-tests.log"
grep -E "vs |ms/token" "$OUT/ab.txt"
