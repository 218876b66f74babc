// LayerNorm and RMSNorm, computed in float32 whatever the input dtype, then cast back.
#include "model/norm.h"

namespace lmx {

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
  auto xf = x.to(torch::kFloat32);
  auto inv_rms = torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);  // (..., 1)
  return (xf * inv_rms * weight.to(torch::kFloat32)).to(x.scalar_type());
}

}  // namespace lmx
