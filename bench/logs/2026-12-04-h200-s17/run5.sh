#!/usr/bin/env bash
# Session 17, call 5: megakernel.cu with consumer warps that each own whole
# stages (call 4's shared every stage among the 8 warps, whose reductions and
# epilogue made each stage a long chain) and the attention split over 32
# positions a task with a merge. Built with nvcc -std=c++20 -O3
# -arch=sm_90 into .gpu/exp; carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
for p in 64 512; do
  timeout 200 .gpu/exp/megakernel $p 2>&1 | tee -a "$OUT/megakernel.txt"
done
