#!/usr/bin/env bash
# Session 15, call 4: the gemm's two-stage k loop (gemm.stages = 2, the next
# k tile's loads in registers during this one's mma). The gpu tests (the
# Gemm case now runs every format with both 1 and 2 stages), then an A/B of
# prefill on the 8B models: s1 = the shipped table (every gemm one stage,
# as before), s2 = bench/logs/2026-12-04-h200-s15/gemm-stages2.txtpb (two
# stages where the share fits). Staged with tools/stage_gpu.sh build.
export KILN_CALL_TEST_TIMEOUT=230 KILN_CALL_AB_TIMEOUT=340 KILN_AB_ROUNDS=1
export KILN_BENCH_ARGS="--prompt-lengths 512,3700 --depths 0 --steps 16"
tools/gpu_call.sh "Q8_0 Q4_K_M" s1=%B/kilnc s2=%B/kilnc,bench/logs/2026-12-04-h200-s15/gemm-stages2.txtpb
