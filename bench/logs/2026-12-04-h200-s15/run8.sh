#!/usr/bin/env bash
# Session 15, call 8 (kilnc with kMaxGemmPrefetchRegisters 96, otherwise
# 25b459d): prefill A/B on both types: k64 = gemm-k64.txtpb (planar Q8_0 and
# Q4_K 64 deep, two stages; Q6_K 128, one), k128s2 = gemm-k128s2.txtpb
# (all three 128 deep, two stages).
export KILN_CALL_TESTS="" KILN_CALL_AB_TIMEOUT=400 KILN_AB_ROUNDS=1
export KILN_BENCH_ARGS="--prompt-lengths 512,3700 --depths 0 --steps 16"
tools/gpu_call.sh "Q8_0 Q4_K_M" k64=%B/kilnc,bench/logs/2026-12-04-h200-s15/gemm-k64.txtpb \
  k128s2=%B/kilnc,bench/logs/2026-12-04-h200-s15/gemm-k128s2.txtpb
