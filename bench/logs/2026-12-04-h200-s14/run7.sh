#!/usr/bin/env bash
# Session 14, call 7: mlp-rot-132 (call 6's mlp-rot with the fused launch on
# 132 blocks, half the partials) beside mlp-rot and mlp-nored, built the same
# way (nvcc -std=c++20 -O3 -arch=sm_90 -o .gpu/exp/handoff handoff.cu).
# Carry [".gpu"].
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/machine.txt" 2>&1
timeout 300 .gpu/exp/handoff > "$OUT/handoff.txt" 2>&1
echo "rc=$?" >> "$OUT/handoff.txt"
cat "$OUT/handoff.txt"
