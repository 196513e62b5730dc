#!/usr/bin/env bash
# Session 15, call 7 (staged at 25b459d): prefill A/B of deeper gemm k tiles
# on both types: k64 = gemm-k64.txtpb (planar Q8_0 64 deep, two stages; Q4_K
# 64, two stages, as shipped), k128s1 = gemm-k128s1.txtpb (planar Q8_0 and
# Q4_K 128 deep, one stage: a two-stage share would not fit 64 registers).
export KILN_CALL_TESTS="" KILN_CALL_AB_TIMEOUT=400 KILN_AB_ROUNDS=1
export KILN_BENCH_ARGS="--prompt-lengths 512,3700 --depths 0 --steps 16"
tools/gpu_call.sh "Q8_0 Q4_K_M" k64=%B/kilnc,bench/logs/2026-12-04-h200-s15/gemm-k64.txtpb \
  k128s1=%B/kilnc,bench/logs/2026-12-04-h200-s15/gemm-k128s1.txtpb
