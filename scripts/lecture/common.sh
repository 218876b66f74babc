# Shared by scripts/lecture/NN_*.sh (sourced, not run). Each section script calls
#   lecture_init <section> "$@"
# which parses the common options, builds lmx when needed and sets:
#   LMX      the binary            R     results/<section> (tables and figures)
#   RUNS     raw run outputs (runs/lecture/<section>, not committed)
#   QUICK    1 with --quick        JOBS  runs at once (--jobs, default: the number of cores)
#   LECTURE_RUNS  1 with --lecture-runs
#   TINY     --set overrides that shrink the data in --quick mode (for verbs without a spec)
# Options: --quick (tiny steps, 1 seed: a smoke test), --lecture-runs (only the lecture's own
# runs, with its seed counts: no follow-ups), --jobs N, --out DIR (results root; default
# results/ for the full run, else runs/lecture-quick/results, runs/lecture-runs/results or
# runs/lecture-runs-quick/results).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LMX="${LMX_BIN:-$ROOT/build/lmx}"  # LMX_BIN: use this binary as it is (no rebuild)

# runs_root QUICK LECTURE_RUNS / results_root QUICK LECTURE_RUNS [OUT]: where raw runs and tables
# go (--out DIR overrides the tables' folder): the full run's in runs/lecture and results/ (the
# committed tables); --lecture-runs and --quick each in their own runs/lecture-* folder, with
# the tables in its results/.
runs_root() { echo "$ROOT/runs/lecture$( (($2)) && echo -runs)$( (($1)) && echo -quick)"; }
results_root() {
  if [[ -n "${3:-}" ]]; then echo "$3"; elif (($1 || $2)); then echo "$(runs_root "$1" "$2")/results"; else echo "$ROOT/results"; fi
}

lecture_init() {
  SECTION="$1"
  shift
  QUICK=0
  LECTURE_RUNS=0
  JOBS="$(nproc)"
  local out=""
  while (($#)); do
    case "$1" in
      --quick) QUICK=1 ;;
      --lecture-runs) LECTURE_RUNS=1 ;;
      --jobs | --out)
        (($# >= 2)) || { echo "$(basename "$0"): $1 needs a value" >&2; exit 2; }
        if [[ "$1" == --jobs ]]; then JOBS="$2"; else out="$2"; fi
        shift ;;
      -h | --help)
        sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
        exit 0 ;;
      *) echo "$(basename "$0"): unknown option '$1' (valid: --quick, --lecture-runs, --jobs N, --out DIR)" >&2; exit 2 ;;
    esac
    shift
  done
  R="$(results_root "$QUICK" "$LECTURE_RUNS" "$out")/$SECTION"
  RUNS="$(runs_root "$QUICK" "$LECTURE_RUNS")/$SECTION"
  TINY=()
  SWEEP=(--jobs "$JOBS")
  if ((QUICK)); then
    TINY=(--set data.train_docs=500 --set data.val_docs=100 --set data.test_docs=100)
    SWEEP+=(--quick)
  fi
  # Build (or rebuild after source changes) through the launcher; then call the binary.
  [[ -n "${LMX_BIN:-}" ]] || "$ROOT/lmx" --version > /dev/null
  # A section run alone shares its --jobs slots among its own commands (all.sh's are inherited).
  SCHEDULER="this section alone"
  [[ -n "${LMX_JOBSERVER:-}" ]] && SCHEDULER="all sections at once, $JOBS shared slots (all.sh)"
  if [[ -z "${LMX_JOBSERVER:-}" ]] && ((JOBS > 1)); then
    jobserver_start "$JOBS"
    trap 'rm -rf "$JOBSERVER_DIR"' EXIT
    trap 'exit 130' INT TERM
  fi
  rm -rf "$RUNS" "$R"
  mkdir -p "$RUNS" "$R"
  SECONDS=0
  echo "== $SECTION: results in $R, runs in $RUNS$( ((QUICK)) && echo ' (quick)')$( ((LECTURE_RUNS)) && echo " (the lecture's runs only)")" >&2
}

# jobserver_start N: exports LMX_JOBSERVER, a named pipe (in JOBSERVER_DIR, which the caller
# removes at exit) holding one byte per free job slot, N of them, held open by this shell so that
# it keeps its bytes. `slot` below and lmx sweep / ablate take their slots from it.
jobserver_start() {
  JOBSERVER_DIR="$(mktemp -d "${TMPDIR:-/tmp}/lmx-lecture.XXXXXX")"
  export LMX_JOBSERVER="$JOBSERVER_DIR/slots"
  mkfifo "$LMX_JOBSERVER"
  exec {JOBSERVER_FD}<> "$LMX_JOBSERVER"
  printf '+%.0s' $(seq "$1") >&"$JOBSERVER_FD"
}

