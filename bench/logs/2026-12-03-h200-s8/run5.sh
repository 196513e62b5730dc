#!/usr/bin/env bash
# Session 8, GPU call 5 (.gpu/ staged at the session's final codegen and
# table). `kiln bench` with its defaults (prefill 512 and 3700 tokens;
# decode at depths 0, 4096 and 16384) on both 8B models with the shipped
# table, then Nsight Compute's per-SASS stall samples on the new 6-warp
# Q4_K gate/up (the next session's starting point).
set -uo pipefail
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-final L=$OUT
rm -rf /tmp/kiln-gpu && mkdir -p /tmp/kiln-gpu "$W" && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
for T in Q4_K_M Q8_0; do
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/8b-$T.kiln" > "$L/compile-$T.txt" 2>&1
  timeout 100 "$B/kiln" bench -b "$W/8b-$T.kiln" -m "$W/8b-$T.gguf" > "$L/bench-$T.txt" 2>&1
  echo "bench $T exit $?" >> "$L/bench-$T.txt"
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 90 "$NCU" --clock-control none -k "regex:matvec_q4_k_24576x4096" -c 2 --section SpeedOfLight \
  --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --section SourceCounters --import-source no --export "$W/gateup" --force-overwrite \
  "$B/kiln" profile -b "$W/8b-Q4_K_M.kiln" -m "$W/8b-Q4_K_M.gguf" > "$L/ncu-gateup.txt" 2>&1
echo "ncu exit $?" >> "$L/ncu-gateup.txt"
"$NCU" --import "$W/gateup.ncu-rep" --page source --print-source sass --csv 2>&1 | gzip > "$L/ncu-gateup-sass.csv.gz"
cat "$L"/bench-*.txt | grep -v '^kiln:' | head -80
