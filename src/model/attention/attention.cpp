// What every attention variant shares: the causal mask, softmax attention, the cache.
#include "model/attention/attention.h"

#include <limits>
#include <stdexcept>

namespace lmx {

void Attention::attach_position(std::shared_ptr<Position> position) {
  position_ = std::move(position);
  // A per-layer scheme (T5 bias) belongs to the first layer that attaches it (one table per
  // layer, or layer 0 with t5_shared); a model-wide one is registered once by the model.
  if (position_->per_layer() && !position_->parameters().empty() && !position_->attached) {
    register_module(position_->module_name(), position_);
    position_->attached = true;
  }
}

torch::Tensor Attention::forward_packed(const torch::Tensor&, const std::vector<int64_t>&) {
  throw std::logic_error("this attention variant takes no padding-free batch (check takes_packed first)");
}

void Attention::set_window(int64_t) {
  throw std::logic_error("this attention variant has no sliding window (validation refuses model.sliding_window with it)");
}

torch::Tensor causal_softmax(const torch::Tensor& scores, int64_t q_start, int64_t window) {
  const int64_t tq = scores.size(-2), tk = scores.size(-1);
  auto opts = torch::TensorOptions().dtype(torch::kInt64).device(scores.device());
  auto qpos = torch::arange(q_start, q_start + tq, opts).unsqueeze(1);  // (Tq, 1)
  auto kpos = torch::arange(tk, opts).unsqueeze(0);                     // (1, Tk)
  auto future = kpos > qpos;                                            // (Tq, Tk) true = masked
  if (window > 0) future = future | (qpos - kpos >= window);            // out of the window
  auto masked = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  return torch::softmax(masked.to(torch::kFloat32), -1).to(scores.scalar_type());
}

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& bias, double scale, int64_t q_start, int64_t window,
                               double softcap) {
  auto scores = q.matmul(k.transpose(-2, -1)) * scale;  // (B, H, Tq, Tk)
  if (softcap > 0) scores = torch::tanh(scores / softcap) * softcap;
  if (bias.defined()) scores = scores + bias.to(scores.scalar_type());
  return causal_softmax(scores, q_start, window).matmul(v);  // (B, H, Tq, Dv)
}

torch::Tensor append_to_cache(std::vector<torch::Tensor>* cache, size_t slot, const torch::Tensor& t, int64_t dim) {
  if (cache->size() <= slot) cache->resize(slot + 1);
  auto& stored = (*cache)[slot];
  stored = stored.defined() ? torch::cat({stored, t}, dim) : t;
  return stored;
}

void trim_cache(std::vector<torch::Tensor>* cache, int64_t keep, int64_t dim) {
  for (auto& t : *cache)
    if (t.defined() && t.size(dim) > keep) t = t.narrow(dim, t.size(dim) - keep, keep);
}

}  // namespace lmx
