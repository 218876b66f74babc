#!/usr/bin/env bash
# Interop checked by engines we did not write (issue 29): trains two small models with lmx, a
# llama preset on the garden language (GQA, 2 of 4 KV heads) and a SentencePiece (BPE, byte
# fallback) text model, exports each with `lmx export --gguf --hf --reference`, then
# scripts/interop/check.mjs loads the GGUF in llama.cpp (node-llama-cpp 3.21.1's prebuilt CPU
# binaries, F32 KV cache, no flash attention) and checks: next-token probabilities within 1e-4 of lmx's on held-out
# sequences, 64 identical greedy tokens, llama.cpp's tokenization of a test text (SentencePiece
# model), and the HF folder's tokenizer.json with Hugging Face's Rust tokenizers library.
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

# 1. The llama preset on the garden language.
tiny="--set data.train_docs=2000 --set data.val_docs=50 --set data.test_docs=50"
"$lmx" -q train "$root/configs/llama.yaml" --set train.steps=150 $tiny --out "$work/garden"
"$lmx" -q export "$work/garden/seed0/model.safetensors" --gguf "$work/garden.gguf" --hf "$work/garden-hf" \
  --reference "$work/garden.json"
node check.mjs --ref "$work/garden.json" --gguf "$work/garden.gguf" --hf "$work/garden-hf"

# 2. A SentencePiece text model (a deterministic text with a few non-ASCII words).
awk 'BEGIN { srand(7); split("the garden gardener waters a rose roses tulip every morning café naïve bee visits yellow red", w);
             while (n < 60000) { k = 4 + int(rand() * 6); s = "";
               for (i = 0; i < k; ++i) s = s (i ? " " : "") w[1 + int(rand() * 16)];
               s = s (rand() < 0.66 ? ". " : ".\n"); printf "%s", s; n += length(s) } }' > "$work/corpus.txt"
cat > "$work/spm.yaml" <<EOF
extends: $root/configs/llama.yaml
data:
  kind: text
  text_path: corpus.txt
  text_doc_len: 256
  layout: packed
  seq_len: 64
  tokenizer: sentencepiece
EOF
"$lmx" -q data tokenizer "$work/spm.yaml" --vocab 320 --byte-fallback > /dev/null
"$lmx" -q train "$work/spm.yaml" --set train.steps=100 --out "$work/spm"
"$lmx" -q export "$work/spm/seed0/model.safetensors" --gguf "$work/spm.gguf" --hf "$work/spm-hf" \
  --reference "$work/spm.json"
node check.mjs --ref "$work/spm.json" --gguf "$work/spm.gguf" --text --hf "$work/spm-hf"
echo "interop check: passed in $((SECONDS - start)) s"
