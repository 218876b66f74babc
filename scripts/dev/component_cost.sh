#!/usr/bin/env bash
# What each component after Llama costs a training step (issue 64, item 3): lmx bench on the
# Llama preset (B 32, T 64, 1 thread) with one change at a time, in interleaved rounds (every
# variant once per round, so that a drifting VM moves them all), the median ms per step of the
# rounds and its ratio to the preset's. Prints a Markdown table; docs/PERFORMANCE.md quotes it.
#   [ONLY="llama window32 ..."] scripts/dev/component_cost.sh [ROUNDS] [LMX]
set -euo pipefail
rounds="${1:-5}"
lmx="${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/lmx}"
config="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/configs/llama.yaml"
variants=(
  "llama:"
  "qk_norm:model.qk_norm=true"
  "relu2:model.ffn=relu2"
  "softcap30:model.logit_softcap=30"
  "z_loss:train.z_loss=1e-4"
  "sandwich:model.norm_placement=sandwich"
  "init_gpt2:model.init=gpt2"
  "adam:train.optimizer=adam"
  "muon:train.optimizer=muon"
  "moe:model.ffn=moe model.moe_experts=4 model.moe_top_k=2 model.d_ff=86"
  "window32:model.sliding_window=32 model.window_global_every=2"
  "attn_softcap50:model.attn_softcap=50"
)
if [[ -n "${ONLY:-}" ]]; then  # ONLY="llama window32": those variants alone
  keep=()
  for v in "${variants[@]}"; do [[ " $ONLY " == *" ${v%%:*} "* ]] && keep+=("$v"); done
  variants=("${keep[@]}")
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for v in "${variants[@]}"; do
    name="${v%%:*}" sets=()
    for kv in ${v#*:}; do sets+=(--set "$kv"); done
    "$lmx" --threads 1 -q bench "$config" --no-decode --steps 60 --warmup 10 --csv "$tmp/b.csv" "${sets[@]}" > /dev/null 2>&1
    awk -F, -v n="$name" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print n, $c["ms_per_step"], $c["mfu"] }' \
      "$tmp/b.csv" >> "$tmp/all.txt"
  done
done
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base="$(awk '$1 == "llama" { print $2 }' "$tmp/all.txt" | median)"
echo "| change | ms/step (median of $rounds) | vs llama | MFU |"
echo "|---|---|---|---|"
for v in "${variants[@]}"; do
  name="${v%%:*}"
  ms="$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/all.txt" | median)"
  mfu="$(awk -v n="$name" '$1 == n { print $3 }' "$tmp/all.txt" | median)"
  echo "| $name | $ms | $(awk -v a="$ms" -v b="$base" 'BEGIN { printf "%+.1f%%", 100 * (a / b - 1) }') | $mfu |"
done
