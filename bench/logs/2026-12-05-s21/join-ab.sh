#!/usr/bin/env bash
# Prepared in session 21, not run: the matvec join (a Q4_K_M layer's Q4_K
# q/k and planar Q6_K v projections as one launch, the new default) against
# the same projections launched apart and side by side (--no-matvec-join,
# the default until session 21), on the 8B Q4_K_M, two rounds alternated,
# then the greedy tokens and logits of both (tools/gpu_ab.sh). Stage with
# tools/stage_gpu.sh build; carry [".gpu", "third_party"]; about 5 minutes
# on an H200. The join stays the default only if it is faster in `kiln
# bench` with the same tokens; otherwise flip LowerOptions::join_matvecs.
set -uo pipefail
S=$PWD/bench/logs/2026-12-05-s21
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
KILN_CALL_TESTS="" KILN_CALL_AB_TIMEOUT=480 \
  bash tools/gpu_call.sh "Q4_K_M" join=%B/kilnc apart="$S/kilnc-apart.sh"
