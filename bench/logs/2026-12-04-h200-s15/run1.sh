#!/usr/bin/env bash
# Session 15, calls 1-3: bench/experiments/access_pattern.cu, built on the
# build machine (nvcc -std=c++20 -O3 -arch=sm_90 -o .gpu/exp/access_pattern
# bench/experiments/access_pattern.cu), carry [".gpu"].
#   call 1: the rows/tiled kernels and the probe only (the file before the
#           bulk kernel was added; those parts are unchanged since)
#   call 2: plus the bulk kernel at fixed rows a block (configs 8/4/32,
#           8/4/64, 4/4/16, 4/4/32, 8/2/32, 4/6/32: consumer warps / stages /
#           rows a block), arguments "gateup down qkv out gateup down"
#   call 3: the bulk kernel at one wave as well (the file of c49005a, before
#           its timing helpers were folded into one chain/probe pair), arguments
#           "gateup down qkv out gateup down qkv out"
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm --format=csv
.gpu/exp/access_pattern gateup down qkv out gateup 2>&1 | tee "$OUT/access1.tsv"
