#!/usr/bin/env bash
# Session 14, call 11: call 10 again with fuse_attention.cu's attout-big
# mode added (attout with all of a block's output projection loads issued
# before the attention), built the same way (nvcc -std=c++20 -O3
# -arch=sm_90 -o .gpu/exp/fuse_attention fuse_attention.cu). Carry [".gpu"].
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/machine.txt" 2>&1
timeout 300 .gpu/exp/fuse_attention > "$OUT/fuse_attention.txt" 2>&1
echo "rc=$?" >> "$OUT/fuse_attention.txt"
cat "$OUT/fuse_attention.txt"
