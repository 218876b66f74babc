// Absolute positions added to the token embeddings: none (NoPE), sinusoidal (Vaswani et al.
// 2017), learned (one trained vector per position up to max_seq_len).
#pragma once
#include "model/position/position.h"

namespace lmx {

// No position information: causal attention alone (NoPE).
class NoPositionImpl : public Position {
 public:
  const char* module_name() const override { return "no_position"; }
  PositionEffect effect() const override { return PositionEffect::Nothing; }
};

// PE(p, 2i) = sin(p / 10000^(2i/C)), PE(p, 2i+1) = cos(p / 10000^(2i/C)).
class SinusoidalPositionImpl : public Position {
 public:
  explicit SinusoidalPositionImpl(int64_t d_model);
  const char* module_name() const override { return "sinusoidal"; }
  PositionEffect effect() const override { return PositionEffect::AddsTable; }
  torch::Tensor embed(const torch::Tensor& x, int64_t start) override;
  torch::Tensor embed_at(const torch::Tensor& x, const torch::Tensor& positions) override;

  // The table for positions [0, length): (length, C), float32 on the CPU.
  static torch::Tensor table(int64_t length, int64_t d_model);

 private:
  torch::Tensor covering(int64_t end, const torch::Device& device);  // table_ for [0, end) (thread-safe)
  int64_t d_model_;
  torch::Tensor table_;  // (L, C) cache, grown on demand
};

// A learned (max_seq_len, C) table; a sequence past max_seq_len is an InputError.
class LearnedPositionImpl : public Position {
 public:
  LearnedPositionImpl(int64_t max_len, int64_t d_model);
  const char* module_name() const override { return "embed_positions"; }
  PositionEffect effect() const override { return PositionEffect::AddsTable; }
  torch::Tensor embed(const torch::Tensor& x, int64_t start) override;
  torch::Tensor embed_at(const torch::Tensor& x, const torch::Tensor& positions) override;

  torch::Tensor weight;  // (max_seq_len, C)

 private:
  void check_reach(int64_t end) const;  // InputError past max_seq_len
};

}  // namespace lmx