# run_mode: full, quick, lecture-runs or "lecture-runs, quick" (for the wall-time records).
run_mode() {
  local m=full
  ((LECTURE_RUNS)) && m=lecture-runs
  ((QUICK)) && { ((LECTURE_RUNS)) && m="lecture-runs, quick" || m=quick; }
  echo "$m"
}

# followups: true in a full run, false with --lecture-runs. A section wraps the runs the lecture
# did not make (more seeds, other settings that explain a verdict) in `if followups; then`.
followups() { ((!LECTURE_RUNS)); }

# lecture_seeds SEEDS: "--seeds SEEDS" with --lecture-runs (the lecture's seed count for that
# table, from ../shared/spec/FINDINGS.md), nothing in a full run (the spec's own seeds).
lecture_seeds() { if ((LECTURE_RUNS)); then echo "--seeds $1"; fi; }

# source_commit BINARY: the commit of the source tree the binary was built from (build/lmx -> its
# parent), with "+dirty" when that tree has uncommitted changes to tracked files (other than
# results/ and docs/RESULTS.md, which the lecture scripts write themselves); "unknown" for a
# binary outside a git tree (e.g. LMX_BIN=/tmp/x/lmx).
source_commit() {
  local src commit
  src="$(cd "$(dirname "$1")/.." && pwd)"
  if commit="$(git -C "$src" rev-parse --short HEAD 2> /dev/null)"; then
    git -C "$src" diff --quiet HEAD -- . ':!results' ':!docs/RESULTS.md' 2> /dev/null || commit+="+dirty"
  else
    commit=unknown
  fi
  echo "$commit"
}

# lecture_done: records the section's wall time and machine next to its tables.
lecture_done() {
  {
    echo "section: $SECTION"
    echo "mode: $(run_mode)"
    echo "wall_s: $SECONDS"
    echo "jobs: $JOBS"
    # all.sh runs the sections at once, sharing --jobs slots (the wall time overlaps theirs).
    echo "scheduler: $SCHEDULER"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
    local version
    # all.sh's (LMX_VERSION_TEXT), else once here: each lmx process spends ~0.7 s loading LibTorch
    version="${LMX_VERSION_TEXT:-$("$LMX" --version)}"
    echo "blas: $(sed -n 's/^BLAS kernels //p' <<< "$version")"
    echo "gemm: $(sed -n "s/^linear layers' GEMMs //p" <<< "$version")"
    echo "lmx: $(head -1 <<< "$version")"
    echo "commit: $(source_commit "$LMX")"
  } > "$R/wall_time.txt"
  echo "== $SECTION done in ${SECONDS}s" >&2
}

# slot CMD...: runs CMD holding one of the job slots that all.sh shares among the sections it
# runs at once (LMX_JOBSERVER: a named pipe with one byte per free slot; lmx sweep and ablate
# take their slots from it themselves). Without LMX_JOBSERVER it just runs CMD.
slot() {
  [[ -n "${LMX_JOBSERVER:-}" ]] || { "$@"; return; }
  local fd token rc=0
  exec {fd}<> "$LMX_JOBSERVER"
  read -r -n 1 -u "$fd" token  # blocks until a slot is free
  "$@" || rc=$?
  printf '%s' "$token" >&"$fd"
  exec {fd}>&-
  return "$rc"
}

# in_parallel CMD...: runs CMD in the background when --jobs > 1 (else now); wait_all waits
# for every background command and fails if any failed (after all have ended).
PIDS=()
in_parallel() {
  if ((JOBS > 1)); then
    "$@" &
    PIDS+=($!)
  else
    "$@"
  fi
}
wait_all() {
  local pid rc=0
  for pid in "${PIDS[@]}"; do wait "$pid" || rc=1; done
  PIDS=()
  return $rc
}

# probe NAME FILE_STEM [options...]: Markdown to FILE_STEM.md, CSV to FILE_STEM.csv (+ extra tables).
probe() {
  local name="$1" stem="$2"
  shift 2
  slot "$LMX" -q --threads 1 probe "$name" "$@" --csv "$R/$stem.csv" > "$R/$stem.md"
}

# ONE_PASS: every training command of the lecture takes its steps in one pass over the batch
# (train.step_parts=1, not the default 2 parts): its jobs run on one thread each, where one pass
# is ~3-5% faster (docs/PERFORMANCE.md, "Two threads"), and results/ holds that step's bits.
ONE_PASS=(--set train.step_parts=1)

