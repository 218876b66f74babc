// The token embedding lookup, weight (V, C) at tokens (any shape, int64) -> (..., C). Float32
// on the CPU with the fused kernels on (kernels/fused_attention.h's switch): one autograd op whose
// backward adds each token's gradient row to its weight row, tokens in order (LibTorch's
// embedding_dense_backward calls add_ once per token: 2048 dispatches a step at B=32, T=64),
// the same sums in the same order, so the same bits; otherwise torch::embedding.
// tests/test_loss.cpp checks one against the other.
#pragma once
#include <torch/types.h>

namespace lmx {

torch::Tensor embed_tokens(const torch::Tensor& weight, const torch::Tensor& tokens);

}  // namespace lmx
