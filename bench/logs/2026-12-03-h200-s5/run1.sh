#!/usr/bin/env bash
# Session 5, GPU call 1 (.gpu/ staged at main with the chunked float staging
# batched = "new"; .gpu/variants: old = e623b15 (session 4's measured
# state), pw = 1f7e78f (decode attention reads pos before its wait),
# exp = q4k-exp (Q4_K_M only: Q4_K loads in a group-interleaved layout,
# timing only, values wrong)): every gpu test but the deep ones, then
# tools/gpu_ab.sh twice in alternation at depths 0 and 4096.
set -u
L=/tmp/logs; mkdir -p $L
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/ab
KILN_BENCH_TYPES= timeout 230 bash tools/gpu_check.sh $L -j4 -E deep > $L/check.txt 2>&1
cp $L/gpu-tests.log $L/check.txt $OUT/ 2>/dev/null
export KILN_GPU_ROOT=$PWD KILN_BIN_DIR=$B KILN_BENCH_WORK=$W
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p $W
for T in Q8_0 Q4_K_M; do $B/kilnc synth --preset 8b --type $T --seed 1 -o $W/8b-$T.gguf > /dev/null 2>&1 & done
for f in .gpu/variants/*.gz; do gunzip -c $f > $W/$(basename $f .gz); done
wait
KILN_AB_ROUNDS=2 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" timeout 320 \
  bash tools/gpu_ab.sh $L/ab "Q4_K_M Q8_0" old=bundle:$W/old-%T.kiln pw=bundle:$W/pw-%T.kiln new=$B/kilnc \
  exp=bundle:$W/exp-%T.kiln > $L/ab.txt 2>&1
cp $L/ab.txt $OUT/
tar -C $L -czf $OUT/logs.tgz .
