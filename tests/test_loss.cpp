// The fused cross-entropy (model/loss.h) against LibTorch's cross_entropy: loss and logits
// gradient, mean and sum, vocabularies with and without a tail past the 8-float vectors,
// ignored targets, and every target ignored. The fused token embedding (model/embedding.h)
// against torch::embedding: the same rows, and bit for bit the same weight gradient. PaLM's
// z-loss term (train/trainer.h) against its closed form in double loops.
#include "catch.h"

#include <torch/nn/functional/loss.h>

#include <cmath>

#include "experiments/probe.h"
#include "kernels/fused_attention.h"
#include "model/embedding.h"
#include "model/loss.h"
#include "train/trainer.h"
#include "util/error.h"

using namespace lmx;
using lmx::experiments::max_abs;

namespace {

// The loss and the logits' gradient, with the fused kernels on or off (off: LibTorch's).
std::pair<torch::Tensor, torch::Tensor> ce_and_grad(const torch::Tensor& logits0, const torch::Tensor& targets,
                                                    bool sum, bool fused) {
  const bool before = fused_attention_enabled();
  set_fused_attention(fused);
  auto logits = logits0.clone().requires_grad_();
  auto loss = lm_cross_entropy(logits, targets, /*ignore=*/-100, sum);
  set_fused_attention(before);
  loss.backward(torch::full({}, 0.7));  // a scaled upstream gradient
  return {loss.detach(), logits.grad()};
}

}  // namespace

TEST_CASE("fused cross-entropy: LibTorch's loss and gradient", "[model][loss][fused]") {
  for (int64_t V : {64, 91, 5}) {
    for (bool sum : {false, true}) {
      DYNAMIC_SECTION("V=" << V << (sum ? " sum" : " mean")) {
        torch::manual_seed(V);
        auto logits = torch::randn({37, V}) * 3;
        auto targets = torch::randint(V, {37}, torch::kInt64);
        targets.index_put_({torch::arange(0, 37, 5)}, -100);  // every fifth row ignored
        auto [l_fused, g_fused] = ce_and_grad(logits, targets, sum, true);
        auto [l_plain, g_plain] = ce_and_grad(logits, targets, sum, false);
        CHECK(std::abs(l_fused.item<double>() - l_plain.item<double>()) <=
              1e-5 * std::max(1.0, std::abs(l_plain.item<double>())));
        CHECK(max_abs(g_fused, g_plain) < 1e-6);
        CHECK(g_fused.select(0, 0).abs().max().item<double>() == 0.0);  // an ignored row
      }
    }
  }
  SECTION("the loss's own gradient (1): the kernel's gradient as it is, the same bits as the scaled path") {
    torch::manual_seed(3);
    auto logits0 = torch::randn({19, 64}) * 3;
    auto targets = torch::randint(64, {19}, torch::kInt64);
    auto a = logits0.clone().requires_grad_(), b = logits0.clone().requires_grad_();
    lm_cross_entropy(a, targets, -100, false).backward();                      // gradient 1: returned as is
    lm_cross_entropy(b, targets, -100, false).backward(torch::full({}, 2.0));  // ×2, exact
    CHECK(torch::equal(a.grad(), b.grad() / 2));
    auto plain = ce_and_grad(logits0, targets, false, false).second / 0.7;
    CHECK(max_abs(a.grad(), plain) < 1e-6);
  }
  SECTION("every target ignored: the mean is NaN, the sum 0, as LibTorch's") {
    auto logits = torch::randn({4, 16});
    auto targets = torch::full({4}, -100, torch::kInt64);
    CHECK(std::isnan(ce_and_grad(logits, targets, false, true).first.item<double>()));
    CHECK(std::isnan(ce_and_grad(logits, targets, false, false).first.item<double>()));
    CHECK(ce_and_grad(logits, targets, true, true).first.item<double>() == 0.0);
  }
  SECTION("a target outside the vocabulary: an input error naming it") {
    auto targets = torch::tensor({1, 16}, torch::kInt64);
    CHECK_THROWS_AS(lm_cross_entropy(torch::randn({2, 16}), targets, -100, false), InputError);
  }
}

