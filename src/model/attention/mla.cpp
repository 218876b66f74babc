// Multi-head latent attention (DeepSeek-AI 2024, "DeepSeek-V2", §2.1): the cache holds one
// low-rank latent c = W_DKV x per token plus one decoupled RoPE key part shared by the heads.
#include <fmt/format.h>

#include <cmath>

#include "config/registry.h"
#include "model/attention/attention.h"
#include "model/linear.h"
#include "model/norm.h"
#include "model/position/rope.h"
#include "util/error.h"

namespace lmx {

MultiHeadLatentAttentionImpl::MultiHeadLatentAttentionImpl(const MlaOptions& o, std::shared_ptr<Position> position)
    : absorb(o.absorb),
      nope_rope_(o.nope_rope),
      n_heads_(o.n_heads),
      head_dim_(o.head_dim),
      kv_rank_(o.kv_rank),
      q_rank_(o.q_rank),
      rope_dim_(o.rope_dim) {
  const int64_t C = o.d_model, H = n_heads_, D = head_dim_, R = rope_dim_;
  if (q_rank_ > 0) {
    q_a_proj = register_module("q_a_proj", make_linear(C, q_rank_, /*with_bias=*/o.bias));
    if (o.latent_norm) q_a_layernorm = register_module("q_a_layernorm", std::make_shared<RMSNormImpl>(q_rank_, o.norm_eps));
    q_b_proj = register_module("q_b_proj", make_linear(q_rank_, H * (D + R), /*with_bias=*/o.bias));
  } else {
    q_proj = register_module("q_proj", make_linear(C, H * (D + R), /*with_bias=*/o.bias));
  }
  kv_a_proj_with_mqa = register_module("kv_a_proj_with_mqa", make_linear(C, kv_rank_ + R, /*with_bias=*/o.bias));
  if (o.latent_norm) kv_a_layernorm = register_module("kv_a_layernorm", std::make_shared<RMSNormImpl>(kv_rank_, o.norm_eps));
  kv_b_proj = register_module("kv_b_proj", make_linear(kv_rank_, H * 2 * D, /*with_bias=*/o.bias));
  o_proj = register_module("o_proj", make_linear(H * D, C, /*with_bias=*/o.bias));
  attach_position(std::move(position));
}

torch::Tensor MultiHeadLatentAttentionImpl::w_uk() {
  return kv_b_proj->weight.view({n_heads_, 2 * head_dim_, kv_rank_}).slice(1, 0, head_dim_);  // (H, D, r)
}

torch::Tensor MultiHeadLatentAttentionImpl::w_uv() {
  return kv_b_proj->weight.view({n_heads_, 2 * head_dim_, kv_rank_}).slice(1, head_dim_);  // (H, D, r)
}

MultiHeadLatentAttentionImpl::Projected MultiHeadLatentAttentionImpl::project(const torch::Tensor& x, int64_t start) {
  const int64_t B = x.size(0), T = x.size(1), H = n_heads_, D = head_dim_, R = rope_dim_;
  // DeepSeek-V2 normalizes both latents with an RMSNorm (q_a_layernorm, kv_a_layernorm).
  auto q = q_proj ? q_proj(x) : q_b_proj(q_a_layernorm ? q_a_layernorm->forward(q_a_proj(x)) : q_a_proj(x));  // (B, T, H·(D+R))
  q = q.view({B, T, H, D + R}).transpose(1, 2);              // (B, H, T, D+R)
  auto kv = kv_a_proj_with_mqa(x);                           // (B, T, r+R)
  Projected p;
  p.q_nope = q.slice(-1, 0, D);                                               // (B, H, T, D)
  p.q_pe = position_->rotate(q.slice(-1, D), start);                          // (B, H, T, R)
  p.c = kv.slice(-1, 0, kv_rank_);                                            // (B, T, r)
  if (kv_a_layernorm) p.c = kv_a_layernorm->forward(p.c);
  p.k_pe = position_->rotate(kv.slice(-1, kv_rank_).unsqueeze(1), start).squeeze(1);  // (B, T, R)
  return p;
}

torch::Tensor MultiHeadLatentAttentionImpl::raw_scores(const Projected& p, bool absorbed) {
  const int64_t B = p.c.size(0), Tk = p.c.size(1), H = n_heads_, D = head_dim_;
  torch::Tensor nope;  // (B, H, T, Tk)
  if (absorbed) {
    auto q_latent = p.q_nope.matmul(w_uk());                           // (B, H, T, r) = q_nope·W_UK
    nope = q_latent.matmul(p.c.unsqueeze(1).transpose(-2, -1));        // (B, H, T, Tk)
    if (kv_b_proj->bias.defined()) {                                   // + q_nope·b_k, same for every key
      auto b_k = kv_b_proj->bias.view({H, 2 * D}).slice(1, 0, D);      // (H, D)
      nope = nope + (p.q_nope * b_k.view({1, H, 1, D})).sum(-1, /*keepdim=*/true);
    }
  } else {
    auto kv = kv_b_proj(p.c).view({B, Tk, H, 2 * D}).transpose(1, 2);  // (B, H, Tk, 2D)
    nope = p.q_nope.matmul(kv.slice(-1, 0, D).transpose(-2, -1));       // (B, H, T, Tk)
  }
  auto rope = p.q_pe.matmul(p.k_pe.unsqueeze(1).transpose(-2, -1));    // (B, H, T, R)·(B, 1, R, Tk)
  return (nope + rope) / std::sqrt(static_cast<double>(D + rope_dim_));
}

torch::Tensor MultiHeadLatentAttentionImpl::values(const torch::Tensor& probs, const torch::Tensor& c, bool absorbed) {
  const int64_t B = c.size(0), Tk = c.size(1), H = n_heads_, D = head_dim_;
  if (absorbed) {
    auto out_latent = probs.matmul(c.unsqueeze(1));                 // (B, H, T, r)
    auto out = out_latent.matmul(w_uv().transpose(1, 2));            // (B, H, T, D) = (P·c)·W_UVᵀ
    if (kv_b_proj->bias.defined())                                   // + b_v: rows of P sum to 1
      out = out + kv_b_proj->bias.view({H, 2 * D}).slice(1, D).view({1, H, 1, D});
    return out;
  }
  auto kv = kv_b_proj(c).view({B, Tk, H, 2 * D}).transpose(1, 2);  // (B, H, Tk, 2D)
  return probs.matmul(kv.slice(-1, D));                             // (B, H, T, D)
}

torch::Tensor MultiHeadLatentAttentionImpl::forward(const torch::Tensor& x, int64_t start,
                                                    std::vector<torch::Tensor>* cache) {
  const int64_t B = x.size(0), T = x.size(1), H = n_heads_, D = head_dim_;
  auto p = project(x, start);
  if (cache) {
    p.c = append_to_cache(cache, 0, p.c, /*dim=*/1);        // (B, Tk, r)
    p.k_pe = append_to_cache(cache, 1, p.k_pe, /*dim=*/1);  // (B, Tk, R)
  }
  auto scores = raw_scores(p, absorb);  // (B, H, T, Tk)
  auto bias = position_->score_bias(start, T, p.c.size(1), x.device());
  if (bias.defined()) scores = scores + bias.to(scores.scalar_type());
  auto y = values(causal_softmax(scores, start), p.c, absorb);  // (B, H, T, D)
  return o_proj(y.transpose(1, 2).reshape({B, T, H * D}));      // (B, T, C)
}

torch::Tensor MultiHeadLatentAttentionImpl::scores(const torch::Tensor& x, bool absorbed) {
  return raw_scores(project(x, /*start=*/0), absorbed);
}

std::pair<torch::Tensor, torch::Tensor> MultiHeadLatentAttentionImpl::rope_on_keys_scores(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), H = n_heads_, D = head_dim_;
  if (D % 2 != 0)
    throw InputError(fmt::format("rope_on_keys_scores rotates the {}-wide head: it needs an even model.head_dim", D));
  RoPEImpl rope(nope_rope_);  // RoPE over the whole nope part, as without decoupling
  auto p = project(x, /*start=*/0);
  auto q = rope.rotate(p.q_nope, 0);                                   // (B, H, T, D) R_i q
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto k = kv_b_proj(p.c).view({B, T, H, 2 * D}).transpose(1, 2).slice(-1, 0, D);  // (B, H, T, D) W_UK c (+ b_k)
  auto exact = rope.rotate(k, 0);                                     // R_j W_UK c_j
  auto exact_scores = q.matmul(exact.transpose(-2, -1)) * scale;      // (B, H, T, T)
  auto absorbed = q.matmul(w_uk()).matmul(p.c.unsqueeze(1).transpose(-2, -1));  // (R_i q)ᵀ W_UK c_j
  if (kv_b_proj->bias.defined())
    absorbed = absorbed + (q * kv_b_proj->bias.view({H, 2 * D}).slice(1, 0, D).view({1, H, 1, D})).sum(-1, true);
  return {exact_scores, absorbed * scale};
}

}  // namespace lmx
