#!/usr/bin/env bash
# One-factor interventions for findings that did not reproduce in the main run (issue 45), run
# after scripts/lecture/all.sh (outside its 20-minute budget): each changes one setting of a
# section's runs, and report.sh judges it by the finding's own rule, written before it ran.
#   scripts/lecture/interventions.sh [--quick] [--jobs N] [--out DIR]
# Tables (results/interventions/):
#   ffn_untied.csv, sparsity_untied.csv, sparsity_lr_untied.csv: section 01's runs (F1-F4:
#     01_ffn.yaml, 8 seeds; 01_sparsity.yaml, 5 seeds, 2 epochs) with the output head untied
#     (model.tie_embeddings false), the head the presets had before issue 45 adopted the tied one:
#     the tied head's token embedding starts at nn.Linear's U(±1/8), a tenth of the sinusoids'
#     amplitude, the setting under which earlier runs saw dead ReLU neurons in layer 0.
#   recipes_untied.csv (R1, R2: 05_recipes.yaml, 8 seeds) and norm_untied.csv (N4: 02_norm.yaml,
#     3 seeds): the same one factor, the head.
#   ffn_scaled.csv, sparsity_lr_scaled.csv, sparsity_scaled.csv: section 01's runs with the
#     main run's tied head and model.embed_scale sqrt_d (token embeddings × 8): the mechanism
#     behind the head's effect on F4, one factor.
#   extrapolation_untied_mean.csv (P4a, P4c): section 04's extrapolation (600 steps, trained at
#     64, tested at 512) with the untied head, 5 seeds.
#   ffn_v2.csv: F1 on garden v2 (data.grammar garden_v2, the world before v3's multi-clause
#     sentences), presets as in the main run: one factor, the world.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lecture_init interventions "$@"

# section01 TAG OVERRIDES...: section 01's sweeps (01_ffn.yaml, 01_sparsity.yaml) with OVERRIDES
# into ffn_TAG.csv and sparsity_lr_TAG.csv, then the sparsity probe of every run into
# sparsity_TAG.csv (the columns of results/01_ffn/sparsity.csv, which the F3 / F4 rules read).
# Its wait_all also waits for the sweeps started before it.
section01() {
  local tag="$1" run
  shift
  in_parallel sweep 01_ffn.yaml "ffn-$tag" "ffn_$tag" "$@"
  in_parallel sweep 01_sparsity.yaml "sparsity-lr-$tag" "sparsity_lr_$tag" "$@"
  wait_all
  local runs=("$RUNS/ffn-$tag"/runs/*/seed* "$RUNS/sparsity-lr-$tag"/runs/*/seed*)
  for run in "${runs[@]}"; do
    in_parallel slot "$LMX" -q --threads 1 probe sparsity "$run/model.safetensors" --csv "$run/sparsity.csv" > /dev/null
  done
  wait_all
  sparsity_rows "${runs[@]}" > "$R/sparsity_$tag.csv"
}

untied=(--set model.tie_embeddings=false --set model.tied_init=embedding)
in_parallel sweep 05_recipes.yaml recipes-untied recipes_untied "${untied[@]}"
in_parallel sweep 02_norm.yaml norm-untied norm_untied "${untied[@]}"
in_parallel sweep 01_ffn.yaml ffn-v2 ffn_v2 --set data.grammar=garden_v2
p4_seeds=(0 1 2 3 4) p4=(--train-len 64 --test-len 512 --steps 600)
((QUICK)) && p4_seeds=(0) p4=(--train-len 64 --test-len 128 --steps 20 --set train.eval_every=0 "${TINY[@]}")
for seed in "${p4_seeds[@]}"; do
  in_parallel slot "$LMX" -q --threads 1 extrapolate "$ROOT/configs/textbook.yaml" "${p4[@]}" --seeds "$seed" \
    "${untied[@]}" --out "$RUNS/extrapolate-untied-s$seed" > /dev/null
done
section01 untied "${untied[@]}"
for seed in "${p4_seeds[@]}"; do
  if ((seed == p4_seeds[0])); then cat "$RUNS/extrapolate-untied-s$seed/by_position.csv"; else tail -n +2 "$RUNS/extrapolate-untied-s$seed/by_position.csv"; fi
done > "$R/extrapolation_untied.csv"
extrapolation_mean "$R/extrapolation_untied.csv" > "$R/extrapolation_untied_mean.csv"
# The tied head with the token embeddings scaled by √d_model (the mechanism behind F4).
section01 scaled --set model.embed_scale=sqrt_d
lecture_done
