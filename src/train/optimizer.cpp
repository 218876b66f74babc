#include "train/optimizer.h"

#include <torch/csrc/autograd/generated/variable_factories.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/gemm.h"
#include "kernels/parallel.h"
#include "util/error.h"

namespace lmx {

namespace {

// One AdamW update over n floats (restrict: the loop vectorizes).
// L2: g + l2·w in place of g (Adam's weight decay); a template, so that AdamW's loop is as before.
template <bool L2>
void adamw_update(float* __restrict__ w, const float* __restrict__ g, float* __restrict__ m, float* __restrict__ v,
                  int64_t n, float decay, float l2, float b1, float a1, float b2, float a2, float inv_sqrt_bc2,
                  float eps, float step_size) {
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i];
    if constexpr (L2) gi += l2 * w[i];
    const float mi = m[i] * b1 + a1 * gi;
    const float vi = v[i] * b2 + a2 * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    w[i] = w[i] * decay - step_size * (mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps));
  }
}

// One parameter's update: its tensors and the step's constants (adamw_update's arguments).
struct Update {
  float *w, *m, *v;
  const float* g;
  int64_t n;
  float decay, l2, b1, a1, b2, a2, inv_sqrt_bc2, eps, step_size;
};

// The updates over all their floats as one range, split by kernels::parallel_for: every float is
// computed as in a serial loop (element-wise; the chunks keep whole 16-float lanes).
void run_updates(const std::vector<Update>& updates) {
  std::vector<int64_t> start(updates.size() + 1, 0);
  for (size_t i = 0; i < updates.size(); ++i) start[i + 1] = start[i] + updates[i].n;
  kernels::parallel_for(start.back(), 16384, [&](int64_t begin, int64_t end) {
    size_t i = std::upper_bound(start.begin(), start.end(), begin) - start.begin() - 1;
    for (; i < updates.size() && start[i] < end; ++i) {
      const Update& u = updates[i];
      const int64_t lo = std::max(begin, start[i]) - start[i], hi = std::min(end, start[i + 1]) - start[i];
      auto* update = u.l2 != 0 ? adamw_update<true> : adamw_update<false>;
      update(u.w + lo, u.g + lo, u.m + lo, u.v + lo, hi - lo, u.decay, u.l2, u.b1, u.a1, u.b2, u.a2, u.inv_sqrt_bc2,
             u.eps, u.step_size);
    }
  }, 16);
}

bool fusable(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous();
}

}  // namespace

namespace {

// The address as LibTorch's own optimizers key it (a template, so that only one branch is built).
template <class Key>
Key state_key(const void* impl) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;  // c10::guts::to_string(impl)
    key << impl;
    return key.str();
  } else {
    return const_cast<void*>(impl);
  }
}

}  // namespace

OptimizerStateKey adamw_state_key(const torch::Tensor& param) {
  return state_key<OptimizerStateKey>(param.unsafeGetTensorImpl());
}

void FusedAdamW::set_rule(size_t group, GroupRule rule) {
  if (group >= param_groups().size()) throw std::logic_error("FusedAdamW::set_rule: no such param group");
  if (rule.kind == GroupRule::Kind::Muon)
    for (const auto& p : param_groups()[group].params())
      if (p.dim() != 2)
        throw InputError(fmt::format("train.optimizer muon: a parameter of shape {} is not a matrix; Muon "
                                     "orthogonalizes 2-D updates only", fmt::join(p.sizes(), "x")));
  if (rules_.size() <= group) rules_.resize(group + 1);
  rules_[group] = rule;
}

const GroupRule& FusedAdamW::rule(size_t group) const {
  static const GroupRule adamw;
  return group < rules_.size() ? rules_[group] : adamw;
}

