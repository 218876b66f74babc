// T5 relative position bias (Raffel et al. 2020), causal: score(i, j) += b_h[bucket(i − j)],
// one learned scalar per head and bucket, one table per layer. Buckets as in the T5
// reference `_relative_position_bucket(relative_position = j − i, bidirectional=False)`:
// n = max(i − j, 0); n < N/2 is its own bucket; larger n go log-spaced up to max_distance,
// N/2 + ⌊ln(n/(N/2)) / ln(max_distance/(N/2)) · (N − N/2)⌋ (float32, as the reference),
// capped at N − 1.
#pragma once
#include "model/position/position.h"

namespace lmx {

// relative_position = key position − query position, int64, any shape -> bucket, int64.
torch::Tensor t5_relative_position_bucket(const torch::Tensor& relative_position, int64_t num_buckets,
                                          int64_t max_distance);

class T5BiasImpl : public Position {
 public:
  // shared: one table for every layer (T5; model.t5_shared), else one per layer.
  T5BiasImpl(int64_t n_heads, int64_t num_buckets, int64_t max_distance, bool shared = true);
  const char* module_name() const override { return "relative_attention_bias"; }
  bool per_layer() const override { return true; }
  bool shared_by_layers() const override { return shared_; }
  torch::Tensor score_bias(int64_t q_start, int64_t tq, int64_t tk, const torch::Device& device) override;
  PositionEffect effect() const override { return PositionEffect::BiasesScores; }

  torch::Tensor weight;  // (num_buckets, H), as T5's nn.Embedding(num_buckets, n_heads)

 private:
  int64_t num_buckets_, max_distance_;
  bool shared_;
};

}  // namespace lmx
