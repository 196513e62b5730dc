#!/usr/bin/env bash
# Session 22's prepared call 4 (not run; revised in session 23): the
# decode attention's schedule in the graph. At depth 0 `kiln bench`'s 128
# steps run contexts of 5-132 positions (4 warm-up steps
# first); with min_split_positions 64 those
# past 64 take two or three splits and the last block's merge, and session
# 22's attribution puts the attention 0.145-0.154 ms a token over a perfect
# read. At 4096 a split walks 160 positions: three rounds of key loads at
# the shipped 4 keys in flight. Variants of the 8B attention entry (line
# 205 of schedules/sm_90.txtpb, attn/*.txtpb):
#   k8 = 256 threads with twice the key and value loads in flight
#     (keys_in_flight 8, value_bytes_in_flight 128; ~200 registers, so no
#     register cap: one block an SM): a split of 128 positions in one round;
#   m128k8 = k8 with one split up to 128 positions (no merge below 129);
#   k8b2 = the shipped entry (capped for 2 blocks an SM) with keys_in_flight
#     8 alone: 128 registers, no spills (ptxas 13, session 23);
#   v128b2 = the shipped entry with value_bytes_in_flight 128 alone: 128
#     registers, no spills.
# (Session 11 measured one split up to 128 or 256 positions at 4 keys in
# flight slower at 128-191 positions, and session 6 512 threads slower at
# every depth: those variants were dropped from this call.)
# tools/gpu_ab.sh, both types, two rounds, --steps 128 at depths 0 and
# 4096, the same greedy tokens. Stage with tools/stage_gpu.sh build; carry
# [".gpu", "third_party"]. About 7 minutes.
set -uo pipefail
S=$PWD/bench/logs/2026-12-05-s22
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
KILN_CALL_TESTS="" KILN_CALL_AB_TIMEOUT=540 KILN_AB_ROUNDS=2 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 128" \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=%B/kilnc k8=%B/kilnc,$S/attn/k8.txtpb \
  m128k8=%B/kilnc,$S/attn/m128k8.txtpb k8b2=%B/kilnc,$S/attn/k8b2.txtpb v128b2=%B/kilnc,$S/attn/v128b2.txtpb
rm -f "$OUT/gpu-tests.log" "$OUT/check.txt"
