// FusedAdamW and clip_grad_norm (train/optimizer.h) against LibTorch's own AdamW and Adam, a
// naive double-precision norm, and Muon against muon.py run in PyTorch (tests/fixtures/optim,
// scripts/dev/make_fixtures.py).
#include "catch.h"
#include "torch_api.h"

#include <torch/optim/adam.h>

#include <cmath>
#include <string>

#include "formats/safetensors.h"
#include "helpers.h"
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

namespace {

torch::Tensor fixture_tensor(const SafetensorsFile& f, const std::string& name) {
  for (const auto& [n, t] : f.tensors)
    if (n == name) return t;
  FAIL("muon fixture lacks " << name);
  return {};
}

}  // namespace

TEST_CASE("Muon: muon.py's update (PyTorch fixture, float64) within 1e-5 over three steps, wide and tall", "[optim]") {
  const SafetensorsFile f = read_safetensors(lmx::test::source_path("tests/fixtures/optim/muon.safetensors"));
  const std::vector<double> lrs = {0.02, 0.01, 0.005};
  REQUIRE(f.metadata.at("lr") == "0.02,0.01,0.005");
  const double wd = std::stod(f.metadata.at("weight_decay")), beta = std::stod(f.metadata.at("momentum"));
  const int ns = std::stoi(f.metadata.at("ns_steps"));
  for (const std::string name : {"wide", "tall"}) {
    INFO(name);
    auto p = fixture_tensor(f, name + ".param").clone().requires_grad_();
    std::vector<torch::optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<torch::Tensor>{p},
                   std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(1.0).weight_decay(wd)));
    FusedAdamW opt(std::move(g), torch::optim::AdamWOptions(1.0));
    // lr_scale 1: the group's lr is the step's lr (make_optimizer scales the schedule's lr by muon_lr / lr)
    opt.set_rule(0, {GroupRule::Kind::Muon, 1.0, beta, ns});
    CHECK(opt.orthogonalized(p));
    for (int step = 0; step < 3; ++step) {
      static_cast<torch::optim::AdamWOptions&>(opt.param_groups()[0].options()).lr(lrs[step]);
      p.mutable_grad() = fixture_tensor(f, name + ".grad" + std::to_string(step)).clone();
      opt.step();
      const auto want = fixture_tensor(f, name + ".after" + std::to_string(step));
      INFO("step " << step << ": max |Δ| " << (p - want).abs().max().item<double>());
      CHECK((p.detach() - want).abs().max().item<double>() < 1e-5);
    }
    auto& s = static_cast<torch::optim::AdamWParamState&>(*opt.state().at(adamw_state_key(p)));
    CHECK(s.step() == 3);
    CHECK_FALSE(s.exp_avg_sq().defined());
  }
}

TEST_CASE("Newton-Schulz: the orthogonalized update's singular values are near 1 (muon.py: in [0.68, 1.13])", "[optim]") {
  torch::manual_seed(5);
  for (auto shape : {std::vector<int64_t>{16, 40}, std::vector<int64_t>{40, 16}}) {
    const auto X = newton_schulz5(torch::randn(shape, torch::kFloat64), 5);
    CHECK(X.sizes() == torch::IntArrayRef(shape));
    const auto sv = std::get<1>(torch::svd(X));
    CHECK(sv.min().item<double>() > 0.6);
    CHECK(sv.max().item<double>() < 1.2);
  }
}

TEST_CASE("Muon refuses a parameter that is not a matrix, in one line", "[optim]") {
  auto v = torch::randn({7}).requires_grad_();
  std::vector<torch::optim::OptimizerParamGroup> g;
  g.emplace_back(std::vector<torch::Tensor>{v}, std::make_unique<torch::optim::AdamWOptions>(1e-2));
  FusedAdamW opt(std::move(g), torch::optim::AdamWOptions(1e-2));
  CHECK_THROWS_WITH(opt.set_rule(0, {GroupRule::Kind::Muon}),
                    Catch::Contains("train.optimizer muon") && Catch::Contains("shape 7") && Catch::Contains("2-D"));
}

TEST_CASE("Adam with L2 weight decay equals LibTorch's Adam: parameters and moments", "[optim]") {
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {  // fused loop; LibTorch fall-back
    const double tol = dtype == torch::kFloat32 ? 1e-6 : 1e-12;
    auto a = make_params(dtype), b = make_params(dtype);
    std::vector<torch::optim::OptimizerParamGroup> ga;
    ga.emplace_back(a, std::make_unique<torch::optim::AdamWOptions>(
                           torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).weight_decay(0.1)));
    FusedAdamW fused(std::move(ga), torch::optim::AdamWOptions(3e-3));
    fused.set_rule(0, {GroupRule::Kind::AdamL2});
    torch::optim::Adam reference(b, torch::optim::AdamOptions(3e-3).betas({0.9, 0.95}).weight_decay(0.1));
    for (int step = 0; step < 5; ++step) {
      for (size_t i = 0; i < a.size(); ++i) {
        auto g = torch::randn(a[i].sizes(), dtype);
        a[i].mutable_grad() = g.clone();
        b[i].mutable_grad() = g.clone();
      }
      fused.step();
      reference.step();
    }
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("dtype " << dtype << ", parameter " << i);
      CHECK(torch::allclose(a[i], b[i], tol, tol));
      auto& sa = static_cast<torch::optim::AdamWParamState&>(*fused.state().at(adamw_state_key(a[i])));
      auto& sb = static_cast<torch::optim::AdamParamState&>(*reference.state().at(adamw_state_key(b[i])));
      CHECK(torch::allclose(sa.exp_avg(), sb.exp_avg(), tol, tol));
      CHECK(torch::allclose(sa.exp_avg_sq(), sb.exp_avg_sq(), tol, tol));
    }
  }
}
