#!/usr/bin/env bash
# Prepared in session 9 for the next session; NOT RUN. Prefill attention
# with stage_keys (K/V tiles in shared memory shared by the block's warps;
# bit-identical to the streaming kernel by construction and by
# codegen_gpu_test's RopeAndAttention, which must have passed first): the
# 512- and 3700-token prefill and time to first token of both 8B models,
# the shipped table against one with an f16 prefill entry that stages
# keys. (In session 9's call 4 the prefill attention was 27-29 % of a
# 512-token chunk: 1.27 ms a layer.) Carry [".gpu", "third_party"].
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-prefill
rm -rf /tmp/kiln-gpu "$W" && mkdir -p /tmp/kiln-gpu "$W" && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
ENTRY='entries { family: "attention_prefill" weight_dtype: "f16" attention { threads: 128 query_block: 16 key_block: 64 stage_keys: true } }'
awk -v e="$ENTRY" '/^entries \{ family: "attention_prefill"$/ && !done {print e; done=1} {print}' schedules/sm_90.txtpb > "$W/stk.txtpb"
grep -c "stage_keys: true" "$W/stk.txtpb" > "$OUT/stk-entries.txt"
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
for T in Q4_K_M Q8_0; do
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/new-$T.kiln" > /dev/null 2>&1
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/stk-$T.kiln" --schedules "$W/stk.txtpb" > "$OUT/compile-stk-$T.txt" 2>&1
  for V in new stk new stk; do
    timeout 90 "$B/kiln" bench -b "$W/$V-$T.kiln" -m "$W/8b-$T.gguf" --prompt-lengths 512,3700 --depths 0 --steps 16 \
      >> "$OUT/bench-$V-$T.txt" 2>&1
  done
  timeout 40 "$B/kiln" profile -b "$W/stk-$T.kiln" -m "$W/8b-$T.gguf" --steps 8 > "$OUT/profile-stk-$T.txt" 2>&1
done
# The staged kernels under compute-sanitizer (memcheck, racecheck): the
# GPU test's RopeAndAttention cases, staged and streaming alike.
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for TOOL in memcheck racecheck; do
  timeout 120 "$SAN" --tool "$TOOL" "$B/codegen_gpu_test" --gtest_filter='*RopeAndAttention*' > "$OUT/sanitizer-$TOOL.txt" 2>&1
  echo "$TOOL exit $?" >> "$OUT/sanitizer-$TOOL.txt"
done
tail -3 "$OUT"/sanitizer-*.txt
grep -H "first request\|^ *512 \|^ *3700 " "$OUT"/bench-*.txt
grep -H "attention_prefill" "$OUT"/profile-stk-*.txt
