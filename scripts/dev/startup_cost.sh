#!/usr/bin/env bash
# What the lmx processes' start-up (loading LibTorch and its static constructors, before main)
# costs a command: counts the lmx / lmx_tests processes COMMAND starts (an LD_PRELOAD library,
# scripts/dev/count_starts.cpp), times `lmx --help` (start-up and exit, nothing else) ROUNDS
# times, and prints processes x start-up against COMMAND's wall time. Run from the repository
# root with build/ built, e.g.
#   scripts/dev/startup_cost.sh scripts/lecture/all.sh --quick
#   scripts/dev/startup_cost.sh ctest --test-dir build -j2
# Start-up runs beside the rest on 2 cores, so the share is of CPU time spread over the cores:
# an upper bound on the wall time it costs when the command keeps both cores busy.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${ROUNDS:-10}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
g++ -O2 -shared -fPIC -o "$work/count_starts.so" "$root/scripts/dev/count_starts.cpp"
: > "$work/starts"
t0=$(date +%s.%N)
LMX_COUNT_FILE="$work/starts" LD_PRELOAD="$work/count_starts.so${LD_PRELOAD:+:$LD_PRELOAD}" "$@"
t1=$(date +%s.%N)
: > "$work/help"
for ((i = 0; i < rounds; i++)); do
  s=$(date +%s.%N)
  "$root/build/lmx" --help > /dev/null
  echo "$s $(date +%s.%N)" >> "$work/help"
done
lmx_n=$(grep -c '^lmx ' "$work/starts" || true)
tests_n=$(grep -c '^lmx_tests ' "$work/starts" || true)
median=$(awk '{print $2 - $1}' "$work/help" | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
awk -v t0="$t0" -v t1="$t1" -v n="$lmx_n" -v m="$tests_n" -v s="$median" -v r="$rounds" -v c="$(nproc)" -v cmd="$*" 'BEGIN {
  wall = t1 - t0; lost = (n + m) * s
  printf "command: %s\nwall: %.1f s\nprocesses: %d lmx, %d lmx_tests\n", cmd, wall, n, m
  printf "start-up (lmx --help, median of %d): %.3f s\n", r, s
  printf "start-up in all: %.1f s of CPU: %.1f%% of the wall time on one core, %.1f%% spread over %d cores\n",
         lost, 100 * lost / wall, 100 * lost / wall / c, c
}'
