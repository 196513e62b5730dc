#!/usr/bin/env bash
# Session 17, call 14: the staging split in two by thread 0's trace points
# (its loads back; its last barrier reached), position 64, no flight limit
# and one stage in flight. Built as run5.sh, carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
MK_TRACE=1 timeout 250 .gpu/exp/megakernel 64 0 256 2>&1 | tee -a "$OUT/megakernel.txt"
