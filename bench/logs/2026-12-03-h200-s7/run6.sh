#!/usr/bin/env bash
# Session 7, GPU call 6 (the machine of call 5, still warm; the session's
# last device seconds): call 5's A/B again, depth 0 only, one round.
KILN_CALL_TESTS="" KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0 --steps 64" KILN_CALL_AB_TIMEOUT=110 \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=bundle:%W/base-%T.kiln new=%B/kilnc
