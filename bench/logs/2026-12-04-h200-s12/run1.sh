#!/usr/bin/env bash
# Session 12, call 1 (prepared in session 11 as next-call.sh).
# Before it, on the build machine: tools/stage_gpu.sh build. Carry [".gpu",
# "third_party"]. The 22 non-deep gpu tests on the final code of session 11,
# which changed after its last GPU call only in: the executor's RunPlan
# (joins an open side-stream fork on every exit), PairBesideLaunches'
# argument checks, model_gpu_test.sh's new comparison of a Q4_K_M bundle
# with side-by-side decode launches against the same bundle on one stream
# (--no-concurrent-launches: same greedy tokens, logits within 1e-4), and
# tools/gpu_ab.sh's logits check through a second --prefill-logits all
# bundle of each compiled variant. Then an A/B of the shipped table against
# itself through tools/gpu_ab.sh, which runs that new logits check.
KILN_CALL_TEST_TIMEOUT=280 KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0 --steps 32" \
  KILN_CALL_AB_TIMEOUT=250 bash tools/gpu_call.sh "Q4_K_M" base=%B/kilnc again=%B/kilnc > "$OUT/call.log" 2>&1
tail -3 "$OUT/gpu-tests.log"
grep -E "vs base" "$OUT/ab.txt"
