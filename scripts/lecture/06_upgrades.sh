#!/usr/bin/env bash
# Section 06, beyond the lecture: the upgrades after Llama (issue 64), one change at a time.
#   scripts/lecture/06_upgrades.sh [--quick] [--jobs N] [--out DIR]
# Tables: upgrades (12 points x 6 seeds, experiments/06_upgrades.yaml) and upgrades_verdicts
# (each point against llama), lr_range (section 02's post-norm collapse with QK-norm, soft-cap or
# z-loss added), equal_time (MoE and Muon at the llama runs' median training time),
# window_extrapolation (RoPE with and without a 32-position window, trained at 64, tested at
# 256). The page: docs/UPGRADES.md (a full run), or UPGRADES.md beside the tables.
#
# The rules, written down before the first full run (none is tuned after it):
#   U1 each point vs llama on test perplexity: lmx compare POINT llama --margin 0.01 (paired by
#      seed, 6 seeds): "lower" / "higher" when the 95% t-interval and the sign-flip permutation
#      test (p < 0.05) agree, "tie" when the TOST at ±1% of llama's mean passes, else
#      "inconclusive" with the seeds the observed difference would need; any failed run of either
#      side makes it inconclusive.
#   U2 lr range: at section 02's collapse setting, a change widens the range of learning rates
#      that train when the baseline collapses in every seed (final validation perplexity above
#      unigram/2) and the change trains in every seed (below unigram/2); "no" when it collapses in
#      every seed; "mixed" otherwise; "no probe" when the baseline does not collapse in every seed.
#   U3 equal time: muon_time and moe_time against llama as U1 (the llama runs are the dense AdamW
#      runs of U1: they define the budget, so they end where they would anyway).
#   U4 window: mean NLL over positions 64-255 (past the training length) and 0-63 (inside), per
#      seed: the window extrapolates better when its NLL past 64 is lower than full attention's in
#      every seed; inside, the mean difference over seeds is reported beside the seed-to-seed spread.
# --lecture-runs is accepted for all.sh and changes nothing (the lecture ran none of this).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/verdicts.sh"
lecture_init 06_upgrades "$@"

xseeds="0 1 2" steps=600 test_len=256
((QUICK)) && xseeds="0" steps=20 test_len=128
# The two sweeps and the window runs side by side (they share the job slots).
in_parallel sweep 06_upgrades.yaml upgrades upgrades
in_parallel sweep 06_lr_range.yaml lr_range lr_range
for variant in full window32; do
  for seed in $xseeds; do
    args=(-q --threads 1 extrapolate "$ROOT/configs/llama.yaml" --train-len 64 --test-len "$test_len"
          --positions rope --steps "$steps" --seeds "$seed" "${TINY[@]}" "${ONE_PASS[@]}")
    [[ "$variant" == window32 ]] && args+=(--set model.sliding_window=32)
    ((QUICK)) && args+=(--set train.eval_every=0)
    in_parallel slot "$LMX" "${args[@]}" --out "$RUNS/extrapolate-$variant-s$seed" > /dev/null
  done
done
wait_all

# U3's budget: the median training seconds of the llama runs (checkpoint metadata train_seconds).
train_seconds() { head -c 65536 "$1" | grep -ao '"train_seconds":"[0-9.e+-]*"' | head -1 | sed 's/.*:"//; s/"//'; }
budget="$(for ck in "$RUNS"/upgrades/runs/*/seed*/model.safetensors; do
  if [[ "$(run_point "$(dirname "$ck")")" == llama ]]; then train_seconds "$ck"; fi
done | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
[[ -n "$budget" ]] || { echo "06_upgrades.sh: no train_seconds in the llama checkpoints" >&2; exit 1; }
sweep 06_equal_time.yaml equal_time equal_time --set "train.max_time=$budget"

