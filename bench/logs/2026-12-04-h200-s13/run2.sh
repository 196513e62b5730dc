#!/usr/bin/env bash
# Session 13, call 2 (.gpu/ staged at e1ba09a: tools/stage_gpu.sh build &&
# tools/stage_variants.sh build late=exp-late). Carry [".gpu", "third_party"].
# Call 1 found a short split's weight loads before griddepcontrol.wait slower
# behind the decode attention. This asks the converse for the kernels that do
# load early (QKV, gate/up, down, LM head: each behind a matvec): A/B, two
# rounds, depths 0 and 4096, with the logits check:
#   base  e1ba09a (first full chunk loaded before the wait)
#   late  dfe85ee (branch exp-late: the same load moved after the wait)
KILN_CALL_TESTS="" KILN_AB_ROUNDS=2 KILN_CALL_AB_TIMEOUT=420 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=%B/kilnc late=bundle:%W/late-%T.kiln > "$OUT/call.log" 2>&1
grep -E "vs |ms/token" "$OUT/ab.txt"
