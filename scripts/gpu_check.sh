#!/usr/bin/env bash
# The first run of lmx on a GPU machine, as one script (the device check of issue #9):
# builds lmx against the machine's pip-installed CUDA torch, then trains the textbook recipe
# on the CPU, on CUDA in fp32 and bf16, and data-parallel with 2 processes (Gloo on one GPU;
# NCCL where there are 2 GPUs, else its refusal), and compares the GPU numbers with the CPU's.
#
#   scripts/gpu_check.sh [--out DIR] [--steps N] [--lmx BIN]
#     DIR: $OUT or runs/gpu_check; N: 300; BIN: an lmx already built (skips the build)
#
# Every step has its own time limit and its log under DIR; the verdicts go to DIR/summary.txt.
# Exit status: 0 when every check passed, 1 otherwise (the summary says which).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/runs/gpu_check}"
steps=300
lmx=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out|--steps|--lmx) [[ $# -ge 2 ]] || { echo "gpu_check.sh: $1 needs a value" >&2; exit 2; } ;;&
    --out) out="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --lmx) lmx="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"  # absolute: the runs below start in the source tree
[[ -z "$lmx" ]] || lmx="$(cd "$(dirname "$lmx")" && pwd)/$(basename "$lmx")"
summary="$out/summary.txt"
: > "$summary"
failed=0
say() { echo "$*" | tee -a "$summary"; }
fail() { say "FAIL  $*"; failed=1; }
# check NAME LIMIT_S CMD...: runs CMD with its output in NAME.log, says ok/FAIL with the time.
check() {
  local name="$1" limit="$2"; shift 2
  local t0=$SECONDS
  if timeout "$limit" "$@" > "$out/$name.log" 2>&1; then
    say "ok    $name ($((SECONDS - t0)) s)"
  else
    fail "$name (exit $?, $((SECONDS - t0)) s): $(tail -n 3 "$out/$name.log" | tr '\n' ' ')"
    return 1
  fi
}

say "== machine"
{ nvidia-smi -L 2>&1 || echo "no nvidia-smi"; nproc; } | tee -a "$summary"
py=$(command -v python3 || true)
prefix=$([[ -n "$py" ]] && "$py" -c "import torch; print(torch.utils.cmake_prefix_path)" 2>/dev/null || true)
[[ -n "$py" ]] && "$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())" 2>&1 | tee -a "$summary"
if [[ -z "$prefix" ]]; then
  fail "no pip torch (python3 -c 'import torch' fails): set CMAKE_PREFIX_PATH to a CUDA LibTorch"
  prefix="${CMAKE_PREFIX_PATH:-}"
fi
for tool in cmake g++; do command -v $tool >/dev/null || fail "$tool missing"; done

if [[ -z "$lmx" ]]; then
  say "== build (CMAKE_PREFIX_PATH=$prefix)"
  build="$root/build-cuda"
  check configure 300 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLMX_BUILD_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$prefix" -Wno-dev || { tail -20 "$out/configure.log"; exit 1; }
  grep -E "backends|Torch|CUDA" "$out/configure.log" | tee -a "$summary"
  check build 420 cmake --build "$build" -j "$(nproc)" || { grep -m10 error "$out/build.log"; exit 1; }
  lmx="$build/lmx"
fi
check version 30 "$lmx" --version && cat "$out/version.log" | tee -a "$summary"

say "== training: textbook, $steps steps, seed 3"
small=(train configs/textbook.yaml --seeds 3 --set train.steps="$steps" --set train.eval_every=100)
cd "$root"
check cpu 300 "$lmx" -q "${small[@]}" --out "$out/cpu"
check cuda_fp32 300 "$lmx" -q --device cuda "${small[@]}" --out "$out/cuda_fp32"
check cuda_bf16 300 "$lmx" -q --device cuda "${small[@]}" --set train.precision=bf16 --out "$out/cuda_bf16"
export LMX_DIST_TIMEOUT=60
# 2 workers: NCCL where each has a GPU of its own, else Gloo (lmx decides; the log says which).
check dp_auto 300 "$lmx" --device cuda launch --nproc 2 -- "${small[@]}" --out "$out/dp_auto"
grep -m1 -o "rank 0 of 2 ([^)]*)" "$out/dp_auto.log" | sed 's/^/info  dp_auto: /' | tee -a "$summary"
check dp_gloo 300 env LMX_DIST_BACKEND=gloo "$lmx" -q --device cuda launch --nproc 2 -- "${small[@]}" --out "$out/dp_gloo"
gpus=$("$py" -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
if [[ "$gpus" -ge 2 ]]; then
  check dp_nccl 300 env LMX_DIST_BACKEND=nccl "$lmx" -q --device cuda launch --nproc 2 -- "${small[@]}" --out "$out/dp_nccl"
else
  # One GPU: NCCL refuses two ranks on it; what matters is a clear error within the timeout.
  t0=$SECONDS
  timeout 200 env LMX_DIST_BACKEND=nccl "$lmx" -q --device cuda launch --nproc 2 -- "${small[@]}" \
    --out "$out/dp_nccl" > "$out/dp_nccl_1gpu.log" 2>&1
  say "info  dp_nccl_1gpu: exit $? after $((SECONDS - t0)) s: $(grep -m2 'error' "$out/dp_nccl_1gpu.log" | tr '\n' ' ')"
fi

say "== numbers (train loss at the last step; test ppl)"
value() {  # value CSV COLUMN: the column in the last row of a CSV whose seed is 3 (or has none)
  [[ -f "$1" ]] || { echo "n/a"; return; }
  awk -F, -v col="$2" 'NR == 1 { for (i = 1; i <= NF; ++i) { if ($i == col) c = i; if ($i == "seed") s = i }; next }
    !s || $s == 3 { v = $c } END { print (c && v != "" ? v : "n/a") }' "$1"
}
for run in cpu cuda_fp32 cuda_bf16 dp_auto dp_gloo dp_nccl; do
  [[ -d "$out/$run" ]] || continue
  say "$(printf '%-10s loss %-10s test ppl %-8s wall s %s' "$run" "$(value "$out/$run/seed3/metrics.csv" train_loss)" \
    "$(value "$out/$run/summary.csv" test_ppl)" "$(value "$out/$run/summary.csv" wall_s)")"
done
# fp32 on CUDA and data-parallel runs: the CPU's test ppl within 1%; bf16 within 5%.
close() {  # close RUN TOLERANCE
  local a b
  a=$(value "$out/cpu/summary.csv" test_ppl); b=$(value "$out/$1/summary.csv" test_ppl)
  if awk -v a="$a" -v b="$b" -v t="$2" 'BEGIN { exit !(a + 0 > 0 && b + 0 > 0 && (b - a) / a < t && (a - b) / a < t) }'; then
    say "ok    $1 test ppl $b vs cpu $a (within $2)"
  else
    fail "$1 test ppl $b vs cpu $a (tolerance $2)"
  fi
}
close cuda_fp32 0.01
close cuda_bf16 0.05
[[ -d "$out/dp_auto" ]] && close dp_auto 0.01
[[ -d "$out/dp_gloo" ]] && close dp_gloo 0.01
[[ -f "$out/dp_nccl/summary.csv" ]] && close dp_nccl 0.01
say "== $([[ $failed == 0 ]] && echo 'all checks passed' || echo 'some checks failed')"
exit $failed
