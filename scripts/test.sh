#!/usr/bin/env bash
# Bootstraps (packages + build), runs the whole test suite with CTest, then the lecture
# scripts in --quick mode as a smoke test (every section end to end, tiny steps, 1 seed;
# outputs under runs/lecture-quick/). LMX_SKIP_LECTURE=1 skips the smoke test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" --all
cd "$root/build"
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@"
if [[ "${LMX_SKIP_LECTURE:-0}" != 1 ]]; then
  "$root/scripts/lecture/all.sh" --quick
  "$root/scripts/lecture/report.sh" --results "$root/runs/lecture-quick/results" --out "$root/runs/lecture-quick/RESULTS.md"
fi
