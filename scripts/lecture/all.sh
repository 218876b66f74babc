#!/usr/bin/env bash
# Every lecture table: runs the five section scripts and section 06 (beyond the lecture:
# docs/UPGRADES.md), then regenerates docs/RESULTS.md from results/ (full mode only).
#   scripts/lecture/all.sh [--quick] [--lecture-runs] [--jobs N] [--out DIR] [--sequential]
# --lecture-runs runs only the lecture's own run list, with its seed counts (FINDINGS.md), and
# none of our follow-ups (nor section 06); its tables go to runs/lecture-runs/results (or --out
# DIR) and its report to RESULTS.md there, not to docs/.
# The sections run at once and share --jobs job slots (default: the number of cores): a named
# pipe holding one byte per free slot (LMX_JOBSERVER), from which every sweep run, probe and
# training command takes a slot while it computes. No core waits at the end of one section
# for the next, and the section with the longest single runs (04, length extrapolation)
# starts first. --sequential runs the sections one after another, each with --jobs N of its
# own (the scheduling before; for timing the two).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"  # ROOT, results_root
SECONDS=0
# Longest work first: 04 (the 3x-steps extrapolation is one ~10-minute process), 02, 06, 01, 05, 03.
sections=(04_position 02_norm 06_upgrades 01_ffn 05_recipe 03_attention)
quick=0 lecture_runs=0 sequential=0 jobs="$(nproc)" out="" args=()
while (($#)); do
  case "$1" in
    --sequential) sequential=1 ;;
    --quick) quick=1; args+=("$1") ;;
    --lecture-runs) lecture_runs=1; args+=("$1") ;;
    --jobs | --out)
      (($# >= 2)) || { echo "all.sh: $1 needs a value" >&2; exit 2; }
      [[ "$1" == --jobs ]] && jobs="$2" || out="$2"
      args+=("$1" "$2")
      shift ;;
    -h | --help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "all.sh: unknown option '$1' (valid: --quick, --lecture-runs, --jobs N, --out DIR, --sequential)" >&2; exit 2 ;;
  esac
  shift
done
if ((lecture_runs)); then  # the lecture's own runs: section 06 is ours
  sections=("${sections[@]/06_upgrades/}")
  read -r -a sections <<< "${sections[*]}"
fi
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "all.sh: --jobs must be a positive integer, got '$jobs'" >&2
  exit 2
fi

# progress: every 30 s (10 s with --quick) one line on stderr with the trained runs finished so
# far (result.csv files under the runs folder), against the count the last run of this mode
# recorded in wall_time.txt ("runs: N"), the time elapsed and an ETA from the rate so far.
out_root="$(results_root "$quick" "$lecture_runs" "$out")"
runs_dir="$(runs_root "$quick" "$lecture_runs")"
count_runs() { (cd "$runs_dir" 2> /dev/null && find "${sections[@]}" -name result.csv 2> /dev/null) | wc -l; }  # the sections' runs only (interventions.sh writes beside them)
last_total="$(sed -n 's/^runs: //p' "$out_root/wall_time.txt" 2> /dev/null || true)"
[[ "$last_total" =~ ^[1-9][0-9]*$ ]] || last_total=""
mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
progress() {
  local every=$((quick ? 10 : 30)) k
  while sleep "$every"; do
    k="$(count_runs)"
    if [[ -n "$last_total" ]] && ((k > 0 && k < last_total)); then
      echo "[lecture] $k/$last_total runs done, $(mmss "$SECONDS") elapsed, ETA $(mmss $((SECONDS * (last_total - k) / k)))" >&2
    else
      echo "[lecture] $k runs done, $(mmss "$SECONDS") elapsed$([[ -z "$last_total" ]] && echo " (no earlier run of this mode to estimate the rest from)")" >&2
    fi
  done
}
progress &
progress_pid=$!
trap 'kill $progress_pid 2> /dev/null || true' EXIT

if ((sequential)); then
  for s in $(printf '%s\n' "${sections[@]}" | sort); do  # in section order
    "$here/$s.sh" "${args[@]}"
  done
else
  # Build (or rebuild) once, here: the sections then use the binary as it is.
  if [[ -z "${LMX_BIN:-}" ]]; then
    LMX_VERSION_TEXT="$("$ROOT/lmx" --version)"
    export LMX_BIN="$ROOT/build/lmx"
  fi
  # Every section's wall_time.txt quotes it: one lmx process (~0.7 s loading LibTorch) instead of
  # one per section.
  export LMX_VERSION_TEXT="${LMX_VERSION_TEXT:-$("$LMX_BIN" --version)}"
  pids=()
  cleanup() {
    kill "$progress_pid" 2> /dev/null || true
    if ((${#pids[@]})); then kill "${pids[@]}" 2> /dev/null || true; fi
    rm -rf "$JOBSERVER_DIR"
  }
  jobserver_start "$jobs"
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  for s in "${sections[@]}"; do
    "$here/$s.sh" "${args[@]}" &
    pids+=($!)
    sleep 0.2  # the sections ask for their first slots in this order
  done
  failed=()
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("${sections[$i]}")
  done
  pids=()
  if ((${#failed[@]})); then
    echo "all.sh: section(s) failed: ${failed[*]} (their output is above; the others finished)" >&2
    exit 1
  fi
fi
kill "$progress_pid" 2> /dev/null || true
# The whole run's time next to the sections' tables (--out DIR, default results/), before the
# report, which reads it; "runs:" is the next run's progress total.
mkdir -p "$out_root"
QUICK=$quick LECTURE_RUNS=$lecture_runs
{
  echo "all sections: ${SECONDS} s"
  echo "mode: $(run_mode)"
  echo "commit: $(source_commit "${LMX_BIN:-$ROOT/build/lmx}")"
  echo "runs: $(count_runs)"
  echo "jobs: $jobs"
  echo "scheduler: $( ((sequential)) && echo "sections one after another" || echo "sections at once, $jobs shared slots")"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "blas: $(sed -n 's/^BLAS kernels //p' <<< "${LMX_VERSION_TEXT:-$("${LMX_BIN:-$ROOT/build/lmx}" --version)}")"
} > "$out_root/wall_time.txt"
if ((!quick)); then
  report=(--results "$out_root")
  ((lecture_runs)) && report+=(--out "$out_root/RESULTS.md")  # not docs/: the full run's
  "$here/report.sh" "${report[@]}"
fi
echo "== all sections done in ${SECONDS}s" >&2