# sweep SPEC DIR NAME [OPTIONS...]: runs an experiment spec into $RUNS/DIR (with lmx sweep's
# OPTIONS, e.g. $(lecture_seeds 0,1)) and keeps its summary as $R/NAME.csv and $R/NAME.md, and
# each point's resolved config as $R/configs/NAME/POINT.yaml (report.sh diffs a follow-up's
# configs against the main run's: "explained" needs exactly one key changed).
sweep() {
  local spec="$1" dir="$2" name="$3" run
  shift 3
  "$LMX" -q sweep "$ROOT/experiments/$spec" "${SWEEP[@]}" "${ONE_PASS[@]}" "$@" --out "$RUNS/$dir" > /dev/null
  cp "$RUNS/$dir/summary.csv" "$R/$name.csv"
  cp "$RUNS/$dir/summary.md" "$R/$name.md"
  mkdir -p "$R/configs/$name"
  for run in "$RUNS/$dir"/runs/*/seed*/config.yaml; do
    [[ -f "$R/configs/$name/$(run_point "${run%/config.yaml}").yaml" ]] || cp "$run" "$R/configs/$name/$(run_point "${run%/config.yaml}").yaml"
  done
}
# keep_configs NAME RUN_ROOT: each RUN_ROOT/POINT/seed*/config.yaml (lmx extrapolate's layout) as
# $R/configs/NAME/POINT.yaml, the first seed's (the config does not hold the seed).
keep_configs() {
  local name="$1" run point
  mkdir -p "$R/configs/$name"
  for run in "$2"/*/seed*/config.yaml; do
    point="$(basename "$(dirname "$(dirname "$run")")")"
    [[ -f "$R/configs/$name/$point.yaml" ]] || cp "$run" "$R/configs/$name/$point.yaml"
  done
}

# run_point RUN_DIR: the grid point of a sweep run (.../runs/NNN-<point>-s<seed>/seed<seed>).
run_point() { basename "$(dirname "$1")" | sed -E 's/^[0-9]+-//; s/-s[0-9]+$//'; }

# sparsity_rows RUN...: a CSV, header first, one row per layer of each run's sparsity.csv (from
# `lmx probe sparsity`): point, lr, seed, layer, ffn, zero_fraction, dead_neurons, dead_fraction.
sparsity_rows() {
  echo "point,lr,seed,layer,ffn,zero_fraction,dead_neurons,dead_fraction"
  local run lr
  for run in "$@"; do
    lr="$(awk '/^  lr:/ {print $2}' "$run/config.yaml")"
    awk -F, -v p="$(run_point "$run")" -v lr="$lr" -v s="${run##*/seed}" \
      'NR > 1 { print p "," lr "," s "," $1 "," $2 "," $5 "," $6 "," $7 }' "$run/sparsity.csv"
  done
}

# extrapolation_mean BY_POSITION.CSV: per encoding and position range, the seeds, mean and std of
# the NLL and the true NLL (lmx extrapolate's by_position.csv rows of several seeds, one header).
extrapolation_mean() {
  awk -F, 'NR > 1 { k = $1 "," $3; n[k]++; s[k] += $5; s2[k] += $5 * $5; t[k] = $6; if (!(k in o)) { o[k] = ++m; key[m] = k } }
           END { print "position,range,seeds,nll_mean,nll_std,true_nll"
                 for (i = 1; i <= m; i++) { k = key[i]; mu = s[k] / n[k]; v = n[k] > 1 ? (s2[k] - n[k] * mu * mu) / (n[k] - 1) : 0
                   printf "%s,%d,%.4f,%.4f,%.4f\n", k, n[k], mu, sqrt(v > 0 ? v : 0), t[k] } }' "$1"
}

# csv_md FILE: a CSV without quoted fields as a Markdown table.
csv_md() {
  awk -F, 'NR == 1 { n = NF; line = "|"; sep = "|"
                     for (i = 1; i <= NF; i++) { line = line " " $i " |"; sep = sep "---|" }
                     print line; print sep; next }
           { line = "|"; for (i = 1; i <= n; i++) line = line " " $i " |"; print line }' "$1"
}

# plot_png FILE TITLE: reads a gnuplot body on stdin and writes a PNG figure.
plot_png() {
  local file="$1" title="$2"
  {
    echo "set terminal pngcairo size 900,560 font 'sans,11'"
    echo "set output '$file'"
    echo "set title '$title'"
    echo "set datafile separator ','"
    echo "set key outside right"
    echo "set grid"
    echo "set termoption noenhanced"
    cat
  } | gnuplot
}
