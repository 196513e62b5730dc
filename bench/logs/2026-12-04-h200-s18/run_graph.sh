#!/usr/bin/env bash
# Session 18, calls 3-4: the tuner's fastest schedules timed inside the
# decode graph. tools/graph_candidates.py --type TYPE --k 6 (its first
# version, then in this folder) wrote .gpu/exp/gc/TYPE/ (the
# shipped table with one shape's entry replaced by one of the 6 fastest
# schedules that shape has in any earlier tune cache; index in
# graph-candidates-TYPE.tsv). Every table compiled, then kiln bench
# --prompt-lengths 64 --depths 0 --steps 64 of each, base (shipped) before
# every 8 variants, two rounds. usage: run_graph.sh TYPE
T=$1 start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gc G=.gpu/exp/gc/$1
nvidia-smi --query-gpu=name,clocks.mem,clocks.sm,driver_version --format=csv > "$OUT/machine.txt"
KILN_CALL_TESTS="" bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
rm -f "$OUT/logs.tgz" "$OUT/gpu-tests.log" "$OUT/check.txt"
mkdir -p "$W"
timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b.gguf" > /dev/null 2>&1
"$B/kilnc" compile "$W/8b.gguf" -o "$W/base.kiln" > /dev/null 2>&1
ls $G/*.txtpb | xargs -P 16 -I{} sh -c 'n=$(basename {} .txtpb); "$0/kilnc" compile "$1/8b.gguf" --schedules {} -o "$1/$n.kiln" > "$1/$n.log" 2>&1 || echo "$n: compile failed: $(tail -1 "$1/$n.log")"' "$B" "$W" >> "$OUT/ab.txt"
echo "compiled at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
bench() {
  printf "r%d %-22s " "$1" "$2" >> "$OUT/ab.txt"
  timeout 30 "$B/kiln" bench -b "$W/$2.kiln" -m "$W/8b.gguf" --prompt-lengths 64 --depths 0 --steps 64 2>/dev/null |
    awk '/^read bandwidth/{p=$6} /^ +0 /{print $3, "ms", $12, "%", p, "GB/s"}' >> "$OUT/ab.txt"
}
for r in 1 2; do
  i=0
  for f in $G/*.txtpb; do
    n=$(basename "$f" .txtpb)
    [ -s "$W/$n.kiln" ] || continue
    [ $(( $(date +%s) - start )) -lt 560 ] || break 2
    [ $(( i % 8 )) -eq 0 ] && bench $r base
    bench $r "$n"
    i=$(( i + 1 ))
  done
done
echo "done at $(( $(date +%s) - start ))s" >> "$OUT/call.log"
cat "$OUT/ab.txt"
