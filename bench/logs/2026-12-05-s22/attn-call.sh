#!/usr/bin/env bash
# Session 22, call 4: the decode attention's schedule at short context, in
# the graph. At depth 0 `kiln bench`'s 128 steps run contexts of 9-137
# positions; with min_split_positions 64 those past 64 take two splits and
# the last block's merge (an atomic and a load round trip more on the
# chain), and the attribution of call 2 puts the attention 0.145-0.154 ms
# a token over a perfect read. Variants of the 8B attention entry (line
# 205 of schedules/sm_90.txtpb, attn/*.txtpb): m128 = one split up to 128
# positions (256 threads: two rounds of key and value loads past 64);
# t512m128 = the same with 512 threads (128 positions in one round each;
# 64 splits of at most 640 so the scores fit 48 KiB; one block an SM);
# k8 = 256 threads with twice the key and value loads in flight
# (keys_in_flight 8, value_bytes_in_flight 128; one block an SM, no
# register cap): a split of 128 positions in one round, at every context;
# m128k8 = k8 with one split up to 128 positions.
# tools/gpu_ab.sh, both types, two rounds, --steps 128 at depths 0 and
# 4096, the same greedy tokens. Stage with tools/stage_gpu.sh build; carry
# [".gpu", "third_party"].
set -uo pipefail
S=$PWD/bench/logs/2026-12-05-s22
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
KILN_CALL_TESTS="" KILN_CALL_AB_TIMEOUT=540 KILN_AB_ROUNDS=2 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 128" \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=%B/kilnc m128=%B/kilnc,$S/attn/m128.txtpb \
  t512m128=%B/kilnc,$S/attn/t512m128.txtpb k8=%B/kilnc,$S/attn/k8.txtpb m128k8=%B/kilnc,$S/attn/m128k8.txtpb
rm -f "$OUT/gpu-tests.log" "$OUT/check.txt"
