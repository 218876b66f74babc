// A mixture-of-experts FFN (Shazeer et al. 2017; Switch, Fedus et al. 2021; Mixtral, Jiang et al.
// 2024; DeepSeekMoE's shared experts, Dai et al. 2024), as Hugging Face's MixtralSparseMoeBlock:
//   router   p = softmax(W_r x) over E experts (router: C -> E, no bias)
//   top-k    the k largest p_e, renormalized to sum 1: w_e
//   out      Σ_{e in top-k} w_e · expert_e(x)  +  Σ_s shared_s(x)
// Each expert (and shared expert) is a SwiGLU FFN of width model.d_ff (experts.N.*,
// shared_experts.N.*: gate_proj, up_proj, down_proj). The load-balancing loss (HF Mixtral's
// load_balancing_loss_func) α·E·Σ_e f_e·P_e, with f_e the fraction of the tokens that chose e
// among their top k and P_e the mean router probability of e, is recorded (model/aux_loss.h)
// by a forward in grad mode where model.moe_aux_loss α > 0; the trainer adds it. Uniform
// routing gives α·k. The decoding engine does not run it (lmx generate decodes on the modules).
#pragma once
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>

#include <memory>
#include <vector>

#include "model/ffn.h"
#include "model/options.h"

namespace lmx {

class MoeFfnImpl : public Ffn {
 public:
  explicit MoeFfnImpl(const MoeOptions& o);
  torch::Tensor forward(const torch::Tensor& x) override;

  // The routing of rows x (N, C): the top-k experts of each row (N, k) int64 and their
  // renormalized weights (N, k), and the router's probabilities (N, E).
  struct Routing {
    torch::Tensor experts, weights, probs;
  };
  Routing route(const torch::Tensor& x) const;
  // HF Mixtral's load-balancing loss of a routing (before α): E · Σ_e f_e · P_e.
  torch::Tensor balance_loss(const Routing& r) const;

  torch::nn::Linear router{nullptr};
  std::vector<std::shared_ptr<GatedFfnImpl>> experts, shared_experts;

 private:
  int64_t top_k_;
  double aux_coef_;
};

}  // namespace lmx
