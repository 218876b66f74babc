// Normalization layers over the last dimension C. LayerNorm has a scale γ ("weight") and a
// shift β ("bias"); RMSNorm has only the scale (no re-centering, no bias). ε = model.norm_eps.
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <optional>
#include <utility>

#include "config/config.h"
#include "kernels/cpu_kernels.h"

namespace lmx {

// The norm kind: (..., C) -> (..., C). init (model/init.cpp) sets every Norm's weight to 1
// and its bias to 0.
class Norm : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  // The norm as the fused row kernels take it (the decoding engine, QK-norm): the forward
  // kernel, γ, β (undefined: none), ε and the backward kernel. None for a norm the kernels do
  // not run.
  struct RowKernel {
    kernels::NormFn fn = nullptr;
    torch::Tensor weight, bias;
    double eps = 0;
    kernels::NormGradFn grad = nullptr;
  };
  virtual std::optional<RowKernel> row_kernel() const { return std::nullopt; }
  // A residual add and this norm: {h, N(h)} with h = x + a (a undefined: h = x). LayerNorm
  // and RMSNorm fuse the two into one op (float32 on CPU, fused kernels on).
  virtual std::pair<torch::Tensor, torch::Tensor> add_forward(const torch::Tensor& x, const torch::Tensor& a);
};

// (x − mean(x)) / sqrt(var(x) + ε) · γ + β, biased variance (Ba et al. 2016).
class LayerNormImpl : public Norm {
 public:
  LayerNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::pair<torch::Tensor, torch::Tensor> add_forward(const torch::Tensor& x, const torch::Tensor& a) override;
  std::optional<RowKernel> row_kernel() const override;
  double eps() const { return eps_; }

  torch::Tensor weight, bias;  // (C) γ, β

 private:
  double eps_;
};
TORCH_MODULE(LayerNorm);

// x / sqrt(mean(x²) + ε) · γ (Zhang & Sennrich 2019).
class RMSNormImpl : public Norm {
 public:
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::pair<torch::Tensor, torch::Tensor> add_forward(const torch::Tensor& x, const torch::Tensor& a) override;
  std::optional<RowKernel> row_kernel() const override;
  double eps() const { return eps_; }

  torch::Tensor weight;  // (C) γ

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

}  // namespace lmx
