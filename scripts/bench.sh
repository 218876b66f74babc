#!/usr/bin/env bash
# lmx vs the PyTorch eager peer (../shared/bench/pytorch_eager.py), side by side on this
# machine: the same model shapes, B=32, T=64, vocab 64, 1 and 2 threads on both sides.
# Prints the Markdown table of docs/PERFORMANCE.md and keeps the raw CSVs.
#   scripts/bench.sh [--steps N] [--warmup N] [--threads "1 2"] [--recipes "textbook llama"] [--out DIR]
# Environment: LMX (binary, default build/lmx), PEER (peer script), PYTHON (default /usr/bin/python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lmx="${LMX:-$root/build/lmx}"
peer="${PEER:-$root/../shared/bench/pytorch_eager.py}"
python="${PYTHON:-/usr/bin/python3}"
steps=60 warmup=10 threads_list="1 2" recipes="textbook llama" out=""
while (($#)); do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --threads) threads_list="$2"; shift 2 ;;
    --recipes) recipes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,6p "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
# Build (or rebuild after source changes) through the launcher, unless LMX names a binary.
[[ -n "${LMX:-}" ]] || "$root/lmx" --version > /dev/null
[[ -f "$peer" ]] || { echo "bench.sh: peer script $peer not found (set PEER)" >&2; exit 2; }
out="${out:-$(mktemp -d /tmp/lmx-bench.XXXXXX)}"
mkdir -p "$out"
echo "[bench] raw CSVs in $out; load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

for n in $threads_list; do
  "$lmx" -q --threads "$n" bench --peak --csv "$out/peak_$n.csv" >/dev/null
done
for recipe in $recipes; do
  cfg="$root/configs/$recipe.yaml"
  # The peer's d_ff must be the one lmx resolves (llama: d_ff auto).
  dff=$("$lmx" -q params "$cfg" --set model.vocab_size=64 | grep -o 'd_ff [0-9]*' | head -1 | cut -d' ' -f2 || true)
  for n in $threads_list; do
    "$lmx" -q --threads "$n" bench "$cfg" --batch 32 --seq-len 64 --vocab 64 --steps "$steps" --warmup "$warmup" \
      --decode-len 512 --csv "$out/lmx_${recipe}_$n.csv" >/dev/null
    extra=()
    [[ "$dff" =~ ^[0-9]+$ ]] && extra=(--d-ff "$dff")
    OMP_NUM_THREADS="$n" OPENBLAS_NUM_THREADS="$n" "$python" "$peer" --recipe "$recipe" --threads "$n" \
      --batch 32 --seq-len 64 --steps "$steps" --warmup "$warmup" "${extra[@]}" >"$out/peer_${recipe}_$n.csv"
  done
done

"$python" - "$out" "$threads_list" "$recipes" <<'EOF'
import csv, sys
out, threads, recipes = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def row(path):
    with open(path) as f:
        return list(csv.DictReader(f))[-1]
print("| recipe | threads | params lmx / peer | lmx ms/step | peer ms/step | speed-up | lmx GFLOP/s | "
      "matmul peak GFLOP/s | lmx MFU | peer MFU | KV decode tok/s | recompute tok/s | KV speed-up | lmx peak RSS MiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in recipes:
    for n in threads:
        l, p = row(f"{out}/lmx_{r}_{n}.csv"), row(f"{out}/peer_{r}_{n}.csv")
        peak = float(row(f"{out}/peak_{n}.csv")["peak_gflops"])
        lms, pms = float(l["ms_per_step"]), float(p["ms_per_step"])
        gflop = float(l["gflop_per_step"])
        print(f"| {r} | {n} | {l['params']} / {p['params']} | {lms:.2f} | {pms:.2f} | {pms / lms:.2f}x | "
              f"{gflop / lms * 1e3:.1f} | {peak:.1f} | {gflop / lms * 1e3 / peak:.0%} | {gflop / pms * 1e3 / peak:.0%} | "
              f"{l['decode_kv_tok_s']} | {l['decode_recompute_tok_s']} | {l['kv_speedup']}x | {l['peak_rss_mib']} |")
EOF
echo "[bench] load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
