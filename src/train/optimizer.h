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
//
// A param group may follow another rule (GroupRule, set by make_optimizer from train.optimizer):
// Adam with the weight decay as an L2 term added to the gradient (torch.optim.Adam), or Muon
// (Jordan et al. 2024, github.com/KellerJordan/Muon muon.py): for 2-D matrices, Nesterov
// momentum orthogonalized by a quintic Newton-Schulz iteration, then decoupled weight decay. A
// Muon parameter's state is AdamWParamState's step and exp_avg (the momentum buffer); its
// exp_avg_sq stays undefined.
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

// How a param group's parameters are updated. lr_scale multiplies the group's lr (the schedule
// writes one lr to every group; Muon's peak is train.muon_lr, so its scale is muon_lr / lr).
struct GroupRule {
  enum class Kind { AdamW, AdamL2, Muon } kind = Kind::AdamW;
  double lr_scale = 1.0;
  double momentum = 0.95;  // Muon: β of the Nesterov momentum
  int ns_steps = 5;        // Muon: Newton-Schulz iterations
};

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
  // The rule of param group `group` (AdamW until set).
  void set_rule(size_t group, GroupRule rule);
  // Whether p is updated by Muon (its state has no exp_avg_sq).
  bool orthogonalized(const torch::Tensor& p) const;

 private:
  std::vector<GroupRule> rules_;  // by group index; missing = AdamW
  const GroupRule& rule(size_t group) const;
};

// Muon's orthogonalization of a 2-D update G: X = G/(‖G‖_F + 1e-7), transposed when it has more
// rows than columns, then `steps` times A = X·Xᵀ, X = a·X + (b·A + c·A·A)·X with (a, b, c) =
// (3.4445, −4.7750, 2.0315), transposed back (muon.py's zeropower_via_newtonschulz5, in the
// dtype of G rather than bfloat16).
torch::Tensor newton_schulz5(const torch::Tensor& G, int steps);

// Drops the gradients (set to undefined) so that the next backward writes them instead of
// adding to zeros: one pass less per parameter than Optimizer::zero_grad().
void clear_gradients(const std::vector<torch::Tensor>& params);

// The global L2 norm of the defined gradients, accumulated in double; when max_norm > 0 and
// the norm exceeds it, scales them by max_norm / (norm + 1e-6) (torch.nn.utils.clip_grad_norm_).
// A NaN or infinite norm is returned as it is and the gradients are left untouched, so that a
// divergence report can still name the parameter where it started.
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace lmx
