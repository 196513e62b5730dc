#!/usr/bin/env bash
# Session 17, call 3: the ring with each phase's stages claimed from a
# counter (ring-13-dyn4, ring-13-dyn2) against fixed shares (ring-13, now
# with a tag per stage and an empty stage ending each phase), kiln's
# structure (pdl-late) and the ring without barriers. Built as in run1.sh,
# carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
for pass in 1 2; do
  timeout 120 .gpu/exp/handoff pdl-late ring-13 ring-13-dyn4 ring-13-dyn2 ring-13-free 2>&1 | tee -a "$OUT/handoff.txt"
done
