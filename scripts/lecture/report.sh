#!/usr/bin/env bash
# Writes docs/RESULTS.md from the tables and figures under results/ (a full run of
# scripts/lecture/all.sh), with a verdict for every lecture claim computed from those
# tables, and the hand-written discussion in docs/results_notes.md.
#   scripts/lecture/report.sh [--results DIR] [--out FILE]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"  # ROOT, csv_md
RES="$ROOT/results"
OUT="$ROOT/docs/RESULTS.md"
while (($#)); do
  case "$1" in
    --results) RES="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    *) echo "report.sh: unknown option '$1' (valid: --results DIR, --out FILE)" >&2; exit 2 ;;
  esac
  shift
done
for s in 01_ffn 02_norm 03_attention 04_position 05_recipe; do
  [[ -f "$RES/$s/wall_time.txt" ]] || { echo "report.sh: $RES/$s is missing; run scripts/lecture/$s.sh first" >&2; exit 2; }
done
rel="$(realpath --relative-to="$(dirname "$OUT")" "$RES")"

# agg CSV NAME STAT COLUMN: an aggregate (mean/std/...) or seed row's column of a summary.csv.
agg() {
  awk -F, -v n="$2" -v s="$3" -v col="$4" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                                           $1 == n && $2 == s { print $c[col]; exit }' "$1"
}
# cell CSV KEYCOL KEY COLUMN: the first row whose KEYCOL equals KEY.
cell() {
  awk -F, -v kc="$2" -v k="$3" -v col="$4" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                                            $c[kc] == k { print $c[col]; exit }' "$1"
}
# verdict EXPR: "reproduced" when the awk expression is true, else "not reproduced".
# (n/a when a number it needs is missing: awk then fails to parse the expression).
verdict() {
  local rc=0
  awk "BEGIN { exit !($1) }" 2> /dev/null || rc=$?
  case $rc in 0) echo "**reproduced**" ;; 1) echo "**not reproduced**" ;; *) echo "n/a (missing numbers)" ;; esac
}
# Verdicts with statistics (issue 30's rules; issue 45 replaced their percentile bootstrap, which
# excluded a zero difference in 11% of 5-seed cases instead of 5%, after the run they judge).
# `lmx compare A B --metric M --margin TIE_MARGIN` gives the mean difference d = A − B over the
# seeds with its 95% Student-t interval (paired by seed when both sides hold the same seeds: t on
# the per-seed differences, df n − 1; Welch's otherwise), the exact permutation p-value (sign
# flips of the per-seed differences; unpaired, every relabeling of the pooled seeds) and the
# equivalence test (TOST) at m = TIE_MARGIN × |mean of B| (1%: the lecture's "two seeds of one
# config can differ by ~1%"). A comparison's outcome is
#   A (B) wins    the 95% t-interval excludes 0 on A's (B's) side (lower ppl / loss, higher
#                 accuracy) AND the permutation p < 0.05, so that no verdict changes between the
#                 two tests. With n paired seeds the sign-flip p is never below 2/2^n (0.25 at 3,
#                 0.0625 at 5, 0.031 at 6): fewer than 6 paired seeds never make a win;
#   tie           TOST at m passes (both one-sided t-tests at 5%): the 90% t-interval lies
#                 inside [−m, m];
#   inconclusive  otherwise, saying why ("t excludes 0, permutation p 0.0625") and how many seeds
#                 the observed d and SD s would need: the smallest n with t_{0.975,n−1}·s/√n < |d|
#                 and n ≥ 6 (the permutation test; 4 a side unpaired) for a win, or with
#                 |d| + t_{0.95,n−1}·s/√n ≤ m for a tie, whichever is smaller and at least one
#                 more than now; "∞" when neither can be (d = 0 and |d| ≥ m);
#   inconclusive (k runs failed)  when a run of either side did not finish with a finite value
#                 (diverged, interrupted, NaN): a verdict that leaves out the runs that failed is
#                 biased, and no rule here says how failures count.
# lmx compare computes the tests (src/train/stats.h; its columns sig, tie, seeds_needed,
# failed_a, failed_b); this script orders them. A claim of a tie checks "tie" first. A claim of a
# winner checks the winners first; then a t-interval that excludes 0 without the permutation
# test's agreement is inconclusive (the tests disagree) before a tie is looked for. A claim is
# reproduced when every comparison it makes has the claimed outcome, not reproduced when one has
# another definite outcome, and inconclusive otherwise. Where a verdict flipped with rounding
# alone in earlier runs, the seeds were raised (01: 5 seeds), not the margin.
TIE_MARGIN=0.01
# EXPLAINED[ID]: set by a follow-up section when its one-factor intervention flips finding ID's
# verdict by the rule written before it ran (the status table at the end reads it).
declare -A EXPLAINED=()
CMP_TMP="$(mktemp "${TMPDIR:-/tmp}/lmx-compare.XXXXXX")"
trap 'rm -f "$CMP_TMP"' EXIT
# cmp A B METRIC: "diff lo hi mean_b p tost_lo tost_hi m sig tie needed needed_diff failed" ("_"
# for an empty cell, failed = failed_a + failed_b); empty when lmx compare fails (e.g. a missing
# point).
cmp() {
  "$LMX" -q compare "$1" "$2" --metric "$3" --margin "$TIE_MARGIN" --csv "$CMP_TMP" > /dev/null 2>&1 || return 0
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { n = split("diff ci_lo ci_hi mean_b p_perm tost_lo tost_hi margin sig tie seeds_needed seeds_diff", k, " ")
      for (i = 1; i <= n; i++) printf "%s ", ($c[k[i]] == "" ? "_" : $c[k[i]])
      print $c["failed_a"] + $c["failed_b"] }' "$CMP_TMP"
}
# outcome CLAIM HIGHER "FIELDS" (cmp's): A, B, tie, "inconclusive: WHY" or na. CLAIM is tie or
# win (which outcome is checked first); HIGHER is 1 when higher values are better.
outcome() {
  local d lo hi mb p tlo thi m sig tie need need_diff failed a=0 b=0
  read -r d lo hi mb p tlo thi m sig tie need need_diff failed <<< "$3"
  [[ -z "$failed" ]] && { echo na; return; }
  ((failed > 0)) && { echo "inconclusive: $failed run$( ((failed > 1)) && echo s) failed"; return; }
  [[ "$lo" == _ ]] && { echo "inconclusive: one seed on a side, no interval"; return; }
  if [[ "$sig" == "+" && "$2" == 1 || "$sig" == "-" && "$2" == 0 ]]; then a=1
  elif [[ "$sig" == "+" || "$sig" == "-" ]]; then b=1; fi
  local excludes=0
  awk -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(lo > 0 || hi < 0) }' && excludes=1
  if [[ "$1" == tie && "$tie" == 1 ]]; then echo tie
  elif ((a)); then echo A
  elif ((b)); then echo B
  elif ((excludes)); then
    echo "inconclusive: t excludes 0, permutation p $(awk -v p="$p" 'BEGIN { printf "%.3g", p }'); $(needs "$need_diff")"
  elif [[ "$tie" == 1 ]]; then echo tie
  else echo "inconclusive: $(needs "$need")"; fi
}
# needs N: "needs ≥ N seeds", or "seeds needed ∞" when no number would decide.
needs() { if [[ "$1" == inf ]]; then echo "seeds needed ∞"; else echo "needs ≥ $1 seeds"; fi; }
# claim_verdict WANT OUTCOME...: the claim's verdict from its comparisons' outcomes.
claim_verdict() {
  local want="$1" o any_other=0 any_inc=0; shift
  for o in "$@"; do
    [[ "$o" == na ]] && { echo "n/a (missing numbers)"; return; }
    if [[ "$o" == inconclusive* ]]; then any_inc=1; elif [[ "$o" != "$want" ]]; then any_other=1; fi
  done
  if ((any_other)); then echo "**not reproduced**"; elif ((any_inc)); then echo "**inconclusive**"; else echo "**reproduced**"; fi
}
# ci_text "FIELDS" DIGITS [tie]: "+0.012 [-0.004, +0.027], p 0.0625": the difference, its 95%
# t-interval and the permutation p; with "tie" also the 90% interval TOST reads and the margin.
ci_text() {
  local d lo hi mb p tlo thi m rest; read -r d lo hi mb p tlo thi m rest <<< "$1"
  [[ -z "$rest" ]] && { echo "n/a"; return; }
  [[ "$d" == _ ]] && { echo "no finished run on a side"; return; }
  [[ "$lo" == _ ]] && { awk -v d="$d" -v k="${2:-3}" 'BEGIN { printf "%+.*f (one seed: no interval)", k, d }'; return; }
  awk -v d="$d" -v lo="$lo" -v hi="$hi" -v p="$p" -v tlo="$tlo" -v thi="$thi" -v m="$m" -v k="${2:-3}" -v tie="${3:-}" 'BEGIN {
    printf "%+.*f [%+.*f, %+.*f], p %.3g", k, d, k, lo, k, hi, p
    if (tie != "") printf ", 90%% [%+.*f, %+.*f] vs ±%.*f", k, tlo, k, thi, k, m }'
}
# tie_claim CSV METRIC NAME...: every pair of the named points ties. Prints "TEXT|VERDICT".
tie_claim() {
  local csv="$1" metric="$2" text="" outs=() i j c; shift 2
  local names=("$@")
  for ((i = 0; i < ${#names[@]}; i++)); do
    for ((j = i + 1; j < ${#names[@]}; j++)); do
      c="$(cmp "$csv:${names[i]}" "$csv:${names[j]}" "$metric")"
      outs+=("$(outcome tie 0 "$c")")
      text+="${text:+; }${names[i]} − ${names[j]} $(ci_text "$c" 3 tie) (${outs[-1]})"
    done
  done
  echo "$text|$(claim_verdict tie "${outs[@]}")"
}
# win_claim CSV METRIC HIGHER WINNER LOSER...: WINNER beats each LOSER. Prints "TEXT|VERDICT".
win_claim() {
  local csv="$1" metric="$2" up="$3" w="$4" text="" outs=() l c; shift 4
  for l in "$@"; do
    c="$(cmp "$csv:$w" "$csv:$l" "$metric")"
    outs+=("$(outcome win "$up" "$c")")
    text+="${text:+; }$w − $l $(ci_text "$c" 4) (${outs[-1]})"
  done
  echo "$text|$(claim_verdict A "${outs[@]}")"
}
# seeds_where CSV NAME COLUMN CONDITION: "k/n", the seeds (numbered rows) of NAME whose COLUMN
# value v satisfies the awk CONDITION on v, e.g. 'v > 21'.
seeds_where() {
  awk -F, -v n="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == n && $2 ~ /^[0-9]+$/ { t++; v = $c[col] + 0; if ('"$4"') k++ }
    END { printf "%d/%d", k, t }' "$1"
}
# every_seed "k/n": true when all n (> 0) seeds hold.
every_seed() { [[ "${1%/*}" == "${1#*/}" && "${1#*/}" != 0 ]]; }
# per_seed "k/n": reproduced when every seed holds, not reproduced when none does, else
# inconclusive (the seeds disagree).
per_seed() {
  local k="${1%/*}" n="${1#*/}"
  if ((n == 0)); then echo "n/a (missing numbers)"
  elif ((k == n)); then echo "**reproduced** ($1 seeds)"
  elif ((k == 0)); then echo "**not reproduced** (0/$n seeds)"
  else echo "**inconclusive** (only $1 seeds)"; fi
}
# seed_values CSV NAME COLUMN DIGITS: the seeds' values, "a / b / ...".
seed_values() {
  awk -F, -v n="$2" -v col="$3" -v d="${4:-2}" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == n && $2 ~ /^[0-9]+$/ { printf "%s%.*f", (k++ ? " / " : ""), d, $c[col] }' "$1"
}
# nseeds CSV NAME: "5 seeds" / "1 seed", the seed rows of NAME in a summary (for headings: the full
# run and --lecture-runs run different counts).
nseeds() { awk -F, -v n="$2" 'NR > 1 && $1 == n && $2 ~ /^[0-9]+$/ { k++ } END { print k + 0, (k == 1 ? "seed" : "seeds") }' "$1"; }
fmt() { awk -v v="$1" -v d="${2:-3}" 'BEGIN { if (v == "") print "n/a"; else printf "%.*f", d, v }'; }
pm() { echo "$(fmt "$1" "${3:-3}") ± $(fmt "$2" "${3:-3}")"; }
include() { echo; cat "$1"; echo; }
figure() { echo; echo "![$2]($rel/$1)"; echo; }

F="$RES/01_ffn/ffn_training.csv"
declare -A ppl sd
for a in relu gelu silu swiglu; do ppl[$a]="$(agg "$F" "$a" mean test_ppl)"; sd[$a]="$(agg "$F" "$a" std test_ppl)"; done
S="$RES/01_ffn/sparsity_mean.csv"
layer_mean() { awk -F, -v p="$1" -v col="$2" 'NR > 1 && $1 == p { s += $col; n++ } END { if (n) printf "%.4f", s / n }' "$S"; }
W="$RES/02_norm/warmup.csv"
uni="$(agg "$W" post-lr1e-3 mean unigram_test_ppl)"
wv() { agg "$W" "$1" mean final_val_ppl; }
wsd() { agg "$W" "$1" std final_val_ppl; }
N="$RES/02_norm/layernorm_vs_rmsnorm.csv"
G="$RES/02_norm/gradnorm_totals.csv"
U="$RES/03_attention/uptrain.csv"
up() {  # up KV INIT STEPS -> test ppl (mean over seeds)
  awk -F, -v k="$1" -v i="$2" -v s="$3" 'NR > 1 && $1 == k && $2 == i && $3 == s { t += $6; n++ } END { if (n) printf "%.4f", t / n }' "$U"
}
src_ppl="$(awk -F, 'NR > 1 && $2 == "source" { print $6; exit }' "$U")"
budget="$(awk -F, 'NR > 1 && $2 == "source" { print $3; exit }' "$U")"
read -r s1 s2 <<< "$(awk -F, 'NR > 1 && $2 == "mean" && $3 != "0" { if (!(($3) in seen)) { seen[$3] = 1; l = l " " $3 } } END { print l }' "$U")"
X="$RES/04_position/extrapolation_mean.csv"
xr() { awk -F, -v p="$1" -v r="$2" '$1 == p && $2 == r { print $4 }' "$X"; }
first_range="$(awk -F, 'NR == 2 { print $2 }' "$X")"
last_range="$(awk -F, 'NR > 1 { r = $2 } END { print r }' "$X")"
P="$RES/05_recipe/recipes.csv"
ST="$RES/05_recipe/stability.csv"
st() { awk -F, -v r="$1" -v col="$2" 'NR > 1 && $1 == r { s += $col; n++ } END { if (n) printf "%.4f", s / n }' "$ST"; }

{
cat <<EOM
# Results: the lecture's experiments on the garden world

Generated by \`scripts/lecture/report.sh\` from the tables and figures that
\`scripts/lecture/all.sh\` wrote under \`results/\`; every number below was measured by that
run. The verdicts are computed from those tables by the rules stated next to each claim;
the discussion in [results_notes.md](results_notes.md) is written by hand. Our garden
world is our own (see GARDEN.md), so trained numbers differ from the lecture's: what is
tested is each claim (what beats what, what collapses, what extrapolates).

## The run

| section | wall time (s) | jobs | date | commit |
|---|---|---|---|---|
EOM
for s in 01_ffn 02_norm 03_attention 04_position 05_recipe; do
  f="$RES/$s/wall_time.txt"
  g() { sed -n "s/^$1: //p" "$f"; }
  echo "| $s | $(g wall_s) | $(g jobs) | $(g date) | $(g commit) |"
done
echo
echo "Machine: $(sed -n 's/^machine: //p' "$RES/01_ffn/wall_time.txt"); $(sed -n 's/^lmx: //p' "$RES/01_ffn/wall_time.txt")."
# all.sh writes the whole run's time (with the sections at once, their times overlap).
if [[ -f "$RES/wall_time.txt" ]]; then
  echo "Total: $(awk '/^all sections:/ { printf "%.1f min", $3 / 60 }' "$RES/wall_time.txt") (scripts/lecture/all.sh: $(sed -n 's/^scheduler: //p' "$RES/wall_time.txt"); section times overlap when the sections ran at once)."
else
  echo "Total: $(cat "$RES"/*/wall_time.txt | awk '/^wall_s:/ { s += $2 } END { printf "%.1f min", s / 60 }')."
fi

# plateau CSV: the seeds whose far-pronoun accuracy (< 0.9) shows they never learned agreement.
plateau() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $2 ~ /^[0-9]+$/ && $c["status"] == "ok" && $c["far_pronoun_acc"] != "" && $c["far_pronoun_acc"] + 0 < 0.9 {
      printf "%s%s s%s (%.3f)", (k++ ? ", " : ""), $1, $2, $c["far_pronoun_acc"] }
    END { if (!k) printf "none" }' "$1"
}
# sext CSV NAME COLUMN min|max: the extreme of COLUMN over NAME's ok seeds.
sext() {
  awk -F, -v n="$2" -v col="$3" -v w="$4" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == n && $2 ~ /^[0-9]+$/ && $c["status"] == "ok" { v = $c[col] + 0
      if (!f || (w == "min" && v < e) || (w == "max" && v > e)) e = v; f = 1 }
    END { if (f) printf "%.4f", e }' "$1"
}
SP="$RES/01_ffn/sparsity.csv"
maxdead() { awk -F, -v p="$1" 'NR > 1 && $1 == p { if ($7 + 0 > m) m = $7 + 0; n++ } END { if (n) print m + 0 }' "$SP"; }
# runs_dead POINT LIMIT: "k/n", the runs (seeds) of POINT whose every layer has at most LIMIT dead neurons.
runs_dead() {
  awk -F, -v p="$1" -v lim="$2" 'NR > 1 && $1 == p { k = $3; seen[k] = 1; if ($7 + 0 > lim) bad[k] = 1 }
    END { for (k in seen) { n++; if (!(k in bad)) ok++ } printf "%d/%d", ok, n }' "$SP"
}
# dead_layers POINT SEED: that run's dead neurons per layer, "a and b" (the lecture's way).
dead_layers() { awk -F, -v p="$1" -v s="$2" 'NR > 1 && $1 == p && $3 == s { printf "%s%d", (k++ ? " and " : ""), $7 }' "$SP"; }
SPL="$RES/01_ffn/sparsity_lr.csv"
# F4 at lr 0.01 and 0.03 (2 epochs, as the lecture's exercise), counted per run (5 seeds per point): ReLU at most 1 dead neuron per
# layer, GELU 0. "k/n" over the 20 runs of the four points.
f4_high_runs() {
  local k=0 n=0 r
  for r in "$(runs_dead relu-lr0.01 1)" "$(runs_dead relu-lr0.03 1)" "$(runs_dead gelu-lr0.01 0)" "$(runs_dead gelu-lr0.03 0)"; do
    k=$((k + ${r%/*})); n=$((n + ${r#*/}))
  done
  echo "$k/$n"
}
GN="$RES/02_norm/gradnorm.csv"
# gtot DEPTH PLACEMENT: the gradient norm of all parameters ("全部参数的梯度范数", lecture line 107),
# the probe's "total grad norm" column.
gtot() { awk -F, -v d="$1" -v p="$2" 'NR > 1 && $1 == d && $2 == p { printf "%.4g", $4 }' "${GN%.csv}_totals.csv"; }
glast() { awk -F, -v d="$1" -v p="$2" 'NR > 1 && $1 == d && $2 == p { v = $4 } END { printf "%.4g", v }' "$GN"; }
dlo="$(awk -F, 'NR > 1 { if (!m || $1 < m) m = $1 } END { print m }' "$GN")"
dhi="$(awk -F, 'NR > 1 { if ($1 > m) m = $1 } END { print m }' "$GN")"
ratio2() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print ""; else printf "%.3f", a / b }'; }
xt() { awk -F, -v p="$1" -v r="$2" '$1 == p && $2 == r { print $6 }' "$X"; }
xspread() { awk -F, -v p="$1" 'NR > 1 && $1 == p { v = $4 + 0; if (!f || v < lo) lo = v; if (!f || v > hi) hi = v; f = 1 } END { if (f) printf "%.4f", hi - lo }' "$X"; }
uni_r="$(agg "$P" original mean unigram_test_ppl)"

cat <<EOM

## The world

| figure | target (GARDEN.md, the lecture's world) | ours |
|---|---|---|
| test true perplexity | 3.5–3.8 (lecture 3.655) | $(fmt "$(agg "$F" relu mean true_test_ppl)") |
| test unigram perplexity | 40–48 (lecture 44.3) | $(fmt "$(agg "$F" relu mean unigram_test_ppl)" 2) |
| textbook model's test ppl above the truth (6 epochs) | 3–7% (lecture 5%: 3.851) | $(awk -v a="$(agg "$F" relu mean test_ppl)" -v b="$(agg "$F" relu mean true_test_ppl)" 'BEGIN { if (a != "" && b != "") printf "%.1f%% (%.3f)", 100 * (a / b - 1), a }') |

EOM
[[ -f "$RES/01_ffn/textbook_gap.md" ]] && { echo "Where the gap is: the textbook runs on the training split and the test split (model ppl vs the exact distribution's; the training split's documents were seen 6 times):"; include "$RES/01_ffn/textbook_gap.md"; }
[[ -f "$RES/01_ffn/world.txt" ]] && { echo '`lmx data stats configs/textbook.yaml`:'; echo; echo '```'; cat "$RES/01_ffn/world.txt"; echo '```'; }

cat <<EOM

## The lecture's findings (../shared/spec/FINDINGS.md) and our verdicts

Each rule was written down (in scripts/lecture/report.sh) before the run whose numbers fill
this table; the statistics behind the comparisons were replaced after it (issue 45: the
percentile bootstrap before excluded a zero difference in 11% of 5-seed cases, not 5%).
Comparisons of trained models use \`lmx compare\`: the mean difference A − B over the seeds with
its 95% Student-t interval (paired by seed: t on the per-seed differences) in brackets, and the
exact permutation p-value (all sign flips of the per-seed differences). A **win** needs both: the
interval excludes 0 and p < 0.05. With n paired seeds p is never below 2/2^n (0.25 at 3 seeds,
0.0625 at 5), so fewer than 6 seeds never make a win, and "t excludes 0" alone is inconclusive. A
**tie** needs the equivalence test (TOST) at ±1% of the compared mean to pass: the 90% interval
(shown for tie claims) inside the margin. Otherwise a comparison is **inconclusive**, with the
seeds the observed difference and spread would need; a run that failed makes its comparisons
inconclusive. The rules are at the top of scripts/lecture/report.sh. A collapse is counted per seed.

| finding | the lecture | ours | rule | verdict |
|---|---|---|---|---|
EOM
IFS='|' read -r f1_text f1_verdict <<< "$(tie_claim "$F" test_ppl relu gelu silu swiglu)"
echo "| F1 four FFNs tie within seed noise | max mean difference 0.027, seed differences up to 0.036 | test ppl per seed: relu $(seed_values "$F" relu test_ppl 3), gelu $(seed_values "$F" gelu test_ppl 3), silu $(seed_values "$F" silu test_ppl 3), swiglu $(seed_values "$F" swiglu test_ppl 3); A − B with 95% interval: $f1_text; seeds that never learned agreement (far acc < 0.9): $(plateau "$F") | every pair ties (TOST at ±1%; $(nseeds "$F" relu) each) | $f1_verdict |"
tl() { agg "$F" "$1" mean train_loss_last_epoch; }
best_plain="$(printf '%s\n' "$(tl relu)" "$(tl gelu)" "$(tl silu)" | sort -g | head -1)"
IFS='|' read -r f2_text f2_verdict <<< "$(win_claim "$F" train_loss_last_epoch 0 swiglu relu gelu silu)"
# gap_text G: "0.82% below" / "3.29% above" for a gap G (percent, positive when below).
gap_text() { awk -v g="$1" 'BEGIN { if (g == "") print "n/a"; else printf "%.2f%% %s", (g < 0 ? -g : g), (g < 0 ? "above" : "below") }'; }
# tie_verdict OUTCOME: a part whose claim is a tie: reproduced on a tie, not on a win either way.
tie_verdict() {
  case "$1" in tie) echo "**reproduced**" ;; A | B) echo "**not reproduced**" ;; na) echo "n/a (missing numbers)" ;; *) echo "**inconclusive**" ;; esac
}
# F2 in three parts (issue 45, fixed before the rerun): direction (swiglu wins on the last
# epoch's train loss against each ungated FFN), size (its gap to the best ungated FFN within a
# factor 2 of the lecture's "千分之二": 0.1% to 0.4%), and "drowned on test" (swiglu against the
# ungated FFN with the lowest mean test ppl ties at ±1%; a win or a loss there is not drowned).
f2_gap="$(awk -v s="$(tl swiglu)" -v b="$best_plain" 'BEGIN { if (s != "" && b != "") printf "%.3f", 100 * (1 - s / b) }')"
best_test="$(for a in relu gelu silu; do echo "${ppl[$a]} $a"; done | sort -g | head -1 | cut -d' ' -f2)"
f2_test_cmp="$(cmp "$F:swiglu" "$F:$best_test" test_ppl)"
f2_test_out="$(outcome tie 0 "$f2_test_cmp")"
f2_test_verdict="$(tie_verdict "$f2_test_out")"
echo "| F2 the gated FFN has the lowest TRAIN loss (~0.2%), drowned on the test split | direction of Shazeer's result, \"只差千分之二\", drowned on test | mean train loss over the last epoch: relu $(fmt "$(tl relu)" 4), gelu $(fmt "$(tl gelu)" 4), silu $(fmt "$(tl silu)" 4), swiglu $(fmt "$(tl swiglu)" 4) (swiglu $(gap_text "$f2_gap") the best ungated); $f2_text; test ppl swiglu − $best_test $(ci_text "$f2_test_cmp" 3 tie) ($f2_test_out) | direction: swiglu wins against each ungated FFN (interval below 0, p < 0.05); size: 0.1% to 0.4% below the best ungated; test: swiglu ties the best ungated FFN on test ppl (TOST at ±1%) | direction: $f2_verdict; size: $(verdict "$f2_gap >= 0.1 && $f2_gap <= 0.4"); test: $f2_test_verdict |"
echo "| F3 ReLU's hidden activations ~60% exact zeros, GELU/SiLU almost never | ~60% | zero fraction (mean over layers and seeds) relu $(layer_mean relu 5), gelu $(layer_mean gelu 5), silu $(layer_mean silu 5) | relu > 0.3, gelu and silu < 0.01 | $(verdict "$(layer_mean relu 5) > 0.3 && $(layer_mean gelu 5) < 0.01 && $(layer_mean silu 5) < 0.01") |"
echo "| F4 no dead ReLU neuron at the default lr; trained 2 epochs at lr 0.01 / 0.03, at most 1 of 256 per layer; GELU 0 | 0; 0 and 0 (test ppl 3.978) / 0 and 1 (3.976); GELU 0 | the lecture's one run per lr (seed 0), dead per layer: relu lr 0.01 $(dead_layers relu-lr0.01 0) (test ppl $(fmt "$(agg "$SPL" relu-lr0.01 0 test_ppl)")), lr 0.03 $(dead_layers relu-lr0.03 0) ($(fmt "$(agg "$SPL" relu-lr0.03 0 test_ppl)")); gelu $(dead_layers gelu-lr0.01 0) / $(dead_layers gelu-lr0.03 0); most dead neurons in one layer of one run: relu lr 3e-3 $(maxdead relu), lr 0.01 $(maxdead relu-lr0.01), lr 0.03 $(maxdead relu-lr0.03); gelu lr 3e-3 $(maxdead gelu), 0.01 $(maxdead gelu-lr0.01), 0.03 $(maxdead gelu-lr0.03); runs within the limit at lr 0.01 / 0.03: relu $(runs_dead relu-lr0.01 1) / $(runs_dead relu-lr0.03 1), gelu $(runs_dead gelu-lr0.01 0) / $(runs_dead gelu-lr0.03 0) | 0 at lr 3e-3 (every run); at 0.01 and 0.03 counted per run (5 seeds): relu ≤ 1 per layer, GELU 0 | lr 3e-3: $(verdict "$(maxdead relu) == 0 && $(maxdead gelu) == 0"); lr 0.01 / 0.03: $(per_seed "$(f4_high_runs)") |"
ni() { awk -F, -v n="$1" -v c="$2" '$1 == n && $2 == c { print $3 }' "$RES/02_norm/norm_invariance.csv"; }
echo "| N1 x→3x: LN and RMSNorm unchanged (~1e-5); x→x+5: LN unchanged, RMSNorm changes (~2.7) | 1e-5 / 2.7 | LN $(ni LayerNorm "N(3x) vs N(x)") / $(ni LayerNorm "N(x + 5) vs N(x)"); RMS $(ni RMSNorm "N(3x) vs N(x)") / $(ni RMSNorm "N(x + 5) vs N(x)") | < 1e-4 where invariant, > 0.1 for RMSNorm's shift | $(verdict "$(ni LayerNorm "N(3x) vs N(x)") < 1e-4 && $(ni LayerNorm "N(x + 5) vs N(x)") < 1e-4 && $(ni RMSNorm "N(3x) vs N(x)") < 1e-4 && $(ni RMSNorm "N(x + 5) vs N(x)") > 0.1") |"
pt="$(ratio2 "$(gtot "$dhi" post)" "$(gtot "$dlo" post)")"; prt="$(ratio2 "$(gtot "$dhi" pre)" "$(gtot "$dlo" pre)")"
pl="$(ratio2 "$(glast "$dhi" post)" "$(glast "$dlo" post)")"; prl="$(ratio2 "$(glast "$dhi" pre)" "$(glast "$dlo" pre)")"
echo "| N2 gradient at init (one batch), depth $dlo → $dhi: the gradient norm of all parameters grows for post-norm (×2.3), its last layer's FFN output matrix stays ~1; pre-norm's last layer falls ~1/√(L ratio), its total barely grows | post total 3.5 → 8.1, last ~1; pre last 0.87 → 0.44 | post total $(gtot "$dlo" post) → $(gtot "$dhi" post) (×$pt), last layer ×$pl; pre total $(gtot "$dlo" pre) → $(gtot "$dhi" pre) (×$prt), last layer $(glast "$dlo" pre) → $(glast "$dhi" pre) (×$prl) | post total ×≥ 1.5; post last ×≥ 0.75; pre last × in [0.35, 0.75]; pre total ×< 1.3 | $(verdict "$pt >= 1.5 && $pl >= 0.75 && $prl >= 0.35 && $prl <= 0.75 && $prt < 1.3") |"
half="$(awk -v u="$uni" 'BEGIN { print u / 2 }')"
echo "| N3 6 layers, 2 epochs, no clipping: post-norm at lr 5e-3 without warm-up collapses to ~unigram; pre-norm trains; 200 warm-up steps rescue post-norm to pre-norm's level; at a small lr both train | post val ppl 42.2 vs unigram 44.3 | final val ppl per seed: post 5e-3 $(seed_values "$W" post-lr5e-3 final_val_ppl); pre 5e-3 $(seed_values "$W" pre-lr5e-3 final_val_ppl); post 5e-3 + warm-up $(seed_values "$W" post-lr5e-3-warmup200 final_val_ppl) vs pre $(fmt "$(wv pre-lr5e-3-warmup200)" 2); lr 1e-3 post $(seed_values "$W" post-lr1e-3 final_val_ppl), pre $(seed_values "$W" pre-lr1e-3 final_val_ppl); unigram $(fmt "$uni" 2) | post 5e-3: every seed > unigram/2 = $(fmt "$half" 1); the others: every seed < unigram/2; post + warm-up mean within 10% of pre + warm-up | post collapses: $(per_seed "$(seeds_where "$W" post-lr5e-3 final_val_ppl "v > $half")"); pre trains: $(per_seed "$(seeds_where "$W" pre-lr5e-3 final_val_ppl "v < $half")"); rescue: $(per_seed "$(seeds_where "$W" post-lr5e-3-warmup200 final_val_ppl "v < $half")"), level $(verdict "$(wv post-lr5e-3-warmup200) < 1.1 * $(wv pre-lr5e-3-warmup200)"); small lr: $(per_seed "$(seeds_where "$W" post-lr1e-3 final_val_ppl "v < $half")") / $(per_seed "$(seeds_where "$W" pre-lr1e-3 final_val_ppl "v < $half")") |"
IFS='|' read -r n4_text n4_verdict <<< "$(tie_claim "$N" test_ppl layernorm rmsnorm)"
echo "| N4 LayerNorm vs RMSNorm (pre-norm, 2 layers) tie | 3.852 / 3.816 vs 3.872 / 3.819 | test ppl per seed: LayerNorm $(seed_values "$N" layernorm test_ppl 3), RMSNorm $(seed_values "$N" rmsnorm test_ppl 3); $n4_text | the tie rule (3 seeds each) | $n4_verdict |"
K="$RES/03_attention/kv_table.csv"
echo "| A1 KV cache per token = 2 × n_kv × d_head per layer (fixed by formula) | BF16 tables of real models | Llama 2 7B $(cell "$K" model llama2-7b "bytes per token (BF16)") B/token; Llama 2 70B (GQA 8) $(cell "$K" model llama2-70b "bytes per token (BF16)") B | 7B: 2·32·128·32 layers·2 B = 524,288 | $(verdict "$(cell "$K" model llama2-7b "bytes per token (BF16)") == 524288 && $(cell "$K" model llama2-70b "bytes per token (BF16)") == 327680") |"
kvd="$(awk -F, 'NR > 1 { if ($3 > m) m = $3 } END { print m + 0 }' "$RES/03_attention/kv_decode.csv")"
echo "| A2 cached token-by-token decoding equals recomputation; halving KV heads halves the cache | float error; ½ | max |Δ logit| $kvd; 70B GQA vs as MHA: $(cell "$K" model llama2-70b "per token per layer") vs $(cell "$K" model "llama2-70b as MHA" "per token per layer") | < 1e-4; per-layer numbers proportional to KV heads (8 vs 64) | $(verdict "$kvd < 1e-4 && 8 * $(cell "$K" model llama2-70b "per token per layer") == $(cell "$K" model "llama2-70b as MHA" "per token per layer")") |"
mla() { awk -F, -v r="$1" 'NR == r { print $(NF - 2) }' "$RES/03_attention/mla.csv"; }
ds="$(cell "$K" model deepseek-v2 "per token per layer")"
echo "| A3 MLA: absorbing W_UK matches (2.9e-6); naive absorption with RoPE is wrong (14.27); decoupled RoPE fixes it; 512 + 64 = 576 numbers per token per layer, ~1/57 of MHA | 2.9e-6 / 14.27 / exact; 576 | $(mla 2) / $(mla 3) / $(mla 4); DeepSeek-V2 $ds per token per layer, MHA with its 128 heads of 128: 32768 (1/$(awk -v a="$ds" 'BEGIN { if (a) printf "%.1f", 32768 / a }')) | < 1e-5, > 1e-4, < 1e-5; 576 | $(verdict "$(mla 2) < 1e-5 && $(mla 3) > 1e-4 && $(mla 4) < 1e-5 && $ds == 576") |"
echo "| A4a merging K/V heads hurts, MQA more than GQA; random K/V init is worst | GQA mean 4.658 vs first 5.259 right after conversion | right after conversion (source $(fmt "$src_ppl")): GQA mean $(fmt "$(up 2 mean 0)"), first $(fmt "$(up 2 first 0)"), random $(fmt "$(up 2 random 0)"); MQA mean $(fmt "$(up 1 mean 0)"), first $(fmt "$(up 1 first 0)"), random $(fmt "$(up 1 random 0)") | every converted start > source; MQA mean > GQA mean; random > mean and first for both | $(verdict "$(up 2 mean 0) > $src_ppl && $(up 2 first 0) > $src_ppl && $(up 1 mean 0) > $(up 2 mean 0) && $(up 2 random 0) > $(up 2 mean 0) && $(up 2 random 0) > $(up 2 first 0) && $(up 1 random 0) > $(up 1 mean 0) && $(up 1 random 0) > $(up 1 first 0)") |"
echo "| A4b GQA: mean-pooling beats first-head right after conversion; MQA: first-head slightly better right after, mean-pooling leads after more steps | 4.658 vs 5.259; MQA reverses after 250 steps | GQA mean $(fmt "$(up 2 mean 0)") vs first $(fmt "$(up 2 first 0)"); MQA at 0 steps mean $(fmt "$(up 1 mean 0)") vs first $(fmt "$(up 1 first 0)"), after $s2 steps $(fmt "$(up 1 mean "$s2")") vs $(fmt "$(up 1 first "$s2")") | GQA mean < first at 0; MQA first < mean at 0 and mean < first after $s2 steps | GQA: $(verdict "$(up 2 mean 0) < $(up 2 first 0)"); MQA at 0: $(verdict "$(up 1 first 0) < $(up 1 mean 0)"); MQA after: $(verdict "$(up 1 mean "$s2") < $(up 1 first "$s2")") |"
echo "| A4c GQA mean + 5% of the budget is within seed noise of the source; MQA needs more; GQA and MQA from scratch no worse than MHA | 3.892 vs 3.851; scratch 3.850, 3.827 | after $s1 steps: GQA $(fmt "$(up 2 mean "$s1")"), MQA $(fmt "$(up 1 mean "$s1")") vs source $(fmt "$src_ppl"); from scratch ($budget steps) GQA $(fmt "$(up 2 scratch "$budget")"), MQA $(fmt "$(up 1 scratch "$budget")") | GQA within 2% of the source; MQA above GQA; scratch ≤ 1.01 × source | $(verdict "$(up 2 mean "$s1") < 1.02 * $src_ppl && $(up 1 mean "$s1") > $(up 2 mean "$s1") && $(up 2 scratch "$budget") <= 1.01 * $src_ppl && $(up 1 scratch "$budget") <= 1.01 * $src_ppl") |"
rr() { awk -F, -v q="$1" '$1 == q { print $2 }' "$RES/04_position/rope_relative_summary.csv"; }
echo "| P1 RoPE score depends only on m − n (identical at (3,1) … (1000,998)); additive sinusoidal varies; \|R_m q\| = \|q\| | −1.8956 everywhere; 9.26 … 13.38 | spread RoPE $(rr "RoPE score spread (max − min)"), sinusoidal $(rr "sinusoidal score spread (max − min)"); norm change $(rr "max ||R_m q| − |q||") | RoPE < 1e-4, sinusoidal > 1e-2, norms < 1e-4 | $(verdict "$(rr "RoPE score spread (max − min)") < 1e-4 && $(rr "sinusoidal score spread (max − min)") > 1e-2 && $(rr "max ||R_m q| − |q||") < 1e-4") |"
RD="$RES/04_position/rope_decay.csv"
nonmono="$(awk -F, 'NR > 2 && $2 + 0 > prev + 0 { up = 1 } NR > 1 { prev = $2 } END { print up + 0 }' "$RD")"
echo "| P2 RoPE long-range decay with q = k = ones(64), oscillating, not monotone | figure | score at 0 / 10 / 100 / 1000: $(cell "$RD" distance 0 score) / $(cell "$RD" distance 10 score) / $(cell "$RD" distance 100 score) / $(cell "$RD" distance 1000 score); rises somewhere: $nonmono | score at 1000 < at 10 < at 0, and not monotone | $(verdict "$(cell "$RD" distance 1000 score) < $(cell "$RD" distance 10 score) && $(cell "$RD" distance 10 score) < $(cell "$RD" distance 0 score) && $nonmono == 1") |"
tb() { awk -F, -v d="$1" '$1 == d { print $2 }' "$RES/04_position/t5_buckets.csv"; }
echo "| P3 T5 buckets (causal, 32, max distance 128): 0–15 exact, then log-spaced, ≥ 128 → 31 | formula | distance 15 / 16 / 128 / 500 → $(tb 15) / $(tb 16) / $(tb 128) / $(tb 500) | 15 / 16 / 31 / 31 | $(verdict "$(tb 15) == 15 && $(tb 16) == 16 && $(tb 128) == 31 && $(tb 500) == 31") |"
r0="$first_range"; rL="$last_range"
# P4's rules on an NLL getter GET (GET ENCODING RANGE): the spread of the five encodings other
# than NoPE inside the first range; P4a (that spread < 0.05, NoPE above each); P4c's order.
inside_spread() { for p in learned sinusoidal t5_bias rope alibi; do "$1" $p "$r0"; done | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.4f", hi - lo }'; }
p4a_rule() { local g="$1" n; n="$("$1" none "$r0")"
  echo "$(inside_spread "$g") < 0.05 && $n > $("$g" learned "$r0") && $n > $("$g" sinusoidal "$r0") && $n > $("$g" t5_bias "$r0") && $n > $("$g" rope "$r0") && $n > $("$g" alibi "$r0")"; }
p4c_rule() { echo "$("$1" alibi "$rL") < $("$1" rope "$rL") && $("$1" rope "$rL") < $("$1" t5_bias "$rL") && $("$1" t5_bias "$rL") < $("$1" none "$rL")"; }
inside="$(inside_spread xr)"
echo "| P4a trained on 64-token packed chunks (600 steps), tested at 512: inside 64 every encoding but NoPE is at the truth; NoPE worst even there | ~1.30 vs true 1.296; NoPE 1.388 | NLL at $r0: learned $(fmt "$(xr learned "$r0")"), sinusoidal $(fmt "$(xr sinusoidal "$r0")"), t5 $(fmt "$(xr t5_bias "$r0")"), rope $(fmt "$(xr rope "$r0")"), alibi $(fmt "$(xr alibi "$r0")"), none $(fmt "$(xr none "$r0")"); true $(fmt "$(xt rope "$r0")") | the five within 0.05 nats of each other; NoPE above each | $(verdict "$(p4a_rule xr)") |"
echo "| P4b learned and sinusoidal collapse past 64 | collapse | learned $(fmt "$(xr learned "$r0")") → $(fmt "$(xr learned 64-127)") at 64–127; sinusoidal $(fmt "$(xr sinusoidal "$r0")") → $(fmt "$(xr sinusoidal 64-127)") | NLL at 64–127 > NLL at $r0 + 0.5 nats, both | $(verdict "$(xr learned 64-127) > $(xr learned "$r0") + 0.5 && $(xr sinusoidal 64-127) > $(xr sinusoidal "$r0") + 0.5") |"
echo "| P4c the relative encodings extrapolate: ALiBi best, RoPE second, T5 bias third, NoPE worst | at 256–511 ALiBi 1.276, then RoPE, T5, NoPE | NLL at $rL: alibi $(fmt "$(xr alibi "$rL")"), rope $(fmt "$(xr rope "$rL")"), t5 $(fmt "$(xr t5_bias "$rL")"), none $(fmt "$(xr none "$rL")") | alibi < rope < t5_bias < none at $rL (mean of 3 seeds) | $(verdict "$(p4c_rule xr)") |"
echo "| P4d ALiBi is nearly flat; RoPE and T5 degrade gradually | ALiBi 1.297, 1.298, 1.271, 1.276 | ALiBi range of the 4 NLLs $(xspread alibi); RoPE $(fmt "$(xr rope "$r0")") → $(fmt "$(xr rope "$rL")"), T5 $(fmt "$(xr t5_bias "$r0")") → $(fmt "$(xr t5_bias "$rL")") | ALiBi spread < 0.05 nats; RoPE and T5 rise from $r0 to $rL but stay below learned at $rL | $(verdict "$(xspread alibi) < 0.05 && $(xr rope "$rL") > $(xr rope "$r0") && $(xr t5_bias "$rL") > $(xr t5_bias "$r0") && $(xr rope "$rL") < $(xr learned "$rL") && $(xr t5_bias "$rL") < $(xr learned "$rL")") |"
layout_diff="$(awk -F, 'NR > 1 { if ($5 > m) m = $5 } END { print m + 0 }' "$RES/04_position/rope_layout.csv")"
echo "| P5 interleaved and half-split RoPE agree after a fixed permutation | 4.8e-7 | max diff $layout_diff | < 1e-6 | $(verdict "$layout_diff < 1e-6") |"
o_m="$(agg "$P" original mean test_ppl)"; l_m="$(agg "$P" llama mean test_ppl)"
op="$(agg "$P" original mean params)"; lp="$(agg "$P" llama mean params)"
IFS='|' read -r r1_text r1_verdict <<< "$(tie_claim "$P" test_ppl original llama)"
echo "| R1 both end recipes at ~equal parameters, 3 seeds: indistinguishable in perplexity | 3.822 / 3.815 / 3.824 vs 3.848 / 3.872 / 3.799 | params $op vs $lp; test ppl original $(seed_values "$P" original test_ppl 3), llama $(seed_values "$P" llama test_ppl 3); $r1_text; never learned agreement: $(plateau "$P") | params within 1%; the tie rule | $(verdict "($lp - $op) < 0.01 * $op && ($op - $lp) < 0.01 * $op"), $r1_verdict |"
# R2's RoPE step (issue 45, fixed before the rerun): each step's rise in far-pronoun accuracy per
# seed (the step's run minus the previous step's run of the same seed, unrounded), and the RoPE
# step's rise against every other step's, paired by seed: reproduced when it wins against each
# (t-interval above 0 and permutation p < 0.05), not reproduced when another step's rise wins
# against it, inconclusive otherwise. RISE holds the rises as a summary lmx compare reads.
RISE="$(mktemp "${TMPDIR:-/tmp}/lmx-rise.XXXXXX")"
trap 'rm -f "$CMP_TMP" "$RISE"' EXIT
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print "name,seed,far_rise,status"; next }
  $2 ~ /^[0-9]+$/ { n = $1; if (!(n in ord)) { ord[n] = ++m; names[m] = n }
    v[n SUBSEP $2] = $c["far_pronoun_acc"]; st[n SUBSEP $2] = $c["status"]; if (!($2 in seen)) { seen[$2] = 1; seeds[++ns] = $2 } }
  END { for (k = 2; k <= m; k++) { a = names[k - 1]; b = names[k]; ch = b; sub(/^[^ ]* /, "", ch)
          for (j = 1; j <= ns; j++) { s = seeds[j]; ok = st[a SUBSEP s] == "ok" && st[b SUBSEP s] == "ok" && v[a SUBSEP s] != "" && v[b SUBSEP s] != ""
            if (ok) printf "%s,%s,%.8g,ok\n", ch, s, v[b SUBSEP s] - v[a SUBSEP s]; else printf "%s,%s,,failed\n", ch, s } } }' \
  "$RES/05_recipe/ablation_seeds.csv" > "$RISE"
rise_steps=()
while IFS= read -r step; do rise_steps+=("$step"); done < <(awk -F, 'NR > 1 && !($1 in s) { s[$1] = 1; print $1 }' "$RISE")
rise_mean() { awk -F, -v n="$1" 'NR > 1 && $1 == n && $4 == "ok" { t += $3; k++ } END { if (k) printf "%+.4f", t / k }' "$RISE"; }
rise_means="$(for st in "${rise_steps[@]}"; do printf '%s%s %s' "${sep:-}" "$st" "$(rise_mean "$st")"; sep=", "; done)"
others=()
rope_step=+position  # lmx ablate names a step by the key it changes
for st in "${rise_steps[@]}"; do [[ "$st" == "$rope_step" ]] || others+=("$st"); done
IFS='|' read -r rope_text rope_verdict <<< "$(win_claim "$RISE" far_rise 1 "$rope_step" "${others[@]}")"
rise_seeds="$(awk -F, -v r="$rope_step" 'NR > 1 && $1 == r { k++ } END { print k + 0 }' "$RISE")"
IFS='|' read -r r2_text r2_verdict <<< "$(win_claim "$P" far_pronoun_acc 1 llama original)"
# bk RECIPE: the recipe's mean far accuracy per distance bucket and per intervening-noun bucket.
bk() { echo "d ≤10 / 11–20 / 21+: $(fmt "$(agg "$P" "$1" mean far_acc_d_le10)" 4) / $(fmt "$(agg "$P" "$1" mean far_acc_d11_20)" 4) / $(fmt "$(agg "$P" "$1" mean far_acc_d21up)" 4), other-gender nouns between 0 / 1 / 2+: $(fmt "$(agg "$P" "$1" mean far_acc_i0)" 4) / $(fmt "$(agg "$P" "$1" mean far_acc_i1)" 4) / $(fmt "$(agg "$P" "$1" mean far_acc_i2up)" 4)"; }
echo "| R2 the stable signal: far-pronoun accuracy, Llama-style above the original in every seed; in the one-at-a-time table the RoPE step makes the jump | 0.997–0.998 vs 0.986–0.989; 0.984 → 0.998 at RoPE | far acc original $(seed_values "$P" original far_pronoun_acc 4), llama $(seed_values "$P" llama far_pronoun_acc 4); $r2_text; by bucket (means): original $(bk original); llama $(bk llama); one-at-a-time table, mean rise per step over $rise_seeds seeds: $rise_means; RoPE's rise against each other step's, paired by seed: $rope_text | llama wins (interval above 0, p < 0.05, paired by seed), original mean < 0.995; the RoPE step's (+position) rise wins against every other step's (paired by seed) | separation: $r2_verdict, original below 0.995: $(verdict "$(agg "$P" original mean far_pronoun_acc) < 0.995"); RoPE step: $rope_verdict |"
halfr="$(awk -v u="$uni_r" 'BEGIN { print u / 2 }')"
echo "| R3 6 layers, lr 5e-3, no warm-up, no clipping: the original collapses, the Llama-style trains | original 3.809 → 3.784, val 45.3; llama 1.570 → 1.325, val 3.919 | best val ppl per seed: original $(seed_values "$ST" original best_val_ppl), llama $(seed_values "$ST" llama best_val_ppl); mean train loss over the first → the last epoch (means over seeds) original $(fmt "$(st original 5)") → $(fmt "$(st original 6)"), llama $(fmt "$(st llama 5)") → $(fmt "$(st llama 6)"); at step 1 (untrained) original $(fmt "$(st original 3)"), llama $(fmt "$(st llama 3)") | original: every seed > unigram/2 = $(fmt "$halfr" 1); llama: every seed < unigram/2 | original: $(per_seed "$(seeds_where "$ST" original best_val_ppl "v > $halfr")"); llama: $(per_seed "$(seeds_where "$ST" llama best_val_ppl "v < $halfr")") |"
KP="$RES/05_recipe/kv_per_token.csv"
echo "| R4 at equal parameters the Llama-style KV cache is 128 numbers per token, the original's 256 | 128 vs 256 | $(( $(cell "$KP" recipe llama kv_numbers_per_token_per_layer) * 2 )) vs $(( $(cell "$KP" recipe original kv_numbers_per_token_per_layer) * 2 )) (2 layers) | exact | $(verdict "2 * $(cell "$KP" recipe llama kv_numbers_per_token_per_layer) == 128 && 2 * $(cell "$KP" recipe original kv_numbers_per_token_per_layer) == 256") |"

# The lecture's settings beside ours, one row per trained finding (hand-written, with the
# lecture's line numbers).
include "$ROOT/scripts/lecture/settings.md"

HD="$RES/02_norm/heads"
if [[ -d "$HD" ]]; then
# The model-size question, decided at init (issue 45; the rule was written in
# docs/results_notes.md before any candidate was computed): for each output head, the mean over
# init seeds 0-2 of the five numbers the lecture reports (post-norm's all-parameter gradient norm
# at the lowest and highest depth, its last layer at the highest; pre-norm's last layer at both),
# and the score = mean |ln(ours / lecture's)|. The lowest score below ln 1.5 is adopted.
hmean() {  # hmean HEAD DEPTH PLACEMENT COLUMN: the mean over the head's seeds
  cat "$HD/$1"_s*_totals.csv | awk -F, -v d="$2" -v p="$3" -v col="$4" '$1 == "depth" { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == d && $2 == p { s += $c[col]; n++ } END { if (n) printf "%.4f", s / n }'
}
head_rows=""; best_head=""; best_score=""
for h in untied tied-embedding tied-linear; do
  [[ -f "$HD/${h}_s0_totals.csv" ]] || continue
  a="$(hmean "$h" "$dlo" post "total grad norm")"; b="$(hmean "$h" "$dhi" post "total grad norm")"
  c="$(hmean "$h" "$dhi" post "last layer")"; d="$(hmean "$h" "$dlo" pre "last layer")"; e="$(hmean "$h" "$dhi" pre "last layer")"
  pt6="$(hmean "$h" "$dlo" pre "total grad norm")"; pt24="$(hmean "$h" "$dhi" pre "total grad norm")"; l0="$(hmean "$h" "$dlo" pre loss)"
  score="$(awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v e="$e" 'function al(x, y) { return x > y ? log(x / y) : log(y / x) }
    BEGIN { printf "%.3f", (al(a, 3.5) + al(b, 8.1) + al(c, 1) + al(d, 0.87) + al(e, 0.44)) / 5 }')"
  head_rows+="| $h | $(fmt "$a" 2) | $(fmt "$b" 2) | $(fmt "$c" 2) | $(fmt "$d" 2) | $(fmt "$e" 2) | $(fmt "$pt6" 2) → $(fmt "$pt24" 2) | $(fmt "$l0" 3) | $score |"$'\n'
  if [[ -z "$best_score" ]] || awk "BEGIN { exit !($score < $best_score) }"; then best_score="$score"; best_head="$h"; fi
done
cat <<EOM

## The model-size question, decided at init (N2's numbers, three output heads)

The lecture's models have about 106K parameters (§5.2); ours had 112.4K with an untied head and
106.3K with the head tied to the token embedding (vocabulary 96). The rule, written before any
candidate was computed (docs/results_notes.md): the probe of N2 at init seeds 0-2 for each head,
the mean over seeds of the five numbers the lecture reports (lecture line 107), the score = the
mean of |ln(ours / lecture's)|, the lowest score below ln 1.5 = 0.405 adopted.

| head | post total at $dlo (3.5) | post total at $dhi (8.1) | post last at $dhi (~1) | pre last at $dlo (0.87) | pre last at $dhi (0.44) | pre total $dlo → $dhi ("barely grows") | loss at init (pre, $dlo) | score |
|---|---|---|---|---|---|---|---|---|
${head_rows}
Lowest score: **$best_head** ($best_score; $(awk -v s="$best_score" 'BEGIN { print (s < log(1.5)) ? "below ln 1.5: adopted in the presets" : "not below ln 1.5: the init-time numbers do not identify the lecture'"'"'s model" }')).
results/02_norm/heads/.
EOM
fi

if [[ -f "$RES/02_norm/gradnorm_seed1_totals.csv" ]]; then
# tot FILE DEPTH PLACEMENT COLUMN: a column of a gradnorm totals table.
tot() { awk -F, -v d="$2" -v p="$3" -v col="$4" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                                                 $1 == d && $2 == p { print $c[col] }' "$1"; }
cat <<EOM

## Follow-up: gradient norms at init, three init seeds, and the residual stream (N2)

Added after the main run: the probe of N2 at init seeds 1 and 2 (results/02_norm/gradnorm_seed*.md),
with the RMS of the residual stream after the last block (mean over the batch's target tokens).
Pre-norm's final norm divides every layer's gradient by about that RMS, so its last-layer
gradient from depth $dlo to $dhi should change by about the inverse of the stream's growth.

| init seed | pre last layer ×($dlo → $dhi) | pre stream RMS $dlo → $dhi | 1 / stream growth | post total (whole model) × | post last layer × |
|---|---|---|---|---|---|
EOM
for s in 0 1 2; do
  f="$RES/02_norm/gradnorm_totals.csv"; ((s > 0)) && f="$RES/02_norm/gradnorm_seed${s}_totals.csv"
  a="$(tot "$f" "$dlo" pre "stream rms")"; b="$(tot "$f" "$dhi" pre "stream rms")"
  echo "| $s | $(ratio2 "$(tot "$f" "$dhi" pre "last layer")" "$(tot "$f" "$dlo" pre "last layer")") | $a → $b | $(ratio2 "$a" "$b") | $(ratio2 "$(tot "$f" "$dhi" post "total grad norm")" "$(tot "$f" "$dlo" post "total grad norm")") | $(ratio2 "$(tot "$f" "$dhi" post "last layer")" "$(tot "$f" "$dlo" post "last layer")") |"
done
fi

CL="$RES/02_norm/collapse_lr.csv"
if [[ -f "$CL" ]]; then
cat <<EOM

## Follow-up: where our post-norm collapses (N3 / R3)

Added after the main run showed no collapse at the lecture's lr 5e-3 (experiments/02_collapse_lr.yaml):
the same 6-layer models and settings at twice that lr. The rule is N3's, applied at
each lr, written down before this sweep ran: collapsed = final validation perplexity above
unigram/2 = $(fmt "$half" 1); the finding holds at an lr when post-norm collapses in every seed,
pre-norm trains in every seed and 200 warm-up steps rescue post-norm in every seed.

| lr | post-norm, no warm-up: collapsed | pre-norm: trained | post-norm + 200 warm-up: trained | final val ppl per seed: post-norm | pre-norm | post-norm + warm-up | N3 holds |
|---|---|---|---|---|---|---|---|
EOM
for lr in 1e-2; do
  c="$(seeds_where "$CL" "post-lr$lr" final_val_ppl "v > $half")"
  p="$(seeds_where "$CL" "pre-lr$lr" final_val_ppl "v < $half")"
  w="$(seeds_where "$CL" "post-lr$lr-warmup200" final_val_ppl "v < $half")"
  holds="no"; every_seed "$c" && every_seed "$p" && every_seed "$w" && holds="**yes**"
  echo "| $lr | $c | $p | $w | $(seed_values "$CL" "post-lr$lr" final_val_ppl) | $(seed_values "$CL" "pre-lr$lr" final_val_ppl) | $(seed_values "$CL" "post-lr$lr-warmup200" final_val_ppl) | $holds |"
done
fi
SL="$RES/05_recipe/stability_lr1e-2.csv"
if [[ -f "$SL" ]]; then
echo
echo "R3 at lr 1e-2 (experiments/05_stability_lr1e-2.yaml; R3's rule, written down before the run): best validation perplexity per seed original $(seed_values "$SL" original best_val_ppl), llama $(seed_values "$SL" llama best_val_ppl); mean train loss over the first 50 steps → the last epoch: original $(fmt "$(agg "$SL" original mean train_loss_first50)") → $(fmt "$(agg "$SL" original mean train_loss_last_epoch)"), llama $(fmt "$(agg "$SL" llama mean train_loss_first50)") → $(fmt "$(agg "$SL" llama mean train_loss_last_epoch)"). Original collapses: $(per_seed "$(seeds_where "$SL" original best_val_ppl "v > $halfr")"); llama trains: $(per_seed "$(seeds_where "$SL" llama best_val_ppl "v < $halfr")")."
fi

XL="$RES/04_position/extrapolation_long.csv"
if [[ -f "$XL" ]]; then
xl() { awk -F, -v p="$1" -v r="$2" '$1 == p && $3 == r { print $5 }' "$XL"; }
inside_l="$(inside_spread xl)"
cat <<EOM

## Follow-up: extrapolation at 3× the training steps (P4)

Added after the main run: seed 0 of the extrapolation run again, the same settings at 3× the steps
(results/04_position/extrapolation_long.csv). Rules: P4a's and P4c's, written down before this run.

| encoding | NLL at $r0 | at 64-127 | at 128-255 | at $rL |
|---|---|---|---|---|
EOM
for p in learned sinusoidal t5_bias rope alibi none; do
  echo "| $p | $(fmt "$(xl $p "$r0")") | $(fmt "$(xl $p 64-127)") | $(fmt "$(xl $p 128-255)") | $(fmt "$(xl $p "$rL")") |"
done
echo
echo "Inside $r0 the five encodings other than NoPE span $inside_l nats (P4a: < 0.05 and NoPE above each: $(verdict "$(p4a_rule xl)")); at $rL alibi < rope < t5_bias < none: $(verdict "$(p4c_rule xl)") (one seed)."
fi

US="$RES/03_attention/uptrain_sources.csv"
if [[ -f "$US" ]]; then
# us SRC KV INIT STEPS -> test ppl of that source model's converted run ("source" INIT: the source).
us() { awk -F, -v s="$1" -v k="$2" -v i="$3" -v n="$4" 'NR > 1 && $1 == s && $3 == i && (i == "source" || ($2 == k && $4 == n)) { print $7; exit }' "$US"; }
nsrc=0; k_gqa=0; k_mqa0=0; k_mqa2=0; k_c=0; rows=""
for src in $(awk -F, 'NR > 1 && $3 == "source" { print $1 }' "$US"); do
  so="$(us "$src" 4 source 0)"; gm="$(us "$src" 2 mean 0)"; gf="$(us "$src" 2 first 0)"
  mm="$(us "$src" 1 mean 0)"; mf="$(us "$src" 1 first 0)"; mm2="$(us "$src" 1 mean "$s2")"; mf2="$(us "$src" 1 first "$s2")"
  g1="$(us "$src" 2 mean "$s1")"
  nsrc=$((nsrc + 1))
  awk "BEGIN { exit !($gm < $gf) }" && k_gqa=$((k_gqa + 1))
  awk "BEGIN { exit !($mf < $mm) }" && k_mqa0=$((k_mqa0 + 1))
  awk "BEGIN { exit !($mm2 < $mf2) }" && k_mqa2=$((k_mqa2 + 1))
  awk "BEGIN { exit !($g1 < 1.02 * $so) }" && k_c=$((k_c + 1))
  rows+="| $src | $(fmt "$so") | $(fmt "$gm") / $(fmt "$gf") | $(fmt "$mm") / $(fmt "$mf") | $(fmt "$mm2") / $(fmt "$mf2") | $(fmt "$g1") |"$'\n'
done
cat <<EOM

## Follow-up: A4 on ${nsrc} source models

Added after the main run, whose uptraining table converts one source model (seed 0): the
mean / first comparison repeated on the textbook models of seeds 1 to 4
(results/03_attention/uptrain_sources.csv). The rules are A4b's and A4c's, counted per source
model, written down before these runs.

| source seed | source test ppl | GQA mean / first at 0 steps | MQA mean / first at 0 steps | MQA mean / first after $s2 steps | GQA mean after $s1 steps |
|---|---|---|---|---|---|
${rows}
GQA mean < first at 0 steps: $(per_seed "$k_gqa/$nsrc"); MQA first < mean at 0 steps: $(per_seed "$k_mqa0/$nsrc");
MQA mean < first after $s2 steps: $(per_seed "$k_mqa2/$nsrc"); GQA mean after $s1 steps within 2% of its source: $(per_seed "$k_c/$nsrc")
(here a "seed" is a source model).
EOM
fi

UL="$RES/03_attention/uptrain_lr_followup.csv"
if [[ -f "$UL" ]]; then
# ul SRC STEPS -> test ppl of source SRC's GQA-by-mean run after STEPS at lr 1e-2 ("source" for the source).
ul() { awk -F, -v s="$1" -v n="$2" 'NR > 1 && $1 == s && (n == "source" ? $3 == "source" : ($3 == "mean" && $4 == n)) { print $7; exit }' "$UL"; }
ul_steps="$(awk -F, 'NR > 1 && $3 == "mean" && $4 != "0" { print $4; exit }' "$UL")"
n_ul=0; k_ul=0; ul_rows=""
for src in $(awk -F, 'NR > 1 && $3 == "source" { print $1 }' "$UL"); do
  so="$(ul "$src" source)"; g="$(ul "$src" "$ul_steps")"
  n_ul=$((n_ul + 1))
  awk "BEGIN { exit !($g < 1.02 * $so) }" && k_ul=$((k_ul + 1))
  ul_rows+="| $src | $(fmt "$so") | $(fmt "$(us "$src" 2 mean "$s1")") | $(fmt "$g") |"$'\n'
done
cat <<EOM

## Follow-up: A4c at a higher uptraining lr (one factor changed)

A4c's GQA part did not hold at the continuation lr 3e-3 (the sources' own), and lower lrs did
worse in an earlier session (3e-4 → 1e-3 → 3e-3: +7-10% → +3-5% → +2.6% above the source). The
intervention, with its rule written before the run: the same conversion (GQA, 2 KV heads, mean
init, $ul_steps steps = 5% of the budget) at lr 1e-2, on the five source models; A4c's GQA part
holds at 1e-2 when every source's converted model is within 2% of its source, and the finding is
**explained** by the uptraining lr when that flips the verdict at 3e-3 (table above).
results/03_attention/uptrain_lr_followup.csv.

| source seed | source test ppl | GQA mean + $s1 steps at lr 3e-3 | at lr 1e-2 |
|---|---|---|---|
${ul_rows}
GQA mean + $ul_steps steps at lr 1e-2 within 2% of its source: $(per_seed "$k_ul/$n_ul") (a "seed" is a source model).
EOM
# Explained only when the rest of A4c's rule holds in the main run (MQA above GQA, the scratch runs
# at most 1% above the source): then the GQA part alone decides its verdict.
a4c_rest="$(up 1 mean "$s1") > $(up 2 mean "$s1") && $(up 2 scratch "$budget") <= 1.01 * $src_ppl && $(up 1 scratch "$budget") <= 1.01 * $src_ppl"
if ((n_ul > 0 && k_ul == n_ul && k_c < nsrc)) && awk "BEGIN { exit !($a4c_rest) }"; then
  EXPLAINED[A4c]="the uptraining lr: GQA by mean + $ul_steps steps is within 2% of its source in $k_ul/$n_ul source models at lr 1e-2, $k_c/$nsrc at 3e-3 (follow-up below)"
fi
fi

IU="$RES/interventions"
untied_why="the output head: untied (as before issue 45) instead of tied with nn.Linear's init; follow-up below"
# s01 FFN_CSV SPARSITY_CSV: F1-F4 by their rules on an intervention's section-01 tables (the
# u_* verdicts; FU and tlu stay set for s01_rows, which prints the four table rows).
s01() {
  FU="$1"
  IFS='|' read -r u_f1_text u_f1_verdict <<< "$(tie_claim "$FU" test_ppl relu gelu silu swiglu)"
  tlu() { agg "$FU" "$1" mean train_loss_last_epoch; }
  u_best_plain="$(printf '%s\n' "$(tlu relu)" "$(tlu gelu)" "$(tlu silu)" | sort -g | head -1)"
  u_gap="$(awk -v s="$(tlu swiglu)" -v b="$u_best_plain" 'BEGIN { if (s != "" && b != "") printf "%.3f", 100 * (1 - s / b) }')"
  IFS='|' read -r u_f2_text u_f2_dir <<< "$(win_claim "$FU" train_loss_last_epoch 0 swiglu relu gelu silu)"
  u_best_test="$(for a in relu gelu silu; do echo "$(agg "$FU" "$a" mean test_ppl) $a"; done | sort -g | head -1 | cut -d' ' -f2)"
  u_test_cmp="$(cmp "$FU:swiglu" "$FU:$u_best_test" test_ppl)"
  u_test_out="$(outcome tie 0 "$u_test_cmp")"
  u_f2_test="$(tie_verdict "$u_test_out")"
  u_f2_size="$(verdict "$u_gap >= 0.1 && $u_gap <= 0.4")"
  SP_MAIN="$SP"; SP="$2"  # maxdead, runs_dead, dead_layers read $SP
  zf() { awk -F, -v p="$1" 'NR > 1 && $1 == p { s += $6; n++ } END { if (n) printf "%.4f", s / n }' "$SP"; }
  u_f3="$(verdict "$(zf relu) > 0.3 && $(zf gelu) < 0.01 && $(zf silu) < 0.01")"
  u_f4_low="$(verdict "$(maxdead relu) == 0 && $(maxdead gelu) == 0")"
  u_f4_high="$(per_seed "$(f4_high_runs)")"
  u_f4_text="most dead neurons in one layer of one run: relu lr 3e-3 $(maxdead relu), lr 0.01 $(maxdead relu-lr0.01), lr 0.03 $(maxdead relu-lr0.03); gelu lr 3e-3 $(maxdead gelu), 0.01 $(maxdead gelu-lr0.01), 0.03 $(maxdead gelu-lr0.03); the lecture's one run per lr (seed 0), relu: $(dead_layers relu-lr0.01 0) / $(dead_layers relu-lr0.03 0)"
  u_zf_text="relu $(zf relu), gelu $(zf gelu), silu $(zf silu)"
  SP="$SP_MAIN"
}
s01_rows() {
  cat <<EOR
| F1 four FFNs tie | test ppl per seed: relu $(seed_values "$FU" relu test_ppl 3), gelu $(seed_values "$FU" gelu test_ppl 3), silu $(seed_values "$FU" silu test_ppl 3), swiglu $(seed_values "$FU" swiglu test_ppl 3); $u_f1_text | $u_f1_verdict |
| F2 gated lowest train loss (~0.2%), drowned on test | last-epoch train loss relu $(fmt "$(tlu relu)" 4), gelu $(fmt "$(tlu gelu)" 4), silu $(fmt "$(tlu silu)" 4), swiglu $(fmt "$(tlu swiglu)" 4) (swiglu $(gap_text "$u_gap") the best ungated); $u_f2_text; test ppl swiglu − $u_best_test $(ci_text "$u_test_cmp" 3 tie) ($u_test_out) | direction: $u_f2_dir; size: $u_f2_size; test: $u_f2_test |
| F3 ReLU ~60% zeros | zero fraction $u_zf_text | $u_f3 |
| F4 dead neurons | $u_f4_text | lr 3e-3: $u_f4_low; lr 0.01 / 0.03: $u_f4_high |
EOR
}
if [[ -f "$IU/ffn_untied.csv" && -f "$IU/sparsity_untied.csv" ]]; then
# Section 01 with the untied head (scripts/lecture/interventions.sh): F1-F4 by their own rules
# (above), on runs that differ from the main run's in the output head alone.
s01 "$IU/ffn_untied.csv" "$IU/sparsity_untied.csv"
cat <<EOM

## Follow-up: section 01 with the untied head (one factor changed: F1-F4)

The main run ties the output head to the token embedding with nn.Linear's init (adopted for
N2's init-time numbers and the lecture's 106K parameters). That embedding starts at U(±1/8), a
tenth of the sinusoids' amplitude, the setting under which earlier runs saw dead ReLU neurons in
layer 0. scripts/lecture/interventions.sh reruns section 01's sweeps (8 and 5 seeds) with the head
untied, nothing else changed; F1-F4's rules, as in the table, written before it ran
(results/interventions/).

| finding | ours, untied head | verdict |
|---|---|---|
$(s01_rows)
EOM
[[ "$u_f1_verdict" == "**reproduced**" ]] && EXPLAINED[F1]="$untied_why"
[[ "$u_f2_dir $u_f2_size $u_f2_test" == "**reproduced** **reproduced** **reproduced**" ]] && EXPLAINED[F2]="$untied_why"
[[ "$u_f4_low" == "**reproduced**" && "$u_f4_high" == "**reproduced**"* ]] && EXPLAINED[F4]="$untied_why"
fi

if [[ -f "$IU/ffn_scaled.csv" && -f "$IU/sparsity_scaled.csv" ]]; then
s01 "$IU/ffn_scaled.csv" "$IU/sparsity_scaled.csv"
cat <<EOM

## Follow-up: section 01 with the tied head and embed_scale sqrt_d (the mechanism, one factor)

The untied head flips F4 and N4 (above). Which part of the tied head costs them is not shown by
that: the hypothesis, written before this run, is the token embedding's scale (U(±1/8) against
the sinusoids' unit amplitude). The intervention keeps the main run's tied head and multiplies
the token embeddings by √d_model = 8 in the forward pass (\`model.embed_scale: sqrt_d\`,
Vaswani et al. 2017), nothing else changed; section 01's sweeps (8 and 5 seeds), F1-F4's rules.
The hypothesis holds for F4 if F4 reproduces here.

| finding | ours, tied head, embeddings × √d | verdict |
|---|---|---|
$(s01_rows)
EOM
fi

if [[ -f "$IU/recipes_untied.csv" && -f "$IU/norm_untied.csv" && -f "$IU/ffn_v2.csv" ]]; then
RU="$IU/recipes_untied.csv"; NU="$IU/norm_untied.csv"; FV="$IU/ffn_v2.csv"
IFS='|' read -r u_r1_text u_r1_verdict <<< "$(tie_claim "$RU" test_ppl original llama)"
u_op="$(agg "$RU" original mean params)"; u_lp="$(agg "$RU" llama mean params)"
u_r1_params="$(verdict "($u_lp - $u_op) < 0.01 * $u_op && ($u_op - $u_lp) < 0.01 * $u_op")"
IFS='|' read -r u_r2_text u_r2_verdict <<< "$(win_claim "$RU" far_pronoun_acc 1 llama original)"
u_r2_below="$(verdict "$(agg "$RU" original mean far_pronoun_acc) < 0.995")"
IFS='|' read -r u_n4_text u_n4_verdict <<< "$(tie_claim "$NU" test_ppl layernorm rmsnorm)"
IFS='|' read -r v2_f1_text v2_f1_verdict <<< "$(tie_claim "$FV" test_ppl relu gelu silu swiglu)"
cat <<EOM

## Follow-up: R1, R2 and N4 with the untied head; F1 on garden v2 (one factor each)

scripts/lecture/interventions.sh, rules as in the table, written before it ran: the recipes
(8 seeds) and LayerNorm vs RMSNorm (3 seeds) with the head untied, nothing else changed; F1's
sweep (8 seeds) on garden v2 (the world before v3's multi-clause sentences) with the main run's
presets.

| finding | ours | verdict |
|---|---|---|
| R1, untied head | params $(fmt "$u_op" 0) vs $(fmt "$u_lp" 0); test ppl original $(seed_values "$RU" original test_ppl 3), llama $(seed_values "$RU" llama test_ppl 3); $u_r1_text | $u_r1_params, $u_r1_verdict |
| R2, untied head | far acc original $(seed_values "$RU" original far_pronoun_acc 4), llama $(seed_values "$RU" llama far_pronoun_acc 4); $u_r2_text | separation: $u_r2_verdict, original below 0.995: $u_r2_below |
| N4, untied head | test ppl LayerNorm $(seed_values "$NU" layernorm test_ppl 3), RMSNorm $(seed_values "$NU" rmsnorm test_ppl 3); $u_n4_text | $u_n4_verdict |
| F1, garden v2 | test ppl relu $(seed_values "$FV" relu test_ppl 3), gelu $(seed_values "$FV" gelu test_ppl 3), silu $(seed_values "$FV" silu test_ppl 3), swiglu $(seed_values "$FV" swiglu test_ppl 3); $v2_f1_text | $v2_f1_verdict |
EOM
[[ "$u_r1_params $u_r1_verdict" == "**reproduced** **reproduced**" ]] && EXPLAINED[R1]="$untied_why"
[[ "$u_n4_verdict" == "**reproduced**" ]] && EXPLAINED[N4]="$untied_why"
[[ "$v2_f1_verdict" == "**reproduced**" ]] && EXPLAINED[F1]="the world: on garden v2 the four FFNs tie (follow-up below)"
fi

XU="$IU/extrapolation_untied_mean.csv"
if [[ -f "$XU" ]]; then
xu() { awk -F, -v p="$1" -v r="$2" '$1 == p && $2 == r { print $4 }' "$XU"; }
xu_n="$(awk -F, 'NR == 2 { print $3 }' "$XU")"
xu_rows=""
for enc in learned sinusoidal t5_bias rope alibi none; do
  xu_rows+="| $enc | $(awk -F, -v p="$enc" '$1 == p { printf "%s%s %.3f ± %.3f", (k++ ? " | " : ""), "", $4, $5 }' "$XU") |"$'\n'
done
xu_ranges="$(awk -F, 'NR > 1 && $1 == "rope" { printf "%s%s", (k++ ? " | " : ""), $2 }' "$XU")"
xu_p4a="$(verdict "$(p4a_rule xu)")"; xu_p4c="$(verdict "$(p4c_rule xu)")"
cat <<EOM

## Follow-up: P4 with the untied head (one factor changed)

scripts/lecture/interventions.sh: section 04's extrapolation runs (600 steps on 64-token packed
chunks, tested at 512) with the output head untied, $xu_n seeds; P4a's and P4c's rules as in the
table, written before it ran (results/interventions/extrapolation_untied_mean.csv; mean ± std
of the NLL over seeds).

| encoding | $xu_ranges |
|---|---|---|---|---|
${xu_rows}
Inside $r0 the five encodings other than NoPE span $(inside_spread xu) nats and NoPE is above each: P4a $xu_p4a; at $rL alibi < rope < t5_bias < none: P4c $xu_p4c.
EOM
[[ "$xu_p4a" == "**reproduced**" ]] && EXPLAINED[P4a]="the output head: untied instead of tied with nn.Linear's init; follow-up below"
[[ "$xu_p4c" == "**reproduced**" ]] && EXPLAINED[P4c]="the output head: untied instead of tied with nn.Linear's init; follow-up below"
fi

cat <<EOM

## Literature claims (context, not the lecture's findings)

| claim | ours | rule | verdict |
|---|---|---|---|
EOM
IFS='|' read -r l1_text l1_verdict <<< "$(win_claim "$F" test_ppl 0 swiglu relu gelu silu)"
IFS='|' read -r l2_text _ <<< "$(win_claim "$F" test_ppl 0 gelu relu)"
IFS='|' read -r l3_text _ <<< "$(win_claim "$F" test_ppl 0 silu relu)"
IFS='|' read -r l4_text l4_verdict <<< "$(win_claim "$P" test_ppl 0 llama original)"
echo "| SwiGLU beats the ungated FFNs at equal parameters (Shazeer 2020) | test ppl relu $(pm "${ppl[relu]}" "${sd[relu]}"), gelu $(pm "${ppl[gelu]}" "${sd[gelu]}"), silu $(pm "${ppl[silu]}" "${sd[silu]}"), swiglu $(pm "${ppl[swiglu]}" "${sd[swiglu]}") ($(nseeds "$F" relu)); $l1_text | swiglu wins against each (interval below 0, p < 0.05) | $l1_verdict |"
gs_out=("$(outcome win 0 "$(cmp "$F:gelu" "$F:relu" test_ppl)")" "$(outcome win 0 "$(cmp "$F:silu" "$F:relu" test_ppl)")")
echo "| GELU and SiLU beat ReLU | $l2_text; $l3_text | both win against relu | $(claim_verdict A "${gs_out[@]}") |"
echo "| Dead ReLU neurons grow with the learning rate | dead fraction (mean over layers) $(layer_mean relu 7) / $(layer_mean relu-lr0.01 7) / $(layer_mean relu-lr0.03 7) | rises from lr 3e-3 to 0.01 to 0.03 | $(verdict "$(layer_mean relu 7) < $(layer_mean relu-lr0.01 7) && $(layer_mean relu-lr0.01 7) < $(layer_mean relu-lr0.03 7)") |"
echo "| The Llama-style recipe beats the original in perplexity | original $(pm "$o_m" "$(agg "$P" original std test_ppl)"), llama $(pm "$l_m" "$(agg "$P" llama std test_ppl)"); $l4_text | llama wins (interval below 0, p < 0.05) | $l4_verdict |"

echo
echo "## 01 FFN: activations and gating"
for t in activations ffn_params; do include "$RES/01_ffn/$t.md"; done
echo "### Training: relu / gelu / silu / swiglu, parameter-matched, $(nseeds "$F" relu), 6 epochs"
include "$RES/01_ffn/ffn_training.md"
echo "### Sparsity of the FFN hidden layer (first 200 validation documents; mean over seeds)"
include "$RES/01_ffn/sparsity.md"

echo "## 02 Normalization"
include "$RES/02_norm/norm_invariance.md"
echo "### Gradient norms at initialization (PyTorch's default init, as the presets)"
include "$RES/02_norm/gradnorm.md"
figure 02_norm/gradnorm.png "gradient norm by layer, PyTorch defaults"
if [[ -f "$RES/02_norm/gradnorm_normal.md" ]]; then
  echo "### Gradient norms at initialization (N(0, 0.02²) everywhere: model.init normal, for contrast)"
  include "$RES/02_norm/gradnorm_normal.md"
  figure 02_norm/gradnorm_normal.png "gradient norm by layer, N(0, 0.02²)"
fi
echo "### Warm-up: 6 layers, 2 epochs, no clipping, $(nseeds "$RES/02_norm/warmup.csv" post-lr5e-3)"
include "$RES/02_norm/warmup.md"
figure 02_norm/warmup_curves.png "validation perplexity during training"
if [[ -f "$RES/02_norm/collapse_lr.md" ]]; then
  echo "### The same at lr 1e-2 (where our post-norm collapses), $(nseeds "$RES/02_norm/collapse_lr.csv" post-lr1e-2)"
  include "$RES/02_norm/collapse_lr.md"
fi
echo "### LayerNorm vs RMSNorm (pre-norm, 2 layers, $(nseeds "$RES/02_norm/layernorm_vs_rmsnorm.csv" layernorm))"
include "$RES/02_norm/layernorm_vs_rmsnorm.md"

echo "## 03 Attention and the KV cache"
for t in kv_table kv_decode mla; do include "$RES/03_attention/$t.md"; done
echo "### Uptraining MHA → GQA / MQA"
include "$RES/03_attention/uptrain.md"

echo "## 04 Positions"
for t in rope_relative rope_decay; do include "$RES/04_position/$t.md"; done
figure 04_position/rope_decay.png "RoPE decay"
for t in t5_buckets rope_layout; do include "$RES/04_position/$t.md"; done
echo "### Length extrapolation (trained at 64, tested at 512; mean over seeds)"
include "$RES/04_position/extrapolation.md"
figure 04_position/nll_by_position.png "NLL by position range"

echo "## 05 The modern recipe"
echo "### One change at a time (seed 0; d_ff re-matched to keep the parameter count)"
include "$RES/05_recipe/ablation.md"
echo "### Both recipes, $(nseeds "$RES/05_recipe/recipes.csv" original)"
include "$RES/05_recipe/recipes.md"
echo "### Stability: 6 layers, lr 5e-3, no warm-up, no clipping"
include "$RES/05_recipe/stability.md"
figure 05_recipe/stability_curves.png "stability training curves"
echo "### KV cache per token"
include <(csv_md "$RES/05_recipe/kv_per_token.csv")
} > "$OUT.tmp"
# Status per finding, from the verdict column of the findings table above: reproduced when every
# part is reproduced; explained when a follow-up that changed one factor flipped it (EXPLAINED,
# set by the follow-up sections from their own rules); open otherwise. Put in before the
# settings table.
status_table() {
  echo "## Status per finding"
  echo
  echo "Reproduced: every part of the verdict above is reproduced. Explained: a follow-up that changed"
  echo "one factor, with its rule and seeds written before it ran, flips the verdict (the factor is"
  echo "named). Open: neither; the verdict is repeated."
  echo
  echo "| finding | status |"
  echo "|---|---|"
  local line id verdict
  while IFS= read -r line; do
    id="$(awk -F'|' '{ split($2, w, " "); print w[1] }' <<< "$line")"
    verdict="$(awk -F'|' '{ print $(NF - 1) }' <<< "$line" | sed 's/^ *//; s/ *$//')"
    if [[ "$verdict" != *"not reproduced"* && "$verdict" != *inconclusive* && "$verdict" != *"n/a"* ]]; then
      echo "| $id | reproduced |"
    elif [[ -n "${EXPLAINED[$id]:-}" ]]; then
      echo "| $id | **explained**: ${EXPLAINED[$id]} |"
    else
      echo "| $id | **open**: $verdict |"
    fi
  done < <(sed -n '/^| finding | the lecture | ours | rule | verdict |/,/^$/p' "$OUT.tmp" | grep -E '^\| [FNAPR][0-9]')
  echo
}
status_table > "$OUT.status"
awk -v f="$OUT.status" '/^## The lecture.s settings and ours/ { while ((getline l < f) > 0) print l } { print }' "$OUT.tmp" > "$OUT.tmp2"
rm -f "$OUT.status" "$OUT.tmp"
mv "$OUT.tmp2" "$OUT"
echo "report.sh: wrote $OUT" >&2
