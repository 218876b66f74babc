// ALiBi (Press et al. 2022): no position embedding; score(i, j) += −m_h · (i − j) for j ≤ i.
// Slopes for H a power of two: m_h = 2^(−8h/H), h = 1..H. Otherwise (the paper's rule, as in
// its reference code): the slopes of the closest smaller power of two n, followed by every
// other slope of 2n (the 1st, 3rd, ...) until there are H.
#pragma once
#include <vector>

#include "model/position/position.h"

namespace lmx {

std::vector<double> alibi_slopes(int64_t n_heads);

class ALiBiImpl : public Position {
 public:
  explicit ALiBiImpl(int64_t n_heads);
  const char* module_name() const override { return "alibi"; }
  torch::Tensor score_bias(int64_t q_start, int64_t tq, int64_t tk, const torch::Device& device) override;
  PositionEffect effect() const override { return PositionEffect::BiasesScores; }

 private:
  torch::Tensor slopes_;  // (H) float32, moved to the scores' device on demand
};

}  // namespace lmx
