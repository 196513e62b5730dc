#!/usr/bin/env bash
# Session 18, call 5: the session's final code (the shipped sm_90 table with
# session 18's four graph-chosen entries, tools/gpu_graph_select.sh):
#  (1) the 22 non-deep gpu tests;
#  (2) the default `kiln bench` of both synthetic 8B models (the record);
#  (3) tools/gpu_graph_select.sh with one candidate, the previous shipped
#      table (old-0 in .gpu/exp/old/), against the new built-in one, 3 rounds,
#      both types; then 16 greedy tokens of each bundle, old against new.
# Staged with tools/stage_gpu.sh build; the old table copied into .gpu/exp/old.
start=$(date +%s)
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
B=/tmp/kiln-gpu/pkg/bin
KILN_CALL_TEST_TIMEOUT=300 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
rm -f "$OUT/logs.tgz" "$OUT/check.txt"
echo "tests done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json KILN_GRAPH_WORK=/tmp/kiln-graph
W=$KILN_GRAPH_WORK
mkdir -p $W
for T in Q8_0 Q4_K_M; do
  "$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
for T in Q8_0 Q4_K_M; do
  bash tools/gpu_graph_select.sh $T .gpu/exp/old 3 > "$OUT/select-$T.txt" 2>&1
  timeout 120 "$B/kiln" bench -b "$W/base.kiln" -m "$W/8b-$T.gguf" > "$OUT/bench-$T.txt" 2>&1
  P=100,2000,30000,400,5000,60000,700,8000,90000,1000,11000,120000,1300,14000,150000,16
  for v in base old-0; do
    timeout 30 "$B/kiln" run -b "$W/$v.kiln" -m "$W/8b-$T.gguf" --tokens $P -n 16 --ignore-eos -c 256 2>/dev/null > "$W/t-$v.txt"
  done
  cmp -s "$W/t-base.txt" "$W/t-old-0.txt" && echo "$T: new and old tables, the same 16 greedy tokens" >> "$OUT/select-$T.txt" ||
    echo "$T: tokens differ: $(cat $W/t-base.txt) against $(cat $W/t-old-0.txt)" >> "$OUT/select-$T.txt"
  echo "$T done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
done
tail -3 "$OUT/gpu-tests.log"; tail -4 "$OUT"/select-*.txt; grep -A5 "^decode" "$OUT"/bench-*.txt
