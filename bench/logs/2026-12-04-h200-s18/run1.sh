#!/usr/bin/env bash
# Session 18, call 1. Staged with tools/stage_gpu.sh build with
# prefetch-positions.patch applied (beside this script; not merged): with
# KILN_EXP_PREFETCH_POSITIONS set at compile time, the decode attention asks
# the L2 for its earlier K/V rows before its wait up to that context length
# instead of 512 (kPrefetchPositions). Carry [".gpu", "third_party"].
#  (1) kilnc tune of the Q4_K matvecs over stream-spaces.txtpb (weights
#      copied into shared memory ahead of use), exported as s1;
#  (2) kiln bench --prompt-lengths 512 --depths 0 --steps 64 (the default
#      bench's depth-0 context, 513-576 positions), two rounds alternated:
#      base, pf1024 and pf2048 (prefetch up to 1024 / 2048 positions), and
#      for Q4_K_M s1 (the tune's table).
start=$(date +%s)
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-exp S=bench/logs/2026-12-04-h200-s18
KILN_CALL_TESTS="" bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p "$W"
for T in Q8_0 Q4_K_M; do
  timeout 150 "$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
echo "synth done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
timeout 150 "$B/kilnc" tune -m "$W/8b-Q4_K_M.gguf" --target sm_90 --families matvec --budget 120s \
  --spaces $S/stream-spaces.txtpb --cache "$W/tune.tsv" > "$OUT/tune.log" 2>&1
echo "tune exit $? at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
"$B/kilnc" tune --export "$OUT/s1.txtpb" --cache "$W/tune.tsv" >> "$OUT/call.log" 2>&1
gzip -c "$W/tune.tsv" > "$OUT/tune.tsv.gz"
for T in Q8_0 Q4_K_M; do
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/$T-base.kiln" > /dev/null 2>&1 &
  KILN_EXP_PREFETCH_POSITIONS=1024 "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/$T-pf1024.kiln" > /dev/null 2>&1 &
  KILN_EXP_PREFETCH_POSITIONS=2048 "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/$T-pf2048.kiln" > /dev/null 2>&1 &
done
[ -s "$OUT/s1.txtpb" ] && "$B/kilnc" compile "$W/8b-Q4_K_M.gguf" --schedules "$OUT/s1.txtpb" \
  -o "$W/Q4_K_M-s1.kiln" > "$OUT/compile-s1.txt" 2>&1 &
wait
echo "compiled at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
for r in 1 2; do
  for T in Q8_0 Q4_K_M; do
    for v in base pf1024 pf2048 s1; do
      [ -s "$W/$T-$v.kiln" ] || continue
      [ $(( $(date +%s) - start )) -lt 570 ] || break 3
      echo "== round $r $T $v" >> "$OUT/ab.txt"
      timeout 40 "$B/kiln" bench -b "$W/$T-$v.kiln" -m "$W/8b-$T.gguf" --prompt-lengths 512 --depths 0 --steps 64 \
        2>/dev/null | grep -E "probe|^ +0 " >> "$OUT/ab.txt"
    done
  done
done
echo "done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
cat "$OUT/ab.txt"; tail -5 "$OUT/call.log"
