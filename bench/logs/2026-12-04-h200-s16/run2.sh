#!/usr/bin/env bash
# Session 16, call 2: bench/experiments/q4k_matvec.cu, built on the build
# machine (nvcc -std=c++20 -O3 -arch=sm_90 -o .gpu/exp/q4k_matvec
# bench/experiments/q4k_matvec.cu), carry [".gpu"]; every shape twice.
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
.gpu/exp/q4k_matvec 2>&1 | tee "$OUT/q4k.tsv"
