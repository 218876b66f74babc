// Multi-head attention (Vaswani et al. 2017) with grouped KV heads: GQA (Ainslie et al.
// 2023) for 1 < Hk < H, MQA (Shazeer 2019) for Hk = 1.
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "kernels/cpu_kernels.h"
#include "kernels/fused_attention.h"
#include "kernels/parallel.h"
#include "model/attention/attention.h"
#include "model/linear.h"
#include "model/norm.h"

namespace lmx {

namespace {

// For each of N tokens of a packed (N, H + 2Hk, D) projection, tokens split over the threads:
// rows(first, end) on its query rows, then on its key rows (row indices of the flattened
// (N·(H + 2Hk), D) layout), then values(first) with the first of its Hk value rows.
template <class Query, class Key, class Values>
void per_token(int64_t N, int64_t H, int64_t Hk, const Query& query, const Key& key, const Values& values) {
  const int64_t R = H + 2 * Hk;
  kernels::parallel_for(N, 64, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      query(n * R, n * R + H);
      key(n * R + H, n * R + H + Hk);
      values(n * R + H + Hk);
    }
  });
}

// QK-norm on the packed projection as one autograd op: qkv (N, H + 2Hk, D) float32 contiguous
// -> the same with each query row through the q norm's row kernel, each key row through the k
// norm's, the value rows copied (one pass, no narrow / cat copies). Backward: dx by rows on
// every thread, then dγ (dβ) summed over the rows in order on this one (NormFn's split, the
// bits of one serial call); the value rows' gradient passes through. The kernels are the
// decoding engine's, which runs the same rows one token at a time: the same bits.
class QkNormFn : public torch::autograd::Function<QkNormFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv_in,
                               const torch::Tensor& wq, const torch::Tensor& bq, const torch::Tensor& wk,
                               const torch::Tensor& bk, int64_t H, int64_t Hk, double eps, int64_t fwd, int64_t bwd) {
    const auto qkv = qkv_in.contiguous();
    const int64_t D = qkv.size(-1), R = H + 2 * Hk, N = qkv.numel() / (R * D);
    const bool layer = bq.numel() > 0;
    auto out = torch::empty_like(qkv);
    auto mean = torch::empty({layer ? N * R : 0}, qkv.options()), rstd = torch::empty({N * R}, qkv.options());
    const auto fn = reinterpret_cast<kernels::NormFn>(fwd);
    auto args = [&](const torch::Tensor& w, const torch::Tensor& b) {
      return kernels::NormArgs{qkv.data_ptr<float>(), nullptr, w.data_ptr<float>(), layer ? b.data_ptr<float>() : nullptr,
                               const_cast<float*>(qkv.data_ptr<float>()), out.data_ptr<float>(),
                               layer ? mean.data_ptr<float>() : nullptr, rstd.data_ptr<float>(), D,
                               static_cast<float>(eps)};
    };
    const auto aq = args(wq, bq), ak = args(wk, bk);
    const float* x = qkv.data_ptr<float>();
    float* y = out.data_ptr<float>();
    per_token(
        N, H, Hk, [&](int64_t a, int64_t b) { fn(aq, a, b); }, [&](int64_t a, int64_t b) { fn(ak, a, b); },
        [&](int64_t r) { std::memcpy(y + r * D, x + r * D, Hk * D * sizeof(float)); });
    ctx->save_for_backward({qkv, wq, wk, mean, rstd});
    ctx->saved_data["H"] = H;
    ctx->saved_data["Hk"] = Hk;
    ctx->saved_data["bwd"] = bwd;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &wq = saved[1], &wk = saved[2], &mean = saved[3], &rstd = saved[4];
    const int64_t H = ctx->saved_data["H"].toInt(), Hk = ctx->saved_data["Hk"].toInt();
    const auto grad_fn = reinterpret_cast<kernels::NormGradFn>(ctx->saved_data["bwd"].toInt());
    const int64_t D = qkv.size(-1), R = H + 2 * Hk, N = qkv.numel() / (R * D);
    const bool layer = mean.numel() > 0;
    const auto dy = grads[0].contiguous();
    auto dx = torch::empty_like(qkv);
    auto dwq = torch::zeros({D}, qkv.options()), dwk = torch::zeros({D}, qkv.options());
    auto dbq = layer ? torch::zeros({D}, qkv.options()) : torch::Tensor();
    auto dbk = layer ? torch::zeros({D}, qkv.options()) : torch::Tensor();
    auto args = [&](const torch::Tensor& w, torch::Tensor& dw, torch::Tensor& db) {
      return kernels::NormGradArgs{qkv.data_ptr<float>(), w.data_ptr<float>(), layer ? mean.data_ptr<float>() : nullptr,
                                   rstd.data_ptr<float>(), dy.data_ptr<float>(), nullptr, dx.data_ptr<float>(),
                                   dw.data_ptr<float>(), layer ? db.data_ptr<float>() : nullptr, D};
    };
    const auto gq = args(wq, dwq, dbq), gk = args(wk, dwk, dbk);
    auto dx_only = [](kernels::NormGradArgs a) { a.dw = a.db = nullptr; return a; };
    auto dw_only = [](kernels::NormGradArgs a) { a.dx = nullptr; return a; };
    const auto xq = dx_only(gq), xk = dx_only(gk);
    const float* pdy = dy.data_ptr<float>();
    float* pdx = dx.data_ptr<float>();
    per_token(
        N, H, Hk, [&](int64_t a, int64_t b) { grad_fn(xq, a, b); }, [&](int64_t a, int64_t b) { grad_fn(xk, a, b); },
        [&](int64_t r) { std::memcpy(pdx + r * D, pdy + r * D, Hk * D * sizeof(float)); });
    const auto wq_only = dw_only(gq), wk_only = dw_only(gk);
    for (int64_t n = 0; n < N; ++n) {
      grad_fn(wq_only, n * R, n * R + H);
      grad_fn(wk_only, n * R + H, n * R + H + Hk);
    }
    return {dx, dwq, dbq, dwk, dbk, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

MultiHeadAttentionImpl::MultiHeadAttentionImpl(const AttentionOptions& o, std::shared_ptr<Position> position,
                                               std::shared_ptr<Norm> qn, std::shared_ptr<Norm> kn)
    : n_heads_(o.n_heads), n_kv_heads_(o.n_kv_heads), head_dim_(o.head_dim), softcap_(o.softcap) {
  const int64_t C = o.d_model, H = n_heads_, Hk = n_kv_heads_, D = head_dim_;
  q_proj = register_module("q_proj", make_linear(C, H * D, /*with_bias=*/o.bias));
  k_proj = register_module("k_proj", make_linear(C, Hk * D, /*with_bias=*/o.bias));
  v_proj = register_module("v_proj", make_linear(C, Hk * D, /*with_bias=*/o.bias));
  o_proj = register_module("o_proj", make_linear(H * D, C, /*with_bias=*/o.bias));
  if (qn && kn) {
    q_norm = register_module("q_norm", std::move(qn));
    k_norm = register_module("k_norm", std::move(kn));
  }
  attach_position(std::move(position));
}

// q, k and v come from one matmul with the three weights stacked at compute time (the
// parameters, and so checkpoints, keep the separate q_proj / k_proj / v_proj names).
// Without a cache and without a score bias, float32 on the CPU, the fused attention kernel
// (kernels/fused_attention.h) does RoPE, the causal softmax and both matmuls in one autograd
// op; with a cache it serves inference; anything else takes the plain LibTorch path.
torch::Tensor MultiHeadAttentionImpl::qkv(const torch::Tensor& x) {
  auto w = torch::cat({q_proj->weight, k_proj->weight, v_proj->weight}, 0);  // ((H + 2Hk)·D, C)
  auto b = q_proj->bias.defined() ? torch::cat({q_proj->bias, k_proj->bias, v_proj->bias}, 0) : torch::Tensor();
  auto out = linear_2d(x, w, b).view({x.size(0), x.size(1), n_heads_ + 2 * n_kv_heads_, head_dim_});
  if (!q_norm) return out;
  const int64_t H = n_heads_, Hk = n_kv_heads_;
  const auto kq = q_norm->row_kernel(), kk = k_norm->row_kernel();
  if (kq && kk && kq->grad && fused_kernels_take(out)) {
    const auto none = torch::empty({0}, out.options());
    return QkNormFn::apply(out, kq->weight, kq->bias.defined() ? kq->bias : none, kk->weight,
                           kk->bias.defined() ? kk->bias : none, H, Hk, kq->eps,
                           reinterpret_cast<int64_t>(kq->fn), reinterpret_cast<int64_t>(kq->grad));
  }
  return torch::cat({q_norm->forward(out.narrow(2, 0, H)), k_norm->forward(out.narrow(2, H, Hk)),
                     out.narrow(2, H + Hk, Hk)}, 2);
}

bool MultiHeadAttentionImpl::rotate_only() const {
  Rotary* rope = position_->rotary();
  return rope ? rope->dim() == head_dim_ : !position_->has_score_bias();
}

bool MultiHeadAttentionImpl::takes_packed(const torch::Tensor& x) const {
  return rotate_only() && fused_attention_supported(x, head_dim_);
}

torch::Tensor MultiHeadAttentionImpl::forward_packed(const torch::Tensor& x, const std::vector<int64_t>& lengths) {
  if (!takes_packed(x)) return Attention::forward_packed(x, lengths);
  const int64_t N = x.size(1), H = n_heads_, D = head_dim_;
  torch::Tensor cos, sin;
  Rotary* rope = position_->rotary();
  if (rope) std::tie(cos, sin) = rope->tables(*std::max_element(lengths.begin(), lengths.end()), x.device());
  auto y = fused_causal_attention(qkv(x), H, n_kv_heads_, 1.0 / std::sqrt(static_cast<double>(D)), cos, sin,
                                  rope && rope->interleaved(), lengths, {window_, softcap_});  // (1, N, H, D)
  return linear_2d(y.view({1, N, H * D}), o_proj);
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& x, int64_t start,
                                              std::vector<torch::Tensor>* cache) {
  const int64_t B = x.size(0), T = x.size(1), H = n_heads_, Hk = n_kv_heads_, D = head_dim_;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto qkv = this->qkv(x);  // (B, T, H + 2Hk, D)

  Rotary* rope = position_->rotary();
  if (takes_packed(x)) {  // the fused kernel's case
    if (!cache) {
      torch::Tensor cos, sin;
      if (rope) std::tie(cos, sin) = rope->tables(start + T, x.device());
      if (start > 0) cos = cos.defined() ? cos.slice(0, start) : cos, sin = sin.defined() ? sin.slice(0, start) : sin;
      auto y = fused_causal_attention(qkv, H, Hk, scale, cos, sin, rope && rope->interleaved(), {},
                                      {window_, softcap_});  // (B, T, H, D)
      return linear_2d(y.view({B, T, H * D}), o_proj);
    }
    if (!torch::GradMode::is_enabled()) {
      auto q = position_->rotate(qkv.narrow(2, 0, H).transpose(1, 2), start);  // (B, H, T, D)
      auto k = position_->rotate(qkv.narrow(2, H, Hk).transpose(1, 2), start);  // (B, Hk, T, D)
      k = append_to_cache(cache, 0, k, /*dim=*/2);                               // (B, Hk, Tk, D)
      auto v = append_to_cache(cache, 1, qkv.narrow(2, H + Hk, Hk).transpose(1, 2), /*dim=*/2);
      // The queries' start among the cached keys (below start where a window trimmed them)
      auto y = fused_attention_inference(q, k, v, scale, k.size(2) - T, {window_, softcap_});  // (B, T, H, D)
      if (window_ > 0) trim_cache(cache, window_, /*dim=*/2);
      return linear_2d(y.view({B, T, H * D}), o_proj);
    }
  }

  auto q = qkv.narrow(2, 0, H).transpose(1, 2);         // (B, H, T, D)
  auto k = qkv.narrow(2, H, Hk).transpose(1, 2);        // (B, Hk, T, D)
  auto v = qkv.narrow(2, H + Hk, Hk).transpose(1, 2);   // (B, Hk, T, D)
  q = position_->rotate(q, start);
  k = position_->rotate(k, start);
  if (cache) {
    k = append_to_cache(cache, 0, k, /*dim=*/2);  // (B, Hk, Tk, D)
    v = append_to_cache(cache, 1, v, /*dim=*/2);
  }
  const int64_t Tk = k.size(2), q_rel = Tk - T;  // q_rel: the queries' start among the keys (start untrimmed)
  if (cache && window_ > 0) trim_cache(cache, window_, /*dim=*/2);
  if (Hk != H) {  // query head h reads KV head h / (H / Hk)
    k = k.repeat_interleave(H / Hk, /*dim=*/1);  // (B, H, Tk, D)
    v = v.repeat_interleave(H / Hk, /*dim=*/1);
  }
  auto bias = position_->score_bias(q_rel, T, Tk, x.device());  // (H, T, Tk) or undefined: relative distances
  auto y = causal_attention(q, k, v, bias, scale, q_rel, window_, softcap_);  // (B, H, T, D)
  return linear_2d(y.transpose(1, 2).reshape({B, T, H * D}), o_proj);       // (B, T, C)
}

}  // namespace lmx
