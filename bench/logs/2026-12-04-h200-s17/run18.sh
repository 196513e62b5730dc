#!/usr/bin/env bash
# Session 17, call 18: bench/experiments/l2_latency.cu, one warp's dependent
# loads (L2-resident lines, or 1 GiB of DRAM) alone and while the other SMs
# stream 4 GiB marked L2 evict-first (loads, half the SMs, bulk copies).
# Built with nvcc -std=c++20 -O3 -arch=sm_90 into .gpu/exp; carry
# [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
timeout 200 .gpu/exp/l2_latency 2>&1 | tee "$OUT/l2_latency.txt"
