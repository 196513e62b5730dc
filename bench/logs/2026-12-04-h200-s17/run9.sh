#!/usr/bin/env bash
# Session 17, call 9: megakernel.cu with call 6's consumers (a warp owns a
# stage; the slot now released before the warp's reductions) and call 7's
# stagings and store-only epilogues; ablate bit 8 (kPrefetch) lets the
# producer claim 8 stages ahead of its copies and ask the L2 for each at
# once. Ablations: 1 no arithmetic, 2 no staging, 4 no attention, + 8 the
# L2 prefetch. Built as run5.sh, carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
timeout 200 .gpu/exp/megakernel 64 0 8 7 15 10 12 0 8 2>&1 | tee -a "$OUT/megakernel.txt"
timeout 200 .gpu/exp/megakernel 512 0 8 2>&1 | tee -a "$OUT/megakernel.txt"
