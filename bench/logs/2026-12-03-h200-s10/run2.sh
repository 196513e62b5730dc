#!/usr/bin/env bash
# Session 10, call 2: the handoff experiment (bench/experiments/handoff.cu,
# built here with nvcc into .gpu/exp/), then session 9's prepared prefill
# call (next-call2.sh: stage_keys bench, compute-sanitizer on the attention
# cases), its many outputs tarred (the device returns at most 8 files).
# Carry [".gpu", "third_party"].
timeout 60 .gpu/exp/handoff > "$OUT/handoff.txt" 2>&1; echo "handoff exit $?" >> "$OUT/handoff.txt"
cat "$OUT/handoff.txt"
REAL_OUT=$OUT
export OUT=/tmp/call2-out
mkdir -p "$OUT"
timeout 500 bash bench/logs/2026-12-03-h200-s9/next-call2.sh > "$OUT/next-call2.log" 2>&1
echo "next-call2 exit $?" >> "$OUT/next-call2.log"
tar -C "$OUT" -czf "$REAL_OUT/prefill.tgz" .
tail -30 "$OUT/next-call2.log"
