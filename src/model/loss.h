// The language-model loss: token cross-entropy over (N, V) logits, skipping targets equal to
// `ignore`; the mean over the counted targets, or their sum. Float32 on the CPU with the fused
// kernels on (kernels/fused_attention.h's switch): one kernel computes each row's loss and its
// gradient in the forward (no log-softmax tensor, no separate backward pass); otherwise
// LibTorch's cross_entropy. tests/test_loss.cpp checks one against the other.
#pragma once
#include <torch/types.h>

#include <utility>

namespace lmx {

torch::Tensor lm_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore, bool sum);

// PaLM's z-loss term of (N, V) logits: the sum (or, !sum, the mean) over the targets that are
// not `ignore` of logsumexp(row)², computed in float32 by LibTorch's ops.
torch::Tensor z_loss_term(const torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore, bool sum);

// {lm_cross_entropy, z_loss_term} of the same logits, each differentiable (train.z_loss's
// objective is the first plus z_loss times the second). Where the fused kernel takes the logits
// both come from its one pass (each row's log-sum-exp serves both), and the backward forms
// g₁·∂CE + g₂·∂z in one pass over the logits; elsewhere the two functions above.
std::pair<torch::Tensor, torch::Tensor> lm_cross_entropy_z(const torch::Tensor& logits, const torch::Tensor& targets,
                                                            int64_t ignore, bool sum);

}  // namespace lmx
