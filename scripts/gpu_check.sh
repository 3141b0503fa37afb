#!/bin/bash
# The cuda backend's checks on a machine with an NVIDIA GPU, after a build with CUDA (./scripts/build.sh
# or the README's test command). Each stage runs under its own time limit and logs to OUT:
#   1. every cuda test: `ctest -L cuda` (op cases and zoo models against cpu at both precisions, the
#      ONNX conformance suites on cuda:0 at highest and default, reports, traces, errors, the pool);
#   2. PyTorch on the same GPU (when python3 imports torch with CUDA), then
#      benchmarks/cuda/run_cuda.py: ResNet-50 and BERT at batch 1, 8, 64, launched and as a CUDA
#      graph, launch gaps, cuBLAS GEMM against the peak -> OUT/cuda.{json,md};
#   3. the export check's models on cuda:0 against PyTorch (scripts/onnx_export_check.py).
#
#   scripts/gpu_check.sh [BUILD_DIR [OUT_DIR]]      # defaults: build, build/gpu_check
# Exit status: 0 when every stage passed, 1 when one failed, 2 when cuda:0 is unavailable.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/gpu_check}
mkdir -p "$out"
models=${GPU_CHECK_MODELS:-resnet18,resnet50,mobilenet_v3_small,efficientnet_b0,convnext_tiny,transformer_encoder,lstm_bidirectional,gru_bidirectional}
jobs=${GPU_CHECK_JOBS:-$(nproc)}
status=0

stage() {  # stage NAME SECONDS COMMAND...: runs COMMAND, logs to OUT/NAME.log, prints one line
  local name=$1 limit=$2 start rc
  shift 2
  start=$(date +%s)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  echo "gpu_check: $name exit $rc in $(($(date +%s) - start)) s (log: $out/$name.log)"
  [ $rc -eq 0 ] || status=1
  return $rc
}

if ! "$build/bin/mimic" devices | grep -Eq '^cuda:0 +available'; then
  "$build/bin/mimic" devices | grep '^cuda'
  echo "gpu_check: cuda:0 is unavailable; nothing checked"
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >"$out/gpu.txt" 2>&1
stage ctest_cuda "${GPU_CHECK_CTEST_SECONDS:-300}" ctest --test-dir "$build" -L cuda -j "$jobs" \
  --output-on-failure --timeout 240
torch_json=()
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  stage torch_reference 120 python3 "$root/benchmarks/cuda/torch_reference.py" --out "$out/torch_cuda.json" &&
    torch_json=(--torch "$out/torch_cuda.json")
fi
stage run_cuda "${GPU_CHECK_BENCH_SECONDS:-240}" python3 "$root/benchmarks/cuda/run_cuda.py" --build "$build" \
  --runs 10 --warmup 2 --out "$out/cuda" "${torch_json[@]}"
stage export_check "${GPU_CHECK_EXPORT_SECONDS:-180}" python3 "$root/scripts/onnx_export_check.py" \
  --mimic "$build/bin/mimic" --devices cuda:0 --opsets 17 --models "$models" --markdown "$out/models_cuda.md"
exit $status
