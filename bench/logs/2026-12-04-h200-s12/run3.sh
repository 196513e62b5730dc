#!/usr/bin/env bash
# Session 12 call 3. Before it: tools/stage_gpu.sh build (at the commit
# that reverts the fused argmax), then gzip session 12's previous kiln (at
# 86bee3f: the argmax copied back after each step) into
# .gpu/variants/kiln-prev.gz; carry [".gpu", "third_party"].
# 1. The 22 non-deep gpu tests: the step advance writing {position, argmax}
#    into mapped pinned memory (no copy), DecodeGreedy's counters.
# 2. The 8B decode with the previous kiln (copy) and this one (ring), same
#    bundles, alternated twice, and the greedy tokens of both.
W=/tmp/kiln-gpu/ab13
B=/tmp/kiln-gpu/pkg/bin
KILN_CALL_TEST_TIMEOUT=270 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
mv "$OUT/logs.tgz" "$OUT/tests-logs.tgz"
mkdir -p "$W"
gunzip -c .gpu/variants/kiln-prev.gz > "$W/kiln-prev" && chmod +x "$W/kiln-prev"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
for T in Q8_0 Q4_K_M; do
  timeout 150 "$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
for T in Q8_0 Q4_K_M; do
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/$T.kiln" > "$W/compile-$T.txt" 2>&1
done
for T in Q8_0 Q4_K_M; do
  for K in prev ring prev ring; do
    BIN=$B/kiln
    [ $K = prev ] && BIN=$W/kiln-prev
    timeout 50 "$BIN" bench -b "$W/$T.kiln" -m "$W/8b-$T.gguf" --prompt-lengths 64 --depths 0,4096 --steps 64 \
      > "$W/bench.txt" 2>&1
    { echo "== $T $K"; grep -E "probe|^ +(0|4096) " "$W/bench.txt"; } >> "$OUT/ring.txt"
  done
  for K in prev ring; do
    BIN=$B/kiln
    [ $K = prev ] && BIN=$W/kiln-prev
    timeout 40 "$BIN" run -b "$W/$T.kiln" -m "$W/8b-$T.gguf" --tokens 100,2000,30000,400,5000 -n 24 --temp 0 -c 256 \
      > "$OUT/tokens-$T-$K.txt" 2> "$W/run-$T-$K.err" || tail -3 "$W/run-$T-$K.err" >> "$OUT/ring.txt"
  done
  cmp -s "$OUT/tokens-$T-prev.txt" "$OUT/tokens-$T-ring.txt" && echo "$T: the same greedy tokens" >> "$OUT/ring.txt" ||
    echo "$T: greedy tokens DIFFER" >> "$OUT/ring.txt"
done
tail -3 "$OUT/gpu-tests.log"
cat "$OUT/ring.txt"
