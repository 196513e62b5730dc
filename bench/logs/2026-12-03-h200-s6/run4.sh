#!/usr/bin/env bash
# Session 6, GPU call 4 (.gpu/ staged at 0232796: Q6_K matrices kept planar
# at load, kQ6_KPlanar, never run on a GPU before; .gpu/variants: base =
# 22f13ed, the staged Q6_K path). Every non-deep gpu test (the planar
# matvecs, GEMMs and kPackQ6_K against the reference; the Q6_K and Q4_K_M
# models against the CPU reference), then the Q4_K_M A/B at depths 0 and
# 4096:
#   base   22f13ed's bundle (staged Q6_K)
#   new    this kilnc (planar Q6_K, the q6_k table entries tuned for staged)
#   q6i8   the same with int8 activations in the three 8B q6_k entries
#   q6r2   the same with 2 rows per group in the down and LM head entries
KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" KILN_CALL_AB_TIMEOUT=240 \
  bash tools/gpu_call.sh "Q4_K_M" base=bundle:%W/base-%T.kiln new=%B/kilnc \
  q6i8=%B/kilnc,.gpu/tables/q6i8.txtpb q6r2=%B/kilnc,.gpu/tables/q6r2.txtpb
# Then kilnc tune over the planar Q6_K shapes only (q6k-spaces.txtpb), its
# cache and exported table to $OUT.
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/ab
timeout 120 "$B/kilnc" tune -m "$W/8b-Q4_K_M.gguf" --target sm_90 --families matvec \
  --spaces bench/logs/2026-12-03-h200-s6/q6k-spaces.txtpb --cache "$OUT/tune.tsv" --export "$OUT/sm_90.txtpb" \
  > "$OUT/tune.txt" 2>&1
echo "tune exit $?" >> "$OUT/tune.txt"
