#!/usr/bin/env bash
# Session 10, call 3: the 22 non-deep gpu tests on 1d5f225's table (the
# prefill attention's stage_keys entry: the 0.6B model tests run it), then
# an ablation of the decode attention on the 8B Q8_0 (bundles compiled on
# the build machine by 1d5f225's kilnc with a temporary, uncommitted
# KILN_ABLATE_ATTN switch in emit_attention_decode.cc: none = the shipped
# kernel; rope = no q/k norm + RoPE + K/V store; scores = no key loop; pv =
# no p*V; all = none of the three). Wrong logits by design in all but none;
# only the step times matter. Carry [".gpu", "third_party"].
KILN_CALL_TEST_TIMEOUT=230 KILN_AB_ROUNDS=1 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" \
  bash tools/gpu_call.sh "Q8_0" none=bundle:%W/none-%T.kiln rope=bundle:%W/rope-%T.kiln \
  scores=bundle:%W/scores-%T.kiln pv=bundle:%W/pv-%T.kiln all=bundle:%W/all-%T.kiln
