#!/usr/bin/env bash
# Session 16, call 3: bench/experiments/q4k_matvec.cu again after call 2,
# with the staged codes padded (16 bytes after every 64 columns: call 2's
# lanes read them 4-way bank-conflicted) and every shape timed twice (call
# 2 ran one pass: chain_timing.h's ModesFromArgs stopped after the first).
# Built as call 2, carry [".gpu"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
.gpu/exp/q4k_matvec 2>&1 | tee "$OUT/q4k.tsv"
