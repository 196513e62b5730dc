#!/usr/bin/env bash
# Session 3, GPU call 1 (from the repository root on the GPU host, .gpu/ staged
# with tools/stage_gpu.sh build): the streamed-kernel bisection (Q4_K_M, short
# bench), then the A/B of decode attention's release_at_start and a streamed
# output projection whose copies all go before griddepcontrol.wait.
set -u
L=/tmp/logs; mkdir -p $L
rm -rf /tmp/kiln-gpu && mkdir -p /tmp/kiln-gpu && tar -C /tmp/kiln-gpu -xzf .gpu/pkg.tar.gz
export KILN_BIN_DIR=/tmp/kiln-gpu/pkg/bin KILN_TOKENIZER=$PWD/third_party/tokenizer-qwen3/models/tokenizer.json
export KILN_COMPILE_ARGS=--allow-streamed-weights
B=$KILN_BIN_DIR T=bench/logs/2026-12-03-h200-s3/tables F=bench/logs/2026-12-03-h200-final/bisect
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $L/machine.txt
date -u > $L/times.txt
KILN_BENCH_ARGS="--prompt-lengths 64 --depths 0 --steps 16" timeout 200 tools/gpu_ab.sh $L/bisect "Q4_K_M" \
  shipped=$B/kilnc qkv=$B/kilnc,$F/qkv.txtpb o=$B/kilnc,$F/o.txtpb gu=$B/kilnc,$F/gu.txtpb \
  qkv-early=$B/kilnc,$F/qkv-early.txtpb > $L/bisect.txt 2>&1
date -u >> $L/times.txt
timeout ${AB_TIMEOUT:-330} tools/gpu_ab.sh $L/ab "Q8_0 Q4_K_M" shipped=$B/kilnc attn=$B/kilnc,$T/attn.txtpb \
  o=$B/kilnc,$T/o-deep.txtpb attn-o=$B/kilnc,$T/attn-o.txtpb > $L/ab.txt 2>&1
date -u >> $L/times.txt
cp $L/bisect.txt $L/ab.txt $L/times.txt $OUT/ 2>/dev/null
tar -C $L -czf $OUT/logs.tgz --exclude='*.npy' .
