#!/usr/bin/env bash
# Session 5, GPU call 2 (.gpu/ staged at 2a8557d, branch attention-prewait-k
# = "new": decode attention's first round of key loads before its wait;
# .gpu/variants: base = c2b170c, pf = 98db841 (main: decode attention
# prefetches its earlier K/V rows into L2 before its wait)): every gpu test
# but the deep ones, then tools/gpu_ab.sh twice in alternation at depths 0,
# 4096 and 16384.
set -u
L=/tmp/logs; mkdir -p $L
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/ab
KILN_BENCH_TYPES= timeout 200 bash tools/gpu_check.sh $L -j4 -E deep > $L/check.txt 2>&1
cp $L/gpu-tests.log $L/check.txt $OUT/ 2>/dev/null
export KILN_GPU_ROOT=$PWD KILN_BIN_DIR=$B KILN_BENCH_WORK=$W
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p $W
for T in Q8_0 Q4_K_M; do $B/kilnc synth --preset 8b --type $T --seed 1 -o $W/8b-$T.gguf > /dev/null 2>&1 & done
for f in .gpu/variants/*.gz; do gunzip -c $f > $W/$(basename $f .gz); done
wait
KILN_AB_ROUNDS=2 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096,16384 --steps 64" timeout 350 \
  bash tools/gpu_ab.sh $L/ab "Q8_0 Q4_K_M" base=bundle:$W/base-%T.kiln pf=bundle:$W/pf-%T.kiln new=$B/kilnc > $L/ab.txt 2>&1
cp $L/ab.txt $OUT/
tar -C $L -czf $OUT/logs.tgz .
