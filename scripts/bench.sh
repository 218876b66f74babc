#!/usr/bin/env bash
# lmx vs its two speed peers, side by side on this machine, 1 and 2 threads on every side:
#  1. the PyTorch eager peer (../shared/bench/pytorch_eager.py): the same model shapes
#     (textbook, llama), B=32, T=64, vocab 64;
#  2. Karpathy's llm.c CPU trainer (../shared/bench/llmc/run.sh, pinned copy): its GPT-2 shape
#     (GELU-tanh, learned positions, tied embeddings; lmx runs the same shape), runs
#     interleaved with lmx, min and median per side.
# The eager comparison runs --rounds times (default 3): each round measures the sgemm peak, lmx
# and the peer one after the other; the table gives medians and the per-round speed-ups.
# Prints the Markdown tables of docs/PERFORMANCE.md and keeps the raw CSVs and logs.
#   scripts/bench.sh [--steps N] [--warmup N] [--threads "1 2"] [--recipes "textbook llama"]
#                    [--peers "eager llmc"] [--rounds N] [--llmc-runs N] [--out DIR]
# Environment: LMX (binary, default build/lmx), PEER (peer script), PYTHON (default /usr/bin/python3),
# LLMC (the llm.c runner, default ../shared/bench/llmc/run.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lmx="${LMX:-$root/build/lmx}"
peer="${PEER:-$root/../shared/bench/pytorch_eager.py}"
python="${PYTHON:-/usr/bin/python3}"
llmc="${LLMC:-$root/../shared/bench/llmc/run.sh}"
steps=60 warmup=10 threads_list="1 2" recipes="textbook llama" out="" peers="eager llmc" llmc_runs=5 rounds=3
while (($#)); do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --threads) threads_list="$2"; shift 2 ;;
    --recipes) recipes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --peers) peers="$2"; shift 2 ;;
    --llmc-runs) llmc_runs="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
