#!/usr/bin/env bash
# Session 17, call 10: call 9's megakernel with MK_TRACE=1: one more step
# with every block's phase times (%globaltimer) recorded, summed by phase
# kind. Built as run5.sh, carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
for p in 64 512; do
  MK_TRACE=1 timeout 200 .gpu/exp/megakernel $p 2>&1 | tee -a "$OUT/megakernel.txt"
done
