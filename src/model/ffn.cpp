// FFN variants (Shazeer 2020, "GLU Variants Improve Transformer"). The hidden width F comes
// from ModelConfig::ffn_hidden: explicit d_ff, or parameter-matched (gated: 2/3 of plain).
#include "model/ffn.h"

#include <fmt/format.h>

#include <torch/autograd.h>

#include <cmath>

#include "model/attention_kernels.h"
#include "model/fused_attention.h"
#include "model/linear.h"
#include "util/error.h"
#include "util/op_timer.h"

namespace lmx {

Activation activation_from_name(const std::string& name) {
  if (name == "relu") return Activation::Relu;
  if (name == "gelu") return Activation::Gelu;
  if (name == "gelu_tanh") return Activation::GeluTanh;
  if (name == "silu") return Activation::Silu;
  if (name == "swish") return Activation::Swish;
  throw InputError(fmt::format("unknown activation '{}'; valid: relu, gelu, gelu_tanh, silu, swish", name));
}

torch::Tensor activate(Activation act, const torch::Tensor& x, double swish_beta) {
  switch (act) {
    case Activation::Relu: return torch::relu(x);
    case Activation::Gelu: return torch::gelu(x, /*approximate=*/"none");  // x·Φ(x), Φ via erf
    case Activation::GeluTanh: return torch::gelu(x, /*approximate=*/"tanh");  // 0.5x(1+tanh(√(2/π)(x+0.044715x³)))
    case Activation::Silu: return torch::silu(x);  // x·σ(x)
    case Activation::Swish: return x * torch::sigmoid(swish_beta * x);  // x·σ(βx)
  }
  throw RuntimeError("activate: unhandled activation");
}

torch::Tensor activation(const std::string& name, const torch::Tensor& x, double swish_beta) {
  return activate(activation_from_name(name), x, swish_beta);
}

PlainFfnImpl::PlainFfnImpl(const ModelConfig& cfg, Activation act) : act_(act), beta_(cfg.swish_beta) {
  const int64_t F = cfg.ffn_hidden(/*gated=*/false);
  up_proj = register_module("up_proj", make_linear(cfg.d_model, F, /*with_bias=*/cfg.bias));
  down_proj = register_module("down_proj", make_linear(F, cfg.d_model, /*with_bias=*/cfg.bias));
}

torch::Tensor PlainFfnImpl::forward(const torch::Tensor& x) {
  // On (B·T, ·) rows: ReLU in place on the projection's output (a temporary the linear's
  // backward does not keep, and not a view, which would make autograd copy it back): one
  // (B, T, F) tensor less to allocate and write.
  auto h = linear_2d(x.reshape({-1, x.size(-1)}), up_proj);  // (B·T, F)
  h = act_ == Activation::Relu ? h.relu_() : activate(act_, h, beta_);
  auto shape = x.sizes().vec();
  if (keep_hidden) {
    shape.back() = h.size(-1);
    last_hidden = h.detach().view(shape);  // (B, T, F)
  }
  shape.back() = x.size(-1);
  return linear_2d(h, down_proj).view(shape);  // (B, T, C)
}

GatedFfnImpl::GatedFfnImpl(const ModelConfig& cfg, Activation act) : act_(act), beta_(cfg.swish_beta) {
  const int64_t F = cfg.ffn_hidden(/*gated=*/true);
  gate_proj = register_module("gate_proj", make_linear(cfg.d_model, F, /*with_bias=*/cfg.bias));
  up_proj = register_module("up_proj", make_linear(cfg.d_model, F, /*with_bias=*/cfg.bias));
  down_proj = register_module("down_proj", make_linear(F, cfg.d_model, /*with_bias=*/cfg.bias));
}

namespace {

// silu(gate)·up on the packed (rows, 2F) output of one gate|up GEMM, as one autograd op whose
// backward writes the packed gradient (no narrow views, no separate silu / mul ops).
class SwigluFn : public torch::autograd::Function<SwigluFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& gu_in) {
    op_timer::Scope timed(op_timer::Kind::Swiglu);
    auto gu = gu_in.contiguous();
    const int64_t F = gu.size(-1) / 2, rows = gu.numel() / gu.size(-1);
    auto out = torch::empty({rows, F}, gu.options());
    kernels::swiglu_forward_kernel()(gu.data_ptr<float>(), rows, F, out.data_ptr<float>());
    ctx->save_for_backward({gu});
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    op_timer::Scope timed(op_timer::Kind::Swiglu);
    auto gu = ctx->get_saved_variables()[0];
    auto dy = grads[0].contiguous();
    auto dgu = torch::empty_like(gu);
    const int64_t F = gu.size(-1) / 2, rows = gu.numel() / gu.size(-1);
    kernels::swiglu_backward_kernel()(gu.data_ptr<float>(), dy.data_ptr<float>(), rows, F, dgu.data_ptr<float>());
    return {dgu};
  }
};

}  // namespace

torch::Tensor GatedFfnImpl::forward(const torch::Tensor& x) {
  if (act_ == Activation::Silu && !keep_hidden && fused_kernels_take(x)) {
    // SwiGLU: one GEMM with gate_proj and up_proj stacked (the parameters keep their names),
    // then the fused silu·mul.
    auto w = torch::cat({gate_proj->weight, up_proj->weight}, 0);  // (2F, C)
    auto b = gate_proj->bias.defined() ? torch::cat({gate_proj->bias, up_proj->bias}, 0) : torch::Tensor();
    auto gu = linear_2d(x.reshape({-1, x.size(-1)}), w, b);   // (B·T, 2F)
    auto shape = x.sizes().vec();
    return linear_2d(SwigluFn::apply(gu), down_proj).view(shape);  // (B, T, C)
  }
  auto g = activate(act_, linear_2d(x, gate_proj), beta_);  // (B, T, F) φ(W1x)
  if (keep_hidden) last_hidden = g.detach();
  return linear_2d(g * linear_2d(x, up_proj), down_proj);  // W2·(φ(W1x) ⊙ W3x): (B, T, C)
}

}  // namespace lmx
