#!/usr/bin/env bash
# Session 10, call 9 (the command as run through the device tool, staged at
# the g3 table, 128x128 GEMM tiles): the gpu tests that run prefill through
# the shipped table (model_gpu_*: logits against the CPU reference), then the
# sanitizer and bench ones; the device time ran out during the sanitizer's
# racecheck (12 of 18 finished, all passed). Carry [".gpu", "third_party"].
KILN_CALL_TESTS='-j4 -R model_gpu|sanitizer_gpu|bench_gpu' KILN_CALL_TEST_TIMEOUT=150 bash tools/gpu_call.sh > $OUT/call9.log 2>&1
cat $OUT/call9.log
