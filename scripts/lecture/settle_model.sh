#!/usr/bin/env bash
# The lecture's model settled once, by a rule written and committed before any candidate's
# numbers existed (issue 61). Run once, before the lecture's sections; the winner goes into
# configs/textbook.yaml (every preset and lecture spec extends it).
#   scripts/lecture/settle_model.sh [--quick] [--jobs N] [--out DIR]
# Candidates: three output heads x two optimizers (experiments/00_settle_model.yaml says what
# each is): untied, tied (nn.Linear's init), tied_sqrt (tied, embed_scale sqrt_d); adamw
# (weight decay 0.01, ours) and adam (weight decay 0, the optimizer the lecture names).
#
# THE RULE. It uses only what the lecture states about its untrained models and its base
# model, never a finding under test (lecture lines of ../shared/spec/lecture/000_*.txt):
#  1. Size gate (L77 "10 万参数", L226 "参数量都约为 10.6 万"): the textbook model's parameter
#     count rounds to 10.6 万 at the lecture's precision, |params - 106,000| < 500. A candidate
#     that fails is out whatever its score.
#  2. Init score I (per head; the optimizer plays no part at init): `lmx probe gradnorm` at depths
#     6, 12, 24, init seeds 0-7; the mean over seeds of each of six numbers the lecture states (L107):
#     post-norm total at 6 layers 3.5, at 24 layers 8.1, its last layer's FFN output matrix at
#     24 layers ~1; pre-norm last layer at 6 layers 0.87, at 24 layers 0.44; pre-norm total at 24
#     over at 6 ("基本不涨": 1, taken as the ratio of the seed means). I = the mean over the six
#     of |ln(ours / lecture's)|.
#  3. Trained score T (per candidate): the textbook preset with the candidate's keys, 6 epochs,
#     training seeds 0-7: (a) the gap to the truth, mean over seeds of ln(test ppl / true test
#     ppl), against the lecture's ln(3.851 / 3.655) = 0.05224 (L40, L209); (b) the seed-to-seed
#     difference, the mean over all pairs of seeds of |test ppl_i - test ppl_j| (an unbiased
#     estimate of E|X1 - X2|, what the lecture's one pair measures), against 0.034 (L42).
#     T = (|ln(gap / 0.05224)| + |ln(diff / 0.034)|) / 2.
#  4. Score = (I + T) / 2. The lowest score among the candidates through the gate is adopted;
#     an exact tie goes to the candidate listed first in the spec. Spread (seed SD of every number)
#     is shown beside each mean; it does not enter the score.
# Tables (results/settle_model/): init/<head>_s<seed>_totals.csv (the probe), init.csv (per head:
# the six means, their seed SDs, I), train.csv (the sweep's per-run summary), decision.csv and
# decision.md (per candidate: params, gate, I, gap, diff, T, score; the winner).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lecture_init settle_model "$@"

heads=(untied tied tied_sqrt)
init_seeds=(0 1 2 3 4 5 6 7)
depths=6,12,24
if ((QUICK)); then init_seeds=(0); depths=2,4; fi
declare -A head_keys=(
  [untied]='{tie_embeddings: false, embed_scale: 1}'
  [tied]='{tie_embeddings: true, tied_init: linear, embed_scale: 1}'
  [tied_sqrt]='{tie_embeddings: true, tied_init: linear, embed_scale: sqrt_d}'
)
mkdir -p "$R/init"
for head in "${heads[@]}"; do
  printf 'extends: %s\nmodel: %s\n' "$ROOT/configs/textbook.yaml" "${head_keys[$head]}" > "$RUNS/head-$head.yaml"
  for s in "${init_seeds[@]}"; do
    in_parallel slot "$LMX" -q --threads 1 probe gradnorm --depths "$depths" --seed "$s" \
      --config "$RUNS/head-$head.yaml" --csv "$R/init/${head}_s$s.csv" > /dev/null
  done
