#!/usr/bin/env bash
# Lecture section 01, FFN: activations and gating (LECTURE.md 01.1-01.4).
#   scripts/lecture/01_ffn.sh [--quick] [--lecture-runs] [--jobs N] [--out DIR]
# Tables: activations, ffn_params (probes), ffn_training (relu/gelu/silu/swiglu, 8 seeds,
# 6 epochs), sparsity (exact zeros and dead neurons per layer, lr 3e-3 / 0.01 / 0.03, 5 seeds).
# --lecture-runs: 2 seeds each, as the lecture (F1, F4).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lecture_init 01_ffn "$@"

probe activations activations
probe ffn-params ffn_params

# The world's statistics and both training sweeps side by side (their runs share the job slots).
in_parallel slot "$LMX" -q data stats "$ROOT/configs/textbook.yaml" "${TINY[@]}" > "$R/world.txt"
in_parallel sweep 01_ffn.yaml ffn ffn_training $(lecture_seeds 0,1)
in_parallel sweep 01_sparsity.yaml sparsity_lr sparsity_lr $(lecture_seeds 0,1)
wait_all

# Where the textbook model (the relu point) is off the truth: training split vs test split.
# Each evaluation and probe writes its own CSV in its run's folder; the tables are put together
# in run order once all have ended.
relu_runs=()
for run in "$RUNS"/ffn/runs/*/seed*; do if [[ "$(run_point "$run")" == relu ]]; then relu_runs+=("$run"); fi; done
for run in "${relu_runs[@]}"; do
  for split in train test; do
    in_parallel slot "$LMX" -q --threads 1 eval "$run/model.safetensors" --split "$split" --csv "$run/gap_$split.csv" > /dev/null
  done
done
# Sparsity of every trained FFN: the 01.3 runs (lr 3e-3) and the higher-lr ReLU runs.
sparsity_runs=("$RUNS"/ffn/runs/*/seed* "$RUNS"/sparsity_lr/runs/*/seed*)
for run in "${sparsity_runs[@]}"; do
  in_parallel slot "$LMX" -q --threads 1 probe sparsity "$run/model.safetensors" --csv "$run/sparsity.csv" > /dev/null
done
wait_all

echo "seed,split,ppl,true_ppl,above_truth_pct" > "$R/textbook_gap.csv"
for run in "${relu_runs[@]}"; do
  for split in train test; do
    awk -F, -v s="${run##*/seed}" -v sp="$split" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
      NR == 2 { printf "%s,%s,%.4f,%.4f,%.2f\n", s, sp, $c["ppl"], $c["true_ppl"], 100 * ($c["ppl"] / $c["true_ppl"] - 1) }' \
      "$run/gap_$split.csv" >> "$R/textbook_gap.csv"
  done
done
csv_md "$R/textbook_gap.csv" > "$R/textbook_gap.md"

sparsity_rows "${sparsity_runs[@]}" > "$R/sparsity.csv"
# Mean over seeds per point and layer.
awk -F, 'NR > 1 { k = $1 "," $2 "," $4; n[k]++; z[k] += $6; d[k] += $7; f[k] += $8; if (!(k in o)) { o[k] = ++m; key[m] = k } }
         END { print "point,lr,layer,seeds,zero_fraction,dead_neurons,dead_fraction"
               for (i = 1; i <= m; i++) { k = key[i]; printf "%s,%d,%.4f,%.1f,%.4f\n", k, n[k], z[k]/n[k], d[k]/n[k], f[k]/n[k] } }' \
  "$R/sparsity.csv" > "$R/sparsity_mean.csv"
csv_md "$R/sparsity_mean.csv" > "$R/sparsity.md"

lecture_done
