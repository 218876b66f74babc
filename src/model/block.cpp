#include "model/block.h"

#include <stdexcept>

namespace lmx {

BlockImpl::BlockImpl(const BlockOptions& o, BlockParts parts) : pre_norm_(o.pre_norm) {
  self_attn = register_module("self_attn", std::move(parts.self_attn));
  mlp = register_module("mlp", std::move(parts.mlp));
  input_layernorm = register_module("input_layernorm", std::move(parts.input_layernorm));
  post_attention_layernorm = register_module("post_attention_layernorm", std::move(parts.post_attention_layernorm));
  if (o.sandwich) {
    if (!parts.attn_output_layernorm || !parts.mlp_output_layernorm || !o.pre_norm)
      throw std::logic_error("BlockImpl: sandwich placement needs its two output norms and pre-norm");
    attn_output_layernorm = register_module("attn_output_layernorm", std::move(parts.attn_output_layernorm));
    mlp_output_layernorm = register_module("mlp_output_layernorm", std::move(parts.mlp_output_layernorm));
  }
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, int64_t start, std::vector<torch::Tensor>* cache) {
  auto [h, branch] = forward_residual(x, torch::Tensor(), start, cache);
  return branch.defined() ? h + branch : h;
}

std::pair<torch::Tensor, torch::Tensor> BlockImpl::forward_residual(const torch::Tensor& x, const torch::Tensor& branch,
                                                                    int64_t start, std::vector<torch::Tensor>* cache,
                                                                    const std::vector<int64_t>* lengths) {
  auto attend = [&](const torch::Tensor& y) {
    return lengths ? self_attn->forward_packed(y, *lengths) : self_attn->forward(y, start, cache);
  };
  if (sandwich()) {  // as pre-norm, each branch through its output norm first
    auto [s, n1] = input_layernorm->add_forward(x, branch);
    auto [h, n2] = post_attention_layernorm->add_forward(s, attn_output_layernorm->forward(attend(n1)));
    return {h, mlp_output_layernorm->forward(mlp->forward(n2))};
  }
  if (pre_norm_) {
    // The stream's adds go into the next norm (Norm::add_forward): the one after the
    // attention here, the one after the FFN in the next block (or the model's final norm).
    auto [s, n1] = input_layernorm->add_forward(x, branch);
    auto [h, n2] = post_attention_layernorm->add_forward(s, attend(n1));
    return {h, mlp->forward(n2)};
  }
  auto s = branch.defined() ? x + branch : x;
  auto h = input_layernorm->add_forward(s, attend(s)).second;
  return {post_attention_layernorm->add_forward(h, mlp->forward(h)).second, torch::Tensor()};
}

}  // namespace lmx
