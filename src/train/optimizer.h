// The optimizer of every lmx run: AdamW (Loshchilov & Hutter) with its update fused into one
// pass over each parameter, and the global-norm gradient clipping as two passes over the
// gradients (sum of squares, then the scaling), instead of LibTorch's ~10 tensor ops per
// parameter. On the lecture's 100k-parameter models these ops cost more in dispatch than in
// arithmetic.
//
// FusedAdamW is a torch::optim::AdamW: the same options, param groups and per-parameter state
// (AdamWParamState: step, exp_avg, exp_avg_sq), so checkpoints (train_state.h) and everything
// that takes an AdamW& keep working. The fused path covers contiguous float32 CPU parameters
// without amsgrad; anything else takes LibTorch's own AdamW::step.
#pragma once
#include <torch/optim/adamw.h>

#include <string>
#include <type_traits>
#include <vector>

namespace lmx {

// The key type of a LibTorch optimizer's state(): the TensorImpl address printed as a string up
// to LibTorch 2.x, the address itself (void*) in later versions.
using OptimizerStateKey =
    std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

// The key of a parameter's entry in a LibTorch optimizer's state() (its TensorImpl address).
OptimizerStateKey adamw_state_key(const torch::Tensor& param);

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

// Drops the gradients (set to undefined) so that the next backward writes them instead of
// adding to zeros: one pass less per parameter than Optimizer::zero_grad().
void clear_gradients(const std::vector<torch::Tensor>& params);

// The global L2 norm of the defined gradients, accumulated in double; when max_norm > 0 and
// the norm exceeds it, scales them by max_norm / (norm + 1e-6) (torch.nn.utils.clip_grad_norm_).
// A NaN or infinite norm is returned as it is and the gradients are left untouched, so that a
// divergence report can still name the parameter where it started.
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace lmx
