#!/usr/bin/env bash
# Session 12 call 5: the two deep model tests (0.6B Q8_0 and Q4_K_M, 1024
# prompt positions, logits against the CPU reference), which the other calls
# leave out, on the final code (.gpu staged at 25bf8c5; carry [".gpu",
# "third_party"]).
KILN_CALL_TESTS="-j2 -R deep" KILN_CALL_TEST_TIMEOUT=520 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
tail -5 "$OUT/gpu-tests.log"
