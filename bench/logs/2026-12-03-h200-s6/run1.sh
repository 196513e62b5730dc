#!/usr/bin/env bash
# Session 6, GPU call 1 (.gpu/ staged at 3f868d8; .gpu/variants: base =
# 89745f9, session 5's last measured main). The gpu tests (first GPU run of
# 762a062's staging clamp and of the next-weights prefetch), then the A/B:
#   base   89745f9's bundles
#   pf0    this kilnc, attention.prefetch_next_positions 0 (762a062's code)
#   pfall  this kilnc, the prefetch at every context length
# Tables: .gpu/tables/, the sm_90 table with the knob changed.
bash tools/gpu_call.sh "Q8_0 Q4_K_M" base=bundle:%W/base-%T.kiln \
  pf0=%B/kilnc,.gpu/tables/pf0.txtpb pfall=%B/kilnc,.gpu/tables/pfall.txtpb
