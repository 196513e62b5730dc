#!/usr/bin/env bash
# Session 17, call 16: the weight upload's copy into pinned memory on 8
# threads (runtime/executor.cc): the 22 non-deep gpu tests, then kiln bench
# on the synthetic 8B Q8_0 and Q4_K_M (upload rate and process start to first
# token; call 4 had 5.07 GB/s and 2.70-2.89 s for Q8_0). Staged with
# tools/stage_gpu.sh build; carry [".gpu", "third_party"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
KILN_CALL_TESTS="-j4 -E deep" KILN_CALL_TEST_TIMEOUT=330 bash tools/gpu_call.sh
B=/tmp/kiln-gpu/pkg/bin
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
for T in Q8_0 Q4_K_M; do
  timeout 120 "$B/kilnc" synth --preset 8b --type $T --seed 1 -o /tmp/8b-$T.gguf > /dev/null 2>&1
  timeout 120 "$B/kilnc" compile /tmp/8b-$T.gguf -o /tmp/8b-$T.kiln > /dev/null 2>&1
  for r in 1 2; do
    timeout 120 "$B/kiln" bench -b /tmp/8b-$T.kiln -m /tmp/8b-$T.gguf --prompt-lengths 64 --depths 0 --steps 64 2>&1 | tee -a "$OUT/bench-$T.txt"
  done
done
