#!/usr/bin/env bash
# Session 15, call 10 (staged at d526289): prefill A/B, Q8_0 only: shipped
# (planar Q8_0 gemm 128 x 128 x 64 on 256 threads) against t512
# (gemm-q8t512.txtpb: 128 x 128 x 128 on 512 threads).
export KILN_CALL_TESTS="" KILN_CALL_AB_TIMEOUT=300 KILN_AB_ROUNDS=1
export KILN_BENCH_ARGS="--prompt-lengths 512,3700 --depths 0 --steps 16"
tools/gpu_call.sh "Q8_0" shipped=%B/kilnc t512=%B/kilnc,bench/logs/2026-12-04-h200-s15/gemm-q8t512.txtpb
