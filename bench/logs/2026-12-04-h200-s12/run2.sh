#!/usr/bin/env bash
# Session 12 call 2. Before it: tools/stage_gpu.sh build (at 86bee3f), then
# tools/stage_variants.sh build old=68135ec; carry [".gpu", "third_party"].
# 1. The 22 non-deep gpu tests at 86bee3f: Executor::DecodeGreedy (executor,
#    perf and kiln_run tests; kiln run's greedy path in every model test),
#    the LM head with its row's argmax (codegen_gpu_test MatVecWithArgmax;
#    every model test's greedy tokens and logits against the CPU reference).
# 2. A/B, one round: old = 68135ec's bundles (LM head, then an argmax
#    launch) against new (the argmax inside the LM head), both run by this
#    kiln, Q8_0 and Q4_K_M, depths 0 and 4096, with the logits check.
# 3. Decode one step ahead against one step at a time: kiln bench of the new
#    bundles with and without --no-decode-ahead, alternated.
W=/tmp/kiln-gpu/ab12
B=/tmp/kiln-gpu/pkg/bin
KILN_CALL_WORK=$W KILN_CALL_TEST_TIMEOUT=270 KILN_AB_ROUNDS=1 KILN_CALL_AB_TIMEOUT=250 \
  KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" old=bundle:%W/old-%T.kiln new=%B/kilnc > "$OUT/call.log" 2>&1
for T in Q8_0 Q4_K_M; do
  for mode in ahead one ahead one; do
    flag=
    [ $mode = one ] && flag=--no-decode-ahead
    timeout 45 "$B/kiln" bench -b "$W/8b-$T-new.kiln" -m "$W/8b-$T.gguf" --prompt-lengths 16 --depths 0 \
      --steps 256 $flag > "$W/ahead.txt" 2>&1
    { echo "== $T $mode"; grep -E "probe|decode loop|^ +0 " "$W/ahead.txt"; } >> "$OUT/ahead.txt"
  done
done
tail -3 "$OUT/gpu-tests.log"
grep -E "vs |ms/token" "$OUT/ab.txt"
cat "$OUT/ahead.txt"
