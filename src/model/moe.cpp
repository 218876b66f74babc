#include "model/moe.h"

#include <torch/nn/functional/activation.h>


#include "model/aux_loss.h"
#include "model/linear.h"

namespace lmx {

namespace {
thread_local torch::Tensor aux_sum;
}  // namespace

void record_aux_loss(const torch::Tensor& loss) { aux_sum = aux_sum.defined() ? aux_sum + loss : loss; }

torch::Tensor take_aux_loss() {
  torch::Tensor out = aux_sum;
  aux_sum = torch::Tensor();
  return out;
}

MoeFfnImpl::MoeFfnImpl(const MoeOptions& o) : top_k_(o.top_k), aux_coef_(o.aux_loss) {
  const kernels::ActOp silu{kernels::ActKind::Silu};
  router = register_module("router", make_linear(o.expert.d_model, o.experts, /*with_bias=*/false));
  auto routed = register_module("experts", torch::nn::ModuleList());  // experts.N.*
  for (int64_t e = 0; e < o.experts; ++e) {
    experts.push_back(std::make_shared<GatedFfnImpl>(o.expert, silu));
    routed->push_back(experts.back());
  }
  if (o.shared > 0) {
    auto shared = register_module("shared_experts", torch::nn::ModuleList());
    for (int64_t s = 0; s < o.shared; ++s) {
      shared_experts.push_back(std::make_shared<GatedFfnImpl>(o.expert, silu));
      shared->push_back(shared_experts.back());
    }
  }
}

MoeFfnImpl::Routing MoeFfnImpl::route(const torch::Tensor& x) const {
  Routing r;
  r.probs = torch::softmax(linear_2d(x, router).to(torch::kFloat32), -1);  // (N, E)
  auto [top, index] = r.probs.topk(top_k_, -1);                             // (N, k), largest first
  r.experts = index;
  r.weights = top / top.sum(-1, /*keepdim=*/true);
  return r;
}

torch::Tensor MoeFfnImpl::balance_loss(const Routing& r) const {
  const int64_t E = static_cast<int64_t>(experts.size()), N = r.probs.size(0);
  // f_e: the rows that chose e among their k, over N (HF: the mean over tokens of the one-hot
  // top-k mask, summed over the k slots)
  const auto chosen = torch::zeros({E}, r.probs.options())
                          .index_add_(0, r.experts.reshape(-1), torch::ones({r.experts.numel()}, r.probs.options()));
  const auto f = chosen / static_cast<double>(std::max<int64_t>(1, N));
  return static_cast<double>(E) * (f * r.probs.mean(0)).sum();
}

torch::Tensor MoeFfnImpl::forward(const torch::Tensor& x_in) {
  const auto shape = x_in.sizes().vec();
  const auto x = x_in.reshape({-1, x_in.size(-1)});  // (N, C)
  const Routing r = route(x);
  const auto weights = r.weights.to(x.scalar_type());
  auto out = torch::zeros_like(x);
  for (size_t e = 0; e < experts.size(); ++e) {
    const auto hit = r.experts.eq(static_cast<int64_t>(e));  // (N, k): at most one true per row
    const auto rows = hit.any(-1).nonzero().reshape(-1);
    if (rows.numel() == 0) continue;
    const auto w = (weights * hit).sum(-1).index_select(0, rows).unsqueeze(1);  // (n, 1)
    const auto y = experts[e]->forward(x.index_select(0, rows).unsqueeze(0)).squeeze(0);
    out = out.index_add(0, rows, y * w);
  }
  for (const auto& s : shared_experts) out = out + s->forward(x.unsqueeze(0)).squeeze(0);
  if (aux_coef_ > 0 && torch::GradMode::is_enabled()) record_aux_loss(aux_coef_ * balance_loss(r));
  return out.view(shape);
}

}  // namespace lmx
