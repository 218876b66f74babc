// FFN variants (Shazeer 2020, "GLU Variants Improve Transformer"). The hidden width F comes
// from ModelConfig::ffn_hidden: explicit d_ff, or parameter-matched (gated: 2/3 of plain).
#include "model/ffn.h"

#include <fmt/format.h>

#include <torch/autograd.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu_kernels.h"
#include "kernels/fused_attention.h"
#include "kernels/parallel.h"
#include "model/linear.h"
#include "model/registry.h"
#include "util/error.h"
#include "util/op_timer.h"

namespace lmx {

torch::Tensor activate(const kernels::ActOp& op, const torch::Tensor& x, double swish_beta) {
  switch (op.kind) {
    case Activation::Relu: return torch::relu(x);
    case Activation::Gelu: return torch::gelu(x, /*approximate=*/"none");  // x·Φ(x), Φ via erf
    case Activation::GeluTanh: return torch::gelu(x, /*approximate=*/"tanh");  // 0.5x(1+tanh(√(2/π)(x+0.044715x³)))
    case Activation::Silu: return torch::silu(x);  // x·σ(x)
    case Activation::Swish: return x * torch::sigmoid(swish_beta * x);  // x·σ(βx)
    case Activation::Relu2: return torch::relu(x).square();  // relu(x)² (Primer)
    case Activation::Custom:
      if (!x.device().is_cpu())
        throw InputError("an FFN activation of a program's own runs on the CPU's fused kernels only",
                         "train it with train.device cpu");
      return fused_activate(op, x.to(torch::kFloat32).contiguous()).to(x.scalar_type());
  }
  throw RuntimeError("activate: unhandled activation");
}

torch::Tensor activation(const std::string& name, const torch::Tensor& x, double swish_beta) {
  kernels::ActOp op = registry::activation_named(name);
  op.beta = static_cast<float>(swish_beta);
  return activate(op, x, swish_beta);
}

namespace {

// The op of an ActFn / GluFn, kept in its context for the backward.
// (custom: the CustomAct's address, which outlives the op.)
kernels::ActOp save_op(torch::autograd::AutogradContext* ctx, int64_t act, double beta, int64_t custom) {
  ctx->saved_data["act"] = act;
  ctx->saved_data["beta"] = beta;
  ctx->saved_data["custom"] = custom;
  return {static_cast<Activation>(act), static_cast<float>(beta), reinterpret_cast<const kernels::CustomAct*>(custom)};
}
kernels::ActOp saved_op(torch::autograd::AutogradContext* ctx) {
  return {static_cast<Activation>(ctx->saved_data["act"].toInt()),
          static_cast<float>(ctx->saved_data["beta"].toDouble()),
          reinterpret_cast<const kernels::CustomAct*>(ctx->saved_data["custom"].toInt())};
}

// The kernels' kept part (GELU's Φ) for the backward: a tensor of `numel` floats where the op
// keeps one and a backward will run (want_grad), else undefined (the backward recomputes).
torch::Tensor keep_buffer(const kernels::ActOp& op, bool want_grad, int64_t numel, const torch::Tensor& like) {
  if (!want_grad || !kernels::act_keeps(op.kind)) return {};
  return torch::empty({numel}, like.options());
}
float* ptr_or_null(const torch::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }
const float* offset(const float* p, int64_t i) { return p ? p + i : nullptr; }
float* offset(float* p, int64_t i) { return p ? p + i : nullptr; }

// The FFN kernels over kernels::parallel_for's chunks: element-wise ones in chunks of whole
// 16-float lanes, the gated ones by rows (each element computed as in one serial call).
constexpr int64_t kActGrain = 8192, kLanes = 16;
int64_t row_grain(int64_t F) { return std::max<int64_t>(1, kActGrain / F); }  // rows of F outputs
void act_forward(const kernels::ActOp& op, float* x, int64_t n, float* y, float* keep) {
  kernels::parallel_for(n, kActGrain, [&](int64_t b, int64_t e) {
    kernels::ffn_kernels().act_forward(op, x + b, e - b, y + b, offset(keep, b));
  }, kLanes);
}
void act_backward(const kernels::ActOp& op, const float* x, const float* keep, const float* dy, int64_t n,
                  float* dx) {
  kernels::parallel_for(n, kActGrain, [&](int64_t b, int64_t e) {
    kernels::ffn_kernels().act_backward(op, x + b, offset(keep, b), dy + b, e - b, dx + b);
  }, kLanes);
}
void glu_forward(const kernels::ActOp& op, const float* gu, int64_t rows, int64_t F, float* out, float* keep) {
  kernels::parallel_for(rows, row_grain(F), [&](int64_t b, int64_t e) {
    kernels::ffn_kernels().glu_forward(op, gu + b * 2 * F, e - b, F, out + b * F, offset(keep, b * F));
  });
}
void glu_backward(const kernels::ActOp& op, const float* gu, const float* keep, const float* dout, int64_t rows,
                  int64_t F, float* dgu) {
  kernels::parallel_for(rows, row_grain(F), [&](int64_t b, int64_t e) {
    kernels::ffn_kernels().glu_backward(op, gu + b * 2 * F, offset(keep, b * F), dout + b * F, e - b, F,
                                        dgu + b * 2 * F);
  });
}

// φ(x) (any shape) as one autograd op on the fused kernel; the backward recomputes φ'(x) from
// the saved input (GELU: from Φ(x), kept by the forward). ReLU runs in place (x: a temporary
// nothing else keeps, e.g. a GEMM's output) and keeps its output, whose sign is the input's: one
// tensor less to allocate and write. want_grad: whether a backward will run (the caller knows;
// inside forward, autograd is off).
class ActFn : public torch::autograd::Function<ActFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in, int64_t act,
                               double beta, int64_t custom, bool want_grad) {
    op_timer::Scope timed(op_timer::Kind::Activation);
    const auto op = save_op(ctx, act, beta, custom);
    if (op.kind == kernels::ActKind::Relu && x_in.is_contiguous()) {
      float* x = x_in.data_ptr<float>();
      act_forward(op, x, x_in.numel(), x, nullptr);
      ctx->mark_dirty({x_in});
      ctx->save_for_backward({x_in, torch::Tensor()});
      return x_in;
    }
    auto x = x_in.contiguous();
    auto y = torch::empty_like(x);
    auto keep = keep_buffer(op, want_grad, x.numel(), x);
    act_forward(op, x.data_ptr<float>(), x.numel(), y.data_ptr<float>(), ptr_or_null(keep));
    ctx->save_for_backward({x, keep});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    op_timer::Scope timed(op_timer::Kind::Activation);
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    auto dy = grads[0].contiguous();
    auto dx = torch::empty_like(x);
    act_backward(saved_op(ctx), x.data_ptr<float>(), ptr_or_null(saved[1]), dy.data_ptr<float>(), x.numel(),
                 dx.data_ptr<float>());
    return {dx, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// φ(gate)·up on the packed (rows, 2F) output of one gate|up GEMM, as one autograd op whose
// backward writes the packed gradient (no narrow views, no separate activation / mul ops).
class GluFn : public torch::autograd::Function<GluFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& gu_in, int64_t act,
                               double beta, int64_t custom, bool want_grad) {
    op_timer::Scope timed(op_timer::Kind::Activation);
    const auto op = save_op(ctx, act, beta, custom);
    auto gu = gu_in.contiguous();
    const int64_t F = gu.size(-1) / 2, rows = gu.numel() / gu.size(-1);
    auto out = torch::empty({rows, F}, gu.options());
    auto keep = keep_buffer(op, want_grad, rows * F, gu);
    glu_forward(op, gu.data_ptr<float>(), rows, F, out.data_ptr<float>(), ptr_or_null(keep));
    ctx->save_for_backward({gu, keep});
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    op_timer::Scope timed(op_timer::Kind::Activation);
    const auto saved = ctx->get_saved_variables();
    const auto& gu = saved[0];
    auto dy = grads[0].contiguous();
    auto dgu = torch::empty_like(gu);
    const int64_t F = gu.size(-1) / 2, rows = gu.numel() / gu.size(-1);
    glu_backward(saved_op(ctx), gu.data_ptr<float>(), ptr_or_null(saved[1]), dy.data_ptr<float>(), rows, F,
                 dgu.data_ptr<float>());
    return {dgu, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// Whether autograd will run a backward through x.
bool wants_grad(const torch::Tensor& x) { return torch::GradMode::is_enabled() && x.requires_grad(); }

}  // namespace

// The op's fields as ActFn / GluFn take them (autograd Functions take tensors and scalars).
int64_t custom_of(const kernels::ActOp& op) { return reinterpret_cast<int64_t>(op.custom); }

torch::Tensor fused_activate(const kernels::ActOp& op, const torch::Tensor& x) {
  return ActFn::apply(x, static_cast<int64_t>(op.kind), static_cast<double>(op.beta), custom_of(op), wants_grad(x));
}

torch::Tensor fused_gated_activate(const kernels::ActOp& op, const torch::Tensor& gu) {
  return GluFn::apply(gu, static_cast<int64_t>(op.kind), static_cast<double>(op.beta), custom_of(op), wants_grad(gu));
}

PlainFfnImpl::PlainFfnImpl(const FfnOptions& o, kernels::ActOp act) : op_(act), beta_(o.swish_beta) {
  op_.beta = static_cast<float>(beta_);
  const int64_t F = o.hidden;
  up_proj = register_module("up_proj", make_linear(o.d_model, F, /*with_bias=*/o.bias));
  down_proj = register_module("down_proj", make_linear(F, o.d_model, /*with_bias=*/o.bias));
}

torch::Tensor PlainFfnImpl::forward(const torch::Tensor& x) {
  // On (B·T, ·) rows: ReLU runs in place on the projection's output (a temporary the linear's
  // backward does not keep, and not a view, which would make autograd copy it back): one
  // (B, T, F) tensor less to allocate and write.
  auto h = linear_2d(x.reshape({-1, x.size(-1)}), up_proj);  // (B·T, F)
  if (fused_kernels_take(h))
    h = fused_activate(op_, h);  // the fused kernel (ffn_impl.h)
  else
    h = op_.kind == Activation::Relu ? h.relu_() : activate(op_, h, beta_);
  auto shape = x.sizes().vec();
  if (keep_hidden) {
    shape.back() = h.size(-1);
    last_hidden = h.detach().view(shape);  // (B, T, F)
  }
  shape.back() = x.size(-1);
  return linear_2d(h, down_proj).view(shape);  // (B, T, C)
}

std::optional<Ffn::Fused> PlainFfnImpl::fused() const {
  return Fused{op(), {}, {}, up_proj->weight, up_proj->bias, down_proj->weight, down_proj->bias};
}

GatedFfnImpl::GatedFfnImpl(const FfnOptions& o, kernels::ActOp act) : op_(act), beta_(o.swish_beta) {
  op_.beta = static_cast<float>(beta_);
  const int64_t F = o.hidden;
  gate_proj = register_module("gate_proj", make_linear(o.d_model, F, /*with_bias=*/o.bias));
  up_proj = register_module("up_proj", make_linear(o.d_model, F, /*with_bias=*/o.bias));
  down_proj = register_module("down_proj", make_linear(F, o.d_model, /*with_bias=*/o.bias));
}

torch::Tensor GatedFfnImpl::forward(const torch::Tensor& x) {
  if (!keep_hidden && fused_kernels_take(x)) {
    // One GEMM with gate_proj and up_proj stacked (the parameters keep their names), then the
    // fused φ(gate)·up.
    auto w = torch::cat({gate_proj->weight, up_proj->weight}, 0);  // (2F, C)
    auto b = gate_proj->bias.defined() ? torch::cat({gate_proj->bias, up_proj->bias}, 0) : torch::Tensor();
    auto gu = linear_2d(x.reshape({-1, x.size(-1)}), w, b);   // (B·T, 2F)
    auto shape = x.sizes().vec();
    auto h = fused_gated_activate(op_, gu);  // (B·T, F)
    return linear_2d(h, down_proj).view(shape);                                  // (B, T, C)
  }
  auto g = activate(op_, linear_2d(x, gate_proj), beta_);  // (B, T, F) φ(W1x)
  if (keep_hidden) last_hidden = g.detach();
  return linear_2d(g * linear_2d(x, up_proj), down_proj);  // W2·(φ(W1x) ⊙ W3x): (B, T, C)
}

std::optional<Ffn::Fused> GatedFfnImpl::fused() const {
  return Fused{op(),          gate_proj->weight, gate_proj->bias, up_proj->weight,
               up_proj->bias, down_proj->weight, down_proj->bias};
}

}  // namespace lmx
