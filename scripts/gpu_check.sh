#!/usr/bin/env bash
# The whole GPU check, offline: build the extension in place for this GPU, run the full test
# suite on it, print a summary last. Needs torch, nvcc, a GPU and CuTe headers (CUTLASS_DIR, the
# submodule, or an installed nvidia-cutlass wheel); never touches the network.
#   bash scripts/gpu_check.sh [extra pytest args]
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${OUT:-/tmp}/gpu_check
mkdir -p "$LOG_DIR"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"

gpu=$(python3 -c "import torch; print(torch.cuda.get_device_name(), 'sm_%d%d' % torch.cuda.get_device_capability(), 'torch', torch.__version__)")
echo "== GPU: $gpu"

build=$(BUILD_LOG="$LOG_DIR/build.log" bash scripts/build_inplace.sh)
echo "$build"
case "$build" in *FAILED*) echo "== GPU CHECK FAILED: build failed (log: $LOG_DIR/build.log)"; exit 1;; esac

# Probe: an error inside the extension must reach Python as an exception.
if ! python3 -c "
import torch, cute_transpose
try:
    torch.ops.cute_transpose.copy(torch.zeros(3))
except RuntimeError as e:
    assert 'rank >= 2' in str(e)
else:
    raise SystemExit('no error raised')
" > "$LOG_DIR/probe.log" 2>&1; then
  tail -n 5 "$LOG_DIR/probe.log"
  echo "== GPU CHECK FAILED: errors raised in the extension crash this process (CXX=${CUTE_TRANSPOSE_CXX:-$(command -v g++)});"
  echo "   rebuild with another compiler: CUTE_TRANSPOSE_CXX=/path/to/g++ bash scripts/gpu_check.sh"
  exit 1
fi

xdist=()
python3 -c "import xdist" 2>/dev/null && xdist=(-n 8)
# A kernel that deadlocks (say, on a TMA barrier) fails its test instead of hanging the run.
python3 -c "import pytest_timeout" 2>/dev/null && xdist+=(--timeout 300)
start=$(date +%s)
python3 -m pytest -q -rfE "${xdist[@]}" tests "$@" 2>&1 | tee "$LOG_DIR/pytest.log"
status=${PIPESTATUS[0]}
test_s=$(( $(date +%s) - start ))

echo
echo "== GPU CHECK SUMMARY"
echo "GPU:    $gpu"
echo "$build" | tail -n 1
echo "tests:  $(tail -n 1 "$LOG_DIR/pytest.log") in ${test_s}s"
[ "$status" -eq 0 ] && echo "== GPU CHECK PASSED" || echo "== GPU CHECK FAILED (pytest exit $status)"
exit "$status"
