#!/usr/bin/env bash
# Prepared in session 20, not run: planar Q6_K streamed through shared
# memory (new in session 20; its codegen_gpu_test cases run in call 1's
# gpu tests first). Stage with tools/stage_gpu.sh build; carry [".gpu",
# "third_party"]; about 7 minutes on an H200.
#  (1) kilnc tune of the 8B Q4_K_M's planar Q6_K matvecs over
#      q6-stream-spaces.txtpb (the other shapes time only their entry);
#  (2) kilnc tune --candidates: each Q6_K shape's 6 fastest schedules
#      (streamed or not) as tables;
#  (3) tools/gpu_graph_select.sh Q4_K_M over them at depth 0, two rounds:
#      a winner is shipped only if it is faster inside the graph with the
#      same greedy tokens (then confirm with tools/gpu_ab.sh).
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-q6 S=bench/logs/2026-12-04-s20
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
KILN_CALL_TESTS="" bash tools/gpu_call.sh > "$OUT/call.log" 2>&1  # unpacks .gpu/
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
mkdir -p "$W"
timeout 150 "$B/kilnc" synth --preset 8b --type Q4_K_M --seed 1 -o "$W/8b-Q4_K_M.gguf" > /dev/null 2>&1
echo "synth exit $? at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
timeout 200 "$B/kilnc" tune -m "$W/8b-Q4_K_M.gguf" --target sm_90 --families matvec --budget 170s \
  --spaces $S/q6-stream-spaces.txtpb --cache "$W/tune.tsv" > "$OUT/tune.log" 2>&1
echo "tune exit $? at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
gzip -c "$W/tune.tsv" > "$OUT/tune.tsv.gz"
"$B/kilnc" tune --candidates /tmp/q6 --families matvec --dtypes q6_k --top 6 --cache "$W/tune.tsv" \
  > "$OUT/select.txt" 2>&1
cp /tmp/q6/index.tsv "$OUT/candidates.tsv"
KILN_GRAPH_WORK=$W KILN_GRAPH_DEPTH=0 timeout $(( 570 - ($(date +%s) - start) )) \
  bash tools/gpu_graph_select.sh Q4_K_M /tmp/q6 2 >> "$OUT/select.txt" 2>&1
echo "done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
grep -v "^r[0-9]" "$OUT/select.txt"; tail -4 "$OUT/call.log"
