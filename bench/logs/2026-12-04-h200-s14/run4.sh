#!/usr/bin/env bash
# Session 14, call 4: call 3 again with the mlp-c4 and mlp-c8 modes (the
# fused launch's partials first added up across a cluster of 4 or 8 blocks
# through distributed shared memory, so 4 or 8 times fewer reductions),
# built the same way (nvcc -std=c++20 -O3 -arch=sm_90 -o .gpu/exp/handoff
# handoff.cu). Carry [".gpu"]. Call 3: one launch fewer a layer saves
# 0.1 ms a token, 1024 vector reductions a block cost 0.13 ms.
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/machine.txt" 2>&1
timeout 300 .gpu/exp/handoff > "$OUT/handoff.txt" 2>&1
echo "rc=$?" >> "$OUT/handoff.txt"
cat "$OUT/handoff.txt"
