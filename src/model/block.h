// One Transformer block: attention then FFN, each with a residual and a norm.
//   pre  (GPT-2 / Llama):  x ← x + f(N(x))   (the model adds a final norm)
//   post (2017 original):  x ← N(x + f(x))
//   sandwich (Gemma 2):    x ← x + N'(f(N(x)))  (the model adds a final norm)
// Parameter names (HF Llama): self_attn.*, mlp.*, input_layernorm (the norm around the
// attention), post_attention_layernorm (the norm around the FFN), for every placement;
// sandwich's output norms attn_output_layernorm and mlp_output_layernorm.
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <utility>
#include <vector>

#include "config/config.h"
#include "model/attention/attention.h"
#include "model/ffn.h"
#include "model/norm.h"
#include "model/options.h"

namespace lmx {

// A block's parts, built by the registry's factories (model/lm.cpp builds them in this order);
// the output norms with sandwich placement only.
struct BlockParts {
  std::shared_ptr<Attention> self_attn;
  std::shared_ptr<Ffn> mlp;
  std::shared_ptr<Norm> input_layernorm, post_attention_layernorm;
  std::shared_ptr<Norm> attn_output_layernorm, mlp_output_layernorm;
};

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const BlockOptions& o, BlockParts parts);
  // x (B, T, C) at positions [start, start + T); cache: this layer's KV tensors or null.
  torch::Tensor forward(const torch::Tensor& x, int64_t start, std::vector<torch::Tensor>* cache);
  // The same block on the stream x + branch (branch may be undefined), its output returned
  // as {stream, branch} with the last residual add left to the caller: pre-norm gives it to
  // the next norm to fuse; post-norm returns {output, undefined}.
  // lengths: a padding-free batch (Attention::forward_packed), start 0 and no cache.
  std::pair<torch::Tensor, torch::Tensor> forward_residual(const torch::Tensor& x, const torch::Tensor& branch,
                                                           int64_t start, std::vector<torch::Tensor>* cache,
                                                           const std::vector<int64_t>* lengths = nullptr);

  std::shared_ptr<Attention> self_attn;
  std::shared_ptr<Ffn> mlp;
  std::shared_ptr<Norm> input_layernorm, post_attention_layernorm;
  std::shared_ptr<Norm> attn_output_layernorm, mlp_output_layernorm;  // sandwich, else null
  bool pre_norm() const { return pre_norm_; }
  bool sandwich() const { return attn_output_layernorm != nullptr; }

 private:
  bool pre_norm_;
};
TORCH_MODULE(Block);

}  // namespace lmx
