#!/usr/bin/env bash
# Session 4, GPU call 3 (.gpu/ staged at the next-tile-only l2_prefetch):
# the prefetched matvecs against the reference, then 8B bundles compiled
# with tables made here from schedules/sm_90.txtpb: base (as shipped), pf
# (l2_prefetch on the row-tiled entries), att128 / att256 (decode attention
# with min_split_positions 128 / 256: one split, no merge, up to that many
# positions), att128t (the same with 128 threads). Bench at depths 0 and
# 4096; greedy tokens + logits of pf and att128 against base.
set -u
L=/tmp/logs; mkdir -p $L
rm -rf /tmp/kiln-gpu && mkdir -p /tmp/kiln-gpu && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
export KILN_GPU_ROOT=$PWD KILN_BIN_DIR=/tmp/kiln-gpu/pkg/bin
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
B=$KILN_BIN_DIR W=/tmp/kiln-gpu/ab; mkdir -p $W
for T in Q8_0 Q4_K_M; do $B/kilnc synth --preset 8b --type $T --seed 1 -o $W/8b-$T.gguf > /dev/null 2>&1 & done
timeout 100 $B/codegen_gpu_test --gtest_filter='CodegenGpu.MatVecInt8ActivationsAndRowTiles' > $L/gpu-test.log 2>&1
grep -E "mvpf|OK \]|FAILED|PASSED" $L/gpu-test.log > $OUT/gpu-test.txt
python3 - <<'PY'
src = open('schedules/sm_90.txtpb').read()
W = '/tmp/kiln-gpu/ab/'
open(W + 'pf.txtpb', 'w').write('\n'.join(
    l.replace('  matvec { ', '  matvec { l2_prefetch: true ') if l.startswith('  matvec { ') and 'row_tiles' in l else l
    for l in src.split('\n')))
old = 'attention { threads: 256 split_positions: 1280 max_splits: 32 min_split_positions: 64 }'
assert old in src
for name, new in [('att128', old.replace('min_split_positions: 64', 'min_split_positions: 128')),
                  ('att256', old.replace('min_split_positions: 64', 'min_split_positions: 256')),
                  ('att128t', old.replace('min_split_positions: 64', 'min_split_positions: 128').replace('threads: 256', 'threads: 128'))]:
    open(W + name + '.txtpb', 'w').write(src.replace(old, new))
PY
wait
P=100,2000,30000,400,5000,60000,700,8000,90000,1000,11000,120000,1300,14000,150000,16
for T in Q4_K_M Q8_0; do
  $B/kilnc compile $W/8b-$T.gguf -o $W/$T-base.kiln > /dev/null 2>&1
  VS="att128 att256 att128t"; [ $T = Q4_K_M ] && VS="pf $VS"
  for v in $VS; do $B/kilnc compile $W/8b-$T.gguf -o $W/$T-$v.kiln --schedules $W/$v.txtpb > $L/compile-$T-$v.txt 2>&1; done
  for v in base $VS base; do
    $B/kiln bench -b $W/$T-$v.kiln -m $W/8b-$T.gguf --json --prompt-lengths 64 --depths 0,4096 --steps 64 \
      > $L/ab-$T-$v.json 2>/dev/null
    python3 -c "
import json; d=json.load(open('$L/ab-$T-$v.json'))
for r in d['decode']: print('$T %-7s depth %5d: %6.1f tok/s %.3f ms %.1f %% of probe (%.0f GB/s), floor %.3f ms (%.1f %%)' % ('$v', r['depth'], r['tok_per_s'], r['ms_per_token'], r['probe_percent'], d['probe_gb_per_s'], r['launch_floor_ms_per_token'], r['launch_floor_percent']))" >> $L/ab.txt
  done
  for v in base ${VS%% *} att128; do
    timeout 60 $B/kiln run -b $W/$T-$v.kiln -m $W/8b-$T.gguf --tokens $P -n 16 --ignore-eos -c 256 \
      --dump-logits $W/l-$T-$v.npy > $L/tokens-$T-$v.txt 2>/dev/null
  done
  for v in ${VS%% *} att128; do
    if cmp -s $L/tokens-$T-base.txt $L/tokens-$T-$v.txt; then r="same 16 tokens; $(python3 tests/e2e/compare_logits.py $W/l-$T-$v.npy $W/l-$T-base.npy 5e-3 2>&1 | tail -1)"
    else r="tokens differ; $(python3 tests/e2e/compare_logits.py $W/l-$T-$v.npy $W/l-$T-base.npy 5e-3 0 17 2>&1 | tail -1)"; fi
    echo "$T $v vs base: $r" >> $L/ab.txt
  done
  cp $L/ab.txt $OUT/
done
tar -C $L -czf $OUT/logs.tgz .
