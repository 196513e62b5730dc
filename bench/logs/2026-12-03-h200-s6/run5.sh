#!/usr/bin/env bash
# Session 6, GPU call 5 (.gpu/ staged at 0232796, planar Q6_K): no tests
# (call 4 ran them on this code); the Q4_K_M A/B of three tables for the
# planar Q6_K shapes at depths 0 and 4096:
#   q6r2   call 4's best: down and LM head at 2 rows per group (shipped
#          shapes otherwise)
#   q6t    call 4's tuned winners for V, down and LM head
#   q6m    q6t with q6r2's down entry (114 registers against 255)
KILN_CALL_TESTS="" KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" KILN_CALL_AB_TIMEOUT=200 \
  bash tools/gpu_call.sh "Q4_K_M" q6r2=%B/kilnc,.gpu/tables/q6r2.txtpb \
  q6t=%B/kilnc,.gpu/tables/q6t.txtpb q6m=%B/kilnc,.gpu/tables/q6m.txtpb
