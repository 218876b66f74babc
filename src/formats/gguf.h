// GGUF v3 files for llama.cpp's `llama` architecture, or `qwen3` for a model with QK-norm (its
// keys llama's under qwen3., its tensors llama's plus blk.N.attn_q_norm / attn_k_norm, its RoPE
// over half-split pairs as lmx's half layout), and Mixtral's experts for model.ffn moe (llama's
// expert_count / expert_used_count, blk.N.ffn_gate_inp the router, ffn_{gate,up,down}_exps the
// experts stacked (E, F, C) / (E, C, F)) (ggml's gguf.md): a header ("GGUF", version
// 3, tensor count, metadata count), metadata key/value pairs, tensor infos (name, dims fastest-
// first, ggml type, offset), then the tensor data, each tensor aligned to general.alignment (32).
// What maps: d_model llama.embedding_length, d_ff feed_forward_length, n_heads / n_kv_heads
// attention.head_count(_kv), head_dim rope.dimension_count and attention.key_length /
// value_length, n_layers block_count, norm_eps attention.layer_norm_rms_epsilon, rope_theta
// rope.freq_base (ntk folded in as for --hf), linear rope_scaling rope.scaling.type / factor,
// max_seq_len context_length. The tensors get llama.cpp's names (token_embd, blk.N.attn_q, ...,
// output; no output tensor when tied: llama.cpp then reads token_embd).
// RoPE: llama.cpp's `llama` rotates adjacent pairs (2i, 2i+1), lmx's half layout pairs (i, i+D/2),
// so half-layout q/k rows are permuted per head exactly as llama.cpp's convert_hf_to_gguf.py
// permute() does; interleaved models are written as they are.
// Vocabulary (formats/gguf_vocab.cpp): SentencePiece models carry their pieces, scores and types
// (tokenizer.ggml.model "llama"; they need byte pieces <0xXX>); byte models 256 byte pieces plus
// their specials ("llama": llama.cpp's byte fallback then tokenizes text exactly as lmx does);
// garden models their words ("gpt2" with no merges: usable by token id, not for text).
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/corpus.h"
#include "formats/checkpoint.h"

namespace lmx {

struct GgufVocab {
  std::string model;                // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2"
  std::vector<std::string> tokens;  // id -> piece
  std::vector<float> scores;        // id -> score (empty: none written)
  std::vector<int32_t> types;       // id -> 1 normal, 2 unknown, 3 control, 4 user, 5 unused, 6 byte
  int32_t bos = -1, eos = -1, pad = -1, unk = -1;
  std::string spm_type;             // SentencePiece's trainer_spec.model_type: bpe, unigram ("" otherwise)
};

// "" when llama.cpp's `llama` (or `qwen3`) graph expresses the config, Mixtral's experts included;
// else what blocks it, naming the component.
std::string gguf_blocker(const ModelConfig& m);

// (H·D, C) rows in the half layout (pairs i, i + D/2) -> the interleaved layout (2i, 2i+1), per head
// (convert_hf_to_gguf.py's permute; interleaved_to_half in hf_llama.cpp is its inverse).
torch::Tensor half_to_interleaved(const torch::Tensor& w, int64_t D);

// A corpus vocabulary as GGUF's (formats/gguf_vocab.cpp): garden words, bytes, or the SentencePiece
// model's pieces (InputError when it has no byte pieces: llama.cpp needs them).
GgufVocab gguf_vocab(const data::Vocab& vocab);

// Writes path atomically (path.tmp, then rename). type: f32, f16 or bf16 (the 2-D weights; norms
// stay f32). InputError naming the blocking component, a vocabulary that does not match
// model.vocab_size, or an unknown type.
void export_gguf(const Checkpoint& ckpt, const GgufVocab& vocab, const std::string& path,
                 const std::string& type = "f32");

// The GGUF tensor types --gguf-type accepts.
const std::vector<std::string>& gguf_types();

}  // namespace lmx
