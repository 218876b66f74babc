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
train=(-q train "$ROOT/configs/textbook.yaml" --seeds 0 --out "$RUNS/mha")
((QUICK)) && train+=(--set train.steps=30 --set train.eval_every=0 "${TINY[@]}")
"$LMX" "${train[@]}" > /dev/null
uptrain=(-q uptrain "$RUNS/mha/seed0/model.safetensors" --kv-heads 2,1 --init mean,first,random --out "$RUNS/uptrain")
((QUICK)) && uptrain+=(--steps 3,6)
# Conversions run one after another; the from-scratch runs are the long part.
"$LMX" "${uptrain[@]}" > /dev/null
cp "$RUNS/uptrain/uptrain.csv" "$R/uptrain.csv"
cp "$RUNS/uptrain/uptrain.md" "$R/uptrain.md"

lecture_done
