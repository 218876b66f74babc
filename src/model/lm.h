// ModernLM: one decoder-only language model whose every part is chosen by name in
// ModelConfig (registry.h). Dimension letters: B batch, T time, C = d_model, V vocab,
// H query heads, Hk KV heads, D head dim.
//
// Parameter names (named_parameters(), and the tensor names in checkpoints) follow Hugging
// Face Llama where the architecture matches; i = layer index:
//   model.embed_tokens.weight                          (V, C) token embeddings
//   model.embed_positions.weight                       (max_seq_len, C) learned positions only
//   model.layers.{i}.input_layernorm.{weight,bias}     norm around attention (bias: layernorm)
//   model.layers.{i}.self_attn.{q,k,v,o}_proj.{weight,bias}   MHA/GQA/MQA (bias: model.bias)
//   model.layers.{i}.self_attn.relative_attention_bias.weight  (num_buckets, H) T5 bias only;
//       with t5_shared (as T5) only layer 0 holds it and every layer reads it
//   model.layers.{i}.self_attn.q_proj | q_a_proj + q_b_proj, kv_a_proj_with_mqa, kv_b_proj,
//       o_proj, q_a_layernorm, kv_a_layernorm               MLA, as DeepSeek-V2 (norms: mla_latent_norm)
//   model.layers.{i}.post_attention_layernorm.{weight,bias}   norm around the FFN
//   model.layers.{i}.mlp.{gate,up,down}_proj.{weight,bias}    gated FFN (gate = activated)
//   model.layers.{i}.mlp.{up,down}_proj.{weight,bias}         plain FFN
//   model.norm.{weight,bias}                           final norm, pre-norm only
//   lm_head.weight (V, C), lm_head.bias (V)            weight absent when tie_embeddings
// Post-norm blocks keep the two norm names (applied after each residual add). Fixed tables
// (sinusoids, RoPE cos/sin, ALiBi slopes, masks) are computed, not stored: no buffers.
// Token embeddings are scaled by √C only with model.embed_scale: sqrt_d.
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <memory>
#include <vector>

#include "config/config.h"

namespace lmx {

class Attention;
class BlockImpl;
class Ffn;
class Norm;
class Position;

// Incremental-decoding state: one entry per layer, owned by the attention variant
// (K/V for MHA/GQA/MQA, the latent plus the RoPE key part for MLA).
// Use: KVCache cache; model->forward(prompt, &cache); then model->forward(next (B, 1), &cache)...
// Every call appends its tokens; cache.length counts them. One cache per batch of sequences.
struct KVCache {
  std::vector<std::vector<torch::Tensor>> layers;  // per layer: the variant's cached tensors
  int64_t length = 0;                              // tokens already cached
  void clear() { layers.clear(); length = 0; }
  int64_t numel() const;                           // cached numbers in all layers
};

class ModernLMImpl : public torch::nn::Module {
 public:
  // vocab_size must be resolved (> 0). Parameters are initialized by init_weights
  // (model/init.h) from torch's global generator.
  explicit ModernLMImpl(const ModelConfig& cfg);

  // tokens (B, T) int64 -> logits (B, T, V). With a cache, the tokens continue the cached
  // sequence (positions start at cache->length) and the cache is extended.
  torch::Tensor forward(const torch::Tensor& tokens, KVCache* cache = nullptr);

  // A padding-free batch (train.padding_free): tokens (1, N) hold sequences of these lengths
  // end to end (summing to N), each at positions [0, length) and attending only within itself.
  // -> logits (1, N, V), each sequence's as forward gives them for it alone (up to rounding).
  // Only where packable().
  torch::Tensor forward_packed(const torch::Tensor& tokens, const std::vector<int64_t>& lengths);
  // Whether forward_packed can run now: every layer's attention takes it (MHA/GQA/MQA on the
  // fused float32 CPU kernel, no score bias), outside autocast.
  bool packable() const;

  const ModelConfig& config() const { return cfg_; }

  // Probes: layer i's attention (dynamic_pointer_cast to MultiHeadLatentAttentionImpl for
  // the MLA helpers) and FFN (keep_hidden / last_hidden); n_layers() of them.
  std::shared_ptr<Attention> attention(int64_t layer) const;
  std::shared_ptr<Ffn> ffn(int64_t layer) const;
  int64_t n_layers() const;

  // The parts, for the inference engine (infer/decoder.h), which compiles them into flat buffers:
  // layer i's block, the model-level position scheme (absolute ones add to the embeddings), the
  // final norm (pre-norm only, else null), the token embeddings (V, C) and the output head's
  // weight (V, C; the embeddings when tied) and bias (undefined without).
  std::shared_ptr<BlockImpl> block(int64_t layer) const;
  std::shared_ptr<Position> position() const;
  std::shared_ptr<Norm> final_norm() const;
  torch::Tensor token_embeddings() const;
  torch::Tensor head_weight() const;
  torch::Tensor head_bias() const;
  // What the token embeddings are multiplied by: √C with model.embed_scale sqrt_d; 0 for none.
  double embedding_scale() const;
  // The head's logits as the model outputs them: c·tanh(z/c) with model.logit_softcap c > 0, else
  // unchanged (in place where they need no gradient).
  torch::Tensor soft_cap(torch::Tensor logits) const;

  // Probe: with keep_stream set, forward keeps the residual stream after the last block
  // (what the final norm of a pre-norm model, or the head of a post-norm one, reads) and the
  // stream the first block reads (embedding and positions), both detached.
  bool keep_stream = false;
  torch::Tensor last_stream;   // (B, T, C)
  torch::Tensor first_stream;  // (B, T, C)

 private:
  torch::Tensor run(const torch::Tensor& tokens, KVCache* cache, const std::vector<int64_t>* lengths);
  ModelConfig cfg_;
  struct Parts;
  std::shared_ptr<Parts> parts_;
};
TORCH_MODULE(ModernLM);

}  // namespace lmx
