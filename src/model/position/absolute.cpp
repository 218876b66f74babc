#include "model/position/absolute.h"

#include <fmt/format.h>

#include <cmath>
#include <mutex>

#include "util/error.h"

namespace lmx {

SinusoidalPositionImpl::SinusoidalPositionImpl(int64_t d_model) : d_model_(d_model) {}

torch::Tensor SinusoidalPositionImpl::table(int64_t length, int64_t d_model) {
  auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  auto pos = torch::arange(length, opts).unsqueeze(1);                   // (L, 1)
  auto two_i = torch::arange(0, d_model, 2, opts);                       // (ceil(C/2))
  auto angle = pos * torch::exp(-std::log(10000.0) * two_i / d_model);   // (L, ceil(C/2))
  auto pe = torch::zeros({length, d_model}, opts);
  pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)}, angle.sin());
  auto cos = angle.cos().slice(1, 0, d_model / 2);                       // odd C: no last cos
  pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)}, cos);
  return pe.to(torch::kFloat32);
}

torch::Tensor SinusoidalPositionImpl::covering(int64_t end, const torch::Device& device) {
  static std::mutex mu;  // the parts of a split training step embed at once (train/trainer.h)
  std::lock_guard<std::mutex> lock(mu);
  if (!table_.defined() || table_.size(0) < end || table_.device() != device)
    table_ = table(std::max<int64_t>(end, table_.defined() ? 2 * table_.size(0) : 0), d_model_).to(device);
  return table_;
}

torch::Tensor SinusoidalPositionImpl::embed(const torch::Tensor& x, int64_t start) {
  const int64_t end = start + x.size(1);
  return x + covering(end, x.device()).slice(0, start, end).to(x.scalar_type());  // (B, T, C) + (T, C)
}

torch::Tensor SinusoidalPositionImpl::embed_at(const torch::Tensor& x, const torch::Tensor& positions) {
  const int64_t end = positions.max().item<int64_t>() + 1;
  return x + covering(end, x.device()).index_select(0, positions).to(x.scalar_type());  // (1, N, C) + (N, C)
}

LearnedPositionImpl::LearnedPositionImpl(int64_t max_len, int64_t d_model) {
  weight = register_parameter("weight", torch::zeros({max_len, d_model}));
}

void LearnedPositionImpl::check_reach(int64_t end) const {
  if (end > weight.size(0))
    throw InputError(fmt::format("sequence reaches position {} but learned positions cover only model.max_seq_len = {}",
                                 end, weight.size(0)),
                     "use a shorter input, or a position scheme without a length limit (rope, alibi, t5_bias)");
}

torch::Tensor LearnedPositionImpl::embed(const torch::Tensor& x, int64_t start) {
  const int64_t end = start + x.size(1);
  check_reach(end);
  return x + weight.slice(0, start, end);  // (B, T, C) + (T, C)
}

torch::Tensor LearnedPositionImpl::embed_at(const torch::Tensor& x, const torch::Tensor& positions) {
  check_reach(positions.max().item<int64_t>() + 1);
  return x + weight.index_select(0, positions);  // (1, N, C) + (N, C)
}

}  // namespace lmx
