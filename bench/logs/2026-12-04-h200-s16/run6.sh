#!/usr/bin/env bash
# Session 16 call 6: how much of the Q4_K kernels' time is their dot-product
# arithmetic. kilnc staged with one-level-ablation.patch and
# q4k-header-ablation.patch applied (reverted on main): KILN_EXP_ONE_LEVEL
# set at compile time makes the unsigned-code (K-quant int8) matvecs use one
# activation level, half their dp4a (the staging still writes both);
# KILN_EXP_Q4K_HEADER as in call 5. Results wrong by design; only times
# count. carry [".gpu", "third_party"]. Two rounds of `kiln bench
# --prompt-lengths 64 --depths 0,4096 --steps 64`, alternated.
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-exp
KILN_CALL_TESTS="" bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p "$W"
timeout 150 "$B/kilnc" synth --preset 8b --type Q4_K_M --seed 1 -o "$W/8b.gguf" > /dev/null 2>&1
"$B/kilnc" compile "$W/8b.gguf" -o "$W/base.kiln" > /dev/null 2>&1
KILN_EXP_ONE_LEVEL=1 "$B/kilnc" compile "$W/8b.gguf" -o "$W/one.kiln" > /dev/null 2>&1
KILN_EXP_ONE_LEVEL=1 KILN_EXP_Q4K_HEADER=1 "$B/kilnc" compile "$W/8b.gguf" -o "$W/both.kiln" > /dev/null 2>&1
for r in 1 2; do
  for v in base one both; do
    echo "== round $r $v" >> "$OUT/ab.txt"
    timeout 100 "$B/kiln" bench -b "$W/$v.kiln" -m "$W/8b.gguf" --prompt-lengths 64 --depths 0,4096 --steps 64 \
      2>/dev/null | grep -E "probe|^ +(0|4096) " >> "$OUT/ab.txt"
  done
done
cat "$OUT/ab.txt"
