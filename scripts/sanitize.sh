#!/usr/bin/env bash
# compute-sanitizer over every op x element size on odd and batched shapes (the extension must be
# built in place first, e.g. by scripts/gpu_check.sh). Prints each tool's error summary, then a
# one-line verdict; exits non-zero on any finding.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
LOG_DIR=${OUT:-/tmp}/sanitize
mkdir -p "$LOG_DIR"
status=0
# TOOLS="memcheck initcheck" runs only those.
for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
  # memcheck runs without torch's caching allocator: every tensor is then its own allocation, and
  # an access past a tensor's storage is outside it (inside a cached block it would not be seen).
  uncached=()
  [ "$tool" = memcheck ] && uncached=(env PYTORCH_NO_CUDA_MEMORY_CACHING=1)
  # The workload makes its inputs on the CPU, so the only kernels that run are this extension's.
  "${uncached[@]}" env SANITIZE_TOOL="$tool" compute-sanitizer --tool "$tool" --error-exitcode 3 \
    python3 scripts/sanitize_cases.py > "$LOG_DIR/$tool.log" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOG_DIR/$tool.log" | tail -n 1)
  cases=$(grep -E "^sanitize_cases:" "$LOG_DIR/$tool.log")
  echo "$tool: ${summary:-no summary} | ${cases:-no cases line} | exit $rc"
  [ "$rc" -eq 0 ] || status=1
done
[ "$status" -eq 0 ] && echo "== SANITIZERS: no findings" || echo "== SANITIZERS: FINDINGS (logs: $LOG_DIR)"
exit "$status"
