// The fused FFN activation kernels (kernels/ffn_impl.h) against closed forms evaluated in
// double precision (values and derivatives), for each variant this CPU runs; and the FFN modules
// with the kernels on against LibTorch's ops (outputs and every gradient), plain and gated.
#include "catch.h"
#include "experiments/probe.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu_kernels.h"
#include "kernels/fused_attention.h"
#include "model/ffn.h"
#include "model/registry.h"

using namespace lmx;
using lmx::experiments::max_abs;
using kernels::ActKind;
using kernels::ActOp;

namespace {

// Whether this CPU runs the variant: LMX_KERNEL_ISA=isa would pick it (kernels::kernel_isa_capped).
bool cpu_runs(const char* isa) {
  const std::string picked = kernels::kernel_isa_capped(isa);
  return picked == isa || picked == std::string(isa) + "+fma";
}

struct Variant {
  const char* isa;
  void (*fwd)(const ActOp&, const float*, int64_t, float*, float*);
  void (*bwd)(const ActOp&, const float*, const float*, const float*, int64_t, float*);
  void (*glu_fwd)(const ActOp&, const float*, int64_t, int64_t, float*, float*);
  void (*glu_bwd)(const ActOp&, const float*, const float*, const float*, int64_t, int64_t, float*);
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const Variant kVariants[] = {
    {"sse2", &kernels::generic::act_forward, &kernels::generic::act_backward, &kernels::generic::glu_forward,
     &kernels::generic::glu_backward},
    {"avx2", &kernels::avx2::act_forward, &kernels::avx2::act_backward, &kernels::avx2::glu_forward,
     &kernels::avx2::glu_backward},
    {"avx512", &kernels::avx512::act_forward, &kernels::avx512::act_backward, &kernels::avx512::glu_forward,
     &kernels::avx512::glu_backward},
};

// φ and φ' in double, from the textbook formulas (erf, tanh, exp).
struct Closed {
  std::function<double(double)> phi, dphi;
};
// By the activation's name (registry::activations(): every FFN row's φ); none for a name this
// test has no formula for, which fails the test: a new built-in row brings its closed form here.
// A row of a program's own (Custom) is held to its own scalar φ and φ', which the kernels apply.
std::optional<Closed> closed_form(const std::string& name, const ActOp& op, double beta) {
  if (op.kind == ActKind::Custom) {
    const auto* f = op.custom;
    const auto b = static_cast<float>(beta);
    return Closed{[=](double x) { return double(f->phi(static_cast<float>(x), b)); },
                  [=](double x) { return double(f->grad(static_cast<float>(x), b)); }};
  }
  const double k = std::sqrt(2.0 / M_PI), kappa = 0.044715;
  auto sigmoid = [](double z) { return 1.0 / (1.0 + std::exp(-z)); };
  if (name == "relu") return Closed{[](double x) { return x > 0 ? x : 0.0; }, [](double x) { return x > 0 ? 1.0 : 0.0; }};
  if (name == "relu2")
    return Closed{[](double x) { return x > 0 ? x * x : 0.0; }, [](double x) { return x > 0 ? 2 * x : 0.0; }};
  if (name == "gelu")
    return Closed{[](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); },
                  [](double x) {
                    return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
                  }};
  if (name == "gelu_tanh")
    return Closed{[=](double x) { return 0.5 * x * (1 + std::tanh(k * (x + kappa * x * x * x))); },
                  [=](double x) {
                    const double t = std::tanh(k * (x + kappa * x * x * x));
                    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * kappa * x * x);
                  }};
  if (name == "silu") beta = 1.0;
  if (name == "silu" || name == "swish")
    return Closed{[=](double x) { return x * sigmoid(beta * x); },
                  [=](double x) {
                    const double s = sigmoid(beta * x);
                    return s * (1 + beta * x * (1 - s));
                  }};
  return std::nullopt;
}

// The stated tolerance: float rounding of a few operations, relative to the value, with an
// absolute floor where the value itself is below float's resolution of the inputs' scale
// (scale: |dy| for a gradient dy·φ').
bool close(double got, double want, double scale = 1.0) {
  return std::fabs(got - want) <= 1e-6 * std::fabs(want) + 1e-7 * scale;
}

}  // namespace

