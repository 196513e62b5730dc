#!/usr/bin/env bash
# Session 3, GPU call 4 (repository root on the GPU host; .gpu/ staged with
# tools/stage_gpu.sh build at the LoadInput change, plus .gpu/ab4/: the 8B
# bundles TYPE-old compiled on the build machine by the previous commit's
# kilnc; TYPE-new and the streamed tables' bundles compiled here): the
# GPU tests but the two deep ones, then old against new
# and the streamed bundles against old, tokens and logits compared.
set -u
L=/tmp/logs; mkdir -p $L
rm -rf /tmp/kiln-gpu && mkdir -p /tmp/kiln-gpu && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
export KILN_GPU_ROOT=$PWD KILN_BIN_DIR=/tmp/kiln-gpu/pkg/bin
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
B=$KILN_BIN_DIR W=/tmp/kiln-gpu/bench; mkdir -p $W
date -u > $L/times.txt
(cd /tmp/kiln-gpu/pkg && timeout 200 ctest -L gpu -E deep -V --timeout 190 -j4) > $L/gpu-tests-verbose.log 2>&1
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|Total Test time" $L/gpu-tests-verbose.log > $L/gpu-tests.log
date -u >> $L/times.txt
cp $L/gpu-tests.log $OUT/
for T in Q8_0 Q4_K_M; do $B/kilnc synth --preset 8b --type $T --seed 1 -o $W/8b-$T.gguf > /dev/null 2>&1; done
for f in .gpu/ab4/*.gz; do n=$(basename $f .gz); gunzip -c $f > $W/$n; done
F=bench/logs/2026-12-03-h200-final
for T in Q8_0 Q4_K_M; do
  $B/kilnc compile $W/8b-$T.gguf -o $W/$T-new.kiln > /dev/null 2>&1
  $B/kilnc compile $W/8b-$T.gguf -o $W/$T-streamall.kiln --schedules $F/streamall.txtpb --allow-streamed-weights > /dev/null 2>&1
done
$B/kilnc compile $W/8b-Q4_K_M.gguf -o $W/Q4_K_M-qkv.kiln --schedules $F/bisect/qkv.txtpb --allow-streamed-weights > /dev/null 2>&1
$B/kilnc compile $W/8b-Q4_K_M.gguf -o $W/Q4_K_M-sdown.kiln --allow-streamed-weights \
  --schedules bench/logs/2026-12-03-h200-s3/tables/sdown.txtpb > /dev/null 2>&1
P=100,2000,30000,400,5000,60000,700,8000,90000,1000,11000,120000,1300,14000,150000,16
{
  for T in Q8_0 Q4_K_M; do
    V="old new"; [ $T = Q4_K_M ] && V="old new sdown"
    for v in $V; do
      $B/kiln bench -b $W/$T-$v.kiln -m $W/8b-$T.gguf --json --prompt-lengths 512 --depths 0,4096 --steps 64 \
        > $L/ab-$T-$v.json 2>/dev/null
      python3 -c "
import json,sys; d=json.load(open('$L/ab-$T-$v.json'))
for r in d['decode']: print('$T $v depth %5d: %6.1f tok/s %.3f ms %.1f %% of probe (%.0f GB/s), floor %.3f ms (%.1f %%)' % (r['depth'], r['tok_per_s'], r['ms_per_token'], r['probe_percent'], d['probe_gb_per_s'], r['launch_floor_ms_per_token'], r['launch_floor_percent']))"
    done
    for v in old new streamall qkv sdown; do
      [ -s $W/$T-$v.kiln ] || continue
      timeout 60 $B/kiln run -b $W/$T-$v.kiln -m $W/8b-$T.gguf --tokens $P -n 16 --ignore-eos -c 256 \
        --dump-logits $W/l-$T-$v.npy > $L/tokens-$T-$v.txt 2>/dev/null
      [ $v = old ] && continue
      if cmp -s $L/tokens-$T-old.txt $L/tokens-$T-$v.txt; then r="same 16 tokens; $(python3 tests/e2e/compare_logits.py $W/l-$T-$v.npy $W/l-$T-old.npy 5e-3 2>&1 | tail -1)"
      else r="tokens differ; $(python3 tests/e2e/compare_logits.py $W/l-$T-$v.npy $W/l-$T-old.npy 5e-3 0 17 2>&1 | tail -1)"; fi
      echo "$T $v vs old: $r"
    done
  done
} > $L/ab.txt 2>&1
date -u >> $L/times.txt
cp $L/ab.txt $L/gpu-tests.log $L/times.txt $OUT/ 2>/dev/null
tar -C $L -czf $OUT/logs.tgz .
