#include "model/position/alibi.h"

#include <cmath>
#include <mutex>

namespace lmx {

namespace {

std::vector<double> power_of_two_slopes(int64_t n) {
  // start = 2^(−8/n); m_h = start^h, h = 1..n.
  const double start = std::pow(2.0, -8.0 / static_cast<double>(n));
  std::vector<double> out;
  for (int64_t h = 1; h <= n; ++h) out.push_back(std::pow(start, static_cast<double>(h)));
  return out;
}

}  // namespace

std::vector<double> alibi_slopes(int64_t n_heads) {
  int64_t closest = 1;
  while (closest * 2 <= n_heads) closest *= 2;
  auto out = power_of_two_slopes(closest);
  if (closest == n_heads) return out;
  auto extra = alibi_slopes(2 * closest);  // every other slope of 2n
  for (size_t i = 0; i < extra.size() && static_cast<int64_t>(out.size()) < n_heads; i += 2) out.push_back(extra[i]);
  return out;
}

ALiBiImpl::ALiBiImpl(int64_t n_heads) {
  auto s = alibi_slopes(n_heads);
  slopes_ = torch::tensor(s, torch::kFloat64).to(torch::kFloat32);
}

torch::Tensor ALiBiImpl::score_bias(int64_t q_start, int64_t tq, int64_t tk, const torch::Device& device) {
  torch::Tensor slopes;
  {
    static std::mutex mu;  // the parts of a split training step run at once (train/trainer.h)
    std::lock_guard<std::mutex> lock(mu);
    if (slopes_.device() != device) slopes_ = slopes_.to(device);
    slopes = slopes_;
  }
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  auto qpos = torch::arange(q_start, q_start + tq, opts).unsqueeze(1);  // (Tq, 1)
  auto kpos = torch::arange(tk, opts).unsqueeze(0);                     // (1, Tk)
  auto distance = (qpos - kpos).clamp_min(0);                           // (Tq, Tk) i − j; future keys are masked
  return -slopes.view({-1, 1, 1}) * distance;                          // (H, Tq, Tk)
}

}  // namespace lmx
