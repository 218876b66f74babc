// The language-model loss: token cross-entropy over (N, V) logits, skipping targets equal to
// `ignore`; the mean over the counted targets, or their sum. Float32 on the CPU with the fused
// kernels on (kernels/fused_attention.h's switch): one kernel computes each row's loss and its
// gradient in the forward (no log-softmax tensor, no separate backward pass); otherwise
// LibTorch's cross_entropy. tests/test_loss.cpp checks one against the other.
#pragma once
#include <torch/types.h>

namespace lmx {

torch::Tensor lm_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore, bool sum);

}  // namespace lmx
