#!/usr/bin/env bash
# Session 18, call 6 (staged at the commit that adds this script): kilnc tune
# of the planar Q8_0 matvecs over rowtiles-spaces.txtpb (150 s budget, the
# biggest shapes first), then tools/graph_candidates.py --k 6 over that cache
# and tools/gpu_graph_select.sh Q8_0 (two rounds; the greedy tokens of each
# winner against the shipped table's).
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-graph S=bench/logs/2026-12-04-h200-s18
KILN_CALL_TESTS="" bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
mkdir -p $W
"$B/kilnc" synth --preset 8b --type Q8_0 --seed 1 -o "$W/8b-Q8_0.gguf" > /dev/null 2>&1
timeout 170 "$B/kilnc" tune -m "$W/8b-Q8_0.gguf" --target sm_90 --families matvec --budget 150s \
  --spaces $S/rowtiles-spaces.txtpb --cache "$W/tune.tsv" > "$OUT/tune.log" 2>&1
echo "tune exit $? at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
gzip -c "$W/tune.tsv" > "$OUT/tune.tsv.gz"
python3 tools/graph_candidates.py --type Q8_0 --k 6 --out "$W/gc" "$W/tune.tsv" > "$OUT/select.txt" 2>&1
cp "$W/gc/index.tsv" "$OUT/graph-candidates.tsv"
KILN_GRAPH_WORK=$W timeout $(( 590 - ($(date +%s) - start) )) bash tools/gpu_graph_select.sh Q8_0 "$W/gc" 2 >> "$OUT/select.txt" 2>&1
echo "done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
grep -v "^r[0-9]" "$OUT/select.txt"; grep "best\|candidates" "$OUT/tune.log" | cut -c1-200