TEST_CASE("fused token embedding: torch::embedding's rows and, bit for bit, its weight gradient",
          "[model][loss][fused]") {
  torch::manual_seed(5);
  for (int64_t C : {64, 13}) {
    DYNAMIC_SECTION("C=" << C) {
      auto w0 = torch::randn({11, C});
      auto tokens = torch::randint(11, {6, 50}, torch::kInt64);  // ~27 uses of each row
      auto dy = torch::randn({6, 50, C});
      auto run = [&](bool fused) {
        const bool before = fused_attention_enabled();
        set_fused_attention(fused);
        auto w = w0.clone().requires_grad_();
        auto y = embed_tokens(w, tokens);
        set_fused_attention(before);
        y.backward(dy);
        return std::pair{y.detach(), w.grad()};
      };
      auto [y_fused, g_fused] = run(true);
      auto [y_plain, g_plain] = run(false);
      CHECK(y_fused.sizes() == y_plain.sizes());
      CHECK(torch::equal(y_fused, y_plain));
      CHECK(torch::equal(g_fused, g_plain));
      // An independent sum in double: the gradient is each row's tokens' gradients.
      auto ref = torch::zeros({11, C}, torch::kDouble).index_add_(0, tokens.reshape(-1), dy.reshape({-1, C}).to(torch::kDouble));
      CHECK(max_abs(g_fused.to(torch::kDouble), ref) < 1e-4);
    }
  }
  SECTION("a token outside the vocabulary: an input error naming it") {
    CHECK_THROWS_AS(embed_tokens(torch::randn({4, 8}), torch::tensor({{1, 4}}, torch::kInt64)), InputError);
    CHECK_THROWS_AS(embed_tokens(torch::randn({4, 8}), torch::tensor({{-1, 2}}, torch::kInt64)), InputError);
  }
}

TEST_CASE("z-loss: the mean (or sum) over counted targets of logsumexp², and its gradient 2·lse·softmax", "[model][loss]") {
  torch::manual_seed(4);
  const int64_t N = 6, V = 11;
  const auto logits0 = torch::randn({N, V}) * 3;
  const auto targets = torch::tensor({1, -100, 4, 10, -100, 0}, torch::kInt64);
  auto l64 = logits0.to(torch::kFloat64).contiguous();
  const double* z = l64.data_ptr<double>();
  double sum = 0;
  std::vector<double> lse(N);
  for (int64_t i = 0; i < N; ++i) {
    double m = z[i * V];
    for (int64_t j = 1; j < V; ++j) m = std::max(m, z[i * V + j]);
    double s = 0;
    for (int64_t j = 0; j < V; ++j) s += std::exp(z[i * V + j] - m);
    lse[i] = m + std::log(s);
    if (targets[i].item<int64_t>() != -100) sum += lse[i] * lse[i];
  }
  for (bool summed : {false, true}) {
    INFO("sum " << summed);
    auto logits = logits0.clone().requires_grad_();
    const auto term = z_loss_term(logits, targets, -100, summed);
    const double want = summed ? sum : sum / 4;
    CHECK(term.item<double>() == Approx(want).epsilon(1e-6));
    term.backward();
    const auto g = logits.grad().to(torch::kFloat64).contiguous();
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < V; ++j) {
        const bool counted = targets[i].item<int64_t>() != -100;
        const double d = counted ? 2 * lse[i] * std::exp(z[i * V + j] - lse[i]) / (summed ? 1 : 4) : 0.0;
        CHECK(std::fabs(g.data_ptr<double>()[i * V + j] - d) <= 1e-5 * (1 + std::fabs(d)));
      }
  }
}

TEST_CASE("lm_cross_entropy_z: the fused kernel's cross-entropy and z term, and the gradient of any mix of them, "
          "are LibTorch's", "[model][loss][fused]") {
  torch::manual_seed(5);
  const int64_t N = 7, V = 37;
  const auto logits0 = torch::randn({N, V}) * 3;
  const auto targets = torch::tensor({1, -100, 4, 36, -100, 0, 20}, torch::kInt64);
  // (a, b): the objective a·CE + b·z; (1, 0) and (0, 1) each output alone, (1, 1e-4) as train.z_loss.
  for (auto [a, b] : {std::pair{1.0, 1e-4}, std::pair{0.7, 1.3}, std::pair{1.0, 0.0}, std::pair{0.0, 1.0}})
    for (bool summed : {false, true}) {
      INFO("a " << a << " b " << b << " sum " << summed);
      auto run = [&](bool fused) {
        FusedKernelsScope sw(fused);
        auto logits = logits0.clone().requires_grad_();
        auto [ce, z] = lm_cross_entropy_z(logits, targets, -100, summed);
        torch::Tensor objective;
        if (a != 0) objective = ce * a;
        if (b != 0) objective = objective.defined() ? objective + z * b : z * b;
        objective.backward();
        return std::tuple{ce.item<double>(), z.item<double>(), logits.grad()};
      };
      const auto [ce_f, z_f, g_f] = run(true);
      const auto [ce_p, z_p, g_p] = run(false);
      CHECK(ce_f == Approx(ce_p).epsilon(1e-6));
      CHECK(z_f == Approx(z_p).epsilon(1e-6));
      CHECK(z_f == Approx(z_loss_term(logits0, targets, -100, summed).item<double>()).epsilon(1e-6));
      CHECK(max_abs(g_f, g_p) <= 1e-6 * std::max(1.0, g_p.abs().max().item<double>()));
      CHECK(g_p.abs().max().item<double>() > 1e-3);  // not a vacuous comparison
    }
}
