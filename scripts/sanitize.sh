#!/usr/bin/env bash
# Memory and thread safety, checked: builds lmx and lmx_tests with sanitizers in a build folder
# of their own and runs the tests; exits non-zero on any sanitizer report, whether it came from
# the test binary or from an lmx process a test started (every report goes to a log file).
#   scripts/sanitize.sh [asan|tsan] [extra ctest arguments]
#   asan (default)  AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer, the whole
#                   suite (ctest), in build-asan/. CI runs this.
#   tsan            ThreadSanitizer on the tests that run threads, signals and child processes
#                   (Catch tags below), in build-tsan/, with one compute thread per process
#                   (LibTorch's OpenMP is not instrumented: its pool would only report itself).
# Suppressions (tests/sanitizers/*.supp) name only LibTorch, oneDNN, OpenBLAS and the OpenMP
# runtime, each with a comment saying why the report is not ours.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kind="${1:-asan}"
[[ $# -gt 0 ]] && shift
supp="$root/tests/sanitizers"
# asan links lmx and lmx_tests as position-dependent executables (-no-pie): the instrumented
# binary's own ~1.2 million relative relocations (its globals' metadata) are then resolved at link
# time instead of at every start (an instrumented `lmx config show` beside the running ASan suite:
# 6.2 -> 5.4 s, median of 5; the suite starts lmx processes by the hundred). ThreadSanitizer
# needs PIE.
case "$kind" in
  asan) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
        link_flags="$flags -no-pie" ;;
  tsan) flags="-fsanitize=thread -fno-omit-frame-pointer"
        link_flags="$flags" ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan] [ctest arguments]" >&2; exit 2 ;;
esac
"$root/scripts/bootstrap.sh" --deps
build="$root/build-$kind"
logs="$build/reports"
t0=$SECONDS
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  # -O1 -g1: stacks with file and line at a bearable speed; asserts on (no NDEBUG).
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$link_flags" >&2
fi
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target lmx lmx_tests >&2
echo "[sanitize] $kind build in $((SECONDS - t0)) s" >&2
rm -rf "$logs"
mkdir -p "$logs"
common="log_path=$logs/report:print_stacktrace=1"
export UBSAN_OPTIONS="$common:halt_on_error=1:suppressions=$supp/ubsan.supp"
export ASAN_OPTIONS="$common:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="$common:halt_on_error=0:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
# The interrupt stress test at a quarter of its runs (10 train, 3 sweep, 3 ablate) and the
# mutation fuzz test at a quarter of its inputs (1,750): the plain suite runs both in full; here
# they check the same paths for memory errors (at full size the fuzz test alone takes ~6 min).
export LMX_STRESS_SCALE="${LMX_STRESS_SCALE:-0.25}"
export LMX_FUZZ_SCALE="${LMX_FUZZ_SCALE:-0.25}"
t0=$SECONDS
status=0
if [[ "$kind" == asan ]]; then
  (cd "$build" && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@") || status=$?
else
  (cd "$root" && OMP_NUM_THREADS=1 "$build/lmx_tests" "[signal],[sweep],[jobserver],[log],[runtime]" "$@") || status=$?
fi
echo "[sanitize] $kind tests in $((SECONDS - t0)) s" >&2
# UBSan's diagnostics ignore log_path in GCC 12's combined runtime and go to stderr; with
# -fno-sanitize-recover each one also ends its process (exit 1), which fails the test that
# started it. As a second net, every "runtime error:" or sanitizer banner in the tests' own
# output (ctest's log) is copied into the reports.
if [[ "$kind" == asan && -f "$build/Testing/Temporary/LastTest.log" ]]; then
  grep -n -E "runtime error:|ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer" \
    "$build/Testing/Temporary/LastTest.log" > "$logs/report.ctest-log" || rm -f "$logs/report.ctest-log"
fi
reports=("$logs"/report.*)
if [[ -e "${reports[0]}" ]]; then
  echo "[sanitize] ${#reports[@]} sanitizer report(s) in $logs:" >&2
  for r in "${reports[@]}"; do echo "---- $r" >&2; head -60 "$r" >&2; done
  exit 1
fi
[[ $status -eq 0 ]] || { echo "[sanitize] $kind: tests failed (exit $status), no sanitizer report" >&2; exit "$status"; }
echo "[sanitize] $kind: no report, all tests passed" >&2
