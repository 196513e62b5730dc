#!/usr/bin/env bash
# Session 4, GPU call 2 (.gpu/ staged with tools/stage_gpu.sh build at the
# l2_prefetch change, uncommitted): the prefetched matvecs against the
# reference on the GPU, then the 8B bundles compiled with the shipped table
# and with l2_prefetch turned on for all / the big / the small matvec
# entries (tables made here from schedules/sm_90.txtpb): bench at depths 0
# and 4096, and greedy tokens + logits of each against the shipped bundle.
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
import re
src = open('schedules/sm_90.txtpb').read().split('\n')
def table(pick):
    out = []
    for line in src:
        m = re.search(r'min_rows: (\d+).*min_cols: (\d+)', line)
        if m: cur = (int(m.group(1)), int(m.group(2)))
        elif line.startswith('entries'): cur = None
        if line.startswith('  matvec { ') and pick(cur): line = line.replace('  matvec { ', '  matvec { l2_prefetch: true ')
        out.append(line)
    return '\n'.join(out)
big = lambda c: c is None or c[0] >= 16384 or c[1] >= 12288
open('/tmp/kiln-gpu/ab/all.txtpb', 'w').write(table(lambda c: True))
open('/tmp/kiln-gpu/ab/big.txtpb', 'w').write(table(big))
open('/tmp/kiln-gpu/ab/small.txtpb', 'w').write(table(lambda c: not big(c)))
PY
grep -c l2_prefetch $W/*.txtpb > $L/tables.txt
wait
P=100,2000,30000,400,5000,60000,700,8000,90000,1000,11000,120000,1300,14000,150000,16
for T in Q4_K_M Q8_0; do
  $B/kilnc compile $W/8b-$T.gguf -o $W/$T-base.kiln > /dev/null 2>&1
  for v in all big small; do $B/kilnc compile $W/8b-$T.gguf -o $W/$T-$v.kiln --schedules $W/$v.txtpb > $L/compile-$T-$v.txt 2>&1; done
  for v in base all big small base all; do
    $B/kiln bench -b $W/$T-$v.kiln -m $W/8b-$T.gguf --json --prompt-lengths 64 --depths 0,4096 --steps 64 \
      > $L/ab-$T-$v.json 2>/dev/null
    python3 -c "
import json; d=json.load(open('$L/ab-$T-$v.json'))
for r in d['decode']: print('$T %-5s depth %5d: %6.1f tok/s %.3f ms %.1f %% of probe (%.0f GB/s), floor %.3f ms (%.1f %%)' % ('$v', r['depth'], r['tok_per_s'], r['ms_per_token'], r['probe_percent'], d['probe_gb_per_s'], r['launch_floor_ms_per_token'], r['launch_floor_percent']))" >> $L/ab.txt
  done
  for v in base all; do
    timeout 60 $B/kiln run -b $W/$T-$v.kiln -m $W/8b-$T.gguf --tokens $P -n 16 --ignore-eos -c 256 \
      --dump-logits $W/l-$T-$v.npy > $L/tokens-$T-$v.txt 2>/dev/null
  done
  if cmp -s $L/tokens-$T-base.txt $L/tokens-$T-all.txt; then r="same 16 tokens; $(python3 tests/e2e/compare_logits.py $W/l-$T-all.npy $W/l-$T-base.npy 5e-3 2>&1 | tail -1)"
  else r="tokens differ; $(python3 tests/e2e/compare_logits.py $W/l-$T-all.npy $W/l-$T-base.npy 5e-3 0 17 2>&1 | tail -1)"; fi
  echo "$T all vs base: $r" >> $L/ab.txt
  cp $L/ab.txt $OUT/
done
tar -C $L -czf $OUT/logs.tgz .
