#!/usr/bin/env bash
# Session 18, call 7: the record of the session's final code (dfccde6: the
# shipped table with all five graph-chosen entries): the default `kiln bench`
# of both synthetic 8B models, then `kiln profile --attribution` of the Q8_0.
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-final
KILN_CALL_TESTS="" bash tools/gpu_call.sh > /dev/null 2>&1
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
mkdir -p $W
for T in Q8_0 Q4_K_M; do
  ("$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &&
   "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/8b-$T.kiln" > /dev/null 2>&1) &
done
wait
for T in Q8_0 Q4_K_M; do
  timeout 60 "$B/kiln" bench -b "$W/8b-$T.kiln" -m "$W/8b-$T.gguf" > "$OUT/bench-$T.txt" 2>&1
done
timeout 60 "$B/kiln" profile --attribution -b "$W/8b-Q8_0.kiln" -m "$W/8b-Q8_0.gguf" > "$OUT/profile-Q8_0.txt" 2>&1
grep -A5 "^decode$" "$OUT"/bench-*.txt | grep -E "^\S+-\s+[0-9]"; grep -A14 "swapped" "$OUT/profile-Q8_0.txt"
