#!/usr/bin/env bash
# Session 12 call 6. Before it: tools/stage_gpu.sh build (at the commit with
# two barriers fewer in the decode attention), .gpu/variants/old-TYPE.kiln.gz
# = 68135ec's bundles (the compiler at b068d49 makes the same ones: the
# fused argmax was reverted); carry [".gpu", "third_party"].
# The 22 non-deep gpu tests (codegen_gpu_test's decode attention cases
# against the reference, single and several splits, positions 0-16383; every
# model test), then an A/B of old against new, one round, with the logits
# check.
KILN_CALL_TEST_TIMEOUT=250 KILN_AB_ROUNDS=1 KILN_CALL_AB_TIMEOUT=200 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" old=bundle:%W/old-%T.kiln new=%B/kilnc > "$OUT/call.log" 2>&1
tail -3 "$OUT/gpu-tests.log"
grep -E "vs |ms/token" "$OUT/ab.txt"
