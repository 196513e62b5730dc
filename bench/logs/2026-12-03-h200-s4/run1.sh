#!/usr/bin/env bash
# Session 4, GPU call 1 (repository root on the GPU host; .gpu/ staged with
# tools/stage_gpu.sh build at 7d71476, plus .gpu/ab4/: the 8B bundles
# TYPE-old compiled on the build machine by 0bb2ff8's kilnc, before any .cg):
# every gpu test but the deep ones, then old against new (bench at depth 0,
# greedy tokens, logits).
set -u
L=/tmp/logs; mkdir -p $L
export KILN_BENCH_TYPES=
B=/tmp/kiln-gpu/pkg/bin W=/tmp/kiln-gpu/ab
timeout 230 bash tools/gpu_check.sh $L -j4 -E deep > $L/check.txt 2>&1
cp $L/gpu-tests.log $OUT/ 2>/dev/null
export KILN_GPU_ROOT=$PWD KILN_BIN_DIR=$B
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
mkdir -p $W
for T in Q8_0 Q4_K_M; do $B/kilnc synth --preset 8b --type $T --seed 1 -o $W/8b-$T.gguf > /dev/null 2>&1 & done
wait
for f in .gpu/ab4/*.gz; do gunzip -c $f > $W/$(basename $f .gz); done
P=100,2000,30000,400,5000,60000,700,8000,90000,1000,11000,120000,1300,14000,150000,16
for T in Q4_K_M Q8_0; do
  $B/kilnc compile $W/8b-$T.gguf -o $W/$T-new.kiln > /dev/null 2>&1
  for v in old new old new; do
    $B/kiln bench -b $W/$T-$v.kiln -m $W/8b-$T.gguf --json --prompt-lengths 64 --depths 0,4096 --steps 64 \
      > $L/ab-$T-$v.json 2>/dev/null
    python3 -c "
import json; d=json.load(open('$L/ab-$T-$v.json'))
for r in d['decode']: print('$T $v depth %5d: %6.1f tok/s %.3f ms %.1f %% of probe (%.0f GB/s), floor %.3f ms (%.1f %%)' % (r['depth'], r['tok_per_s'], r['ms_per_token'], r['probe_percent'], d['probe_gb_per_s'], r['launch_floor_ms_per_token'], r['launch_floor_percent']))" >> $L/ab.txt
  done
  for v in old new; do
    timeout 60 $B/kiln run -b $W/$T-$v.kiln -m $W/8b-$T.gguf --tokens $P -n 16 --ignore-eos -c 256 \
      --dump-logits $W/l-$T-$v.npy > $L/tokens-$T-$v.txt 2>/dev/null
  done
  if cmp -s $L/tokens-$T-old.txt $L/tokens-$T-new.txt; then r="same 16 tokens; $(python3 tests/e2e/compare_logits.py $W/l-$T-new.npy $W/l-$T-old.npy 5e-3 2>&1 | tail -1)"
  else r="tokens differ; $(python3 tests/e2e/compare_logits.py $W/l-$T-new.npy $W/l-$T-old.npy 5e-3 0 17 2>&1 | tail -1)"; fi
  echo "$T new vs old: $r" >> $L/ab.txt
  cp $L/ab.txt $OUT/
  $B/kiln profile -b $W/$T-new.kiln -m $W/8b-$T.gguf > $L/profile-$T-new.txt 2>&1
done
tar -C $L -czf $OUT/logs.tgz .
