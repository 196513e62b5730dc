#!/usr/bin/env bash
# Session 12 call 7 (what the device time left allows): the gpu tests that
# run decode matvecs under programmatic launch with splits shorter than a
# chunk (every tiny-model test, the runtime's) on the code with the early
# tail loads and the review fixes; carry [".gpu", "third_party"].
KILN_CALL_TESTS="-j4 -R tiny|executor|perf|kiln_run" KILN_CALL_TEST_TIMEOUT=150 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
tail -4 "$OUT/gpu-tests.log"
