#!/usr/bin/env bash
# Session 6, GPU call 2 (.gpu/ staged at 22f13ed: the merges count arrivals
# with one atom.acq_rel.gpu, no membar.gl; .gpu/variants: base = 1b1dbc0,
# main before it). The gpu tests, then the A/B at depths 0, 512 and 4096:
#   base     1b1dbc0's bundles
#   new      this kilnc
#   msp128   this kilnc, the 8B attention entry's min_split_positions 128
#   msp256   the same at 256 (up to 256 positions one split, no merge)
KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,512,4096 --steps 64" KILN_CALL_AB_TIMEOUT=420 \
  bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=bundle:%W/base-%T.kiln new=%B/kilnc \
  msp128=%B/kilnc,.gpu/tables/msp128.txtpb msp256=%B/kilnc,.gpu/tables/msp256.txtpb
# What profilers the host has (for a timeline of the decode graph later).
{ ls /usr/local/cuda/bin; which nsys ncu; ls /opt/nvidia 2>/dev/null; } > "$OUT/profilers.txt" 2>&1
