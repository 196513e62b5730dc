#!/usr/bin/env bash
# Session 22: the record of main's decode at the session's end: the
# default `kiln bench` of both synthetic 8B models (prompts of 512 and
# 3700 tokens; decode 128 steps at depths 0, 4096, 16384), then `kiln
# profile --attribution` of each (every kernel's launches swapped in turn
# for perfect reads of their bytes). Stage with tools/stage_gpu.sh build;
# carry [".gpu", "third_party"]; about 4 minutes on an H200.
set -uo pipefail
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-final
KILN_CALL_TESTS="" bash tools/gpu_call.sh > /dev/null 2>&1  # unpacks .gpu/
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
mkdir -p $W
for T in Q8_0 Q4_K_M; do
  ("$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &&
   "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/8b-$T.kiln" > /dev/null 2>&1) &
done
wait
for T in Q8_0 Q4_K_M; do
  timeout 90 "$B/kiln" bench -b "$W/8b-$T.kiln" -m "$W/8b-$T.gguf" > "$OUT/bench-$T.txt" 2>&1
done
for T in Q8_0 Q4_K_M; do
  timeout 120 "$B/kiln" profile --attribution -b "$W/8b-$T.kiln" -m "$W/8b-$T.gguf" > "$OUT/profile-$T.txt" 2>&1
done
grep -A5 "^decode$" "$OUT"/bench-*.txt | grep -E "^\S+-\s+[0-9]"; grep -A16 "swapped" "$OUT"/profile-*.txt
