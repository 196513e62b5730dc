#!/usr/bin/env bash
# Session 7, GPU call 5 (.gpu/ staged at the early-value-loads commit; the
# last of the session's device time, so one A/B round). Every non-deep gpu
# test (the decode attention against the reference at many positions and
# splits; the models against the CPU reference), then the A/B at depths 0
# and 4096:
#   base  3bbfc57's bundles (the shipped session-7 table, attention before)
#   new   this kilnc: the decode attention issues its first round of value
#         rows before the key rows, and the merge its first round of records
#         before the (max, sum) pairs; registers capped for 2 blocks an SM
KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" KILN_CALL_AB_TIMEOUT=150 \
  bash tools/gpu_call.sh "Q4_K_M Q8_0" base=bundle:%W/base-%T.kiln new=%B/kilnc
