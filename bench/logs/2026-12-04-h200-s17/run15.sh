#!/usr/bin/env bash
# Session 17, call 15: call 14's trace plus block 0's SM clock over the step
# (clock64 against %globaltimer), position 64. Built as run5.sh, carry
# [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,clocks.max.sm,driver_version --format=csv
MK_TRACE=1 timeout 250 .gpu/exp/megakernel 64 0 2>&1 | tee -a "$OUT/megakernel.txt"
nvidia-smi --query-gpu=clocks.sm,clocks_throttle_reasons.active --format=csv
