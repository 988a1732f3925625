#!/usr/bin/env bash
# Builds the extension in place (python/cute_transpose/_C*.so) for this machine's GPU, offline,
# unless the sources are unchanged since the last build here (a stamp of their hash). Used by
# gpu_check.sh; prints one line. Needs torch, nvcc and CuTe headers (CUTLASS_DIR, the submodule,
# or an installed nvidia-cutlass wheel).
set -uo pipefail
cd "$(dirname "$0")/.."
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0a}   # just this GPU: a faster build
export MAX_JOBS=${MAX_JOBS:-16}
# setuptools compiles C++ with $CXX, or else the compiler Python was built with. On the GPU
# test machine both point at /opt/gcc/bin/g++, and a TORCH_CHECK thrown from code it compiled
# crashes the process (a segfault while unwinding) instead of raising. The system g++ on PATH
# works: use it unless CUTE_TRANSPOSE_CXX names another. gpu_check.sh probes the result.
export CXX=${CUTE_TRANSPOSE_CXX:-$(command -v g++)}
export CC=${CUTE_TRANSPOSE_CC:-$(command -v gcc)}
LOG=${BUILD_LOG:-${OUT:-/tmp}/build.log}

stamp=build/.inplace-stamp
hash=$( (cat setup.py; find csrc -type f | sort | xargs cat; echo "$TORCH_CUDA_ARCH_LIST $CXX") | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ] && ls python/cute_transpose/_C*.so > /dev/null 2>&1; then
  echo "build: up to date ($hash)"
  exit 0
fi
start=$(date +%s)
if ! python3 setup.py build_ext --inplace > "$LOG" 2>&1; then
  grep -E "error" "$LOG" | head -n 30
  tail -n 20 "$LOG"
  echo "build: FAILED (log: $LOG)"
  exit 1
fi
mkdir -p build && echo "$hash" > "$stamp"
echo "build: ok in $(( $(date +%s) - start ))s (TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST, CXX=$CXX)"
