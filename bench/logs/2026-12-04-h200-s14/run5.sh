#!/usr/bin/env bash
# Session 14, call 5: where the fused launch's reductions cost (call 4: the
# cluster-reduced modes were no faster than 1024 reductions a block):
# mlp-c4-nored (the clusters without reductions), mlp-spread (each block
# reducing into its own addresses), mlp-store (plain stores there), built
# the same way (nvcc -std=c++20 -O3 -arch=sm_90 -o .gpu/exp/handoff
# handoff.cu). Carry [".gpu"].
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/machine.txt" 2>&1
timeout 300 .gpu/exp/handoff > "$OUT/handoff.txt" 2>&1
echo "rc=$?" >> "$OUT/handoff.txt"
cat "$OUT/handoff.txt"
