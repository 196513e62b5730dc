#!/usr/bin/env bash
# Session 5, GPU call 4 (.gpu/ staged at the launch floor's shared setup):
# the perf and bench gpu tests only.
set -u
L=/tmp/logs; mkdir -p $L
KILN_BENCH_TYPES= timeout 150 bash tools/gpu_check.sh $L -j2 -R 'perf_test_gpu|bench_gpu' > $L/check.txt 2>&1
cp $L/gpu-tests.log $L/check.txt $OUT/ 2>/dev/null
