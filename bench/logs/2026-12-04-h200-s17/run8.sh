#!/usr/bin/env bash
# Session 17, call 8: handoff.cu's pdl-dyn (kiln's launch structure with each
# kernel's bytes claimed 32 KB at a time instead of fixed shares) against
# pdl-late and ring-13-dyn2. Built as run1.sh, carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
for pass in 1 2; do
  timeout 120 .gpu/exp/handoff pdl-late pdl-dyn ring-13-dyn2 2>&1 | tee -a "$OUT/handoff.txt"
done
