#!/usr/bin/env bash
# Session 17, call 17: do the weights evict what the step's critical path
# reads from the L2? (1) megakernel.cu at position 64, traced, with its
# weight copies marked L2 evict-first (setting 4096) and without; (2) kiln
# with evict-first.patch (beside this script; not merged): with
# KILN_EXP_EVICT_FIRST set at compile time the weight decoder's 16-byte
# loads carry an L2 evict-first cache policy (createpolicy.fractional +
# ld.global.nc.L1::no_allocate.L2::cache_hint). base and ef bundles of the
# synthetic 8B Q8_0 and Q4_K_M, kiln bench --prompt-lengths 64 --depths 0
# --steps 64, three rounds alternated. Staged with tools/stage_gpu.sh build
# (the patch applied), megakernel built into .gpu/exp; carry [".gpu",
# "third_party"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-exp
KILN_CALL_TESTS="" bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p "$W"
for T in Q8_0 Q4_K_M; do
  timeout 150 "$B/kilnc" synth --preset 8b --type $T --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
MK_TRACE=1 timeout 100 .gpu/exp/megakernel 64 0 4096 2>&1 | tee "$OUT/megakernel.txt"
wait
for T in Q8_0 Q4_K_M; do
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/$T-base.kiln" > /dev/null 2>&1 &
  KILN_EXP_EVICT_FIRST=1 "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/$T-ef.kiln" > /dev/null 2>&1 &
done
wait
for r in 1 2 3; do
  for T in Q8_0 Q4_K_M; do
    for v in base ef; do
      echo "== round $r $T $v" >> "$OUT/ab.txt"
      timeout 60 "$B/kiln" bench -b "$W/$T-$v.kiln" -m "$W/8b-$T.gguf" --prompt-lengths 64 --depths 0 --steps 64 \
        2>/dev/null | grep -E "probe|^ +0 " >> "$OUT/ab.txt"
    done
  done
done
cat "$OUT/ab.txt"
