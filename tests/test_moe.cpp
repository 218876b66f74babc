// The MoE FFN (model/moe.h) against a naive loop: each row's router probabilities in double, its
// top k by sorting, their renormalized weights, and the sum of its experts' outputs, each expert
// run on that row alone; the load-balancing loss against its closed form; the loss recorded by a
// forward in grad mode and none in eval; gradients reaching the router and the chosen experts;
// the parameter count; and the refusal of a top-k above the expert count.
#include "catch.h"
#include "torch_api.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "config/config.h"
#include "model/aux_loss.h"
#include "model/moe.h"
#include "model/options.h"
#include "model/sizes.h"

using namespace lmx;

namespace {

ModelConfig moe_config(int experts, int top_k, int shared) {
  ModelConfig c;
  c.vocab_size = 11;
  c.d_model = 16;
  c.d_ff = 12;
  c.ffn = "moe";
  c.moe_experts = experts;
  c.moe_top_k = top_k;
  c.moe_shared_experts = shared;
  c.moe_aux_loss = 0.05;
  return c;
}

}  // namespace

TEST_CASE("MoE: each row is the weighted sum of its top-k experts (a naive loop), and the shared ones",
          "[model][moe]") {
  for (auto [E, k, S] : {std::tuple{4, 2, 0}, std::tuple{5, 1, 1}, std::tuple{3, 3, 2}}) {
    INFO("E " << E << " k " << k << " shared " << S);
    torch::manual_seed(3);
    ModelConfig c = moe_config(E, k, S);
    MoeFfnImpl moe(moe_options(c));
    for (auto& p : moe.parameters()) p.data().normal_(0, 0.4);
    const auto x = torch::randn({2, 7, c.d_model});
    torch::NoGradGuard no_grad;
    const auto got = moe.forward(x).reshape({-1, c.d_model});
    const auto rows = x.reshape({-1, c.d_model});
    const auto wr = moe.router->weight.to(torch::kFloat64);
    double max_diff = 0;
    for (int64_t n = 0; n < rows.size(0); ++n) {
      const auto xr = rows[n].to(torch::kFloat64);
      std::vector<double> logit(E), prob(E);
      for (int e = 0; e < E; ++e) logit[e] = (wr[e] * xr).sum().item<double>();
      const double m = *std::max_element(logit.begin(), logit.end());
      double z = 0;
      for (int e = 0; e < E; ++e) z += std::exp(logit[e] - m);
      for (int e = 0; e < E; ++e) prob[e] = std::exp(logit[e] - m) / z;
      std::vector<int> order(E);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return prob[a] > prob[b]; });
      double top = 0;
      for (int j = 0; j < k; ++j) top += prob[order[j]];
      auto want = torch::zeros({c.d_model}, torch::kFloat64);
      for (int j = 0; j < k; ++j) {
        const int e = order[j];
        want += prob[e] / top * moe.experts[e]->forward(rows[n].view({1, 1, -1})).reshape(-1).to(torch::kFloat64);
      }
      for (const auto& s : moe.shared_experts) want += s->forward(rows[n].view({1, 1, -1})).reshape(-1).to(torch::kFloat64);
      max_diff = std::max(max_diff, (got[n].to(torch::kFloat64) - want).abs().max().item<double>());
    }
    CHECK(max_diff < 1e-5);
  }
}

TEST_CASE("MoE load-balancing loss: E·Σ f_e·P_e (HF Mixtral), recorded in grad mode only, α·k when uniform",
          "[model][moe]") {
  torch::manual_seed(5);
  ModelConfig c = moe_config(4, 2, 0);
  MoeFfnImpl moe(moe_options(c));
  const auto x = torch::randn({3, 5, c.d_model});
  const auto r = moe.route(x.reshape({-1, c.d_model}));
  // closed form by loops
  const int64_t N = 15, E = 4;
  std::vector<double> f(E, 0), P(E, 0);
  for (int64_t n = 0; n < N; ++n) {
    for (int j = 0; j < 2; ++j) f[r.experts[n][j].item<int64_t>()] += 1.0 / N;
    for (int e = 0; e < E; ++e) P[e] += r.probs[n][e].item<double>() / N;
  }
  double want = 0;
  for (int e = 0; e < E; ++e) want += f[e] * P[e];
  want *= E;
  CHECK(moe.balance_loss(r).item<double>() == Approx(want).epsilon(1e-6));

  take_aux_loss();
  auto y = moe.forward(x);
  const auto aux = take_aux_loss();
  REQUIRE(aux.defined());
  CHECK(aux.item<double>() == Approx(0.05 * want).epsilon(1e-6));
  CHECK_FALSE(take_aux_loss().defined());  // taken once
  (y.sum() + aux).backward();
  CHECK(moe.router->weight.grad().abs().sum().item<double>() > 0);  // the router learns
  {
    torch::NoGradGuard no_grad;
    moe.forward(x);
    CHECK_FALSE(take_aux_loss().defined());  // evaluation records nothing
  }
  // uniform routing (a zero router): f_e = k/E, P_e = 1/E, so E·Σ f·P = k
  torch::NoGradGuard no_grad;
  moe.router->weight.zero_();
  CHECK(moe.balance_loss(moe.route(x.reshape({-1, c.d_model}))).item<double>() == Approx(2.0).epsilon(1e-6));
}

TEST_CASE("MoE: parameters as sizes.h counts them, FLOPs by the active experts, top-k above E refused", "[model][moe]") {
  Config cfg;
  cfg.model = moe_config(6, 2, 1);
  validate(cfg);
  MoeFfnImpl moe(moe_options(cfg.model));
  int64_t numel = 0;
  for (const auto& p : moe.parameters()) numel += p.numel();
  CHECK(numel == count_params(cfg.model).ffn_per_layer);
  // active: router + (2 routed + 1 shared) SwiGLUs of 3·C·F
  ModelConfig dense = cfg.model;
  dense.ffn = "swiglu";
  const int64_t C = 16, F = 12;
  CHECK(matmul_params(cfg.model) - matmul_params(dense) == cfg.model.n_layers * (C * 6 + 2 * 3 * C * F));
  cfg.model.moe_top_k = 7;
  CHECK_THROWS_WITH(validate(cfg), Catch::Contains("model.moe_top_k (7) exceeds model.moe_experts (6)"));
}
