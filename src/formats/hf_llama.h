// Hugging Face Llama folders (transformers' LlamaForCausalLM): config.json with LlamaConfig's
// keys and model.safetensors with HF's tensor names, which lmx's parameter names already are
// (model/lm.h). What maps:
//   d_model hidden_size, d_ff intermediate_size, n_heads num_attention_heads, n_kv_heads
//   num_key_value_heads, head_dim head_dim, n_layers num_hidden_layers, norm_eps rms_norm_eps,
//   rope_theta rope_theta, rope_scaling linear {"rope_type": "linear", "factor"} (ntk: folded
//   into rope_theta, θ·s^(D/(D−2)), exactly what lmx computes), vocab_size vocab_size,
//   max_seq_len max_position_embeddings, tie_embeddings tie_word_embeddings.
// Llama is pre-norm RMSNorm, SwiGLU, RoPE, MHA/GQA/MQA, no biases; anything else is refused
// naming the component. HF rotates q/k with rotate_half (pairs i, i + D/2) = lmx's
// rope_layout half: those weights are copied as they are; interleaved layouts (pairs 2i, 2i+1)
// get their q/k rows permuted per head to the half layout (the same model). config.json also
// carries "lmx_config" (the checkpoint's YAML), so an exported folder keeps its data section;
// a folder without it gets the defaults for data and train.
#pragma once
#include <string>

#include "config/config.h"
#include "data/corpus.h"
#include "formats/checkpoint.h"
#include "model/lm.h"

namespace lmx {

// "" when HF LlamaForCausalLM (or, with model.qk_norm, Qwen3ForCausalLM) expresses the config;
// else what blocks it, e.g. "model.norm is layernorm (Llama: rmsnorm)".
std::string hf_llama_blocker(const ModelConfig& m);

// The family a config hf_llama_blocker passes exports as: Qwen 3 where model.qk_norm is on (a
// Llama with an RMSNorm over each head's q and k before RoPE, q_norm / k_norm: Qwen3ForCausalLM,
// llama.cpp's qwen3, which rotates half-split pairs), else Llama.
struct HfFamily {
  const char* architecture;  // Hugging Face's architectures[0]
  const char* model_type;    // config.json's model_type, and llama.cpp's general.architecture
  bool qk_norm;
};
HfFamily hf_family(const ModelConfig& m);

// Whether the tensor's rows (q_proj, k_proj) or entries (q_norm, k_norm) run per head in the
// RoPE layout's order; to_half_layout permutes one from the interleaved layout (pairs 2i, 2i+1)
// to the half one (i, i + D/2), per head of D.
bool follows_rope_layout(const std::string& name);
torch::Tensor to_half_layout(const torch::Tensor& t, int64_t D);

// Whether the exported Llama ties its head to the embedding: model.tie_embeddings, unless
// model.embed_scale scales the embeddings (a Llama multiplies no embedding: see llama_tensors).
bool llama_ties_head(const ModelConfig& m);

// The parameters as a Llama checkpoint holds them, under lmx's (= HF's) names. With
// model.embed_scale sqrt_d the scale is folded into model.embed_tokens.weight and a tied head
// is written as its own lm_head.weight (the unscaled matrix): the same logits, untied.
NamedTensors llama_tensors(const ModernLM& model, const ModelConfig& m);

// rope_theta as Llama configs state it: ntk scaling folded in, θ·s^(D/(D−2)) (what lmx computes).
double hf_rope_theta(const ModelConfig& m);

// True when path is a directory (an HF folder, possibly without config.json).
bool is_hf_folder(const std::string& path);

// Writes dir/config.json and dir/model.safetensors (dir: new or empty). InputError naming the
// blocking component when the config is not expressible. With the vocabulary, config.json also
// names bos / eos / pad_token_id, and the tokenizer files and generation_config.json are written.
void export_hf_llama(const Checkpoint& ckpt, const std::string& dir, const data::Vocab* vocab = nullptr);

// dir/tokenizer.json, tokenizer_config.json, special_tokens_map.json (and tokenizer.model for
// SentencePiece) for AutoTokenizer (formats/hf_tokenizer.cpp).
void write_hf_tokenizer(const data::Vocab& vocab, const std::string& dir, int max_len);

// Reads an HF Llama folder as a Checkpoint (config built from config.json, tensors as float32
// under lmx's names). InputError naming the file and key for anything missing or unsupported.
Checkpoint read_hf_llama(const std::string& dir);

}  // namespace lmx
