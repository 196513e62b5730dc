#!/usr/bin/env bash
# Session 17, call 13: does the stagings' L2 round trip shorten with fewer
# bulk copies in flight? call 12's megakernel traced at position 64 with at
# most 1, 2 and 3 stages in flight an SM (ablate 256, 512, 768) and no limit.
# Built as run5.sh, carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
MK_TRACE=1 timeout 250 .gpu/exp/megakernel 64 0 256 512 768 2>&1 | tee -a "$OUT/megakernel.txt"
