#!/usr/bin/env bash
# Session 4, GPU call 4 (.gpu/ staged at the batched float staging for
# stage_all = "new"; .gpu/ab5/: 8B bundles compiled on the build machine:
# TYPE-old by fa4a39b, Q8_0-v2 with the float staging batched in every
# matvec): every gpu test but the deep ones, then tools/gpu_ab.sh: old / new
# / v2 twice in alternation at depths 0 and 4096, greedy tokens + logits
# against old.
set -u
L=/tmp/logs; mkdir -p $L
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/ab
KILN_BENCH_TYPES= timeout 230 bash tools/gpu_check.sh $L -j4 -E deep > $L/check.txt 2>&1
cp $L/gpu-tests.log $OUT/ 2>/dev/null
export KILN_GPU_ROOT=$PWD KILN_BIN_DIR=$B KILN_BENCH_WORK=$W
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p $W
for T in Q8_0 Q4_K_M; do $B/kilnc synth --preset 8b --type $T --seed 1 -o $W/8b-$T.gguf > /dev/null 2>&1 & done
wait
for f in .gpu/ab5/*.gz; do gunzip -c $f > $W/$(basename $f .gz); done
KILN_AB_ROUNDS=2 KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0,4096 --steps 64" timeout 300 \
  bash tools/gpu_ab.sh $L/ab "Q8_0 Q4_K_M" old=bundle:$W/%T-old.kiln new=$B/kilnc v2=bundle:$W/%T-v2.kiln \
  > $L/ab.txt 2>&1
cp $L/ab.txt $OUT/
tar -C $L -czf $OUT/logs.tgz .
