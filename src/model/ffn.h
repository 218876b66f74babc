// Feed-forward networks: plain W2·φ(W1x) and gated (GLU family) W2·(φ(W1x) ⊙ W3x).
// Dimension letters: B batch, T time, C = d_model, F = d_ff (ModelConfig::ffn_hidden).
// Parameter names follow Hugging Face Llama: gate_proj = W1 (the activated branch),
// up_proj = W3 (the linear branch), down_proj = W2; a plain FFN has up_proj = W1, down_proj = W2.
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "kernels/cpu_kernels.h"
#include "model/options.h"

namespace lmx {

// The fused kernels' enum (kernels/cpu_kernels.h, free of LibTorch): one list of activations.
using Activation = kernels::ActKind;

// φ(x) as LibTorch ops: relu, gelu (exact x·Φ(x)), gelu_tanh, silu (x·σ(x)), swish (x·σ(βx), β
// in double); an activation of a program's own (Custom) on the fused kernel, in float32 on the CPU
// (InputError elsewhere). By name: the plain FFN rows' activations (registry::activation_named:
// InputError for another).
torch::Tensor activate(const kernels::ActOp& op, const torch::Tensor& x, double swish_beta = 1.0);
torch::Tensor activation(const std::string& name, const torch::Tensor& x, double swish_beta = 1.0);
// The fused kernels as autograd ops, as the FFN modules run them (float32, contiguous): φ(x)
// (ReLU in place on a contiguous x), and φ(gate)·up on the packed (rows, 2F) gate|up output.
torch::Tensor fused_activate(const kernels::ActOp& op, const torch::Tensor& x);
torch::Tensor fused_gated_activate(const kernels::ActOp& op, const torch::Tensor& gu);

// The FFN kind: (B, T, C) -> (B, T, C).
class Ffn : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;

  // The FFN as the decoding engine runs it on the fused kernels: φ and the weights as the
  // module holds them (gate: W1 where gated, undefined where plain; up (F, C); down (C, F);
  // biases undefined where there are none). None for an FFN the kernels do not run (the engine
  // then declines and the model's own forward decodes). Cheap: no copy.
  struct Fused {
    kernels::ActOp act;
    torch::Tensor gate, gate_b, up, up_b, down, down_b;
  };
  virtual std::optional<Fused> fused() const { return std::nullopt; }

  // Probes (hidden-layer sparsity): when keep_hidden is set, forward keeps φ(W1x) of its
  // last call, detached, (B, T, F) — the activation output, before any gating product.
  bool keep_hidden = false;
  torch::Tensor last_hidden;
};

// W2·φ(W1x): up_proj = W1 (C -> F), down_proj = W2 (F -> C).
class PlainFfnImpl : public Ffn {
 public:
  PlainFfnImpl(const FfnOptions& o, kernels::ActOp act);  // act.beta: set from o.swish_beta
  torch::Tensor forward(const torch::Tensor& x) override;
  const kernels::ActOp& op() const { return op_; }  // φ as the fused kernel takes it
  std::optional<Fused> fused() const override;

  torch::nn::Linear up_proj{nullptr}, down_proj{nullptr};

 private:
  kernels::ActOp op_;
  double beta_;  // model.swish_beta (op_.beta is its float, as the kernels take it)
};
TORCH_MODULE(PlainFfn);

// W2·(φ(W1x) ⊙ W3x): gate_proj = W1, up_proj = W3 (both C -> F), down_proj = W2 (F -> C).
class GatedFfnImpl : public Ffn {
 public:
  GatedFfnImpl(const FfnOptions& o, kernels::ActOp act);  // act.beta: set from o.swish_beta
  torch::Tensor forward(const torch::Tensor& x) override;
  const kernels::ActOp& op() const { return op_; }  // φ as the fused kernel takes it
  std::optional<Fused> fused() const override;

  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};

 private:
  kernels::ActOp op_;
  double beta_;  // model.swish_beta (op_.beta is its float, as the kernels take it)
};
TORCH_MODULE(GatedFfn);

}  // namespace lmx
