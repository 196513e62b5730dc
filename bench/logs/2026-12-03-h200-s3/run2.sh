#!/usr/bin/env bash
# Session 3, GPU call 2 (repository root on the GPU host, .gpu/ staged with
# tools/stage_gpu.sh build): the 8B bench with the launch floor (+ profile and
# Nsight Compute of two matvecs), the streamed-QKV failure with and without
# programmatic launch and under memcheck, and the GPU tests the change touches.
set -u
L=/tmp/logs; mkdir -p $L
rm -rf /tmp/kiln-gpu && mkdir -p /tmp/kiln-gpu && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
export KILN_GPU_ROOT=$PWD KILN_BIN_DIR=/tmp/kiln-gpu/pkg/bin
export KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
B=$KILN_BIN_DIR W=/tmp/kiln-gpu/bench F=bench/logs/2026-12-03-h200-final/bisect
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $L/machine.txt
date -u > $L/times.txt
KILN_NCU='matvec_q4_k_24576|matvec_q8_0p_6144' timeout 330 bash tools/gpu_bench.sh $B $L/bench Q8_0 Q4_K_M \
  > $L/bench.txt 2>&1
date -u >> $L/times.txt
# The streamed QKV (release at the end) against the shipped bundle, each with
# and without programmatic launch; then memcheck over one decoded token.
G=$W/8b-Q4_K_M.gguf
P=100,2000,30000,400,5000,60000,700,8000,90000,1000,11000,120000,1300,14000,150000,16
{
  for v in qkv:--schedules=$F/qkv.txtpb qkv-nopdl:--schedules=$F/qkv.txtpb,--no-programmatic-launch \
           shipped-nopdl:--no-programmatic-launch; do
    n=${v%%:*} a=${v#*:}
    $B/kilnc compile $G -o $W/$n.kiln --allow-streamed-weights ${a//,/ } 2>&1 | tail -1
  done
  for n in shipped qkv qkv-nopdl shipped-nopdl; do
    bk=$W/$n.kiln; [ $n = shipped ] && bk=$W/8b-Q4_K_M.kiln
    for r in 1 2; do
      timeout 60 $B/kiln run -b $bk -m $G --tokens $P -n 8 --ignore-eos -c 256 --dump-logits $W/l-$n-$r.npy 2>/dev/null
      [ $n$r = shipped1 ] || echo "$n run $r vs shipped: $(python3 tests/e2e/compare_logits.py $W/l-$n-$r.npy $W/l-shipped-1.npy 5e-3 0 17 2>&1 | tail -1)"
    done
  done
  date -u
  timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 20 $B/kiln run -b $W/qkv.kiln -m $G \
    --tokens $P -n 1 --ignore-eos -c 64 2>&1 | tail -40
} > $L/streamed.txt 2>&1
date -u >> $L/times.txt
PKG=/tmp/kiln-gpu/pkg
(cd $PKG && timeout 150 ctest -L gpu -R "perf_test_gpu|bench_gpu|model_gpu_tiny" -V --timeout 140) > $L/gpu-tests-verbose.log 2>&1
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|Total Test time|launch floor|probe:" $L/gpu-tests-verbose.log > $L/gpu-tests.log
date -u >> $L/times.txt
cp $L/bench.txt $L/streamed.txt $L/gpu-tests.log $L/times.txt $OUT/ 2>/dev/null
tar -C $L -czf $OUT/logs.tgz .
