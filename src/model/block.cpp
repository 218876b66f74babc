#include "model/block.h"

namespace lmx {

BlockImpl::BlockImpl(const ModelConfig& cfg, std::shared_ptr<Position> position)
    : pre_norm_(cfg.norm_placement == "pre") {
  self_attn = register_module("self_attn", make_attention(cfg, std::move(position)));
  mlp = register_module("mlp", make_ffn(cfg));
  input_layernorm = register_module("input_layernorm", make_norm(cfg, cfg.d_model));
  post_attention_layernorm = register_module("post_attention_layernorm", make_norm(cfg, cfg.d_model));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, int64_t start, std::vector<torch::Tensor>* cache) {
  if (pre_norm_) {
    auto h = x + self_attn->forward(input_layernorm->forward(x), start, cache);  // (B, T, C)
    return h + mlp->forward(post_attention_layernorm->forward(h));
  }
  auto h = input_layernorm->forward(x + self_attn->forward(x, start, cache));
  return post_attention_layernorm->forward(h + mlp->forward(h));
}

}  // namespace lmx