# U1 / U3: one lmx compare per point.
compare_row() {  # POINT_SUMMARY BASE_SUMMARY LABEL
  "$LMX" -q compare "$1" "$2" --metric test_ppl --margin "$TIE_MARGIN" --csv "$CMP_TMP" > /dev/null 2>&1 || true
  awk -F, -v label="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { out = "inconclusive (seeds needed: " ($c["seeds_needed"] == "" ? "-" : $c["seeds_needed"]) ")"
      if ($c["failed_a"] + $c["failed_b"] > 0) out = "inconclusive (" $c["failed_a"] + $c["failed_b"] " runs failed)"
      else if ($c["sig"] == "-") out = "lower"
      else if ($c["sig"] == "+") out = "higher"
      else if ($c["tie"] == 1) out = "tie (within 1%)"
      printf "%s,%d,%.4f,%.4f,%+.4f,%+.4f,%+.4f,%+.2f%%,%.4g,%s\n", label, $c["n_a"], $c["mean_a"], $c["mean_b"], $c["diff"],
             $c["ci_lo"], $c["ci_hi"], 100 * $c["diff"] / $c["mean_b"], $c["p_perm"], out }' "$CMP_TMP"
}
header="point,seeds,test_ppl,llama_test_ppl,diff,ci95_lo,ci95_hi,diff_pct,p_perm,verdict"
{
  echo "$header"
  for p in qk_norm relu2 softcap30 z_loss sandwich init_normal init_gpt2 init_zero_proj muon moe window32; do
    compare_row "$R/upgrades.csv:$p" "$R/upgrades.csv:llama" "$p"
  done
  compare_row "$R/upgrades.csv:init_gpt2" "$R/upgrades.csv:init_normal" "init_gpt2 vs init_normal"
  compare_row "$R/upgrades.csv:init_zero_proj" "$R/upgrades.csv:init_normal" "init_zero_proj vs init_normal"
} > "$R/upgrades_verdicts.csv"
csv_md "$R/upgrades_verdicts.csv" > "$R/upgrades_verdicts.md"
{
  echo "$header"
  for p in muon_time moe_time; do compare_row "$R/equal_time.csv:$p" "$R/upgrades.csv:llama" "$p"; done
} > "$R/equal_time_verdicts.csv"
csv_md "$R/equal_time_verdicts.csv" > "$R/equal_time_verdicts.md"

# U2: collapsed / trained per seed against unigram/2.
LR="$R/lr_range.csv"
uni="$(agg "$LR" post-lr1e-2 mean unigram_test_ppl)"
half="$(awk -v u="$uni" 'BEGIN { printf "%.4f", u / 2 }')"
base_collapsed="$(seeds_where "$LR" post-lr1e-2 final_val_ppl "v > $half")"
{
  echo "change,baseline_collapsed,change_trained,final_val_ppl_per_seed,widens"
  for p in qk_norm softcap30 z_loss; do
    trained="$(seeds_where "$LR" "$p" final_val_ppl "v < $half")"
    collapsed="$(seeds_where "$LR" "$p" final_val_ppl "v > $half")"
    widens=mixed
    if ! every_seed "$base_collapsed"; then widens="no probe"
    elif every_seed "$trained"; then widens=yes
    elif every_seed "$collapsed"; then widens=no; fi
    echo "$p,$base_collapsed,$trained,$(seed_values "$LR" "$p" final_val_ppl | tr ',' ' '),$widens"
  done
} > "$R/lr_range_verdicts.csv"
csv_md "$R/lr_range_verdicts.csv" > "$R/lr_range_verdicts.md"

# U4: the window's NLL by range, per seed, from lmx extrapolate's by_position.csv
# (position, seed, range, tokens, nll, true_nll, gap).
{
  echo "variant,seed,range,tokens,nll,true_nll"
  for variant in full window32; do
    for seed in $xseeds; do
      awk -F, -v v="$variant" 'NR > 1 { print v "," $2 "," $3 "," $4 "," $5 "," $6 }' "$RUNS/extrapolate-$variant-s$seed/by_position.csv"
    done
  done
} > "$R/window_extrapolation.csv"
csv_md "$R/window_extrapolation.csv" > "$R/window_extrapolation.md"
past_range="64-$((test_len - 1))"
((QUICK)) && past_range="64-127"
window_past() {  # VARIANT SEED RANGE -> token-weighted NLL over the ranges at or past 64 (RANGE past) or 0-63
  awk -F, -v v="$1" -v s="$2" -v r="$3" 'NR > 1 && $1 == v && $2 == s {
      split($3, b, "-"); inside = (b[1] + 0 < 64)
      if ((r == "past" && !inside) || (r == "inside" && inside)) { n += $4; t += $4 * $5 } }
    END { if (n) printf "%.4f", t / n }' "$R/window_extrapolation.csv"
}
better=0 k=0 inside_diffs=""
for seed in $xseeds; do
  k=$((k + 1))
  awk -v a="$(window_past window32 "$seed" past)" -v b="$(window_past full "$seed" past)" 'BEGIN { exit !(a != "" && b != "" && a < b) }' && better=$((better + 1))
  inside_diffs+="$(awk -v a="$(window_past window32 "$seed" inside)" -v b="$(window_past full "$seed" inside)" 'BEGIN { printf "%+.4f ", a - b }')"
