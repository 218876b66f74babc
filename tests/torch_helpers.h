// Tensor comparisons shared by the model tests.
#pragma once
#include <torch/torch.h>

namespace lmx::test {

// The largest |a - b| (in a's dtype).
inline double max_abs(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace lmx::test
