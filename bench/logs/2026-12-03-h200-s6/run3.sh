#!/usr/bin/env bash
# Session 6, GPU call 3 (.gpu/ staged at 22f13ed, the code of main): no
# gpu tests (no kernel code changed since call 2); the A/B of two
# attention tables at depths 0, 512 and 4096:
#   main       the shipped table (8B decode attention: 256 threads, 32
#              splits of 64-1280 positions)
#   t512m128   512 threads, 64 splits of 128-640 positions: up to 128
#              positions one split in one round of key and value loads, no merge
#   t512m256   the same, one split up to 256 positions (two rounds)
# then Nsight Compute on the Q4_K_M model's Q6_K matvecs (the staged
# down projection and LM head) and on the decode attention.
KILN_CALL_TESTS="" KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,512,4096 --steps 64" KILN_CALL_AB_TIMEOUT=300 \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" main=%B/kilnc \
  t512m128=%B/kilnc,.gpu/tables/t512m128.txtpb t512m256=%B/kilnc,.gpu/tables/t512m256.txtpb
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/ab
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
  --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis
  --section InstructionStats --section SchedulerStats"
# shellcheck disable=SC2086  # SECTIONS is a list of flags
timeout 150 "$NCU" --clock-control none -k "regex:matvec_q6_k_(4096x12288|151936x4096)" -c 3 $SECTIONS \
  "$B/kiln" profile -b "$W/8b-Q4_K_M-main.kiln" -m "$W/8b-Q4_K_M.gguf" > "$OUT/ncu-q6k.txt" 2>&1
echo "ncu q6_k exit $?" >> "$OUT/ncu-q6k.txt"
# shellcheck disable=SC2086
timeout 90 "$NCU" --clock-control none -k "regex:attention_decode" -c 2 $SECTIONS \
  "$B/kiln" profile -b "$W/8b-Q8_0-main.kiln" -m "$W/8b-Q8_0.gguf" > "$OUT/ncu-attention.txt" 2>&1
echo "ncu attention exit $?" >> "$OUT/ncu-attention.txt"
