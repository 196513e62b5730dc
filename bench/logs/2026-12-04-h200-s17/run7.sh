#!/usr/bin/env bash
# Session 17, call 7: megakernel.cu reworked after call 6: every consumer
# warp takes every stage again but releases its slot once it has read it
# (sums added in shared memory, the last warp writes the rows); epilogues
# only store (the projections' rows are added to the residual by the next
# staging, which writes it to the other of two buffers); the rmsnorm factor
# applied to the rows' sums, so a staging has one barrier; attention tasks
# by block index, no claims. Ablations as run6.sh. Built as run5.sh, carry
# [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
timeout 200 .gpu/exp/megakernel 64 0 1 2 4 7 0 2>&1 | tee -a "$OUT/megakernel.txt"
timeout 200 .gpu/exp/megakernel 512 2>&1 | tee -a "$OUT/megakernel.txt"
