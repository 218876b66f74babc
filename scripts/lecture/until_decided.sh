#!/usr/bin/env bash
# Seeds until decided (issue 61): a verdict inconclusive at its fixed seed count gets more seeds in
# rounds, under a group-sequential plan committed before any of its rounds ran (verdicts.sh):
# looks at fixed seed counts up to a cap, every test at 0.05 / (the number of looks), so that over
# all looks a false decision stays ≤ 5% (tests/test_compare.cpp checks it by simulation). Run
# after scripts/lecture/all.sh, outside its 20-minute budget; report.sh reads the rounds.
#   scripts/lecture/until_decided.sh [--quick] [--jobs N] [--out DIR]
# First user: R2's RoPE step (05_recipe.sh's one-change-at-a-time table, seeds 0-5 = the first
# look): rounds of `lmx ablate --one-at-a-time` on the next seeds up to each look (10, 14, 18),
# stopping at the first look that decides. Tables (results/until_decided/):
#   ablation_seeds_roundK.csv  the round's lmx ablate summary (the seeds it added)
#   looks.csv                  per look reached: seeds, verdict, the comparisons
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/verdicts.sh"
lecture_init until_decided "$@"
trap 'rm -f "$CMP_TMP" "${RISE:-}"; [[ -z "${JOBSERVER_DIR:-}" ]] || rm -rf "$JOBSERVER_DIR"' EXIT
main="$(dirname "$R")/05_recipe/ablation_seeds.csv"
[[ -f "$main" ]] || { echo "until_decided.sh: $main is missing; run scripts/lecture/05_recipe.sh first" >&2; exit 2; }
RISE="$(mktemp "${TMPDIR:-/tmp}/lmx-rise.XXXXXX")"
tables=("$main")
echo "look,seeds,verdict,comparisons" > "$R/looks.csv"
rise_table "${tables[@]}" > "$RISE"
have="$(rope_seeds "$RISE")"
round=0 look=0
for n in $(rope_looks); do
  look=$((look + 1))
  if ((n > have)); then  # a round: the seeds from have to n − 1
    round=$((round + 1))
    ablate=(-q ablate --one-at-a-time --seeds "$(seq -s, "$have" $((n - 1)))" --jobs "$JOBS" --out "$RUNS/round$round" "${ONE_PASS[@]}")
    ((QUICK)) && ablate+=(--set train.steps=30 --set train.eval_every=0 "${TINY[@]}")
    echo "== until_decided: round $round, seeds $have-$((n - 1))" >&2
    "$LMX" "${ablate[@]}" > /dev/null
    cp "$RUNS/round$round/summary.csv" "$R/ablation_seeds_round$round.csv"
    tables+=("$R/ablation_seeds_round$round.csv")
    have="$n"
  fi
  rise_table "${tables[@]}" > "$RISE"
  IFS='|' read -r text v <<< "$(rope_step_look "$RISE" "$n")"
  echo "$look,$n,\"${v//\"/}\",\"${text//\"/}\"" >> "$R/looks.csv"
  echo "== until_decided: look at $n seeds: $v" >&2
  [[ "$v" == *inconclusive* ]] || break
done
lecture_done
