#!/usr/bin/env bash
# Session 18, call 2: which of call 1's streamed Q4_K schedules (tables.tgz:tables/s1,
# slower end to end: 1.743 -> 1.82 ms) cost the step, and is it their
# release_early? tables/X0 and X1: only shape X streamed as the tune found
# it (stream_stages 2-3), release_early off / on, every other entry shipped;
# all0: every Q4_K shape streamed, release_early off; none: s1's text with
# the shipped schedules (= base). kiln bench --prompt-lengths 64 --depths 0
# --steps 64, two rounds; then 16 greedy tokens of each against base.
# Staged as call 1 (prefetch-positions.patch in kilnc, unused here).
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-exp S=bench/logs/2026-12-04-h200-s18
KILN_CALL_TESTS="" bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p "$W"
timeout 150 "$B/kilnc" synth --preset 8b --type Q4_K_M --seed 1 -o "$W/8b.gguf" > /dev/null 2>&1
V="base none all0 gu0 gu1 down0 down1 out0 out1 qkv0 qkv1 qk0 qk1"
for v in $V; do
  if [ $v = base ]; then "$B/kilnc" compile "$W/8b.gguf" -o "$W/$v.kiln" > "$W/c-$v.txt" 2>&1 &
  else "$B/kilnc" compile "$W/8b.gguf" --schedules $S/tables/$v.txtpb -o "$W/$v.kiln" > "$W/c-$v.txt" 2>&1 & fi
done
wait
for v in $V; do [ -s "$W/$v.kiln" ] || { echo "$v: compile failed"; tail -3 "$W/c-$v.txt"; }; done >> "$OUT/ab.txt"
echo "compiled at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
for r in 1 2; do
  for v in $V; do
    [ -s "$W/$v.kiln" ] || continue
    [ $(( $(date +%s) - start )) -lt 500 ] || break 2
    printf "r%d %-6s " $r $v >> "$OUT/ab.txt"
    timeout 40 "$B/kiln" bench -b "$W/$v.kiln" -m "$W/8b.gguf" --prompt-lengths 64 --depths 0 --steps 64 \
      2>/dev/null | awk '/probe/{p=$6} /^ +0 /{print $3, "ms", $12, "% of probe", p, "GB/s"}' >> "$OUT/ab.txt"
  done
done
P=100,2000,30000,400,5000,60000,700,8000,90000,1000,11000,120000,1300,14000,150000,16
for v in $V; do
  [ -s "$W/$v.kiln" ] || continue
  timeout 30 "$B/kiln" run -b "$W/$v.kiln" -m "$W/8b.gguf" --tokens $P -n 16 --ignore-eos -c 256 2>/dev/null > "$W/t-$v.txt"
  cmp -s "$W/t-base.txt" "$W/t-$v.txt" && echo "$v: same 16 tokens as base" || echo "$v: tokens differ: $(cat "$W/t-$v.txt")"
done >> "$OUT/ab.txt"
echo "done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
cat "$OUT/ab.txt"
