#!/usr/bin/env bash
# Installs cute_transpose and everything it needs into the current Python environment:
# torch 2.14.1 (a CUDA 13.0 build), the CuTe headers (nvidia-cutlass, headers only), the test
# and benchmark tools, then builds the extension -- the CUDA one wherever a CUDA toolkit is
# present (no GPU needed to build), else the CPU-only one with a warning.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet "torch==2.14.1" ninja numpy pytest hypothesis tqdm matplotlib "setuptools>=77" wheel
python3 -m pip install --quiet --no-deps "nvidia-cutlass==4.2.0.0"
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
log=$(mktemp)
if ! python3 -m pip install --no-build-isolation --verbose . > "$log" 2>&1; then
  tail -n 60 "$log"; echo "cute_transpose: build failed (full log: $log)"; exit 1
fi
grep -E "^cute_transpose:|UserWarning: cute_transpose" "$log" || true
python3 -c "import cute_transpose as ct; print('cute_transpose installed; CUDA kernels:', ct.has_cuda_kernels())"
