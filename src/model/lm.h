// ModernLM: one decoder-only language model whose every part is chosen by name in
// ModelConfig (registry.h). Dimension letters: B batch, T time, C = d_model, V vocab,
// H query heads, Hk KV heads, D head dim.
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "config/config.h"

namespace lmx {

class Block;  // model/block.h

// Incremental-decoding state: one entry per layer, owned by the attention variant
// (K/V for MHA/GQA/MQA, the latent plus the RoPE key part for MLA).
struct KVCache {
  std::vector<std::vector<torch::Tensor>> layers;  // per layer: the variant's cached tensors
  int64_t length = 0;                              // tokens already cached
  void clear() { layers.clear(); length = 0; }
};

class ModernLMImpl : public torch::nn::Module {
 public:
  explicit ModernLMImpl(const ModelConfig& cfg);  // vocab_size must be resolved (> 0)

  // tokens (B, T) int64 -> logits (B, T, V). With a cache, the tokens continue the cached
  // sequence (positions start at cache->length) and the cache is extended.
  torch::Tensor forward(const torch::Tensor& tokens, KVCache* cache = nullptr);

  const ModelConfig& config() const { return cfg_; }

 private:
  ModelConfig cfg_;
  struct Parts;
  std::shared_ptr<Parts> parts_;
};
TORCH_MODULE(ModernLM);

}  // namespace lmx
