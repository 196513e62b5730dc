#!/usr/bin/env bash
# Session 15, call 6 (staged at 25b459d): prefill A/B of the planar Q8_0
# gemm's k tile, 32 (shipped) against 64 (gemm-q8k64.txtpb), Q8_0 only.
export KILN_CALL_TESTS="" KILN_CALL_AB_TIMEOUT=400 KILN_AB_ROUNDS=1
export KILN_BENCH_ARGS="--prompt-lengths 512,3700 --depths 0 --steps 16"
tools/gpu_call.sh "Q8_0" k32=%B/kilnc k64=%B/kilnc,bench/logs/2026-12-04-h200-s15/gemm-q8k64.txtpb