# Build (or rebuild after source changes) through the launcher, unless LMX names a binary.
[[ -n "${LMX:-}" ]] || "$root/lmx" --version > /dev/null
has_peer() { [[ " $peers " == *" $1 "* ]]; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: --rounds '$rounds' is not a positive integer (e.g. --rounds 3)" >&2; exit 2; }
[[ "$llmc_runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: --llmc-runs '$llmc_runs' is not a positive integer (e.g. --llmc-runs 5)" >&2; exit 2; }
for p in $peers; do
  [[ "$p" == eager || "$p" == llmc ]] || { echo "bench.sh: --peers: unknown peer '$p' (valid: eager, llmc)" >&2; exit 2; }
done
! has_peer eager || [[ -f "$peer" ]] || { echo "bench.sh: peer script $peer not found (set PEER, or --peers llmc)" >&2; exit 2; }
! has_peer eager || "$python" -c 'import torch' 2> /dev/null || {
  echo "bench.sh: $python cannot import torch: the eager peer needs Debian's python3-torch" \
    "(apt-get install python3-torch), or --peers llmc" >&2
  exit 2
}
! has_peer llmc || [[ -x "$llmc" ]] || { echo "bench.sh: llm.c runner $llmc not found (set LLMC, or --peers eager)" >&2; exit 2; }
out="${out:-$(mktemp -d /tmp/lmx-bench.XXXXXX)}"
mkdir -p "$out"
echo "[bench] raw CSVs in $out; load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# The eager peer at its best: on an AVX-512 CPU whose OpenBLAS falls back to its Prescott
# kernels (Debian's 0.3.21 on CPUs newer than it knows), the peer runs with
# OPENBLAS_CORETYPE=SkylakeX; a value the environment already sets is kept. lmx's --version
# names the kernels OpenBLAS picked (lmx and the peer load the same libopenblas).
peer_env=()
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && "$lmx" --version | grep -q '^BLAS kernels Prescott' &&
  grep -qw avx512f /proc/cpuinfo 2> /dev/null; then
  peer_env=(OPENBLAS_CORETYPE=SkylakeX)
fi
peer_kernels="$(env "${peer_env[@]}" "$lmx" --version | sed -n 's/^BLAS kernels //p')"
echo "[bench] the eager peer's OpenBLAS kernels: ${peer_kernels:-unknown}" >&2

bf16=0
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo 2> /dev/null && bf16=1
if has_peer eager; then
echo "## lmx vs the PyTorch eager peer"
echo
for round in $(seq "$rounds"); do
for n in $threads_list; do
  "$lmx" -q --threads "$n" bench --peak --csv "$out/peak_${n}_r$round.csv" >/dev/null
done
for recipe in $recipes; do
  cfg="$root/configs/$recipe.yaml"
  # The peer's d_ff must be the one lmx resolves (llama: d_ff auto).
  dff=$("$lmx" -q params "$cfg" --set model.vocab_size=64 | grep -o 'd_ff [0-9]*' | head -1 | cut -d' ' -f2 || true)
  for n in $threads_list; do
    "$lmx" -q --threads "$n" bench "$cfg" --batch 32 --seq-len 64 --vocab 64 --steps "$steps" --warmup "$warmup" \
      --decode-len 512 --csv "$out/lmx_${recipe}_${n}_r$round.csv" >/dev/null
    extra=()
    [[ "$dff" =~ ^[0-9]+$ ]] && extra=(--d-ff "$dff")
    env "${peer_env[@]}" OMP_NUM_THREADS="$n" OPENBLAS_NUM_THREADS="$n" "$python" "$peer" --recipe "$recipe" --threads "$n" \
      --batch 32 --seq-len 64 --steps "$steps" --warmup "$warmup" "${extra[@]}" >"$out/peer_${recipe}_${n}_r$round.csv"
    # train.precision bf16 (the linear layers' GEMMs in bf16 through oneDNN) where the CPU has bf16
    # instructions (AVX512-BF16 or AMX): its own row, against the same fp32 peer run (not the
    # same arithmetic, so not an entry in the fp32 comparison).
    if ((bf16)); then
      "$lmx" -q --threads "$n" bench "$cfg" --set train.precision=bf16 --batch 32 --seq-len 64 --vocab 64 \
        --steps "$steps" --warmup "$warmup" --decode-len 512 --csv "$out/lmx_${recipe}_${n}_bf16_r$round.csv" >/dev/null
    fi
  done
done
done

"$python" - "$out" "$threads_list" "$recipes" "$rounds" "${peer_kernels:-unknown}" <<'EOF'
import csv, os, statistics, sys
out, threads, recipes, rounds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
print(f"The peer's OpenBLAS kernels: {sys.argv[5]}; lmx's linear layers run on oneDNN.")
print()
def row(path):
    with open(path) as f:
        return list(csv.DictReader(f))[-1]
med = statistics.median
print(f"{rounds} round(s), each: sgemm peak, then per recipe and thread count lmx and the peer one after the "
      "other. ms/step, GFLOP/s, MFU and decode columns: medians over the rounds (MFU against the same "
      "round's sgemm peak; a bf16 row's against the bf16 GEMM rate lmx bench measured); lmx runs its default "
      "train.step_parts (2: at once on two threads, one after another on one); speed-up: the median of the rounds' peer ÷ lmx, with their range; bf16 ÷ fp32: "
      "the median of the rounds' lmx bf16 step ÷ lmx fp32 step, with their range.")
print()
print("| recipe | threads | params lmx / peer | lmx ms/step | peer ms/step | speed-up (rounds) | lmx GFLOP/s | "
      "matmul peak GFLOP/s | lmx MFU | peer MFU | KV decode tok/s | recompute tok/s | KV speed-up | lmx peak RSS MiB | "
      "bf16 ÷ fp32 step (rounds) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in recipes:
    for n in threads:
        for suffix, label in (("", r), ("_bf16", f"{r} (lmx bf16)")):
            rs = [k for k in range(1, rounds + 1) if os.path.exists(f"{out}/lmx_{r}_{n}{suffix}_r{k}.csv")]
            if not rs:
                continue
            L = [row(f"{out}/lmx_{r}_{n}{suffix}_r{k}.csv") for k in rs]
            P = [row(f"{out}/peer_{r}_{n}_r{k}.csv") for k in rs]
            peaks = [float(row(f"{out}/peak_{n}_r{k}.csv")["peak_gflops"]) for k in rs]
            lms = [float(l["ms_per_step"]) for l in L]
            pms = [float(p["ms_per_step"]) for p in P]
            gflop = float(L[0]["gflop_per_step"])
            ratios = [p / l for p, l in zip(pms, lms)]
            spread = f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""
            # MFU against the round's fp32 sgemm peak; the bf16 row's against the bf16 GEMM rate that
            # lmx bench measured in the same run (its mfu column, "vs bf16 GEMM").
            if suffix:
                mfu = f"{med(float(l['mfu']) for l in L):.0%} vs bf16 GEMM" if L[0].get("mfu_against") == "bf16_gemm" else "n/a (bf16)"
            else:
                mfu = f"{med(gflop / l * 1e3 / pk for l, pk in zip(lms, peaks)):.0%}"
            peer_mfu = med(gflop / p * 1e3 / pk for p, pk in zip(pms, peaks))
            # The bf16 step against the fp32 step of the same round (issue 48's 0.7x target).
            vs_fp32 = ""
            if suffix:
                both = [k for k in rs if os.path.exists(f"{out}/lmx_{r}_{n}_r{k}.csv")]
                bf = [float(row(f"{out}/lmx_{r}_{n}{suffix}_r{k}.csv")["ms_per_step"]) /
                      float(row(f"{out}/lmx_{r}_{n}_r{k}.csv")["ms_per_step"]) for k in both]
                if bf:
                    vs_fp32 = f"{med(bf):.2f}" + (f" ({min(bf):.2f}–{max(bf):.2f})" if len(bf) > 1 else "")
            print(f"| {label} | {n} | {L[0]['params']} / {P[0]['params']} | {med(lms):.2f} | {med(pms):.2f} | "
                  f"{med(ratios):.2f}x{spread} | {gflop / med(lms) * 1e3:.1f} | {med(peaks):.1f} | {mfu} | "
                  f"{peer_mfu:.0%} | {med(float(l['decode_kv_tok_s']) for l in L):.0f} | "
                  f"{med(float(l['decode_recompute_tok_s']) for l in L):.0f} | "
                  f"{med(float(l['kv_speedup']) for l in L):.2f}x | {max(float(l['peak_rss_mib']) for l in L):.1f} | "
                  f"{vs_fp32} |")
EOF
fi

if has_peer llmc; then
  echo
  echo "## lmx vs llm.c (train_gpt2.c, fp32 CPU reference)"
  echo
  # run.sh builds llm.c from its pinned tarball, times both sides interleaved, prints the table.
  RUNS="$llmc_runs" THREADS="$threads_list" STEPS="$steps" WARMUP="$warmup" OUT="$out/llmc" PYTHON="$python" \
    "$llmc" "$root" > "$out/llmc.log"
  cat "$out/llmc/table.md"
fi
echo "[bench] load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
