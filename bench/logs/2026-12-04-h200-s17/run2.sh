#!/usr/bin/env bash
# Session 17, call 2: call 1's ring modes again with two more: ring-13-free
# (the ring without grid barriers: its streaming rate alone) and ring-6-32k
# (6 stages of 32 KB). Built as in run1.sh, carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
for pass in 1 2; do
  timeout 120 .gpu/exp/handoff pdl-late ring-13 ring-13-free ring-6-32k persist 2>&1 | tee -a "$OUT/handoff.txt"
done
