#!/usr/bin/env bash
# Session 17, call 12: megakernel.cu with every staging load issued before
# any store (call 10's stagings waited a round trip per 16 bytes behind
# possibly aliasing stores) and the attention's merge in one online pass;
# traced (MK_TRACE=1) at positions 64 and 512, flight limits 0 and 3.
# Built as run5.sh, carry [".gpu/exp"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
for p in 64 512; do
  MK_TRACE=1 timeout 200 .gpu/exp/megakernel $p 0 768 7 2>&1 | tee -a "$OUT/megakernel.txt"
done
