#!/usr/bin/env bash
# Lecture section 04, positions (LECTURE.md 04.1-04.5).
#   scripts/lecture/04_position.sh [--quick] [--lecture-runs] [--jobs N] [--out DIR]
# Tables: rope_relative, rope_decay (figure rope_decay.png), t5_buckets, rope_layout,
# extrapolation (packed training at length 64 for 600 steps, test at 512: NLL by
# position range for six encodings, 6 seeds: P4's comparisons are paired by seed, and fewer than
# 6 never make a win; figure nll_by_position.png). --lecture-runs: one seed (the lecture's run).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lecture_init 04_position "$@"

# Length extrapolation: one lmx process per seed, side by side with --jobs > 1; they start before
# the probes (the longest work of the lecture starts first under all.sh).
steps=600 test_len=512 seeds="0 1 2 3 4 5"
((QUICK)) && steps=20 test_len=128 seeds="0"
((LECTURE_RUNS)) && seeds="0"
for seed in $seeds; do
  # The lecture's order (absolute schemes, NoPE, then the relative ones) for its table.
  args=(-q --threads 1 extrapolate "$ROOT/configs/textbook.yaml" --train-len 64 --test-len "$test_len"
        --positions learned,sinusoidal,none,t5_bias,rope,alibi --steps "$steps" --seeds "$seed" "${TINY[@]}" "${ONE_PASS[@]}")
  ((QUICK)) && args+=(--set train.eval_every=0)
  in_parallel slot "$LMX" "${args[@]}" --out "$RUNS/extrapolate-s$seed" > /dev/null
done

probe rope-relative rope_relative
probe rope-decay rope_decay
probe t5-buckets t5_buckets
probe rope-layout rope_layout

# RoPE decay: rope_decay.csv columns distance, score, ...
plot_png "$R/rope_decay.png" "RoPE long-range decay: q = k = all-ones, d = 64" <<EOP
set xlabel 'relative distance'
set ylabel 'score q.R(m-n)k'
set logscale x
plot '$R/rope_decay.csv' every ::1 using (\$1 > 0 ? \$1 : 0.5):2 with linespoints lw 2 title 'RoPE score'
EOP

wait_all  # the extrapolation runs, started first
keep_configs extrapolation "$RUNS/extrapolate-s${seeds%% *}"
first=1
for seed in $seeds; do
  if ((first)); then cat "$RUNS/extrapolate-s$seed/by_position.csv"; else tail -n +2 "$RUNS/extrapolate-s$seed/by_position.csv"; fi
  first=0
done > "$R/extrapolation.csv"
# Mean over seeds per encoding and range (columns: position, seed, range, tokens, nll, true_nll, gap).
extrapolation_mean "$R/extrapolation.csv" > "$R/extrapolation_mean.csv"
csv_md "$R/extrapolation_mean.csv" > "$R/extrapolation.md"

# Figure: mean NLL per range, one line per encoding, the true NLL dashed. A wide table first:
# range, true_nll, then one column per encoding (in the order they appear).
awk -F, 'NR > 1 { if (!($2 in ri)) { ri[$2] = ++nr; rn[nr] = $2; t[$2] = $6 }
                  if (!($1 in pi)) { pi[$1] = ++np; pn[np] = $1 }
                  v[$2, $1] = $4 }
         END { printf "range,true_nll"; for (j = 1; j <= np; j++) printf ",%s", pn[j]; print ""
               for (i = 1; i <= nr; i++) { r = rn[i]; printf "%s,%s", r, t[r]
                 for (j = 1; j <= np; j++) printf ",%s", v[r, pn[j]]; print "" } }' \
  "$R/extrapolation_mean.csv" > "$R/extrapolation_wide.csv"
plot_png "$R/nll_by_position.png" "Length extrapolation: trained at 64, tested at $test_len (mean over seeds)" <<EOP
set xlabel 'target position range'
set ylabel 'mean NLL (nats)'
set logscale y
set key autotitle columnhead
ncol = $(head -1 "$R/extrapolation_wide.csv" | awk -F, '{ print NF }')
plot for [i=3:ncol] '$R/extrapolation_wide.csv' using 0:i:xtic(1) with linespoints lw 2, \
     '$R/extrapolation_wide.csv' using 0:2 with lines dt 2 lw 2 lc rgb 'black' title 'true distribution'
EOP

lecture_done
