#!/usr/bin/env bash
# Why is the 64-channel 32x32 convolution slow? cuDNN's measured algorithms at the
# default 256 MiB workspace and at 4 GiB, with the conv and 512-image step benchmarks.
cd "$(dirname "$0")/.." || exit 1
source scripts/gpu/lib.sh
OUT=${OUT:-/tmp/out4}; mkdir -p "$OUT"
cd backend/cuda || exit 1
for mib in 256 4096; do
  echo "=== workspace $mib MiB"
  SIMCLR_BENCH_WORKSPACE_MIB=$mib SIMCLR_BENCH_CUDNN_LOG=1 timeout 80 "${go_env[@]}" ../../.gpu/cuda.test -test.run '^$' \
    -test.bench 'Conv/|ResNet18Step/(tf32|fp32)/images=512' -test.benchtime 10x -test.timeout=75s >"$OUT/conv-ws$mib.log" 2>&1
  grep -E "^Benchmark|TFLOP|views/s" "$OUT/conv-ws$mib.log"
  grep -c "^cudnn" "$OUT/conv-ws$mib.log"
done
grep -E "N=512 C=64 H=32" "$OUT/conv-ws256.log" | head -40; grep -E "N=512 C=64 H=32" "$OUT/conv-ws4096.log" | grep -F "*"
