#!/usr/bin/env bash
# Session 5, GPU call 3 (.gpu/ staged at 89745f9 = "new": decode attention
# prefetches its earlier K/V rows into L2 before its wait, only up to 512
# positions; .gpu/variants: base = c2b170c, without the prefetch): every gpu
# test but the deep ones, then tools/gpu_ab.sh twice in alternation at
# depths 0 and 4096.
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
KILN_AB_ROUNDS=2 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" timeout 250 \
  bash tools/gpu_ab.sh $L/ab "Q4_K_M Q8_0" base=bundle:$W/base-%T.kiln new=$B/kilnc > $L/ab.txt 2>&1
cp $L/ab.txt $OUT/
tar -C $L -czf $OUT/logs.tgz .