bool FusedAdamW::orthogonalized(const torch::Tensor& p) const {
  const auto& groups = param_groups();
  for (size_t g = 0; g < groups.size(); ++g)
    if (rule(g).kind == GroupRule::Kind::Muon)
      for (const auto& q : groups[g].params())
        if (q.unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) return true;
  return false;
}

torch::Tensor newton_schulz5(const torch::Tensor& G, int steps) {
  const double a = 3.4445, b = -4.7750, c = 2.0315;
  const bool tall = G.size(0) > G.size(1);
  torch::Tensor X = tall ? G.t() : G;
  X = X / (X.norm() + 1e-7);
  if (X.device().is_cpu() && X.scalar_type() == torch::kFloat32 && gemm::active() == gemm::Backend::onednn) {
    // The same iteration on lmx's sgemm (oneDNN) into buffers allocated once, the element-wise
    // parts as plain loops: LibTorch's mm on these small matrices runs OpenBLAS, whose threads
    // made a Muon step 5× slower at two threads than at one.
    X = X.contiguous();
    const int64_t m = X.size(0), n = X.size(1);
    auto A = torch::empty({m, m}, X.options()), AA = torch::empty({m, m}, X.options());
    auto T = torch::empty({m, n}, X.options());
    float *x = X.data_ptr<float>(), *pa = A.data_ptr<float>(), *paa = AA.data_ptr<float>(), *pt = T.data_ptr<float>();
    const float fa = static_cast<float>(a), fb = static_cast<float>(b), fc = static_cast<float>(c);
    for (int i = 0; i < steps; ++i) {
      gemm::sgemm(X, false, X, true, A, 0.0f);    // A = X·Xᵀ
      gemm::sgemm(A, false, A, false, AA, 0.0f);  // A·A
      for (int64_t j = 0; j < m * m; ++j) paa[j] = fb * pa[j] + fc * paa[j];  // B = b·A + c·A·A
      gemm::sgemm(AA, false, X, false, T, 0.0f);  // B·X
      for (int64_t j = 0; j < m * n; ++j) x[j] = fa * x[j] + pt[j];
    }
    return tall ? X.t().contiguous() : X;
  }
  for (int i = 0; i < steps; ++i) {
    const torch::Tensor A = torch::mm(X, X.t());
    const torch::Tensor B = b * A + c * torch::mm(A, A);
    X = a * X + torch::mm(B, X);
  }
  return tall ? X.t().contiguous() : X;
}

namespace {

// One Muon step of p (muon.py's muon_update and its weight decay): buf = lerp(buf, g, 1 − β),
// u = NS5(lerp(g, buf, β)) · √max(1, rows/cols), p = p·(1 − lr·wd) − lr·u.
void muon_step(torch::Tensor& p, const torch::Tensor& grad, torch::optim::AdamWParamState& s, const GroupRule& r,
               double lr, double weight_decay) {
  s.step(s.step() + 1);
  torch::Tensor buf = s.exp_avg();
  buf.lerp_(grad, 1 - r.momentum);
  torch::Tensor u = newton_schulz5(grad.lerp(buf, r.momentum), r.ns_steps);
  u.mul_(std::sqrt(std::max(1.0, static_cast<double>(p.size(0)) / static_cast<double>(p.size(1)))));
  p.mul_(1 - lr * weight_decay);
  p.add_(u, -lr);
}

}  // namespace

