#!/usr/bin/env bash
# Every lecture table: runs the five section scripts in order, then regenerates
# docs/RESULTS.md from results/ (full mode only).
#   scripts/lecture/all.sh [--quick] [--jobs N] [--out DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SECONDS=0
for s in 01_ffn 02_norm 03_attention 04_position 05_recipe; do
  "$here/$s.sh" "$@"
done
# The report reads the tables where the sections wrote them (--out DIR, default results/).
quick=0 prev="" res=()
for a in "$@"; do
  [[ "$a" == --quick ]] && quick=1
  [[ "$prev" == --out ]] && res=(--results "$a")
  prev="$a"
done
((quick)) || "$here/report.sh" "${res[@]}"
echo "== all sections done in ${SECONDS}s" >&2
