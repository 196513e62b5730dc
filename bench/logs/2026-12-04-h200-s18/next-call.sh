#!/usr/bin/env bash
# Prepared in session 18, not run: the decode attention's cached candidates
# (timed alone at position 100 in session 9) inside the decode graph, at
# depth 0 and 4096, both 8B types (the attention entry serves both). Stage
# with tools/stage_gpu.sh build; carry [".gpu", "third_party"]; about 4
# minutes on an H200 (6 tables x 2 depths x 2 types x 2 rounds, ~2.5-3 s a
# bench, plus the base every 8).
S=bench/logs/2026-12-04-h200-s18
KILN_CALL_TESTS="" bash tools/gpu_call.sh > /dev/null 2>&1  # unpacks .gpu/
# (Session 19: kilnc tune --candidates replaced tools/graph_candidates.py.)
/tmp/kiln-gpu/pkg/bin/kilnc tune --candidates /tmp/att --families attention_decode --top 6 \
  --cache bench/logs/2026-12-03-h200-s9/call2/attention-100.tsv > "$OUT/attention.txt" 2>&1
cp /tmp/att/index.tsv "$OUT/attention-candidates.tsv"
for T in Q8_0 Q4_K_M; do
  for D in 0 4096; do
    echo "== $T depth $D" >> "$OUT/attention.txt"
    KILN_GRAPH_WORK=/tmp/kiln-att-$T KILN_GRAPH_DEPTH=$D timeout 140 \
      bash tools/gpu_graph_select.sh $T /tmp/att 2 >> "$OUT/attention.txt" 2>&1
  done
done
grep -v "^r[0-9]" "$OUT/attention.txt"