TEST_CASE("fused FFN activations: values and derivatives within 1e-6 (relative) + 1e-7 of the closed forms",
          "[model][ffn][fused]") {
  // x on [-12, 12] every 1/128, and far out; 3079 values: the vector lanes and a scalar tail.
  std::vector<float> x;
  for (int i = -1536; i <= 1536; ++i) x.push_back(static_cast<float>(i) / 128.0f);
  for (float v : {30.0f, -30.0f, 100.0f, -100.0f, 1e-4f, -1e-4f}) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  for (const auto& var : kVariants) {
    if (!cpu_runs(var.isa)) continue;
    for (const auto& [name, act] : registry::activations()) {
      for (const float beta : {1.0f, 1.7f}) {  // β: swish's (the others ignore it)
        DYNAMIC_SECTION(var.isa << " " << name << " beta " << beta) {
          ActOp op = act;
          op.beta = beta;
          const std::optional<Closed> closed = closed_form(name, act, beta);
          INFO("activation " << name << ": no closed form in this test; add one");
          REQUIRE(closed);
          const Closed& ref = *closed;
          // Plain: y = φ(x), dx = dy·φ'(x) with dy = 1 (and a second pass with dy = -2.5).
          std::vector<float> y(n), dx(n), ones(n, 1.0f), twos(n, -2.5f), dx2(n);
          var.fwd(op, x.data(), n, y.data(), nullptr);
          var.bwd(op, x.data(), nullptr, ones.data(), n, dx.data());
          var.bwd(op, x.data(), nullptr, twos.data(), n, dx2.data());
          // With the forward's kept part (GELU's Φ; ignored by the others): the same bits.
          std::vector<float> y_kept(n), keep(n), dx_kept(n);
          var.fwd(op, x.data(), n, y_kept.data(), keep.data());
          var.bwd(op, x.data(), keep.data(), ones.data(), n, dx_kept.data());
          CHECK(same_bits(y_kept, y));
          CHECK(same_bits(dx_kept, dx));
          int bad = 0;
          for (int64_t i = 0; i < n; ++i) {
            const double xi = x[i];
            if (!close(y[i], ref.phi(xi)) || !close(dx[i], ref.dphi(xi)) || !close(dx2[i], -2.5 * ref.dphi(xi), 2.5)) {
              if (++bad <= 5)
                FAIL_CHECK(std::setprecision(10) << "x " << xi << ": φ " << y[i] << " vs " << ref.phi(xi) << ", φ' "
                                                 << dx[i] << " vs " << ref.dphi(xi) << ", -2.5φ' " << dx2[i]);
            }
          }
          CHECK(bad == 0);
          // Gated, rows of F = 23 (16 + 7: every kind of lane): o = φ(g)·u, dg = dy·u·φ'(g), du = dy·φ(g).
          const int64_t F = 23, rows = 5;
          std::vector<float> gu(rows * 2 * F), dy(rows * F), o(rows * F), dgu(rows * 2 * F);
          for (int64_t i = 0; i < rows * 2 * F; ++i) gu[i] = x[(i * 37) % n] * (i % 2 ? 0.5f : 1.0f);
          for (int64_t i = 0; i < rows * F; ++i) dy[i] = 0.25f * static_cast<float>((i * 7) % 11) - 1.3f;
          var.glu_fwd(op, gu.data(), rows, F, o.data(), nullptr);
          var.glu_bwd(op, gu.data(), nullptr, dy.data(), rows, F, dgu.data());
          std::vector<float> o_kept(rows * F), keep_g(rows * F), dgu_kept(rows * 2 * F);
          var.glu_fwd(op, gu.data(), rows, F, o_kept.data(), keep_g.data());
          var.glu_bwd(op, gu.data(), keep_g.data(), dy.data(), rows, F, dgu_kept.data());
          CHECK(same_bits(o_kept, o));
          CHECK(same_bits(dgu_kept, dgu));
          int bad_glu = 0;
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t f = 0; f < F; ++f) {
              const double g = gu[r * 2 * F + f], u = gu[r * 2 * F + F + f], d = dy[r * F + f];
              // The products add one rounding each: relative to |u|·|φ| and |d|·|u|·|φ'|.
              const bool ok =
                  std::fabs(o[r * F + f] - ref.phi(g) * u) <= 2e-6 * std::fabs(ref.phi(g) * u) + 1e-7 * std::fabs(u) &&
                  std::fabs(dgu[r * 2 * F + f] - d * u * ref.dphi(g)) <=
                      2e-6 * std::fabs(d * u * ref.dphi(g)) + 1e-7 * std::fabs(d * u) &&
                  std::fabs(dgu[r * 2 * F + F + f] - d * ref.phi(g)) <=
                      2e-6 * std::fabs(d * ref.phi(g)) + 1e-7 * std::fabs(d);
              if (!ok && ++bad_glu <= 5) FAIL_CHECK("gated g " << g << " u " << u);
            }
          CHECK(bad_glu == 0);
        }
      }
    }
  }
}

TEST_CASE("fused FFN activations: FFN modules give LibTorch's outputs and gradients", "[model][ffn][fused]") {
  for (const std::string ffn : {"gelu", "gelu_tanh", "silu", "swish", "swiglu", "geglu", "reglu", "relu"}) {
    DYNAMIC_SECTION(ffn) {
      ModelConfig c;
      c.d_model = 24;
      c.d_ff = 45;  // a width with a tail
      c.ffn = ffn;
      c.swish_beta = 1.5;
      torch::manual_seed(11);
      auto module = make_ffn(c);
      auto x = torch::randn({3, 7, c.d_model}, torch::requires_grad());
      auto up = torch::randn({3, 7, c.d_model});
      auto run = [&](bool fused) {
        FusedKernelsScope sw(fused);
        auto y = module->forward(x);
        std::vector<torch::Tensor> inputs = {x};
        for (auto& p : module->parameters()) inputs.push_back(p);
        auto grads = torch::autograd::grad({y}, inputs, {up});
        return std::pair{y.detach(), grads};
      };
      auto [y_plain, g_plain] = run(false);
      auto [y_fused, g_fused] = run(true);
      CHECK(max_abs(y_fused, y_plain) / std::max(1.0, y_plain.abs().max().item<double>()) < 1e-5);
      REQUIRE(g_fused.size() == g_plain.size());
      for (size_t i = 0; i < g_plain.size(); ++i)
        CHECK(max_abs(g_fused[i], g_plain[i]) / std::max(1.0, g_plain[i].abs().max().item<double>()) < 1e-5);
      // Probes read φ(W1x) of a plain FFN from the fused path too.
      if (ffn != "swiglu" && ffn != "geglu" && ffn != "reglu") {
        module->keep_hidden = true;
        auto hidden = [&](bool fused) {
          FusedKernelsScope sw(fused);
          module->forward(x);
          return module->last_hidden.clone();
        };
        CHECK(max_abs(hidden(true), hidden(false)) < 1e-5);
        module->keep_hidden = false;
      }
    }
  }
}
