#!/usr/bin/env bash
# Prepared in session 12 for the next session's first GPU call; NOT RUN.
# Before it, on the build machine: tools/stage_gpu.sh build. Carry [".gpu",
# "third_party"]. Session 12's review fixes changed, after its last GPU call
# (call 6): Generate's cap on DecodeGreedy's steps (--n-predict), the spare
# step waited for on error paths, the ring slot's position cleared before
# its step is queued (Decode and DecodeGreedy), DecodeGreedy's test (a stop's
# spare step counted, one step then a Decode writing nothing) and
# bench_gpu_test.sh's decode_ahead check. The 22 non-deep gpu tests.
KILN_CALL_TEST_TIMEOUT=280 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
tail -3 "$OUT/gpu-tests.log"
