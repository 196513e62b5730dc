#!/usr/bin/env bash
# Session 17, call 4: bench/experiments/megakernel.cu, the 8B Q8_0 decode
# step as one persistent kernel with its real arithmetic (check against the
# double-precision reference on 2 layers, then the 8B timed against the
# probe) at positions 64 and 512; handoff.cu's chain for the same GPU; and
# kiln's own decode of the synthetic 8B Q8_0 on the same GPU. Staged with
# tools/stage_gpu.sh build at bb806c8's product code, the experiments built
# with nvcc -std=c++20 -O3 -arch=sm_90 into .gpu/exp; carry [".gpu",
# "third_party"].
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv
timeout 200 .gpu/exp/megakernel 64 2>&1 | tee "$OUT/megakernel.txt"
timeout 200 .gpu/exp/megakernel 512 2>&1 | tee -a "$OUT/megakernel.txt"
timeout 60 .gpu/exp/handoff pdl-late ring-13-dyn2 2>&1 | tee "$OUT/handoff.txt"
rm -rf /tmp/k && mkdir -p /tmp/k && tar -C /tmp/k -xzf .gpu/pkg.tar.gz
B=/tmp/k/pkg/bin
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
timeout 120 "$B/kilnc" synth --preset 8b --type Q8_0 --seed 1 -o /tmp/k/8b.gguf > /dev/null 2>&1
timeout 120 "$B/kilnc" compile /tmp/k/8b.gguf -o /tmp/k/8b.kiln > "$OUT/compile.txt" 2>&1
for r in 1 2; do
  timeout 120 "$B/kiln" bench -b /tmp/k/8b.kiln -m /tmp/k/8b.gguf --prompt-lengths 64 --depths 0 --steps 64 2>&1 | tee -a "$OUT/bench-Q8_0.txt"
done
