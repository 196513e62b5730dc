#!/usr/bin/env bash
# Session 14, call 8: the 22 non-deep gpu tests on main's code (.gpu/ staged
# at 0ce73f8 with tools/stage_gpu.sh build; main's product code has not
# changed since: this session changed bench/experiments, docs and logs).
# The first GPU run of the code after e1ba09a (session 13's revert of the
# early tail loads). Carry [".gpu", "third_party"].
KILN_CALL_TEST_TIMEOUT=300 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
tail -5 "$OUT/gpu-tests.log"
