#!/usr/bin/env bash
# Session 11 call 4. Before it: tools/stage_gpu.sh build; carry [".gpu", "third_party"].
# The decode attention's shortest split for the 8B (min_split_positions:
# shipped 64; attn/ms128, attn/ms256): up to that many positions one block a
# KV head does the whole context with no record, counter or merge. kiln
# bench at depth 128 runs positions 128-191, where the shipped entry uses three
# splits and the merge (depth 0, positions 0-63, is one split already). Both
# 8B models, two rounds, depths 128 and
# 4096; gpu_ab.sh also checks each variant's tokens and logits against
# the shipped table's.
A=bench/logs/2026-12-04-h200-s11/attn
KILN_CALL_TESTS="" KILN_AB_ROUNDS=2 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 128,4096 --steps 64" \
  KILN_CALL_AB_TIMEOUT=470 bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=%B/kilnc \
  ms128=%B/kilnc,"$A/ms128.txtpb" ms256=%B/kilnc,"$A/ms256.txtpb" > "$OUT/call.log" 2>&1
cat "$OUT/ab.txt"
# The variants' decode attention past 64 positions against the shipped
# table's: 200 prompt tokens fed one decode step each (the bundles keep
# the last logits row only), every row's logits compared.
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/ab
TOKENS=$(python3 -c "import random; r=random.Random(5); print(','.join(str(r.randrange(0, 150000)) for _ in range(200)))")
for V in base ms128 ms256; do
  timeout 60 "$B/kiln" run -b "$W/8b-Q8_0-$V.kiln" -m "$W/8b-Q8_0.gguf" --tokens "$TOKENS" -n 8 --ignore-eos -c 256 \
    --dump-logits "$W/long-$V.npy" > "$W/long-$V.txt" 2>&1
done
for V in ms128 ms256; do
  echo "$V against base, 208 rows: $(python3 tests/e2e/compare_logits.py "$W/long-$V.npy" "$W/long-base.npy" 5e-3 2>&1 | tr '\n' ' ')" >> "$OUT/long.txt"
done
cat "$OUT/long.txt"
