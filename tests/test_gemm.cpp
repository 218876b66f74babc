// The linear layers' GEMMs through oneDNN (model/gemm.h) against LibTorch's: gemm::sgemm with
// every transpose combination and β against torch::mm, gemm::linear's output and the
// gradients of x, w and the bias against torch::linear's, and the model-level switch (the
// fused kernels off or bf16 autocast keep LibTorch's linear). Where lmx was built without
// oneDNN, the LibTorch side of gemm::sgemm is what runs.
#include "catch.h"

#include <torch/nn/functional/linear.h>

#include "experiments/probe.h"
#include "model/fused_attention.h"
#include "model/gemm.h"
#include "model/linear.h"

using namespace lmx;
using lmx::experiments::max_abs;

namespace {

// Relative tolerance of an fp32 GEMM over K terms against another summation order.
double gemm_tol(int64_t K) { return 1e-6 * static_cast<double>(K) + 1e-6; }

}  // namespace

TEST_CASE("gemm::sgemm: every transpose and beta against torch::mm", "[model][gemm]") {
  torch::manual_seed(3);
  const int64_t M = 37, N = 21, K = 70;  // not multiples of any vector width
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.0f, 1.0f}) {
        DYNAMIC_SECTION("ta=" << ta << " tb=" << tb << " beta=" << beta) {
          auto a = ta ? torch::randn({K, M}) : torch::randn({M, K});
          auto b = tb ? torch::randn({N, K}) : torch::randn({K, N});
          auto c0 = torch::randn({M, N});
          auto want = torch::mm(ta ? a.t() : a, tb ? b.t() : b) + beta * c0;
          auto out = beta == 0.0f ? torch::full({M, N}, std::nanf("")) : c0.clone();  // β = 0 ignores out
          gemm::sgemm(a, ta, b, tb, out, beta);
          CHECK(max_abs(out, want) <= gemm_tol(K) * want.abs().max().item<double>());
        }
      }
}

TEST_CASE("gemm::sgemm: row strides (views into wider rows) are read as such", "[model][gemm]") {
  torch::manual_seed(4);
  auto wide = torch::randn({40, 100});
  auto a = wide.narrow(1, 10, 64);  // (40, 64) with rows 100 apart
  auto b = torch::randn({64, 24});
  auto out_wide = torch::zeros({40, 50});
  auto out = out_wide.narrow(1, 5, 24);
  gemm::sgemm(a, false, b, false, out, 0.0f);
  CHECK(max_abs(out, torch::mm(a, b)) <= gemm_tol(64) * 10);
  CHECK(out_wide.narrow(1, 0, 5).abs().max().item<float>() == 0.0f);  // nothing written outside the view
  CHECK(out_wide.narrow(1, 29, 21).abs().max().item<float>() == 0.0f);
}

TEST_CASE("gemm::linear: output and the gradients of x, w and bias against torch::linear", "[model][gemm]") {
  if (!gemm::takes(torch::zeros({1}))) {
    WARN("the linear layers' GEMMs are LibTorch's here (built without oneDNN, or LMX_GEMM=torch): nothing to compare");
    return;
  }
  for (bool bias : {true, false}) {
    for (int64_t M : {1, 2048, 77}) {
      DYNAMIC_SECTION((bias ? "bias" : "no bias") << " M=" << M) {
        torch::manual_seed(M);
        const int64_t K = 64, N = 96;
        auto x0 = torch::randn({M, K}), w0 = torch::randn({N, K}) * 0.1, b0 = torch::randn({N});
        auto up = torch::randn({M, N});
        auto run = [&](bool onednn) {
          auto x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
          auto y = onednn ? gemm::linear(x, w, bias ? b : torch::Tensor())
                          : torch::nn::functional::linear(x, w, bias ? b : torch::Tensor());
          (y * up).sum().backward();
          return std::vector<torch::Tensor>{y.detach(), x.grad(), w.grad(), bias ? b.grad() : torch::zeros({N})};
        };
        const auto got = run(true), want = run(false);
        CHECK(max_abs(got[0], want[0]) <= 1e-4);
        CHECK(max_abs(got[1], want[1]) <= 1e-4);
        CHECK(max_abs(got[2], want[2]) <= 1e-5 * static_cast<double>(M) + 1e-4);  // a sum over M rows
        CHECK(max_abs(got[3], want[3]) == 0.0);  // the same column sum
      }
    }
  }
}

TEST_CASE("gemm::linear: only the gradients asked for, and no autograd without grad", "[model][gemm]") {
  if (!gemm::takes(torch::zeros({1}))) return;
  auto x = torch::randn({8, 16}), w = torch::randn({4, 16}).requires_grad_(), b = torch::randn({4});
  auto y = gemm::linear(x, w, b);
  CHECK(y.requires_grad());
  y.sum().backward();
  CHECK(w.grad().defined());
  CHECK(!x.grad().defined());
  torch::NoGradGuard no_grad;
  CHECK(!gemm::linear(x, w, b).requires_grad());
  CHECK(max_abs(gemm::linear(x, w, b), torch::addmm(b, x, w.t())) <= 1e-5);
}

TEST_CASE("linear_2d: oneDNN only where the fused float32 kernels are on", "[model][gemm]") {
  auto x = torch::randn({2, 3, 16}), w = torch::randn({5, 16}), b = torch::randn({5});
  const bool before = fused_attention_enabled();
  set_fused_attention(false);
  CHECK_FALSE(gemm::takes(x));
  auto plain = linear_2d(x, w, b);
  set_fused_attention(before);
  CHECK(gemm::takes(x) == (gemm::active() == gemm::Backend::onednn));
  CHECK_FALSE(gemm::takes(x.to(torch::kFloat64)));
  auto fused = linear_2d(x, w, b);
  CHECK(fused.sizes() == plain.sizes());
  CHECK(max_abs(fused, plain) <= 1e-5);
}
