// Position schemes. One interface; each scheme overrides the hooks it needs:
//   embed, embed_at   absolute schemes add a vector to the token embeddings (sinusoidal,
//                     learned), at positions [start, start + T) or at given positions
//   rotate            RoPE rotates queries and keys
//   score_bias        relative schemes add a bias to the attention scores (T5 bias, ALiBi)
//   module_name, per_layer  where its owner registers it and whether each layer has its own
// and says what it does (effect): the fused attention kernel and the decoding engine ask that,
// and a rotating scheme's tables (rotary), never which class a scheme is.
// Positions are absolute token indices: a forward with a KV cache starts at cache->length.
// Fixed tables (sinusoids, cos/sin, slopes) are plain member tensors, recomputed on demand
// (length or device change), so they are never saved in checkpoints.
#pragma once
#include <torch/nn/module.h>

#include <memory>
#include <utility>

#include "config/config.h"

namespace lmx {

// What a scheme does to the model, as the code that runs it without calling its hooks needs
// to know (the fused attention kernel, the decoding engine).
enum class PositionEffect {
  Nothing,       // no position information (NoPE)
  AddsTable,     // embed() adds a vector that depends on the position only (sinusoidal, learned):
                 //   the engine adds the rows of embed(zeros) instead of calling it
  Rotates,       // rotate() turns queries and keys; rotary() gives the tables the kernels take
  BiasesScores,  // score_bias() adds to the attention scores (T5 bias, ALiBi): LibTorch's ops
};

// A rotation as the fused kernels take it (RoPE).
class Rotary {
 public:
  virtual ~Rotary() = default;
  virtual int64_t dim() const = 0;          // rotated width per head
  virtual bool interleaved() const = 0;     // pairs (2i, 2i + 1); else (i, i + D/2)
  // cos and sin for positions [0, length): (length, dim/2) float32 on device.
  virtual std::pair<torch::Tensor, torch::Tensor> tables(int64_t length, const torch::Device& device) = 0;
};

class Position : public torch::nn::Module {
 public:
  virtual PositionEffect effect() const = 0;
  // The rotation of a scheme whose effect is Rotates; null for the others.
  virtual Rotary* rotary() { return nullptr; }
  bool has_score_bias() const { return effect() == PositionEffect::BiasesScores; }

  // The name its owner registers it under when it has parameters, so the parameter names
  // match Hugging Face: "embed_positions" (learned, in model.), "relative_attention_bias"
  // (T5 bias, in each layer's self_attn.).
  virtual const char* module_name() const = 0;
  // true: applied inside each attention layer (T5 bias: one table per layer, or one shared
  // by every layer, registered in layer 0); false: one instance for the whole model.
  virtual bool per_layer() const { return false; }
  // A per-layer scheme whose one instance every layer reads (registered in layer 0).
  virtual bool shared_by_layers() const { return false; }
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
};

}  // namespace lmx
