#!/usr/bin/env bash
# Session 17, call 19: call 18 again (its l2-half mode hung: block 1, which
# raises the start flag, could sit on an SM that streams nothing and leave
# first; fixed), every mode once. Built as run18.sh, carry [".gpu/exp"].
timeout 100 .gpu/exp/l2_latency l2-alone l2-loads l2-half l2-bulk dram-alone dram-loads 2>&1 | tee "$OUT/l2_latency.txt"
