#!/usr/bin/env bash
# Session 17, call 6: where call 5's megakernel loses its time: the 8B at
# position 64 with work left out (ablate mask: 1 no arithmetic, only the
# stages' XOR; 2 no activation staging; 4 no attention; 7 all three; 32,
# 64, 128: 2, 4, 8 stages a claim). Built as run5.sh, carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
timeout 300 .gpu/exp/megakernel 64 0 1 2 4 7 64 128 0 2>&1 | tee -a "$OUT/megakernel.txt"
