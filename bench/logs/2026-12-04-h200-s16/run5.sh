#!/usr/bin/env bash
# Session 16 call 5: what a decoded Q4_K scale header could save in kiln's
# own kernels, in the decode graph. kilnc staged (tools/stage_gpu.sh build)
# with q4k-header-ablation.patch applied (then reverted on main): with
# KILN_EXP_Q4K_HEADER set, each Q4_K piece takes its four scale/min factors
# as four masked bytes of one header word (ByteToFloat each) instead of
# decoding the 6-bit packing (ScaleMinPair); the loads are unchanged and the
# scales wrong by design. carry [".gpu", "third_party"]. Two rounds of
# `kiln bench --prompt-lengths 64 --depths 0,4096 --steps 64`, alternated.
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-exp
KILN_CALL_TESTS="" bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p "$W"
timeout 150 "$B/kilnc" synth --preset 8b --type Q4_K_M --seed 1 -o "$W/8b.gguf" > /dev/null 2>&1
"$B/kilnc" compile "$W/8b.gguf" -o "$W/base.kiln" > /dev/null 2>&1
KILN_EXP_Q4K_HEADER=1 "$B/kilnc" compile "$W/8b.gguf" -o "$W/cheap.kiln" > /dev/null 2>&1
for r in 1 2; do
  for v in base cheap; do
    echo "== round $r $v" >> "$OUT/ab.txt"
    timeout 100 "$B/kiln" bench -b "$W/$v.kiln" -m "$W/8b.gguf" --prompt-lengths 64 --depths 0,4096 --steps 64 \
      2>/dev/null | grep -E "probe|^ +(0|4096) " >> "$OUT/ab.txt"
  done
done
cat "$OUT/ab.txt"
