#!/usr/bin/env bash
# Session 14, call 9 (.gpu/ staged at 0ce73f8; product code unchanged since).
# Carry [".gpu", "third_party"]. The decode attention's block at 128 threads
# (4 warps to each barrier instead of 8; 4 blocks an SM) against the shipped
# 256 (tuned at position 4095, session 7): at short context the kernel is a
# latency chain of barriers and L2 round trips on 8 blocks. A/B, two rounds,
# depths 0 and 4096, with the logits check:
#   base  the shipped table
#   t128  bench/logs/2026-12-04-h200-s14/tables/t128.txtpb (line 176 only)
KILN_CALL_TESTS="" KILN_AB_ROUNDS=2 KILN_CALL_AB_TIMEOUT=420 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=%B/kilnc t128=%B/kilnc,bench/logs/2026-12-04-h200-s14/tables/t128.txtpb > "$OUT/call.log" 2>&1
grep -E "vs |ms/token" "$OUT/ab.txt"
