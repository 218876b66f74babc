// Multi-head attention (Vaswani et al. 2017) with grouped KV heads: GQA (Ainslie et al.
// 2023) for 1 < Hk < H, MQA (Shazeer 2019) for Hk = 1.
#include <cmath>

#include "model/attention.h"

namespace lmx {

namespace {

torch::nn::Linear linear(int64_t in, int64_t out, bool with_bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(with_bias));
}

}  // namespace

MultiHeadAttentionImpl::MultiHeadAttentionImpl(const ModelConfig& cfg, std::shared_ptr<Position> position)
    : n_heads_(cfg.n_heads), n_kv_heads_(cfg.kv_heads()), head_dim_(cfg.dim_head()) {
  const int64_t C = cfg.d_model, H = n_heads_, Hk = n_kv_heads_, D = head_dim_;
  q_proj = register_module("q_proj", linear(C, H * D, /*with_bias=*/cfg.bias));
  k_proj = register_module("k_proj", linear(C, Hk * D, /*with_bias=*/cfg.bias));
  v_proj = register_module("v_proj", linear(C, Hk * D, /*with_bias=*/cfg.bias));
  o_proj = register_module("o_proj", linear(H * D, C, /*with_bias=*/cfg.bias));
  attach_position(std::move(position));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& x, int64_t start,
                                              std::vector<torch::Tensor>* cache) {
  const int64_t B = x.size(0), T = x.size(1), H = n_heads_, Hk = n_kv_heads_, D = head_dim_;
  auto q = q_proj(x).view({B, T, H, D}).transpose(1, 2);   // (B, H, T, D)
  auto k = k_proj(x).view({B, T, Hk, D}).transpose(1, 2);  // (B, Hk, T, D)
  auto v = v_proj(x).view({B, T, Hk, D}).transpose(1, 2);  // (B, Hk, T, D)
  q = position_->rotate(q, start);
  k = position_->rotate(k, start);
  if (cache) {
    k = append_to_cache(cache, 0, k, /*dim=*/2);  // (B, Hk, Tk, D)
    v = append_to_cache(cache, 1, v, /*dim=*/2);
  }
  const int64_t Tk = k.size(2);
  if (Hk != H) {  // query head h reads KV head h / (H / Hk)
    k = k.repeat_interleave(H / Hk, /*dim=*/1);  // (B, H, Tk, D)
    v = v.repeat_interleave(H / Hk, /*dim=*/1);
  }
  auto bias = position_->score_bias(start, T, Tk, x.device());  // (H, T, Tk) or undefined
  auto y = causal_attention(q, k, v, bias, 1.0 / std::sqrt(static_cast<double>(D)), start);  // (B, H, T, D)
  return o_proj(y.transpose(1, 2).reshape({B, T, H * D}));  // (B, T, C)
}

}  // namespace lmx
