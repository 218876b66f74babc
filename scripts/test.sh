#!/usr/bin/env bash
# The test commands (docs/RELIABILITY.md says what each part covers and how long it took):
#   scripts/test.sh [ctest arguments]          the README's: installs and builds what is missing
#       (scripts/bootstrap.sh --all), runs the CTest suite with the interrupt stress tests at a
#       quarter of their interruptions (LMX_STRESS_SCALE=0.25: 16 random moments across train,
#       sweep and ablate) and the mutation fuzz tests in full, then every lecture section end to
#       end in --quick mode (tiny data, 1 seed; into runs/lecture-quick/). ~10 minutes on the
#       project's 2-core machine from a fresh clone.
#   scripts/test.sh --full [ctest arguments]   what CI runs (.ci/run): the same with the stress
#       tests at half their full count (LMX_STRESS_SCALE=0.5: 32 interruptions, twice the quick
#       command's), then the interop check (llama.cpp and Hugging Face tokenizers read lmx's
#       exports; needs npm, else a skip line) and last the suite again under AddressSanitizer +
#       UBSan + LSan in a build of its own (scripts/sanitize.sh asan -LE stress: every test but
#       the random-moment stress tests, whose signal paths the deterministic interrupt tests
#       check there; the fuzz test at a tenth). Under 45 minutes.
#   scripts/test.sh --stress [ROUNDS]          the suite ROUNDS times (default 5) under ctest -j4
#       with two CPU-bound processes beside it; stops at the first failure.
# LMX_STRESS_SCALE / LMX_FUZZ_SCALE set the scales of every part; LMX_SKIP_LECTURE=1,
# LMX_SKIP_INTEROP=1 and LMX_SANITIZE=0 skip those parts. It exits non-zero at the first part
# that fails, and prints each part's wall time at the end.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode=quick
case "${1:-}" in
  --full) mode=full; shift ;;
  --stress) mode=stress; shift ;;
esac

t_all=$SECONDS
times=()
# part NAME CMD...: runs CMD and records its wall time for the summary line.
part() {
  local name="$1" t0=$SECONDS
  shift
  echo "[test] $name" >&2
  "$@"
  times+=("$name $((SECONDS - t0)) s")
}
summary() {
  local joined="" t
  for t in "${times[@]}"; do joined+="${joined:+; }$t"; done
  echo "[test] $mode: passed in $((SECONDS - t_all)) s ($joined)" >&2
}

part "bootstrap (packages, build)" "$root/scripts/bootstrap.sh" --all
cd "$root/build"
jobs="$(nproc 2>/dev/null || echo 2)"

if [[ "$mode" == stress ]]; then
  rounds="${1:-5}"
  for _ in 1 2; do (while :; do :; done) & done
  trap 'kill $(jobs -p) 2>/dev/null' EXIT
  for ((i = 1; i <= rounds; i++)); do
    echo "[test] stress round $i of $rounds: ctest -j4 beside two busy processes" >&2
    ctest --output-on-failure -j4 || { echo "[test] stress round $i failed" >&2; exit 1; }
  done
  echo "[test] $rounds stress rounds passed" >&2
  exit 0
fi

stress_scale=0.25
[[ "$mode" == full ]] && stress_scale=0.5
part "suite (ctest -j$jobs, stress scale ${LMX_STRESS_SCALE:-$stress_scale})" \
  env LMX_STRESS_SCALE="${LMX_STRESS_SCALE:-$stress_scale}" ctest --output-on-failure -j"$jobs" "$@"
if [[ "${LMX_SKIP_LECTURE:-0}" != 1 ]]; then
  part "quick lecture" "$root/scripts/lecture/all.sh" --quick
  part "quick lecture report" "$root/scripts/lecture/report.sh" --results "$root/runs/lecture-quick/results" \
    --out "$root/runs/lecture-quick/RESULTS.md"
fi
if [[ "$mode" == full ]]; then
  if [[ "${LMX_SKIP_INTEROP:-0}" != 1 && -x "$root/scripts/interop/check.sh" ]]; then
    part "interop" "$root/scripts/interop/check.sh" "$root/build/lmx"
  fi
  if [[ "${LMX_SANITIZE:-1}" != 0 ]]; then
    part "ASan build and suite" env LMX_FUZZ_SCALE="${LMX_FUZZ_SCALE:-0.1}" "$root/scripts/sanitize.sh" asan -LE stress
  fi
fi
summary