done
in_parallel sweep 00_settle_model.yaml train train
wait_all
# (the probe's per-layer tables are not needed: only its totals)
rm -f "$R"/init/*_s?.csv

# init.csv: per head, the six numbers' means and seed SDs over the init seeds, and I.
hi="${depths##*,}" lo="${depths%%,*}"
{
  echo "head,seeds,post_total_lo,sd,post_total_hi,sd,post_last_hi,sd,pre_last_lo,sd,pre_last_hi,sd,pre_total_lo,sd,pre_total_hi,sd,pre_total_ratio,I"
  for head in "${heads[@]}"; do
    for f in "$R/init/${head}"_s[0-9]*_totals.csv; do tail -n +2 "$f"; done |
      awk -F, -v head="$head" -v lo="$lo" -v hi="$hi" '
        function add(k, v) { n[k]++; s[k] += v; s2[k] += v * v }
        function mean(k) { return s[k] / n[k] }
        function sd(k) { v = n[k] > 1 ? (s2[k] - n[k] * mean(k) ^ 2) / (n[k] - 1) : 0; return sqrt(v > 0 ? v : 0) }
        function d(ours, lect) { return ours > 0 ? (log(ours / lect) < 0 ? -log(ours / lect) : log(ours / lect)) : 1e9 }
        $1 == lo && $2 == "post" { add("post_total_lo", $4) }
        $1 == hi && $2 == "post" { add("post_total_hi", $4); add("post_last_hi", $6) }
        $1 == lo && $2 == "pre" { add("pre_last_lo", $6); add("pre_total_lo", $4) }
        $1 == hi && $2 == "pre" { add("pre_last_hi", $6); add("pre_total_hi", $4) }
        END {
          ratio = mean("pre_total_hi") / mean("pre_total_lo")
          I = (d(mean("post_total_lo"), 3.5) + d(mean("post_total_hi"), 8.1) + d(mean("post_last_hi"), 1.0) \
               + d(mean("pre_last_lo"), 0.87) + d(mean("pre_last_hi"), 0.44) + d(ratio, 1.0)) / 6
          printf "%s,%d", head, n["post_total_lo"]
          split("post_total_lo post_total_hi post_last_hi pre_last_lo pre_last_hi pre_total_lo pre_total_hi", ks, " ")
          for (i = 1; i <= 7; i++) printf ",%.4f,%.4f", mean(ks[i]), sd(ks[i])
          printf ",%.4f,%.4f\n", ratio, I
        }'
  done
} > "$R/init.csv"

# decision.csv: per candidate (sweep point head-optimizer), the gate, I, the trained numbers, T and
# the score; decision.md adds the winner.
awk -F, '
  FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
  FILENAME ~ /init.csv$/ { I[$1] = $(col[FILENAME, "I"]); next }
  $(col[FILENAME, "seed"]) ~ /^[0-9]+$/ {  # the per-run rows (not the mean, std, ... rows)
    if ($(col[FILENAME, "status"]) != "ok") { print "settle_model: run " $1 " seed " $2 " is " $3 " (every candidate run must finish)" > "/dev/stderr"; exit 1 }
    c = $(col[FILENAME, "name"]); if (!(c in k)) { k[c] = ++m; name[m] = c }
    j = ++n[c]; p[c, j] = $(col[FILENAME, "test_ppl"]); params[c] = $(col[FILENAME, "params"])
    gap[c] += log($(col[FILENAME, "test_ppl"]) / $(col[FILENAME, "true_test_ppl"]))
  }
  function abs(x) { return x < 0 ? -x : x }
  END {
    print "candidate,head,optimizer,params,gate,seeds,I,gap_nats,gap_pct,seed_diff,ppl_mean,ppl_sd,T,score"
    for (i = 1; i <= m; i++) {
      c = name[i]; split(c, ho, "-"); N = n[c]; g = gap[c] / N
      s = 0; q = 0; for (a = 1; a <= N; a++) { s += p[c, a]; for (b = a + 1; b <= N; b++) q += abs(p[c, a] - p[c, b]) }
      diff = N > 1 ? q / (N * (N - 1) / 2) : 0; mu = s / N
      v = 0; for (a = 1; a <= N; a++) v += (p[c, a] - mu) ^ 2; sd = N > 1 ? sqrt(v / (N - 1)) : 0
      gate = abs(params[c] - 106000) < 500 ? "pass" : "fail"
      T = ((g > 0 ? abs(log(g / 0.05224)) : 1e9) + (diff > 0 ? abs(log(diff / 0.034)) : 1e9)) / 2
      printf "%s,%s,%s,%d,%s,%d,%.4f,%.5f,%.2f,%.4f,%.4f,%.4f,%.4f,%.4f\n", c, ho[1], ho[2], params[c], gate, N, I[ho[1]], g, 100 * (exp(g) - 1), diff, mu, sd, T, (I[ho[1]] + T) / 2
    }
  }' "$R/init.csv" "$R/train.csv" > "$R/decision.csv"
winner="$(awk -F, 'NR > 1 && $5 == "pass" && (best == "" || $14 < bs) { best = $1; bs = $14 } END { print best }' "$R/decision.csv")"
{
  echo "## The model settled (scripts/lecture/settle_model.sh's rule)"
  echo
  echo "Init (lmx probe gradnorm, depths $depths, init seeds ${init_seeds[*]}; mean and seed SD; lecture: post total 3.5 → 8.1, post last ~1, pre last 0.87 → 0.44, pre total barely grows):"
  echo
  csv_md "$R/init.csv"
  echo
  echo "Trained (textbook, 6 epochs, training seeds of experiments/00_settle_model.yaml; lecture: gap ln(3.851/3.655) = 0.0522 nats, +5.4%; seed difference 0.034):"
  echo
  csv_md "$R/decision.csv"
  echo
  echo "Adopted: **${winner:-none (no candidate passed the size gate)}**"
} > "$R/decision.md"
cat "$R/decision.md"
lecture_done
