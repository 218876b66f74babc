// FusedAdamW and clip_grad_norm (train/optimizer.h) against LibTorch's own AdamW and a naive
// double-precision norm.
#include "catch.h"
#include "torch_api.h"

#include <cmath>

#include "train/optimizer.h"

using namespace lmx;

namespace {

// Two parameter groups as make_optimizer builds them (decay on matrices, none on vectors).
std::vector<torch::optim::OptimizerParamGroup> groups(const std::vector<torch::Tensor>& decay,
                                                      const std::vector<torch::Tensor>& no_decay) {
  auto opts = torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).eps(1e-8);
  std::vector<torch::optim::OptimizerParamGroup> g;
  g.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(opts).weight_decay(0.1)));
  g.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(opts).weight_decay(0.0)));
  return g;
}

std::vector<torch::Tensor> make_params(torch::Dtype dtype) {
  torch::manual_seed(3);
  return {torch::randn({37, 19}, dtype).requires_grad_(), torch::randn({53}, dtype).requires_grad_(),
          torch::randn({4, 8, 5}, dtype).requires_grad_()};
}

// Runs `steps` AdamW steps with the same pseudo-random gradients on both optimizers.
void run_both(torch::Dtype dtype, double tol) {
  auto a = make_params(dtype), b = make_params(dtype);
  FusedAdamW fused(groups({a[0], a[2]}, {a[1]}), torch::optim::AdamWOptions(3e-3));
  torch::optim::AdamW reference(groups({b[0], b[2]}, {b[1]}), torch::optim::AdamWOptions(3e-3));
  for (int step = 0; step < 6; ++step) {
    for (size_t i = 0; i < a.size(); ++i) {
      auto g = torch::randn(a[i].sizes(), dtype) * (step + 1);
      a[i].mutable_grad() = g.clone();
      b[i].mutable_grad() = g.clone();
    }
    // The lr changes between steps, as under a schedule.
    for (auto* opt : std::vector<torch::optim::Optimizer*>{&fused, &reference})
      for (auto& grp : opt->param_groups())
        static_cast<torch::optim::AdamWOptions&>(grp.options()).lr(3e-3 / (step + 1));
    fused.step();
    reference.step();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("parameter " << i);
    CHECK(torch::allclose(a[i], b[i], tol, tol));
    // LibTorch's own AdamW keys its state this way too: at() throws if adamw_state_key differs.
    const auto key_a = lmx::adamw_state_key(a[i]);
    const auto key_b = lmx::adamw_state_key(b[i]);
    auto& sa = static_cast<torch::optim::AdamWParamState&>(*fused.state().at(key_a));
    auto& sb = static_cast<torch::optim::AdamWParamState&>(*reference.state().at(key_b));
    CHECK(sa.step() == 6);
    CHECK(sa.step() == sb.step());
    CHECK(torch::allclose(sa.exp_avg(), sb.exp_avg(), tol, tol));
    CHECK(torch::allclose(sa.exp_avg_sq(), sb.exp_avg_sq(), tol, tol));
  }
}

double naive_norm(const std::vector<torch::Tensor>& params) {
  double ss = 0;
  for (const auto& p : params) {
    auto g = p.grad().to(torch::kDouble).contiguous();
    const double* x = g.data_ptr<double>();
    for (int64_t i = 0; i < g.numel(); ++i) ss += x[i] * x[i];
  }
  return std::sqrt(ss);
}

}  // namespace

TEST_CASE("fused AdamW equals LibTorch's AdamW: parameters, moments and steps", "[optim]") {
  // float32: the fused loop, same formula in float (rounding differs: relative 1e-6);
  // float64: the fall-back to LibTorch's own update (same arithmetic: 1e-12).
  SECTION("float32, fused") { run_both(torch::kFloat32, 1e-6); }
  SECTION("float64, fall-back") { run_both(torch::kFloat64, 1e-12); }
}

TEST_CASE("fused AdamW skips parameters without a gradient", "[optim]") {
  auto p = make_params(torch::kFloat32);
  const auto before = p[1].detach().clone();
  FusedAdamW opt(groups({p[0]}, {p[1]}), torch::optim::AdamWOptions(1e-2));
  p[0].mutable_grad() = torch::ones_like(p[0]);
  opt.step();
  CHECK(torch::equal(p[1], before));
  CHECK(opt.state().size() == 1);
}

TEST_CASE("clip_grad_norm: naive norm, scaling to max_norm, NaN left untouched", "[optim]") {
  auto p = make_params(torch::kFloat32);
  for (auto& t : p) t.mutable_grad() = torch::randn(t.sizes()) * 3;
  p.push_back(torch::randn({6}, torch::kFloat64).requires_grad_());  // a non-float32 gradient too
  p.back().mutable_grad() = torch::randn({6}, torch::kFloat64);
  const double expected = naive_norm(p);
  std::vector<torch::Tensor> before;
  for (auto& t : p) before.push_back(t.grad().clone());

  CHECK(clip_grad_norm(p, 0) == Approx(expected).epsilon(1e-12));  // 0: measure only
  for (size_t i = 0; i < p.size(); ++i) CHECK(torch::equal(p[i].grad(), before[i]));
  CHECK(clip_grad_norm(p, 1e9) == Approx(expected).epsilon(1e-12));  // below the limit: untouched
  CHECK(torch::equal(p[0].grad(), before[0]));

  const double max_norm = 1.5;
  CHECK(clip_grad_norm(p, max_norm) == Approx(expected).epsilon(1e-12));
  CHECK(naive_norm(p) == Approx(max_norm).epsilon(1e-5));
  const double coef = max_norm / (expected + 1e-6);
  for (size_t i = 0; i < p.size(); ++i)
    CHECK(torch::allclose(p[i].grad(), before[i] * coef, 1e-6, 1e-7));

  p[2].grad()[1][2][3] = std::nan("");
  const auto with_nan = p[0].grad().clone();
  CHECK(std::isnan(clip_grad_norm(p, max_norm)));
  CHECK(torch::equal(p[0].grad(), with_nan));
}

TEST_CASE("clear_gradients: the next backward writes the gradient that zero_grad would", "[optim]") {
  auto p = make_params(torch::kFloat32);
  auto loss = [&] { return (p[0].sum() * 2 + (p[1] * p[1]).sum() + p[2].mean()); };
  loss().backward();
  loss().backward();  // accumulated twice
  clear_gradients(p);
  for (auto& t : p) CHECK_FALSE(t.grad().defined());
  loss().backward();
  CHECK(torch::allclose(p[0].grad(), torch::full_like(p[0], 2)));
  CHECK(torch::allclose(p[1].grad(), 2 * p[1].detach()));
}
