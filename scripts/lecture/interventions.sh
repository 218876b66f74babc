#!/usr/bin/env bash
# One-factor follow-ups (issue 61), run after scripts/lecture/all.sh (outside its 20-minute
# budget). Each reruns main-run specs with ONE config key changed (--set KEY=VALUE, nothing
# else) and at least 5 seeds a side; report.sh judges each finding by its own rule function and
# marks it explained only when the follow-up passes its checks (a)-(d) (report.sh, explain()).
#   scripts/lecture/interventions.sh [--quick] [--jobs N] [--out DIR]
# Follow-ups (TAG: the key; why), tables results/interventions/*_TAG.csv and configs/*_TAG/:
#   unscaled  model.embed_scale=1: the head before issue 61 (tied, token embeddings unscaled,
#             U(±1/8), an eighth of the sinusoids' amplitude; the run of 2026-12-04 used it).
#             Sections 01 (ffn 8 seeds, sparsity 5), 02's
#             LayerNorm vs RMSNorm (5), 05's recipes (8), 04's extrapolation (6).
#   adam      train.weight_decay=0: the optimizer the lecture names (Adam, L84/L111; AdamW with
#             weight decay 0 is Adam's update). The same runs.
#   v2        data.grammar=garden_v2: the world before v3's multi-clause sentences. Section 01's
#             FFN sweep (F1, F2: the findings the world could move; 8 seeds).
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
# extrapolation TAG OVERRIDES...: section 04's extrapolation (04_position.sh's settings, seeds
# 0-5) with OVERRIDES into extrapolation_TAG.csv (+ _mean) and configs/extrapolation_TAG/.
extrapolation() {
  local tag="$1" seed seeds=(0 1 2 3 4 5) p4=(--train-len 64 --test-len 512 --steps 600)
  shift
  ((QUICK)) && seeds=(0) p4=(--train-len 64 --test-len 128 --steps 20 --set train.eval_every=0 "${TINY[@]}")
  for seed in "${seeds[@]}"; do
    in_parallel slot "$LMX" -q --threads 1 extrapolate "$ROOT/configs/textbook.yaml" "${p4[@]}" --seeds "$seed" "${ONE_PASS[@]}" \
      "$@" --out "$RUNS/extrapolate-$tag-s$seed" > /dev/null
  done
  wait_all
  for seed in "${seeds[@]}"; do
    if ((seed == seeds[0])); then cat "$RUNS/extrapolate-$tag-s$seed/by_position.csv"; else tail -n +2 "$RUNS/extrapolate-$tag-s$seed/by_position.csv"; fi
  done > "$R/extrapolation_$tag.csv"
  extrapolation_mean "$R/extrapolation_$tag.csv" > "$R/extrapolation_${tag}_mean.csv"
  keep_configs "extrapolation_$tag" "$RUNS/extrapolate-$tag-s${seeds[0]}"
}

for tag in unscaled adam; do
  case "$tag" in unscaled) key=(--set model.embed_scale=1) ;; adam) key=(--set train.weight_decay=0) ;; esac
  in_parallel sweep 05_recipes.yaml "recipes-$tag" "recipes_$tag" "${key[@]}"
  in_parallel sweep 02_norm.yaml "norm-$tag" "norm_$tag" "${key[@]}"
  section01 "$tag" "${key[@]}"
  extrapolation "$tag" "${key[@]}"
done
in_parallel sweep 01_ffn.yaml ffn-v2 ffn_v2 --set data.grammar=garden_v2
wait_all
lecture_done
