// Position schemes. One interface; each scheme overrides the hooks it needs:
//   embed, embed_at   absolute schemes add a vector to the token embeddings (sinusoidal,
//                     learned), at positions [start, start + T) or at given positions
//   rotate            RoPE rotates queries and keys
//   score_bias        relative schemes add a bias to the attention scores (T5 bias, ALiBi),
//                     has_score_bias says whether a scheme does
//   module_name, per_layer  where its owner registers it and whether each layer has its own
// Positions are absolute token indices: a forward with a KV cache starts at cache->length.
// Fixed tables (sinusoids, cos/sin, slopes) are plain member tensors, recomputed on demand
// (length or device change), so they are never saved in checkpoints.
#pragma once
#include <torch/nn/module.h>

#include <memory>

#include "config/config.h"

namespace lmx {

class Position : public torch::nn::Module {
 public:
  // The name its owner registers it under when it has parameters, so the parameter names
  // match Hugging Face: "embed_positions" (learned, in model.), "relative_attention_bias"
  // (T5 bias, in each layer's self_attn.).
  virtual const char* module_name() const = 0;
  // true: applied inside each attention layer (T5 bias: one table per layer, or one shared
  // by every layer, registered in layer 0); false: one instance for the whole model.
  virtual bool per_layer() const { return false; }
  // A per-layer scheme registered by an attention layer already (T5 bias shared by layers).
  bool attached = false;

  // x (B, T, C) at positions [start, start + T) -> x plus the position embedding.
  virtual torch::Tensor embed(const torch::Tensor& x, int64_t start) { return x; }
  // The same for a padding-free batch: x (1, N, C), token n at position positions[n] (int64).
  virtual torch::Tensor embed_at(const torch::Tensor& x, const torch::Tensor& positions) { return x; }
  // x (B, H, T, D) at positions [start, start + T) -> rotated x (RoPE; identity elsewhere).
  virtual torch::Tensor rotate(const torch::Tensor& x, int64_t start) { return x; }
  // Additive score bias (H, Tq, Tk) for queries at [q_start, q_start + Tq) and keys at
  // [0, Tk); an undefined tensor when the scheme has none.
  virtual torch::Tensor score_bias(int64_t q_start, int64_t tq, int64_t tk, const torch::Device& device) {
    return {};
  }
  // Whether score_bias returns a bias (T5 bias, ALiBi); the fused attention kernel has none.
  virtual bool has_score_bias() const { return false; }
};

// The registry's factory (model/registry.cpp): cfg.position picks the row.
std::shared_ptr<Position> make_position(const ModelConfig& cfg);

}  // namespace lmx
