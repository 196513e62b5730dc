#!/usr/bin/env bash
# On the GPU host: time each table `kilnc tune --candidates` wrote inside the
# decode graph and name each shape's winner. Every table in DIR is compiled
# for the 8B synthetic model of TYPE (seed 1), then `kiln bench
# --prompt-lengths 64 --depths DEPTH --steps 64` times each, the base table's
# bundle before every 8 others (drift shows there), ROUNDS rounds. Prints one
# line a run, then per shape the base's mean step and the fastest table's,
# and for each fastest table that beats the base whether its bundle
# continues a fixed 16-token prompt with the same 16 greedy tokens as the
# base's (it should: the schedules change the arithmetic's order only).
# usage: tools/gpu_graph_select.sh TYPE DIR [ROUNDS (default 2)]
# env: KILN_BIN_DIR (kilnc, kiln; default the staged /tmp/kiln-gpu/pkg/bin),
#      KILN_GRAPH_WORK (bundles and the model; default /tmp/kiln-graph),
#      KILN_GRAPH_BASE (the base table; default: kilnc's built-in one),
#      KILN_GRAPH_DEPTH (the context the steps start from; default 0: the
#      decode attention's schedule matters at long context too)
set -uo pipefail
# shellcheck source=greedy_tokens.sh
source "$(dirname "$0")/greedy_tokens.sh"
[ $# -ge 2 ] && [ -d "$2" ] || { echo "usage: $0 TYPE DIR [ROUNDS]  (DIR: kilnc tune --candidates' tables)" >&2; exit 2; }
TYPE=$1 DIR=$2 ROUNDS=${3:-2}
B=${KILN_BIN_DIR:-/tmp/kiln-gpu/pkg/bin} W=${KILN_GRAPH_WORK:-/tmp/kiln-graph} DEPTH=${KILN_GRAPH_DEPTH:-0}
export KILN_TOKENIZER=${KILN_TOKENIZER:-$(cd "$(dirname "$0")/.." && pwd)/third_party/tokenizer-qwen3/models/tokenizer.json}
[ -x "$B/kilnc" ] && [ -x "$B/kiln" ] || { echo "$0: no kilnc and kiln in $B (KILN_BIN_DIR)" >&2; exit 2; }
mkdir -p "$W"
MODEL=$W/8b-$TYPE.gguf
[ -s "$MODEL" ] || "$B/kilnc" synth --preset 8b --type "$TYPE" --seed 1 -o "$MODEL" > /dev/null ||
  { echo "$0: kilnc synth --type $TYPE failed" >&2; exit 1; }
"$B/kilnc" compile "$MODEL" ${KILN_GRAPH_BASE:+--schedules "$KILN_GRAPH_BASE"} -o "$W/base.kiln" > /dev/null ||
  { echo "$0: compiling the base bundle failed" >&2; exit 1; }
compgen -G "$DIR/*.txtpb" > /dev/null || { echo "$0: no .txtpb tables in $DIR" >&2; exit 2; }
# Each table's path is an argument of the inline script, never part of its text.
printf '%s\0' "$DIR"/*.txtpb | xargs -0 -P "$(nproc)" -n 1 sh -c \
  'n=$(basename "$3" .txtpb); "$0/kilnc" compile "$2" --schedules "$3" -o "$1/$n.kiln" > "$1/$n.log" 2>&1 ||
   { echo "$n: compile failed: $(tail -1 "$1/$n.log")"; rm -f "$1/$n.kiln"; }' "$B" "$W" "$MODEL"
RUNS=$W/runs.tsv
: > "$RUNS"
bench() {  # ROUND NAME: the step's ms from `kiln bench --json` (docs/cli.md)
  local ms
  ms=$(timeout 120 "$B/kiln" bench -b "$W/$2.kiln" -m "$MODEL" --prompt-lengths 64 --depths "$DEPTH" --steps 64 \
    --json 2>/dev/null | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("decode", []):
    if r["depth"] == int(sys.argv[1]):
        print(r["ms_per_token"])' "$DEPTH" 2>/dev/null)
  printf "r%d %-34s %s ms\n" "$1" "$2" "${ms:-failed}"
  [ -n "$ms" ] && printf "%s\t%s\n" "$2" "$ms" >> "$RUNS"
}
for r in $(seq 1 "$ROUNDS"); do
  i=0
  for f in "$DIR"/*.txtpb; do
    n=$(basename "$f" .txtpb)
    [ -s "$W/$n.kiln" ] || continue
    [ $(( i % 8 )) -eq 0 ] && bench "$r" base
    bench "$r" "$n"
    i=$(( i + 1 ))
  done
done
python3 - "$RUNS" > "$W/summary.txt" <<'PY' || { cat "$W/summary.txt"; echo "$0: nothing to compare" >&2; exit 1; }
import collections, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, ms = line.split('\t')
    runs[name].append(float(ms))
mean = {n: sum(v) / len(v) for n, v in runs.items()}
if 'base' not in mean or len(mean) < 2:
    sys.exit('no timed run of the base bundle and of a table')
shapes = collections.defaultdict(list)
for n in mean:
    if n != 'base':
        shapes[n.rsplit('-', 1)[0]].append(n)
print('base: %.4f ms a token (%d runs)' % (mean['base'], len(runs['base'])))
for s, names in sorted(shapes.items()):
    w = min(names, key=mean.get)
    print('%-32s fastest %-34s %.4f ms (%+.4f against base)%s' % (s, w, mean[w], mean[w] - mean['base'],
                                                               ' faster' if mean[w] < mean['base'] else ''))
PY
cat "$W/summary.txt"
greedy() {  # NAME: its 16 greedy tokens after GREEDY_PROMPT
  GREEDY_TIMEOUT=60 greedy_tokens "$B/kiln" "$W/$1.kiln" "$MODEL" 2> /dev/null
}
BASE_TOKENS=$(greedy base)
for n in $(awk '/ faster$/{print $3}' "$W/summary.txt"); do
  TOKENS=$(greedy "$n")
  if [ -n "$TOKENS" ] && [ "$TOKENS" = "$BASE_TOKENS" ]; then echo "$n: the same 16 greedy tokens as base"
  else echo "$n: greedy tokens differ from base: '$TOKENS' against '$BASE_TOKENS'"; fi
done
