#include "model/position/rope.h"

#include <cmath>
#include <mutex>

namespace lmx {

namespace {

// Yarn: the pair index whose wavelength fits num_rotations times into the trained length.
double correction_dim(double num_rotations, int64_t dim, double theta, int64_t original_len) {
  return dim * std::log(original_len / (num_rotations * 2 * M_PI)) / (2 * std::log(theta));
}

}  // namespace

torch::Tensor yarn_interpolation_ramp(int64_t dim, double theta, int64_t original_len, double beta_fast,
                                      double beta_slow) {
  double low = std::floor(correction_dim(beta_fast, dim, theta, original_len));
  double high = std::ceil(correction_dim(beta_slow, dim, theta, original_len));
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // avoid a zero-width ramp
  auto i = torch::arange(dim / 2, torch::kFloat64);
  return ((i - low) / (high - low)).clamp(0, 1);  // 0 below low (kept), 1 above high (interpolated)
}

RoPEImpl::RoPEImpl(const RopeOptions& o) : dim_(o.dim), interleaved_(o.interleaved), min_len_(o.table_len) {
  const int64_t dim = o.dim;
  const double s = o.factor;
  double theta = o.theta;
  if (o.scaling == RopeScaling::Ntk && dim > 2) theta *= std::pow(s, static_cast<double>(dim) / (dim - 2));
  auto two_i = torch::arange(0, dim - dim % 2, 2, torch::kFloat64);
  inv_freq_ = torch::pow(theta, -two_i / dim);  // (D/2) ω_i = θ^(−2i/D)
  if (o.scaling == RopeScaling::Linear) position_scale_ = s;
  if (o.scaling == RopeScaling::Yarn) {
    auto ramp = yarn_interpolation_ramp(dim, theta, o.original_len, o.beta_fast, o.beta_slow);
    inv_freq_ = inv_freq_ / s * ramp + inv_freq_ * (1 - ramp);
    mscale_ = s > 1 ? 0.1 * std::log(s) + 1.0 : 1.0;
  }
}

std::pair<torch::Tensor, torch::Tensor> RoPEImpl::grow(int64_t length, const torch::Device& device) {
  static std::mutex mu;  // the parts of a split training step rotate at once (train/trainer.h)
  std::lock_guard<std::mutex> lock(mu);
  if (cos_.defined() && cos_.size(0) >= length && cos_.device() == device) return {cos_, sin_};
  int64_t n = std::max(length, min_len_);
  if (cos_.defined()) n = std::max(n, cos_.size(0));
  auto pos = torch::arange(n, torch::kFloat64) / position_scale_;  // (L)
  auto angle = torch::outer(pos, inv_freq_);                        // (L, D/2)
  cos_ = (angle.cos() * mscale_).to(torch::kFloat32).to(device);
  sin_ = (angle.sin() * mscale_).to(torch::kFloat32).to(device);
  return {cos_, sin_};
}

std::pair<torch::Tensor, torch::Tensor> RoPEImpl::tables(int64_t length, const torch::Device& device) {
  auto [cos, sin] = grow(length, device);
  return {cos.slice(0, 0, length), sin.slice(0, 0, length)};
}

torch::Tensor RoPEImpl::rotate(const torch::Tensor& x, int64_t start) {
  const int64_t T = x.size(-2);
  const auto table = grow(start + T, x.device());
  auto cos = table.first.slice(0, start, start + T).to(x.scalar_type());  // (T, D/2)
  auto sin = table.second.slice(0, start, start + T).to(x.scalar_type());
  using torch::indexing::Slice;
  using torch::indexing::None;
  if (interleaved_) {
    auto x1 = x.index({"...", Slice(0, None, 2)});  // (..., T, D/2) even dims
    auto x2 = x.index({"...", Slice(1, None, 2)});  // odd dims
    return torch::stack({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1).flatten(-2);
  }
  const int64_t half = dim_ / 2;
  auto x1 = x.slice(-1, 0, half);  // (..., T, D/2)
  auto x2 = x.slice(-1, half, 2 * half);
  return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
}

}  // namespace lmx
