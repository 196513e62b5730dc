#!/usr/bin/env bash
# Session 14, call 12: fuse_attention.cu with the mlp mode (handoff.cu's
# mlp-rot: each layer's gate/up and down as one launch with rotated
# reductions) and both (attout-big and mlp: three launches a layer) beside
# sep, attout-big and none: do the two fusions add up? Built the same way
# (nvcc -std=c++20 -O3 -arch=sm_90 -o .gpu/exp/fuse_attention
# fuse_attention.cu). Carry [".gpu"].
# As run, this script met call 11's binary: the build had failed unnoticed
# (call12/ holds call 11's modes on another H200); run13.sh is the rerun.
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/machine.txt" 2>&1
timeout 300 .gpu/exp/fuse_attention > "$OUT/fuse_attention.txt" 2>&1
echo "rc=$?" >> "$OUT/fuse_attention.txt"
cat "$OUT/fuse_attention.txt"
