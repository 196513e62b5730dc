#!/usr/bin/env bash
# Prepared in session 21, not run: the matvec join (a Q4_K_M layer's Q4_K
# q/k and planar Q6_K v projections as one launch, kilnc compile
# --matvec-join) against the default (the same projections as two launches
# side by side), on the 8B Q4_K_M, two rounds alternated,
# then the greedy tokens and logits of both (tools/gpu_ab.sh). Stage with
# tools/stage_gpu.sh build; carry [".gpu", "third_party"]; about 5 minutes
# on an H200. If the join is faster in `kiln bench` with the same tokens
# (and the gpu tests passed), make it the default: LowerOptions and
# BundleOptions join_matvecs = true, and the CLI flag --no-matvec-join.
set -uo pipefail
S=$PWD/bench/logs/2026-12-05-s21
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
KILN_CALL_TESTS="" KILN_CALL_AB_TIMEOUT=480 \
  bash tools/gpu_call.sh "Q4_K_M" apart=%B/kilnc join="$S/kilnc-join.sh"
