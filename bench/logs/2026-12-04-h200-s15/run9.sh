#!/usr/bin/env bash
# Session 15, call 9 (staged at HEAD after 6ac9fab + README): the non-deep
# gpu tests (CodegenGpu.Gemm with the deeper k tiles too), then the shipped
# table on both 8B types: prompts of 512 and 3700 tokens, decode at depths
# 0, 4096 and 16384.
export KILN_CALL_TESTS="-j4 -E deep" KILN_CALL_TEST_TIMEOUT=260 KILN_CALL_AB_TIMEOUT=300 KILN_AB_ROUNDS=1
export KILN_BENCH_ARGS="--prompt-lengths 512,3700 --depths 0,4096,16384 --steps 64"
tools/gpu_call.sh "Q8_0 Q4_K_M" final=%B/kilnc
