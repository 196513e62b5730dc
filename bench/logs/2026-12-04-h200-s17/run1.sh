#!/usr/bin/env bash
# Session 17, call 1: bench/experiments/handoff.cu's ring modes (a
# persistent chain whose producer warp streams every phase's bytes through a
# shared-memory ring, never waiting for a grid barrier) against kiln's
# structure (pdl-late) and session 14's persistent kernel (persist). Built on
# the build machine (nvcc -std=c++20 -O3 -arch=sm_90 -o .gpu/exp/handoff
# bench/experiments/handoff.cu), carry [".gpu"]; each mode list twice.
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
for pass in 1 2; do
  timeout 120 .gpu/exp/handoff pdl-late persist ring-4 ring-8 ring-13 ring-13-dp4a pdl-late 2>&1 | tee -a "$OUT/handoff.txt"
done
