// LayerNorm and RMSNorm, computed in float32 whatever the input dtype, then cast back.
#include "model/norm.h"

#include <torch/autograd.h>

#include <cmath>
#include <optional>
#include <utility>

#include "kernels/cpu_kernels.h"
#include "kernels/fused_attention.h"
#include "kernels/parallel.h"
#include "util/op_timer.h"

namespace lmx {

namespace {

// LayerNorm or RMSNorm over the last dim of a float32 tensor as one autograd op, optionally
// with the residual add before it (Norm::add_forward): h = x + a and y = N(h) are both outputs,
// and the backward returns dh + dx(h) for x and a, what autograd's add and gradient sum would,
// so neither is a pass of its own. Kernels: norm_impl.h. Inputs: a and b may be empty
// (no residual; RMSNorm has no shift); autograd inputs must be defined tensors.
class NormFn : public torch::autograd::Function<NormFn> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                                                const torch::Tensor& a_in, const torch::Tensor& w_in,
                                                const torch::Tensor& b_in, double eps) {
    op_timer::Scope timed(op_timer::Kind::Norm);
    const bool residual = a_in.numel() > 0, layer = b_in.numel() > 0;
    auto x = x_in.contiguous(), w = w_in.contiguous(), a = a_in.contiguous(), b = b_in.contiguous();
    const int64_t C = x.size(-1), N = x.numel() / C;
    auto h = residual ? torch::empty_like(x) : x;
    auto y = torch::empty_like(x);
    auto mean = layer ? torch::empty({N}, x.options()) : torch::empty({0}, x.options());
    auto rstd = torch::empty({N}, x.options());
    kernels::NormArgs args{x.data_ptr<float>(),
                           residual ? a.data_ptr<float>() : nullptr,
                           w.data_ptr<float>(),
                           layer ? b.data_ptr<float>() : nullptr,
                           h.data_ptr<float>(),
                           y.data_ptr<float>(),
                           layer ? mean.data_ptr<float>() : nullptr,
                           rstd.data_ptr<float>(),
                           C,
                           static_cast<float>(eps)};
    const auto& k = kernels::norm_kernels();
    const auto kernel = layer ? k.layernorm_forward : k.rmsnorm_forward;
    kernels::parallel_for(N, 256, [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
    ctx->save_for_backward({h, w, mean, rstd});
    ctx->saved_data["residual"] = residual;
    ctx->saved_data["layer"] = layer;
    if (residual) return {h, y};
    return {y};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    op_timer::Scope timed(op_timer::Kind::Norm);
    auto saved = ctx->get_saved_variables();
    const auto &h = saved[0], &w = saved[1], &mean = saved[2], &rstd = saved[3];
    const bool residual = ctx->saved_data["residual"].toBool(), layer = ctx->saved_data["layer"].toBool();
    auto dy = grads.back().defined() ? grads.back().contiguous() : torch::zeros_like(h);
    auto dh = residual && grads[0].defined() ? grads[0].contiguous() : torch::Tensor();
    const int64_t C = h.size(-1), N = h.numel() / C;
    auto dx = torch::empty_like(h);
    auto dw = torch::zeros({C}, h.options());
    auto db = layer ? torch::zeros({C}, h.options()) : torch::Tensor();
    kernels::NormGradArgs args{h.data_ptr<float>(),
                               w.data_ptr<float>(),
                               layer ? mean.data_ptr<float>() : nullptr,
                               rstd.data_ptr<float>(),
                               dy.data_ptr<float>(),
                               dh.defined() ? dh.data_ptr<float>() : nullptr,
                               dx.data_ptr<float>(),
                               dw.data_ptr<float>(),
                               layer ? db.data_ptr<float>() : nullptr,
                               C};
    const auto& k = kernels::norm_kernels();
    const auto kernel = layer ? k.layernorm_backward : k.rmsnorm_backward;
    if (kernels::parallel_threads() == 1) {
      kernel(args, 0, N);
    } else {
      // dx by rows on every thread, then dw and db summed over the rows in order on this one:
      // the bits of the one serial call.
      kernels::NormGradArgs dx_only = args, dw_only = args;
      dx_only.dw = dx_only.db = nullptr;
      dw_only.dx = nullptr;
      kernels::parallel_for(N, 256, [&](int64_t begin, int64_t end) { kernel(dx_only, begin, end); });
      kernel(dw_only, 0, N);
    }
    return {dx, residual ? dx : torch::Tensor(), dw, db, torch::Tensor()};
  }
};

// {h, y} through NormFn when it applies (a may be undefined), else nullopt.
std::optional<std::pair<torch::Tensor, torch::Tensor>> fused_add_norm(const torch::Tensor& x, const torch::Tensor& a,
                                                                      const torch::Tensor& w, const torch::Tensor& b,
                                                                      double eps) {
  if (!fused_kernels_take(x) || w.scalar_type() != torch::kFloat32 || (b.defined() && b.scalar_type() != torch::kFloat32))
    return std::nullopt;
  if (a.defined() && (a.sizes() != x.sizes() || a.scalar_type() != x.scalar_type())) return std::nullopt;
  auto empty = torch::empty({0}, x.options());
  auto out = NormFn::apply(x, a.defined() ? a : empty, w, b.defined() ? b : empty, eps);
  if (a.defined()) return std::pair{out[0], out[1]};
  return std::pair{x, out[0]};
}

}  // namespace

LayerNormImpl::LayerNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
  bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  if (auto f = fused_add_norm(x, torch::Tensor(), weight, bias, eps_)) return f->second;
  auto xf = x.to(torch::kFloat32);
  auto y = torch::layer_norm(xf, {xf.size(-1)}, weight.to(torch::kFloat32), bias.to(torch::kFloat32), eps_);
  return y.to(x.scalar_type());
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

std::pair<torch::Tensor, torch::Tensor> Norm::add_forward(const torch::Tensor& x, const torch::Tensor& a) {
  if (!a.defined()) return {x, forward(x)};
  auto h = x + a;
  return {h, forward(h)};
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  if (auto f = fused_add_norm(x, torch::Tensor(), weight, torch::Tensor(), eps_)) return f->second;
  auto xf = x.to(torch::kFloat32);
  auto inv_rms = torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);  // (..., 1)
  return (xf * inv_rms * weight.to(torch::kFloat32)).to(x.scalar_type());
}

std::optional<Norm::RowKernel> LayerNormImpl::row_kernel() const {
  return RowKernel{kernels::norm_kernels().layernorm_forward, weight, bias, eps_, kernels::norm_kernels().layernorm_backward};
}

std::optional<Norm::RowKernel> RMSNormImpl::row_kernel() const {
  return RowKernel{kernels::norm_kernels().rmsnorm_forward, weight, {}, eps_, kernels::norm_kernels().rmsnorm_backward};
}

std::pair<torch::Tensor, torch::Tensor> LayerNormImpl::add_forward(const torch::Tensor& x, const torch::Tensor& a) {
  if (auto f = fused_add_norm(x, a, weight, bias, eps_)) return *f;
  return Norm::add_forward(x, a);
}

std::pair<torch::Tensor, torch::Tensor> RMSNormImpl::add_forward(const torch::Tensor& x, const torch::Tensor& a) {
  if (auto f = fused_add_norm(x, a, weight, torch::Tensor(), eps_)) return *f;
  return Norm::add_forward(x, a);
}

}  // namespace lmx
