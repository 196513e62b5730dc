#!/usr/bin/env bash
# Session 17, call 11: call 10's trace put the staging at 3-7 µs a phase and
# the barrier at 2.6-4 µs: L2 round trips behind ~24 MB of bulk copies in
# flight (11 slots x 17 KB x 132 SMs, ~5.6 µs of the DRAM's time). Here the
# producer keeps at most F stages in flight (ablate F << 8: 512, 768, 1024,
# 1536 for F = 2, 3, 4, 6), the rest of the ring holding landed stages.
# Built as run5.sh, carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
timeout 200 .gpu/exp/megakernel 64 0 512 768 1024 1536 0 512 768 2>&1 | tee -a "$OUT/megakernel.txt"