done

# The page. The commit is read before the page is opened: the redirect empties docs/UPGRADES.md,
# a tracked file, which source_commit would then count as "+dirty".
[[ "$R" == "$ROOT/results/06_upgrades" ]] && PAGE="$ROOT/docs/UPGRADES.md" || PAGE="$R/UPGRADES.md"
commit="$(source_commit "$LMX")"
{
  cat <<EOM
# Upgrades after Llama (section 06)

Generated by \`scripts/lecture/06_upgrades.sh\` from the tables in \`results/06_upgrades/\`
($(run_mode) run, $(date -u +%Y-%m-%d), lmx $commit; machine and wall time in
wall_time.txt). The lecture stops at the Llama recipe; this section asks what the components
researchers switch on next do to the same model on the same garden world. Every change starts
from configs/llama.yaml and changes one key (the MoE: four keys that define one MoE FFN); the
values are the published ones, fixed before the first run (experiments/06_upgrades.yaml). The
rules U1-U4 are in the script's header and were committed before any of these numbers existed.
Our model is tiny (96,704 parameters, 2 layers, 6 epochs of a toy language whose exact floor is
known): a change that helps a 7B model can be neutral or harmful here, and the page says what
happened here, not what happens at scale.

## U1: one change at a time, test perplexity against llama (6 seeds, paired)

$(cat "$R/upgrades_verdicts.md")

Per-seed values and every other column: upgrades.csv (summary of the sweep, with the seeds'
mean, SD and 95% interval per point). "lower" is better. The last two rows separate the init
schemes' residual scaling from their switch to normal init (the presets use PyTorch's defaults).

## U2: do QK-norm, the soft-cap and z-loss widen the learning rates that train?

The probe is section 02's collapse: the textbook model with 6 post-norm layers at a constant lr
1e-2 without warm-up or clipping, 2 epochs, where our post-norm collapses (final validation
perplexity above unigram/2 = $(fmt "$half" 1)) in $base_collapsed seeds.

$(cat "$R/lr_range_verdicts.md")

## U3: MoE and Muon at equal wall time

The budget is the median training time of the llama runs of U1, $budget s (measured by the
runs themselves, $JOBS at a time). Each run ends at the first step past it, its decay placed by
the time spent; the number of steps each reached is in equal_time.csv (steps column).

$(cat "$R/equal_time_verdicts.md")

At equal steps (U1) the MoE and Muon rows above show the other half of the comparison.

## U4: sliding window against full attention, inside and past the training length

RoPE, trained on packed rows of 64 tokens for $steps steps, tested on documents of up to
$test_len tokens (lmx extrapolate), with and without a 32-position window in both layers
(Mistral's pattern). Past 64 the window has lower NLL than full attention in $better/$k seeds
(U4: the window extrapolates better when that is every seed:
$( ((better == k && k > 0)) && echo "**yes**" || echo "**no**")). Inside 0-63, window − full
per seed: $inside_diffs(nats).

$(cat "$R/window_extrapolation.md")

## Cost per step

What each change costs a training step is measured by \`lmx bench\` and recorded, with the
machine and commit, in docs/PERFORMANCE.md ("Components after Llama"); U3 is the comparison
that charges it.
EOM
  # The hand-written discussion of the committed run (a full run's page only).
  if [[ "$PAGE" == "$ROOT/docs/UPGRADES.md" && -f "$ROOT/docs/upgrades_notes.md" ]]; then
    echo
    cat "$ROOT/docs/upgrades_notes.md"
  fi
} > "$PAGE"

lecture_done
