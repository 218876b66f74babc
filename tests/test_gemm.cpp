// The linear layers' GEMMs through oneDNN (kernels/gemm.h) against LibTorch's: gemm::sgemm with
// every transpose combination and β against torch::mm, gemm::linear's output and the
// gradients of x, w and the bias against torch::linear's, and the model-level switch (the
// fused kernels off or bf16 autocast keep LibTorch's linear). Where lmx was built without
// oneDNN, the LibTorch side of gemm::sgemm is what runs. The bf16 GEMMs: the rounding against
// LibTorch's float32 -> bfloat16 conversion, and linear's output and gradients against float64
// products of the same bfloat16-rounded operands (where this CPU runs bf16 GEMMs).
#include "catch.h"

#include <torch/nn/functional/linear.h>

#include "experiments/probe.h"
#include "kernels/fused_attention.h"
#include "kernels/gemm.h"
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

TEST_CASE("gemm::to_bf16: LibTorch's rounding to bfloat16, bit for bit", "[model][gemm][bf16]") {
  torch::manual_seed(5);
  // 16-wide vectors and a tail; ties (x.5 ulp of bfloat16) both ways, large, small, signed
  // zeros, infinities. (Denormals: lmx flushes them to zero in its float32 arithmetic.)
  auto x = torch::cat({torch::randn({1000}) * 30, torch::tensor({1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f, 0.0f, -0.0f,
                                                               3.0e38f, -1.0e-30f, INFINITY, -INFINITY, 65504.0f})});
  const auto got = gemm::to_bf16(x), want = x.to(torch::kBFloat16);
  REQUIRE(got.scalar_type() == torch::kBFloat16);
  CHECK(torch::equal(got.view(torch::kInt16), want.view(torch::kInt16)));
  CHECK(std::isnan(gemm::to_bf16(torch::tensor({NAN})).to(torch::kFloat32).item<float>()));
  const auto m = x.narrow(0, 0, 1000).view({50, 20}).t();  // a non-contiguous view
  CHECK(torch::equal(gemm::to_bf16(m).view(torch::kInt16), m.contiguous().to(torch::kBFloat16).view(torch::kInt16)));
}

TEST_CASE("gemm::linear in bf16: output and gradients against float64 products of the bf16-rounded operands", "[model][gemm][bf16]") {
  const std::string why = gemm::bf16_unavailable();
  if (!why.empty()) {
    WARN("no bf16 GEMMs here: " << why);
    return;
  }
  auto r = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat64); };  // rounded, exact
  for (bool bias : {true, false}) {
    for (int64_t M : {1, 77, 2048}) {
      DYNAMIC_SECTION((bias ? "bias" : "no bias") << " M=" << M) {
        torch::manual_seed(M + 11);
        const int64_t K = 72, N = 40;  // not multiples of the kernels' blocks
        auto x = torch::randn({M, K}).requires_grad_(), w = (torch::randn({N, K}) * 0.1).requires_grad_();
        auto b = torch::randn({N}).requires_grad_(), dy = torch::randn({M, N});
        torch::Tensor y;
        {
          gemm::Bf16Scope on;
          CHECK(gemm::bf16_on());
          y = gemm::linear(x, w, bias ? b : torch::Tensor());
        }
        CHECK_FALSE(gemm::bf16_on());
        y.backward(dy);  // outside the scope: the backward keeps its forward's precision
        REQUIRE(y.scalar_type() == torch::kFloat32);
        auto want_y = torch::mm(r(x), r(w).t()) + (bias ? b.detach().to(torch::kFloat64) : torch::zeros({N}, torch::kFloat64));
        auto want_dx = torch::mm(r(dy), r(w)), want_dw = torch::mm(r(dy).t(), r(x));
        // float32 accumulation of K (or M) exact bf16 products: |error| <= n·2⁻²⁴·Σ|terms|.
        auto tol = [](const torch::Tensor& a, const torch::Tensor& b, int64_t n) {
          return 2.0 * n * 6e-8 * torch::mm(a.abs(), b.abs()).max().item<double>() + 1e-6;
        };
        CHECK(max_abs(y.detach(), want_y) <= tol(r(x), r(w).t(), K));
        CHECK(max_abs(x.grad(), want_dx) <= tol(r(dy), r(w), N));
        CHECK(max_abs(w.grad(), want_dw) <= tol(r(dy).t(), r(x), M));
        if (bias) CHECK(max_abs(b.grad(), dy.sum(0)) <= 1e-4);
        // and bf16, not float32, operands: further from the float32 product than float32 rounding
        CHECK(max_abs(y.detach(), torch::mm(x.detach().to(torch::kFloat64), w.detach().to(torch::kFloat64).t()) +
                                      (bias ? b.detach().to(torch::kFloat64) : torch::zeros({N}, torch::kFloat64))) > 1e-4);
      }
    }
  }
}

TEST_CASE("LMX_BF16_GEMM: 0 says why, 1 is the default, anything else is an input error", "[model][gemm][bf16]") {
  const std::string as_is = gemm::bf16_unavailable();  // this machine's answer without the variable
  ::setenv("LMX_BF16_GEMM", "1", 1);
  CHECK(gemm::bf16_unavailable() == as_is);
  ::setenv("LMX_BF16_GEMM", "0", 1);
  CHECK((as_is.empty() ? gemm::bf16_unavailable() == "LMX_BF16_GEMM=0" : gemm::bf16_unavailable() == as_is));
  ::setenv("LMX_BF16_GEMM", "yes", 1);
  CHECK_THROWS_WITH(gemm::bf16_unavailable(), Catch::Contains("LMX_BF16_GEMM=yes") && Catch::Contains("expected 0 or 1"));
  ::unsetenv("LMX_BF16_GEMM");
  CHECK(gemm::bf16_unavailable() == as_is);
}

TEST_CASE("gemm::Bf16Scope nests and restores", "[model][gemm][bf16]") {
  CHECK_FALSE(gemm::bf16_on());
  {
    gemm::Bf16Scope a;
    {
      gemm::Bf16Scope b;
      CHECK(gemm::bf16_on());
    }
    CHECK(gemm::bf16_on());
  }
  CHECK_FALSE(gemm::bf16_on());
}

TEST_CASE("bf16's rate measured against the sgemm's: a warning only where bf16 is slower", "[model][gemm][bf16]") {
  CHECK(gemm::bf16_slower_note({100.0, 200.0}).empty());
  CHECK(gemm::bf16_slower_note({100.0, 100.0}).empty());
  const std::string note = gemm::bf16_slower_note({137.4, 76.2});
  CHECK_THAT(note, Catch::Contains("76 against 137 GFLOP/s") && Catch::Contains("train.precision fp32 is faster here"));
  const std::string why = gemm::bf16_unavailable();
  if (!why.empty()) {
    WARN("bf16 GEMMs not measured: " << why);
    return;
  }
  // The rates of a small problem are positive and below any CPU's plausible core peak.
  const gemm::Bf16Rates r = gemm::measure_bf16_rates(64, 2);
  CHECK(r.fp32_gflops > 0);
  CHECK(r.bf16_gflops > 0);
  CHECK(r.fp32_gflops < 1e5);
  CHECK(r.bf16_gflops < 1e5);
}
