#!/usr/bin/env bash
# Session 14, call 2: bench/experiments/handoff.cu with the persistent modes
# (persist, persist-late, persist-sleep) beside kiln's pdl-late, built on the
# build machine (nvcc -std=c++20 -O3 -arch=sm_90 -o .gpu/exp/handoff
# handoff.cu). Carry [".gpu"]. Does a grid barrier inside one kernel, with
# the next phase's loads issued before it, cost less than a programmatic
# launch boundary (0.85 us in session 10)?
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/machine.txt" 2>&1
timeout 300 .gpu/exp/handoff > "$OUT/handoff.txt" 2>&1
echo "rc=$?" >> "$OUT/handoff.txt"
cat "$OUT/handoff.txt"
