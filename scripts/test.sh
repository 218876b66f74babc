#!/usr/bin/env bash
# Bootstraps (packages + build), runs the whole test suite with CTest, then the lecture
# scripts in --quick mode as a smoke test (every section end to end, tiny steps, 1 seed;
# outputs under runs/lecture-quick/) and the interop check (llama.cpp and HF tokenizers read our
# exports), and last the suite again under AddressSanitizer + UBSan + LSan (scripts/sanitize.sh
# asan: its own build in build-asan/, exit 1 on any report). CI runs all of it, in under 45
# minutes: so the interrupt stress tests run at half their runs in the plain suite
# (LMX_STRESS_SCALE=0.5) and a tenth under ASan, the mutation fuzz test at a tenth of its inputs
# under ASan (LMX_FUZZ_SCALE=0.1); set either variable to run that many in both (1 = in full;
# --stress runs them in full). See docs/RELIABILITY.md.
#   scripts/test.sh [ctest arguments]
#   scripts/test.sh --stress [ROUNDS]   the suite ROUNDS times (default 5) under ctest -j4 with two
#                                       CPU-bound processes beside it; stops at the first failure
# LMX_SKIP_LECTURE=1, LMX_SKIP_INTEROP=1, LMX_SANITIZE=0 skip those parts.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" --all
cd "$root/build"
jobs="$(nproc 2>/dev/null || echo 2)"

if [[ "${1:-}" == "--stress" ]]; then
  rounds="${2:-5}"
  for _ in 1 2; do (while :; do :; done) & done
  trap 'kill $(jobs -p) 2>/dev/null' EXIT
  for ((i = 1; i <= rounds; i++)); do
    echo "[test] stress round $i of $rounds: ctest -j4 beside two busy processes" >&2
    ctest --output-on-failure -j4 || { echo "[test] stress round $i failed" >&2; exit 1; }
  done
  echo "[test] $rounds stress rounds passed" >&2
  exit 0
fi

LMX_STRESS_SCALE="${LMX_STRESS_SCALE:-0.5}" ctest --output-on-failure -j"$jobs" "$@"
if [[ "${LMX_SKIP_LECTURE:-0}" != 1 ]]; then
  "$root/scripts/lecture/all.sh" --quick
  "$root/scripts/lecture/report.sh" --results "$root/runs/lecture-quick/results" --out "$root/runs/lecture-quick/RESULTS.md"
fi
if [[ "${LMX_SKIP_INTEROP:-0}" != 1 && -x "$root/scripts/interop/check.sh" ]]; then
  "$root/scripts/interop/check.sh" "$root/build/lmx"
fi
if [[ "${LMX_SANITIZE:-1}" != 0 ]]; then
  LMX_STRESS_SCALE="${LMX_STRESS_SCALE:-0.1}" LMX_FUZZ_SCALE="${LMX_FUZZ_SCALE:-0.1}" "$root/scripts/sanitize.sh" asan
fi
