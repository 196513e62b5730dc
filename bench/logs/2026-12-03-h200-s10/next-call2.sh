#!/usr/bin/env bash
# Prepared in session 10 for the next session; NOT RUN. After next-call.sh
# (whose gpu tests must pass on the shipped 128x128 GEMM tiles): a second
# sweep of the prefill GEMM tiles around them (gemm2/hN.txtpb, whole tables):
#   h1 planar Q8_0 with tile_k 64 (shipped: 32)
#   h2 128x128 on 512 threads      h3 256x128 on 256 threads
#   h4 128x256 on 256 threads      h5 256x128 on 512 threads
# against the shipped table through tools/gpu_ab.sh: prefill of 512 and
# 3700 tokens and time to first token of both 8B models, and each variant's
# logits (a 16-token prompt through the prefill GEMMs) against the shipped
# table's. A winner needs the model_gpu tests on it before it ships.
# Carry [".gpu", "third_party"].
G=bench/logs/2026-12-03-h200-s10/gemm2
KILN_CALL_TESTS="" KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 512,3700 --depths 0 --steps 4" \
  KILN_CALL_AB_TIMEOUT=500 bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=%B/kilnc \
  h1=%B/kilnc,"$G/h1.txtpb" h2=%B/kilnc,"$G/h2.txtpb" h3=%B/kilnc,"$G/h3.txtpb" \
  h4=%B/kilnc,"$G/h4.txtpb" h5=%B/kilnc,"$G/h5.txtpb"
