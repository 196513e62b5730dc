#!/usr/bin/env bash
# Session 9's next-call.sh, run unchanged as session 10's call 1 (call1/).
# Before it, on the build machine:
#   tools/stage_gpu.sh build && tools/stage_variants.sh build old=8786cf2
# (8786cf2: the shipped table of session 9 with the codegen before the
# RoPE angles moved ahead of the attention's wait). Session 9 left those
# bundles in /tmp/kiln-variants/s9-old-{Q8_0,Q4_K_M}.kiln (compiled by
# 8786cf2's kilnc from the seed-1 models); if they are still there,
#   mkdir -p .gpu/variants && for T in Q8_0 Q4_K_M; do
#     gzip -c /tmp/kiln-variants/s9-old-$T.kiln > .gpu/variants/old-$T.kiln.gz; done
# after tools/stage_gpu.sh replaces the build of the old ref. Then, carrying
# [".gpu", "third_party"]:
#   the 22 non-deep gpu tests (the angles, release_after_wait's GPU case,
#   perf_test_gpu's attribution test after its ring fix: never run yet);
#   kilnc tune over q6-int8-spaces.txtpb (Q4_K_M), its float (current)
#   Q6_K results dropped before the export: q6i, each Q6_K shape's best
#   int8 schedule;
#   one A/B round at depths 0 and 4096:
#     old  8786cf2's bundles
#     new  this kilnc, the shipped table (the angles before the wait)
#     rel  this kilnc, the attention entry with release_after_wait: true
#     q6i  this kilnc, the Q6_K entries int8 (Q4_K_M only: Q8_0 = new)
#   then `kiln profile --attribution` on both models with the rel table.
start=$(date +%s)
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-ab
export KILN_CALL_WORK=$W
mkdir -p "$W"
KILN_CALL_TEST_TIMEOUT=220 bash tools/gpu_call.sh > "$OUT/call.log" 2>&1
mv "$OUT/logs.tgz" "$OUT/tests-logs.tgz"
rm -f "$OUT/check.txt" "$OUT/gpu-tests.log"
for T in Q4_K_M Q8_0; do
  timeout 150 "$B/kilnc" synth --preset 8b --type "$T" --seed 1 -o "$W/8b-$T.gguf" > /dev/null 2>&1 &
done
wait
timeout 100 "$B/kilnc" tune -m "$W/8b-Q4_K_M.gguf" --target sm_90 --families matvec --budget 80s \
  --spaces bench/logs/2026-12-03-h200-s9/q6-int8-spaces.txtpb --cache "$W/q6.tsv" >> "$OUT/call.log" 2>&1
grep -v -P '\tq6_k\t.*int8_activations: false' "$W/q6.tsv" > "$W/q6-int8.tsv"
"$B/kilnc" tune --export "$W/q6i.txtpb" --cache "$W/q6-int8.tsv" >> "$OUT/call.log" 2>&1
gzip -c "$W/q6.tsv" > "$OUT/q6-tune.tsv.gz"
SHIPPED='  attention { threads: 256 split_positions: 1280 max_splits: 32 min_split_positions: 64 blocks_per_sm: 2 }'
sed "s/^$SHIPPED\$/  attention { threads: 256 split_positions: 1280 max_splits: 32 min_split_positions: 64 blocks_per_sm: 2 release_after_wait: true }/" \
  schedules/sm_90.txtpb > "$W/rel.txtpb"
cmp -s schedules/sm_90.txtpb "$W/rel.txtpb" && echo "rel: the sed changed nothing" >> "$OUT/call.log"
KILN_CALL_TESTS="" KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  KILN_CALL_AB_TIMEOUT=$(( 500 - ($(date +%s) - start) )) \
  bash tools/gpu_call.sh "Q4_K_M Q8_0" old=bundle:%W/old-%T.kiln new=%B/kilnc rel=%B/kilnc,"$W/rel.txtpb" \
    q6i=%B/kilnc,"$W/q6i.txtpb"
rm -f "$OUT/check.txt" "$OUT/gpu-tests.log"
for T in Q8_0 Q4_K_M; do
  "$B/kilnc" compile "$W/8b-$T.gguf" -o "$W/rel-$T.kiln" --schedules "$W/rel.txtpb" > /dev/null 2>&1
  timeout 40 "$B/kiln" profile -b "$W/rel-$T.kiln" -m "$W/8b-$T.gguf" --steps 64 --attribution > "$OUT/profile-rel-$T.txt" 2>&1
done
grep -A14 "^decode step in the graph" "$OUT"/profile-rel-*.txt
