#!/usr/bin/env bash
# Session 14, call 3: bench/experiments/handoff.cu's mlp modes (each layer's
# gate/up and down as one launch, split over K, partial outputs added with
# red.global.add.v4.f32; and the same without the reductions) beside kiln's
# pdl-late, built on the build machine (nvcc -std=c++20 -O3 -arch=sm_90 -o
# .gpu/exp/handoff handoff.cu). Carry [".gpu"]. What does one boundary fewer
# a layer save, and what do the reductions cost?
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/machine.txt" 2>&1
timeout 300 .gpu/exp/handoff > "$OUT/handoff.txt" 2>&1
echo "rc=$?" >> "$OUT/handoff.txt"
cat "$OUT/handoff.txt"
