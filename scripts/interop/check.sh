#!/usr/bin/env bash
# Interop checked by engines we did not write (issue 29): trains five small models with lmx, the
# llama preset on the garden language (GQA, 2 of 4 KV heads), the same with QK-norm (exported as
# Qwen 3: llama.cpp's qwen3, Qwen3ForCausalLM) and with a 4-expert MoE FFN (Mixtral: llama.cpp's
# llama with experts; GGUF only), a SentencePiece (BPE, byte
# fallback) text model and a byte-level text model, exports each with `lmx export --gguf --hf
# --reference`, then scripts/interop/check.mjs loads the GGUF in llama.cpp (node-llama-cpp
# 3.21.1's prebuilt CPU binaries, F32 KV cache, no flash attention) and checks: next-token
# probabilities within 1e-4 of lmx's on held-out sequences, 64 identical greedy tokens,
# llama.cpp's tokenization of a test text (the text models), the HF folder's tokenizer.json
# with Hugging Face's Rust tokenizers library (@anush008/tokenizers 0.6.0), and a negative control
# (the garden GGUF with q/k rows not permuted must disagree).
#   scripts/interop/check.sh [PATH/TO/lmx]     (default build/lmx; builds nothing)
# npm packages: pinned in package-lock.json, installed into scripts/interop/node_modules (ignored).
# Exit 0 when everything agrees; 1 when something differs; a skip line (exit 0) only without npm.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lmx=$(realpath -m "${1:-$root/build/lmx}")
if ! command -v npm >/dev/null 2>&1; then
  echo "interop check: SKIPPED: npm is not installed (apt-get install npm); llama.cpp and HF tokenizers not checked"
  exit 0
fi
if [ ! -x "$lmx" ]; then
  echo "interop check: $lmx is not an executable lmx; build it first or give its path" >&2
  exit 2
fi
start=$SECONDS
cd "$root/scripts/interop"
if ! npm ls --depth=0 >/dev/null 2>&1; then
  echo "interop check: npm ci (node-llama-cpp, @anush008/tokenizers; pinned in package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/lmx-interop.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Trains CONFIG for STEPS steps, exports it, compares (further arguments go to check.mjs). HF=0:
# no Hugging Face folder (a model only GGUF expresses).
check_model() {
  local name=$1 config=$2 steps=$3 hf=()
  shift 3
  [[ "${HF:-1}" == 1 ]] && hf=(--hf "$work/$name-hf")
  "$lmx" -q train "$config" --set train.steps="$steps" --out "$work/$name" > "$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; exit 1; }
  "$lmx" -q export "$work/$name/seed0/model.safetensors" --gguf "$work/$name.gguf" "${hf[@]}" \
    --reference "$work/$name.json"
  node check.mjs --ref "$work/$name.json" --gguf "$work/$name.gguf" "${hf[@]}" "$@"
}

# 1. The llama preset on the garden language (words: usable by id in llama.cpp, not as text).
printf 'extends: %s\ndata:\n  train_docs: 2000\n  val_docs: 50\n  test_docs: 50\n' \
  "$root/configs/llama.yaml" > "$work/garden.yaml"
check_model garden "$work/garden.yaml" 150 --control
# 1b. The same with QK-norm: exported as llama.cpp's qwen3 (q_norm / k_norm, half-split RoPE).
printf 'extends: %s\nmodel:\n  qk_norm: true\n' "$work/garden.yaml" > "$work/qwen3.yaml"
check_model qwen3 "$work/qwen3.yaml" 150
# 1c. With a mixture-of-experts FFN (4 experts, top 2): llama.cpp's llama with Mixtral's experts.
printf 'extends: %s\nmodel:\n  ffn: moe\n  moe_experts: 4\n  moe_top_k: 2\n' "$work/garden.yaml" > "$work/mixtral.yaml"
HF=0 check_model mixtral "$work/mixtral.yaml" 150

# 2. Text (deterministic, a few non-ASCII words): SentencePiece BPE with byte pieces, and bytes.
awk 'BEGIN { srand(7); n = split("the garden gardener waters a rose roses tulip every morning café naïve bee " \
                                 "visits yellow red", w);
             while (len < 60000) { k = 4 + int(rand() * 6); s = "";
               for (i = 0; i < k; ++i) s = s (i ? " " : "") w[1 + int(rand() * n)];
               s = s (rand() < 0.66 ? ". " : ".\n"); printf "%s", s; len += length(s) } }' > "$work/corpus.txt"
for tokenizer in sentencepiece bytes; do
  printf 'extends: %s\ndata:\n  kind: text\n  text_path: corpus.txt\n  text_doc_len: 256\n  layout: packed\n' \
    "$root/configs/llama.yaml" > "$work/$tokenizer.yaml"
  printf '  seq_len: 64\n  tokenizer: %s\n' "$tokenizer" >> "$work/$tokenizer.yaml"
done
"$lmx" -q data tokenizer "$work/sentencepiece.yaml" --vocab 320 --byte-fallback > /dev/null
check_model sentencepiece "$work/sentencepiece.yaml" 100 --text
check_model bytes "$work/bytes.yaml" 60 --text
echo "interop check: passed in $((SECONDS - start)) s"
