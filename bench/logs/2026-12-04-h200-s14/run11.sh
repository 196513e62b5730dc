#!/usr/bin/env bash
# Session 14, call 11: bench/experiments/fuse_attention.cu's attout mode
# (call 10 again with attout-big, all of the output projection loads before the attention; the decode attention and the output projection in one launch split over
# K by KV head, each block running its head's attention itself, then its
# share of the output projection's reads and 124 reductions) beside sep
# (kiln's structure) and none (no attention), built on the build machine
# (nvcc -std=c++20 -O3 -arch=sm_90 -o .gpu/exp/fuse_attention
# fuse_attention.cu). Carry [".gpu"].
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/machine.txt" 2>&1
timeout 300 .gpu/exp/fuse_attention > "$OUT/fuse_attention.txt" 2>&1
echo "rc=$?" >> "$OUT/fuse_attention.txt"
cat "$OUT/fuse_attention.txt"