torch::Tensor FusedAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  std::vector<Update> updates;  // the fused parameters' updates, run together below
  auto& groups = param_groups();
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    auto& group = groups[gi];
    const GroupRule& r = rule(gi);
    auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
    const double lr = o.lr() * r.lr_scale;
    const bool l2 = r.kind == GroupRule::Kind::AdamL2;
    for (auto& p : group.params()) {
      const auto& grad = p.grad();
      if (!grad.defined()) continue;
      const auto key = adamw_state_key(p);
      if (r.kind == GroupRule::Kind::Muon) {
        auto it = state_.find(key);
        if (it == state_.end()) {
          auto s = std::make_unique<torch::optim::AdamWParamState>();
          s->step(0);
          s->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Contiguous));
          it = state_.emplace(key, std::move(s)).first;
        }
        muon_step(p, grad, static_cast<torch::optim::AdamWParamState&>(*it->second), r, lr, o.weight_decay());
        continue;
      }
      if (o.amsgrad() || !fusable(p) || !fusable(grad)) {
        // LibTorch's update for this parameter alone: a one-parameter AdamW over the same state
        // (Adam's L2 decay: added to the gradient first, no decoupled decay).
        auto one_opts = o;
        one_opts.lr(lr);
        if (l2) {
          p.mutable_grad() = grad + o.weight_decay() * p;
          one_opts.weight_decay(0);
        }
        torch::optim::AdamW one({p}, one_opts);
        auto it = state_.find(key);
        if (it != state_.end()) one.state()[key] = std::move(it->second);
        one.step();
        state_[key] = std::move(one.state()[key]);
        continue;
      }
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto s = std::make_unique<torch::optim::AdamWParamState>();
        s->step(0);
        s->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        s->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        it = state_.emplace(key, std::move(s)).first;
      }
      auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
      s.step(s.step() + 1);
      const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
      const double bc1 = 1 - std::pow(beta1, s.step()), bc2 = 1 - std::pow(beta2, s.step());
      // The same arithmetic as AdamW::step, in float: p·(1 − lr·wd), then
      // m = β1·m + (1 − β1)·g, v = β2·v + (1 − β2)·g², p −= lr/bc1 · m / (√v/√bc2 + eps).
      // Adam (L2): g + wd·p in place of g, and no decoupled decay.
      const float decay = l2 ? 1.0f : static_cast<float>(1 - lr * o.weight_decay());
      const float l2_coef = l2 ? static_cast<float>(o.weight_decay()) : 0.0f;
      const float b1 = static_cast<float>(beta1), a1 = static_cast<float>(1 - beta1);
      const float b2 = static_cast<float>(beta2), a2 = static_cast<float>(1 - beta2);
      const float inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
      const float eps = static_cast<float>(o.eps()), step_size = static_cast<float>(lr / bc1);
      updates.push_back({p.data_ptr<float>(), s.exp_avg().data_ptr<float>(), s.exp_avg_sq().data_ptr<float>(),
                         grad.data_ptr<float>(), p.numel(), decay, l2_coef, b1, a1, b2, a2, inv_sqrt_bc2, eps,
                         step_size});
    }
  }
  run_updates(updates);
  return loss;
}

void clear_gradients(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params) p.mutable_grad() = torch::Tensor();
}

double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  double ss = 0;
  for (const auto& p : params) {
    const auto& g = p.grad();
    if (!g.defined()) continue;
    if (fusable(g)) {
      const float* x = g.data_ptr<float>();
      const int64_t n = g.numel();
      double lane[4] = {0, 0, 0, 0};  // independent sums: the loop vectorizes
      int64_t i = 0;
      for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) lane[k] += static_cast<double>(x[i + k]) * x[i + k];
      for (; i < n; ++i) lane[0] += static_cast<double>(x[i]) * x[i];
      ss += (lane[0] + lane[1]) + (lane[2] + lane[3]);
    } else {
      ss += g.to(torch::kDouble).pow(2).sum().item<double>();
    }
  }
  const double norm = std::sqrt(ss);
  if (!std::isfinite(norm) || !(max_norm > 0)) return norm;
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1) return norm;
  for (const auto& p : params) {
    auto g = p.grad();
    if (!g.defined()) continue;
    if (fusable(g)) {
      float* x = g.data_ptr<float>();
      const float c = static_cast<float>(coef);
      for (int64_t i = 0, n = g.numel(); i < n; ++i) x[i] *= c;
    } else {
      g.mul_(coef);
    }
  }
  return norm;
}

}  // namespace lmx
