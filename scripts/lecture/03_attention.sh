#!/usr/bin/env bash
# Lecture section 03, attention and the KV cache (LECTURE.md 03.1-03.4).
#   scripts/lecture/03_attention.sh [--quick] [--lecture-runs] [--jobs N] [--out DIR]
# Tables: kv_table (real models, BF16), kv_decode (cache vs recompute, cache sizes),
# mla (absorption, RoPE, decoupled RoPE), uptrain (MHA -> GQA/MQA by mean / first /
# random K,V init, after conversion, +5% and +20% of the budget, and from scratch),
# uptrain_sources (mean vs first on five source models), uptrain_lr_followup (GQA by mean + 5%
# at continuation lr 1e-2, the five sources). --lecture-runs: one source model (seed 0), neither
# follow-up (the lecture's runs).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lecture_init 03_attention "$@"

probe kv-table kv_table
probe kv-decode kv_decode
probe mla mla

# The MHA source models: the textbook preset, 6 epochs, seeds 0 to 4 (quick: 30 steps on tiny
# data). Seed 0's is converted with every init, continued and compared with from-scratch runs;
# seeds 1 to 4 repeat the mean / first comparison (A4b, A4c) on four more source models (5 in
# all: A4c's verdict on 3 moved with rounding alone).
train=(-q --threads 1 train "$ROOT/configs/textbook.yaml" "${ONE_PASS[@]}")
((QUICK)) && train+=(--set train.steps=30 --set train.eval_every=0 "${TINY[@]}")
in_parallel slot "$LMX" "${train[@]}" --seeds 0 --out "$RUNS/mha" > /dev/null
if followups; then in_parallel slot "$LMX" "${train[@]}" --seeds 1,2,3,4 --out "$RUNS/mha-more" > /dev/null; fi
wait_all
# uptrain_pair KV SRC: seed 0's full uptrain to KV heads, then (a follow-up) source SRC's mean /
# first comparison (both KV-head counts, no from-scratch runs); two of these run side by side
# with --jobs > 1.
uptrain_pair() {
  local kv="$1" src="$2" quick=()
  ((QUICK)) && quick=(--steps 3,6)
  "$LMX" -q --threads 1 uptrain "$RUNS/mha/seed0/model.safetensors" --kv-heads "$kv" --init mean,first,random "${ONE_PASS[@]}" \
    "${quick[@]}" --out "$RUNS/uptrain-kv$kv" > /dev/null || return
  if followups; then uptrain_source "$src"; fi
}
# uptrain_source SRC: source SRC's mean / first comparison (both KV-head counts, no scratch runs).
uptrain_source() {
  local quick=()
  ((QUICK)) && quick=(--steps 3,6)
  "$LMX" -q --threads 1 uptrain "$RUNS/mha-more/seed$1/model.safetensors" --kv-heads 2,1 --init mean,first "${ONE_PASS[@]}" \
    --no-scratch "${quick[@]}" --out "$RUNS/uptrain-src$1" > /dev/null
}
# uptrain_lr SRC: A4c's intervention (issue 45): source SRC to GQA (2 KV heads) by mean, 5% of the
# budget, at continuation lr 1e-2 instead of the source's 3e-3 (the one factor changed).
uptrain_lr() {
  local steps=75 ckpt="$RUNS/mha-more/seed$1/model.safetensors"  # 5% of the sources' 1500 steps
  ((QUICK)) && steps=3
  (($1 == 0)) && ckpt="$RUNS/mha/seed0/model.safetensors"
  "$LMX" -q --threads 1 uptrain "$ckpt" --kv-heads 2 --init mean --no-scratch --steps "$steps" "${ONE_PASS[@]}" \
    --set train.lr=0.01 --out "$RUNS/uptrain-lr1e-2-src$1" > /dev/null
}
in_parallel slot uptrain_pair 2 1
in_parallel slot uptrain_pair 1 2
if followups; then
  in_parallel slot uptrain_source 3
  in_parallel slot uptrain_source 4
  for src in 0 1 2 3 4; do in_parallel slot uptrain_lr "$src"; done
fi
wait_all
{ cat "$RUNS/uptrain-kv2/uptrain.csv"; tail -n +3 "$RUNS/uptrain-kv1/uptrain.csv"; } > "$R/uptrain.csv"
# The resolved config of source 0's GQA-by-mean run after 5% of the budget, and of its lr 1e-2
# twin (report.sh diffs them: the follow-up must change one key).
gqa5="kv2-mean-s0/steps75"
((QUICK)) && gqa5="kv2-mean-s0/steps3"
mkdir -p "$R/configs/uptrain"
cp "$RUNS/uptrain-kv2/$gqa5/config.yaml" "$R/configs/uptrain/gqa_mean_5pct.yaml"
if followups; then
  mkdir -p "$R/configs/uptrain_lr_followup"
  cp "$RUNS/uptrain-lr1e-2-src0/$gqa5/config.yaml" "$R/configs/uptrain_lr_followup/gqa_mean_5pct.yaml"
fi
csv_md "$R/uptrain.csv" > "$R/uptrain.md"
# The mean / first rows of the five source models (column source = the source model's seed).
if followups; then
  {
    echo "source,$(head -1 "$R/uptrain.csv")"
    for src in 0 1 2 3 4; do
      f="$RUNS/uptrain-src$src/uptrain.csv"
      ((src == 0)) && f="$R/uptrain.csv"
      awk -F, -v s="$src" 'NR > 1 && ($2 == "source" || $2 == "mean" || $2 == "first") { print s "," $0 }' "$f"
    done
  } > "$R/uptrain_sources.csv"
  csv_md "$R/uptrain_sources.csv" > "$R/uptrain_sources.md"
  {
    echo "source,$(head -1 "$R/uptrain.csv")"
    for src in 0 1 2 3 4; do
      awk -F, -v s="$src" 'NR > 1 && ($2 == "source" || $2 == "mean") { print s "," $0 }' "$RUNS/uptrain-lr1e-2-src$src/uptrain.csv"
    done
  } > "$R/uptrain_lr_followup.csv"
fi

lecture_done
