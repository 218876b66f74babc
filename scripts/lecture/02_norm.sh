#!/usr/bin/env bash
# Lecture section 02, normalization (LECTURE.md 02.1-02.4).
#   scripts/lecture/02_norm.sh [--quick] [--lecture-runs] [--jobs N] [--out DIR]
# Tables: norm_invariance, gradnorm (post vs pre at depths 6/12/24, figure gradnorm.png),
# warmup (6 layers, {post, pre} x {lr 1e-3, 5e-3, 5e-3 + 200 warm-up}, 3 seeds; figure
# warmup_curves.png), collapse_lr (the same at lr 1e-2: where our post-norm
# collapses), layernorm_vs_rmsnorm (pre-norm, 3 seeds). --lecture-runs: the gradient probe at one
# init, warm-up 1 seed, LayerNorm vs RMSNorm 2 seeds, no collapse_lr (the lecture's runs).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lecture_init 02_norm "$@"

probe norm-invariance norm_invariance
depths=6,12,24
((QUICK)) && depths=2,4
# Gradient norms at initialization, with the textbook preset's init (PyTorch's module
# defaults, as the lecture's models) and, for contrast, with N(0, 0.02²) everywhere
# (GPT-2 style, model.init normal): the init under which our earlier runs saw no growth.
probe gradnorm gradnorm --depths "$depths"
if followups; then
  printf 'extends: %s\nmodel: {init: normal, init_std: 0.02}\n' "$ROOT/configs/textbook.yaml" > "$RUNS/textbook-normal.yaml"
  probe gradnorm gradnorm_normal --depths "$depths" --config "$RUNS/textbook-normal.yaml"
  sed -i "s|$ROOT/||" "$R/gradnorm_normal.md"  # the config's path from the repository root
fi
# The same probe at init seeds 1-4: N2 is judged on the mean over 5 inits (the lecture measured
# one; --lecture-runs: seed 0 alone).
if followups; then for s in 1 2 3 4; do in_parallel probe gradnorm "gradnorm_seed$s" --depths "$depths" --seed "$s"; done; fi

# Figures: gradient norm of each layer's FFN output matrix, by depth and placement.
# gradnorm*.csv columns: depth, placement, layer, grad norm (one row per layer).
gradnorm_png() {
  local csv="$1" png="$2" title="$3"
  {
    echo "set xlabel 'layer'"
    echo "set ylabel 'gradient norm of W_down'"
    echo "set logscale y"
    printf "plot "
    local first=1 depth placement
    for depth in ${depths//,/ }; do
      for placement in post pre; do
        ((first)) || printf ", "
        first=0
        printf "'%s' every ::1 using (\$1==%s && strcol(2) eq '%s' ? \$3 : 1/0):4 with linespoints lw 2 title '%s-norm, %s layers'" \
          "$csv" "$depth" "$placement" "$placement" "$depth"
      done
    done
    echo
  } | plot_png "$png" "$title"
}
gradnorm_png "$R/gradnorm.csv" "$R/gradnorm.png" "Gradient norm by layer at init (PyTorch defaults): post- vs pre-norm"
if followups; then
  gradnorm_png "$R/gradnorm_normal.csv" "$R/gradnorm_normal.png" "Gradient norm by layer at init (N(0, 0.02^2)): post- vs pre-norm"
fi

# The training sweeps side by side (their runs share the job slots); the figure after.
in_parallel sweep 02_warmup.yaml warmup warmup $(lecture_seeds 0)
# Where OUR post-norm collapses: the warm-up models at 2x, 4x and 8x the lecture's lr.
if followups; then in_parallel sweep 02_collapse_lr.yaml collapse_lr collapse_lr; fi
in_parallel sweep 02_norm.yaml layernorm_vs_rmsnorm layernorm_vs_rmsnorm $(lecture_seeds 0,1)
wait_all

# Figure: validation perplexity during training (seed 0), unigram perplexity for reference.
unigram="$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "unigram_test_ppl") c = i; next } $c != "" { print $c; exit }' "$R/warmup.csv")"
{
  echo "set xlabel 'step'"
  echo "set ylabel 'validation perplexity'"
  echo "set logscale y"
  printf "plot "
  for run in "$RUNS"/warmup/runs/*-s0/seed0; do
    point="$(run_point "$run")"
    printf "'%s' every ::1 using 1:(strcol(8) eq '' ? 1/0 : \$8) with lines lw 2 title '%s', " "$run/metrics.csv" "$point"
  done
  echo "${unigram:-0} with lines dt 2 lc rgb 'black' title 'unigram'"
} | plot_png "$R/warmup_curves.png" "Warm-up: 6-layer models, no clipping (seed 0)"

lecture_done
