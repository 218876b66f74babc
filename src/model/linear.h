// A linear layer applied to (..., in) through one 2-D GEMM: oneDNN's sgemm where gemm::takes
// the input (kernels/gemm.h), else LibTorch's linear (1.13 runs a 3-D input with a bias as
// matmul + a separate add_ and its backward, a 2-D one as addmm, which adds the bias inside
// the GEMM: the 2-D form here).
#pragma once
#include <torch/nn/modules/linear.h>

#include "kernels/gemm.h"

namespace lmx {

// A (in -> out) linear layer, with or without bias.
inline torch::nn::Linear make_linear(int64_t in, int64_t out, bool with_bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(with_bias));
}

inline torch::Tensor linear_2d(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const bool onednn = gemm::takes(x);
  if (x.dim() <= 2) return onednn ? gemm::linear(x, weight, bias) : torch::linear(x, weight, bias);
  if (!onednn && !bias.defined()) return torch::linear(x, weight, bias);  // one matmul, no add
  auto shape = x.sizes().vec();
  shape.back() = weight.size(0);
  return linear_2d(x.reshape({-1, x.size(-1)}), weight, bias).view(shape);
}

inline torch::Tensor linear_2d(const torch::Tensor& x, const torch::nn::Linear& layer) {
  return linear_2d(x, layer->weight, layer->bias);
}

}  // namespace lmx
