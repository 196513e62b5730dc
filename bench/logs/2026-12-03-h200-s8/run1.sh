#!/usr/bin/env bash
# Session 8, GPU call 1 (.gpu/ staged at 9e0ae6d). The 22 non-deep gpu tests
# (first GPU run of 5b4456a's merge clamp), then the 8B Q4_K_M's Q4_K
# gate/up matvec and decode attention under Nsight Compute with per-SASS
# stall counters (SourceCounters), and both kernels' SASS.
set -uo pipefail
KILN_CALL_TESTS="-j4 -E deep" KILN_CALL_TEST_TIMEOUT=220 bash tools/gpu_call.sh
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/prof L=/tmp/logs/prof
mkdir -p "$W" "$L"
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for f in .gpu/ptx/*.ptx; do
  n=$(basename "$f" .ptx)
  "$PTXAS" -arch=sm_90 -O3 -v "$f" -o "$W/$n.cubin" > "$L/$n.ptxas.txt" 2>&1
  "$CUOBJ" -sass "$W/$n.cubin" > "$L/$n.sass" 2>&1
done
timeout 120 "$B/kilnc" synth --preset 8b --type Q4_K_M --seed 1 -o "$W/8b.gguf" > /dev/null 2>&1
"$B/kilnc" compile "$W/8b.gguf" -o "$W/8b.kiln" > "$L/compile.txt" 2>&1
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for k in matvec_q4_k_24576x4096 attention_decode; do
  timeout 150 "$NCU" --clock-control none -k "regex:$k" -c 3 --set full --import-source no \
    --export "$W/$k" --force-overwrite \
    "$B/kiln" profile -b "$W/8b.kiln" -m "$W/8b.gguf" > "$L/ncu-$k.txt" 2>&1
  echo "ncu $k exit $?" >> "$L/ncu-$k.txt"
  "$NCU" --import "$W/$k.ncu-rep" --page details > "$L/ncu-$k-details.txt" 2>&1
  "$NCU" --import "$W/$k.ncu-rep" --page source --print-source sass --csv > "$L/ncu-$k-sass.csv" 2>&1
done
tar -C /tmp/logs -czf "$OUT/logs.tgz" .
ls -la "$L"
