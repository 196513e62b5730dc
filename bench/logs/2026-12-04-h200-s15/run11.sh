#!/usr/bin/env bash
# Session 15, call 11 (staged at d526289): prefill attention schedules, Q8_0:
# shipped (128 threads, 16 queries a block, 64-row K/V tiles), q32 (128
# threads, 32 queries), t256q32 (256 threads, 32 queries). Only the 8B's
# f16 prefill attention entry differs.
export KILN_CALL_TESTS="" KILN_CALL_AB_TIMEOUT=220 KILN_AB_ROUNDS=1
export KILN_BENCH_ARGS="--prompt-lengths 512,3700 --depths 0 --steps 16"
tools/gpu_call.sh "Q8_0" shipped=%B/kilnc q32=%B/kilnc,bench/logs/2026-12-04-h200-s15/prefill-att-1283264.txtpb \
  t256q32=%B/kilnc,bench/logs/2026-12-04-h200-s15/prefill-att-2563264.txtpb
