#!/usr/bin/env bash
# Session 18, call 4: run_graph.sh Q8_0 (the Q8_0 candidates in the graph),
# then tables.tgz:tables/q4km-combined.txtpb (call 3's three Q4_K_M winners together:
# the down projection streamed with release_early, the q/k and QKV
# projections at 24 rows a block) against the shipped table, three rounds,
# and 16 greedy tokens of each.
bash bench/logs/2026-12-04-h200-s18/run_graph.sh Q8_0
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-q4
mkdir -p $W
timeout 150 "$B/kilnc" synth --preset 8b --type Q4_K_M --seed 1 -o "$W/8b.gguf" > /dev/null 2>&1
"$B/kilnc" compile "$W/8b.gguf" -o "$W/base.kiln" > /dev/null 2>&1 &
"$B/kilnc" compile "$W/8b.gguf" --schedules .gpu/exp/gc/q4km-combined.txtpb -o "$W/comb.kiln" > /dev/null 2>&1 &
wait
for r in 1 2 3; do for v in base comb; do
  printf "Q4_K_M r%d %-6s " $r $v >> "$OUT/ab.txt"
  timeout 30 "$B/kiln" bench -b "$W/$v.kiln" -m "$W/8b.gguf" --prompt-lengths 64 --depths 0 --steps 64 2>/dev/null |
    awk '/^read bandwidth/{p=$6} /^ +0 /{print $3, "ms", $12, "%", p, "GB/s"}' >> "$OUT/ab.txt"
done; done
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
P=100,2000,30000,400,5000,60000,700,8000,90000,1000,11000,120000,1300,14000,150000,16
for v in base comb; do
  timeout 30 "$B/kiln" run -b "$W/$v.kiln" -m "$W/8b.gguf" --tokens $P -n 16 --ignore-eos -c 256 2>/dev/null > "$W/t-$v.txt"
done
cmp -s $W/t-base.txt $W/t-comb.txt && echo "comb: same 16 tokens as base" >> "$OUT/ab.txt" || echo "comb: tokens differ" >> "$OUT/ab.txt"
tail -8 "$OUT/ab.txt"
