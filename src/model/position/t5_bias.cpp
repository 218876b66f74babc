#include "model/position/t5_bias.h"

#include <cmath>

namespace lmx {

torch::Tensor t5_relative_position_bucket(const torch::Tensor& relative_position, int64_t num_buckets,
                                          int64_t max_distance) {
  auto n = -torch::min(relative_position, torch::zeros_like(relative_position));  // max(i − j, 0)
  const int64_t max_exact = num_buckets / 2;
  auto is_small = n < max_exact;
  auto large = max_exact + (torch::log(n.to(torch::kFloat32) / static_cast<float>(max_exact)) /
                            static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact)) *
                            static_cast<float>(num_buckets - max_exact))
                               .to(torch::kInt64);
  large = torch::min(large, torch::full_like(large, num_buckets - 1));
  return torch::where(is_small, n, large);
}

T5BiasImpl::T5BiasImpl(int64_t n_heads, int64_t num_buckets, int64_t max_distance, bool shared)
    : num_buckets_(num_buckets), max_distance_(max_distance), shared_(shared) {
  weight = register_parameter("weight", torch::zeros({num_buckets, n_heads}));
}

torch::Tensor T5BiasImpl::score_bias(int64_t q_start, int64_t tq, int64_t tk, const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kInt64).device(device);
  auto qpos = torch::arange(q_start, q_start + tq, opts).unsqueeze(1);   // (Tq, 1)
  auto kpos = torch::arange(tk, opts).unsqueeze(0);                      // (1, Tk)
  auto bucket = t5_relative_position_bucket(kpos - qpos, num_buckets_, max_distance_);  // (Tq, Tk)
  return weight.index({bucket}).permute({2, 0, 1});                      // (H, Tq, Tk)
}

}  // namespace lmx
