#!/usr/bin/env bash
# Lecture section 03, attention and the KV cache (LECTURE.md 03.1-03.4).
#   scripts/lecture/03_attention.sh [--quick] [--jobs N] [--out DIR]
# Tables: kv_table (real models, BF16), kv_decode (cache vs recompute, cache sizes),
# mla (absorption, RoPE, decoupled RoPE), uptrain (MHA -> GQA/MQA by mean / first /
# random K,V init, after conversion, +5% and +20% of the budget, and from scratch).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lecture_init 03_attention "$@"

probe kv-table kv_table
probe kv-decode kv_decode
probe mla mla

# The MHA source model: the textbook preset, 6 epochs (quick: 30 steps on tiny data).
train=(-q --threads 1 train "$ROOT/configs/textbook.yaml" --seeds 0 --out "$RUNS/mha")
((QUICK)) && train+=(--set train.steps=30 --set train.eval_every=0 "${TINY[@]}")
"$LMX" "${train[@]}" > /dev/null
# One lmx uptrain per KV-head count, side by side with --jobs > 1 (each converts, continues and trains its
# from-scratch model one run at a time); their tables are then merged (one source row).
for kv in 2 1; do
  uptrain=(-q --threads 1 uptrain "$RUNS/mha/seed0/model.safetensors" --kv-heads "$kv" --init mean,first,random
           --out "$RUNS/uptrain-kv$kv")
  ((QUICK)) && uptrain+=(--steps 3,6)
  in_parallel "$LMX" "${uptrain[@]}" > /dev/null
done
wait_all
{ cat "$RUNS/uptrain-kv2/uptrain.csv"; tail -n +3 "$RUNS/uptrain-kv1/uptrain.csv"; } > "$R/uptrain.csv"
csv_md "$R/uptrain.csv" > "$R/uptrain.md"

lecture_done
