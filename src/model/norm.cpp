// LayerNorm and RMSNorm, computed in float32 whatever the input dtype, then cast back.
#include "model/norm.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <cmath>

#include "model/fused_attention.h"

namespace lmx {

namespace {

// RMSNorm over the last dim of a float32 tensor as one autograd op (two passes over memory
// instead of pow, mean, add, rsqrt, mul, mul and their backwards). With r = 1/√(mean(x²)+ε):
//   y = x·r·w;  dx = r·dy·w − x·r³·mean(dy·w·x);  dw = Σ_rows dy·x·r.
class RMSNormFn : public torch::autograd::Function<RMSNormFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& w_in, double eps) {
    auto x = x_in.contiguous(), w = w_in.contiguous();
    const int64_t C = x.size(-1), N = x.numel() / C;
    auto y = torch::empty_like(x);
    auto r = torch::empty({N}, x.options());
    const float *xp = x.data_ptr<float>(), *wp = w.data_ptr<float>();
    float *yp = y.data_ptr<float>(), *rp = r.data_ptr<float>();
    at::parallel_for(0, N, 256, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        const float* xr = xp + n * C;
        float* yr = yp + n * C;
        float ss = 0;
        for (int64_t c = 0; c < C; ++c) ss += xr[c] * xr[c];
        const float ri = 1.0f / std::sqrt(ss / C + static_cast<float>(eps));
        rp[n] = ri;
        for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * ri * wp[c];
      }
    });
    ctx->save_for_backward({x, w, r});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &w = saved[1], &r = saved[2];
    auto dy = grads[0].contiguous();
    const int64_t C = x.size(-1), N = x.numel() / C;
    auto dx = torch::empty_like(x);
    auto dw = torch::zeros({C}, x.options());
    const float *xp = x.data_ptr<float>(), *wp = w.data_ptr<float>(), *rp = r.data_ptr<float>(),
                *gp = dy.data_ptr<float>();
    float *dxp = dx.data_ptr<float>(), *dwp = dw.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n) {  // serial: dw sums over rows
      const float *xr = xp + n * C, *gr = gp + n * C;
      float* dxr = dxp + n * C;
      const float ri = rp[n];
      float dot = 0;
      for (int64_t c = 0; c < C; ++c) dot += gr[c] * wp[c] * xr[c];
      const float coef = ri * ri * ri * dot / C;
      for (int64_t c = 0; c < C; ++c) {
        dxr[c] = ri * gr[c] * wp[c] - xr[c] * coef;
        dwp[c] += gr[c] * xr[c] * ri;
      }
    }
    return {dx, dw, torch::Tensor()};
  }
};

}  // namespace

LayerNormImpl::LayerNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
  bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  auto xf = x.to(torch::kFloat32);
  auto y = torch::layer_norm(xf, {xf.size(-1)}, weight.to(torch::kFloat32), bias.to(torch::kFloat32), eps_);
  return y.to(x.scalar_type());
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  if (x.scalar_type() == torch::kFloat32 && x.device().is_cpu() && weight.scalar_type() == torch::kFloat32 &&
      fused_attention_enabled())
    return RMSNormFn::apply(x, weight, eps_);
  auto xf = x.to(torch::kFloat32);
  auto inv_rms = torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);  // (..., 1)
  return (xf * inv_rms * weight.to(torch::kFloat32)).to(x.scalar_type());
}

}  // namespace lmx
