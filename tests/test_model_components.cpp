// Components against closed forms and independent transcriptions: activations, norms,
// RoPE (relative property, norm, layouts, scalings), ALiBi slopes, T5 buckets.
#include "catch.h"
#include "experiments/probe.h"

#include <cmath>

#include "kernels/fused_attention.h"
#include "model/ffn.h"
#include "model/lm.h"
#include "model/norm.h"
#include "model/position/absolute.h"
#include "model/position/alibi.h"
#include "model/position/rope.h"
#include "model/position/t5_bias.h"
#include "util/error.h"

using namespace lmx;
using lmx::experiments::max_abs;

namespace {

ModelConfig rope_cfg(const std::string& layout, const std::string& scaling = "none", double factor = 1.0) {
  ModelConfig c;
  c.position = "rope";
  c.rope_layout = parse_option<RopeLayout>(layout);
  c.rope_scaling = parse_option<RopeScaling>(scaling);
  c.rope_factor = factor;
  return c;
}

}  // namespace

TEST_CASE("activations match their closed forms", "[model][ffn]") {
  auto x = torch::linspace(-6, 6, 241, torch::kFloat64);
  auto at = [&](int i) { return x[i].item<double>(); };
  const double sqrt_2_pi = std::sqrt(2.0 / M_PI);
  for (const double beta : {0.1, 1.0, 10.0}) {
    auto relu = activation("relu", x), gelu = activation("gelu", x), gelu_tanh = activation("gelu_tanh", x);
    auto silu = activation("silu", x), swish = activation("swish", x, beta);
    for (int i = 0; i < x.size(0); ++i) {
      const double v = at(i);
      CHECK(relu[i].item<double>() == Approx(std::max(v, 0.0)).margin(1e-12));
      CHECK(gelu[i].item<double>() == Approx(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))).margin(1e-12));
      CHECK(gelu_tanh[i].item<double>() ==
            Approx(0.5 * v * (1 + std::tanh(sqrt_2_pi * (v + 0.044715 * v * v * v)))).margin(1e-12));
      CHECK(silu[i].item<double>() == Approx(v / (1 + std::exp(-v))).margin(1e-12));
      CHECK(swish[i].item<double>() == Approx(v / (1 + std::exp(-beta * v))).margin(1e-12));
    }
  }
  CHECK_THROWS_AS(activation("tanh", x), InputError);
}

TEST_CASE("gated FFN computes W2·(φ(W1x) ⊙ W3x) with the resolved width", "[model][ffn]") {
  ModelConfig c;
  c.d_model = 8;
  c.d_ff = 0;  // auto: plain 32 -> gated round(2/3·32) = 21, rounded up to 4 -> 24
  c.d_ff_multiple = 4;
  GatedFfn ffn(ffn_options(c, /*gated=*/true), kernels::ActOp{Activation::Silu});
  CHECK(ffn->gate_proj->weight.size(0) == 24);
  auto x = torch::randn({2, 3, 8});
  auto ref = torch::linear(torch::silu(torch::linear(x, ffn->gate_proj->weight, ffn->gate_proj->bias)) *
                               torch::linear(x, ffn->up_proj->weight, ffn->up_proj->bias),
                           ffn->down_proj->weight, ffn->down_proj->bias);
  CHECK(max_abs(ffn->forward(x), ref) < 1e-6);
}

TEST_CASE("LayerNorm and RMSNorm: invariances and the reference formulas", "[model][norm]") {
  torch::manual_seed(1);
  const int64_t C = 16;
  auto x = torch::randn({4, C}, torch::kFloat64) * 2 + 0.7;
  LayerNorm ln(C, /*eps=*/1e-6);
  RMSNorm rms(C, /*eps=*/1e-6);
  SECTION("LayerNorm is invariant to scale and shift; RMSNorm only to scale") {
    CHECK(max_abs(ln->forward(3 * x), ln->forward(x)) < 1e-5);
    CHECK(max_abs(ln->forward(x + 5), ln->forward(x)) < 1e-5);
    CHECK(max_abs(rms->forward(3 * x), rms->forward(x)) < 1e-5);
    CHECK(max_abs(rms->forward(x + 5), rms->forward(x)) > 0.1);
  }
  SECTION("on a zero-mean input RMSNorm equals LayerNorm") {
    auto z = x - x.mean(-1, true);
    CHECK(max_abs(rms->forward(z), ln->forward(z)) < 1e-6);
  }
  SECTION("naive per-element formulas with random γ, β") {
    torch::NoGradGuard no_grad;
    ln->weight.copy_(torch::randn({C}));
    ln->bias.copy_(torch::randn({C}));
    rms->weight.copy_(torch::randn({C}));
    auto xf = x.to(torch::kFloat32);
    auto got_ln = ln->forward(xf), got_rms = rms->forward(xf);
    for (int64_t r = 0; r < x.size(0); ++r) {
      double mean = 0, sq = 0;
      for (int64_t i = 0; i < C; ++i) mean += xf[r][i].item<double>() / C;
      for (int64_t i = 0; i < C; ++i) sq += std::pow(xf[r][i].item<double>(), 2) / C;
      double var = sq - mean * mean;
      for (int64_t i = 0; i < C; ++i) {
        const double v = xf[r][i].item<double>();
        const double want_ln = (v - mean) / std::sqrt(var + 1e-6) * ln->weight[i].item<double>() + ln->bias[i].item<double>();
        const double want_rms = v / std::sqrt(sq + 1e-6) * rms->weight[i].item<double>();
        CHECK(got_ln[r][i].item<double>() == Approx(want_ln).margin(1e-5));
        CHECK(got_rms[r][i].item<double>() == Approx(want_rms).margin(1e-5));
      }
    }
  }
}

TEST_CASE("RoPE: the score depends only on the relative position — norms are kept", "[model][rope]") {
  torch::manual_seed(2);
  const int64_t D = 64;
  for (const char* layout : {"half", "interleaved"}) {
    RoPE rope(rope_options(rope_cfg(layout), D));
    auto q = torch::randn({1, 1, 1, D}), k = torch::randn({1, 1, 1, D});
    auto score = [&](int64_t m, int64_t n) {
      return (rope->rotate(q, m) * rope->rotate(k, n)).sum().item<double>();
    };
    const double s = score(3, 1);
    CHECK(score(10, 8) == Approx(s).margin(1e-4));
    CHECK(score(100, 98) == Approx(s).margin(1e-4));
    CHECK(score(1000, 998) == Approx(s).margin(1e-4));
    CHECK(std::abs(score(3, 1) - score(3, 2)) > 1e-3);  // and it does depend on the distance
    for (int64_t m : {0, 7, 1000}) CHECK(rope->rotate(q, m).norm().item<double>() == Approx(q.norm().item<double>()).epsilon(1e-5));
  }
}

TEST_CASE("RoPE: interleaved equals half-split after a fixed permutation", "[model][rope]") {
  torch::manual_seed(3);
  const int64_t D = 16;
  RoPE half(rope_options(rope_cfg("half"), D)), inter(rope_options(rope_cfg("interleaved"), D));
  // interleaved pair (2i, 2i+1) is half-split pair (i, i + D/2)
  std::vector<int64_t> perm(D);
  for (int64_t i = 0; i < D / 2; ++i) perm[i] = 2 * i, perm[i + D / 2] = 2 * i + 1;
  auto p = torch::tensor(perm);
  auto x = torch::randn({2, 3, 5, D});
  auto via_half = half->rotate(x.index_select(-1, p), /*start=*/4);
  auto via_inter = inter->rotate(x, /*start=*/4).index_select(-1, p);
  CHECK(max_abs(via_half, via_inter) < 1e-6);
}

TEST_CASE("RoPE scalings: linear, NTK-aware and YaRN", "[model][rope]") {
  torch::manual_seed(4);
  const int64_t D = 16;
  auto x = torch::randn({1, 1, 1, D});
  SECTION("linear interpolation: position p with factor s is position p/s") {
    RoPE plain(rope_options(rope_cfg("half"), D)), linear(rope_options(rope_cfg("half", "linear", 4.0), D));
    CHECK(max_abs(linear->rotate(x, 12), plain->rotate(x, 3)) < 1e-6);
  }
  SECTION("NTK-aware: θ' = θ·s^(D/(D−2)): highest frequency kept, lowest divided by s") {
    RoPE plain(rope_options(rope_cfg("half"), D)), ntk(rope_options(rope_cfg("half", "ntk", 8.0), D));
    auto a = plain->inv_freq(), b = ntk->inv_freq();
    CHECK(b[0].item<double>() == Approx(1.0));
    CHECK(b[D / 2 - 1].item<double>() == Approx(a[D / 2 - 1].item<double>() / 8.0).epsilon(1e-12));
  }
  SECTION("YaRN against a transcription of Peng et al.'s reference") {
    ModelConfig c = rope_cfg("half", "yarn", 4.0);
    c.rope_theta = 10000;
    c.rope_original_len = 64;
    RoPE yarn(rope_options(c, D));
    const double s = 4, base = 10000, L = 64, fast = 32, slow = 1;
    auto corr = [&](double rot) { return D * std::log(L / (rot * 2 * M_PI)) / (2 * std::log(base)); };
    double low = std::max(std::floor(corr(fast)), 0.0), high = std::min(std::ceil(corr(slow)), double(D - 1));
    for (int64_t i = 0; i < D / 2; ++i) {
      const double f = std::pow(base, -2.0 * i / D);
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      const double want = f / s * ramp + f * (1 - ramp);
      CHECK(yarn->inv_freq()[i].item<double>() == Approx(want).epsilon(1e-12));
    }
    CHECK(yarn->mscale() == Approx(0.1 * std::log(4.0) + 1));
    CHECK(yarn->rotate(x, 5).norm().item<double>() == Approx(x.norm().item<double>() * yarn->mscale()).epsilon(1e-5));
  }
}

TEST_CASE("ALiBi slopes are the paper's, including non-powers of two", "[model][alibi]") {
  auto check = [](int64_t h, std::vector<double> want) {
    auto got = alibi_slopes(h);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-12));
  };
  check(8, {1. / 2, 1. / 4, 1. / 8, 1. / 16, 1. / 32, 1. / 64, 1. / 128, 1. / 256});
  check(4, {1. / 4, 1. / 16, 1. / 64, 1. / 256});
  check(6, {1. / 4, 1. / 16, 1. / 64, 1. / 256, 1. / 2, 1. / 8});
  check(3, {1. / 16, 1. / 256, 1. / 4});
  check(1, {1. / 256});
  const double r = std::pow(2.0, -0.5);
  check(12, {1. / 2, 1. / 4, 1. / 8, 1. / 16, 1. / 32, 1. / 64, 1. / 128, 1. / 256, r, r / 2, r / 4, r / 8});
  ALiBiImpl alibi(6);
  auto bias = alibi.score_bias(/*q_start=*/3, /*tq=*/2, /*tk=*/5, torch::kCPU);  // (H, Tq, Tk)
  REQUIRE(bias.sizes() == torch::IntArrayRef({6, 2, 5}));
  CHECK(bias[4][1][0].item<double>() == Approx(-0.5 * 4));  // head 5 (slope 1/2), query 4, key 0
  CHECK(bias[0][0][3].item<double>() == Approx(0.0));
}

namespace {
// The T5 reference `_relative_position_bucket(relative_position, bidirectional=False,
// num_buckets, max_distance)`, transcribed for one scalar (float32 arithmetic as there).
int64_t t5_reference_bucket(int64_t relative_position, int64_t num_buckets, int64_t max_distance) {
  int64_t n = -std::min<int64_t>(relative_position, 0);
  const int64_t max_exact = num_buckets / 2;
  if (n < max_exact) return n;
  float val = std::log(static_cast<float>(n) / static_cast<float>(max_exact)) /
              static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact)) *
              static_cast<float>(num_buckets - max_exact);
  return std::min<int64_t>(max_exact + static_cast<int64_t>(val), num_buckets - 1);
}
}  // namespace

TEST_CASE("T5 buckets follow the reference algorithm", "[model][t5]") {
  for (auto [nb, md] : std::vector<std::pair<int64_t, int64_t>>{{32, 128}, {8, 20}, {16, 64}}) {
    auto rel = torch::arange(-1500, 5, torch::kInt64);  // key − query
    auto got = t5_relative_position_bucket(rel, nb, md);
    for (int64_t i = 0; i < rel.size(0); ++i)
      REQUIRE(got[i].item<int64_t>() == t5_reference_bucket(rel[i].item<int64_t>(), nb, md));
  }
  // hand-computed for 32 buckets, max distance 128 (distance = query − key)
  auto bucket = [](int64_t distance) {
    return t5_relative_position_bucket(torch::tensor({-distance}), 32, 128)[0].item<int64_t>();
  };
  CHECK(bucket(0) == 0);
  CHECK(bucket(15) == 15);
  CHECK(bucket(16) == 16);
  CHECK(bucket(20) == 17);
  CHECK(bucket(32) == 21);
  CHECK(bucket(64) == 26);
  CHECK(bucket(127) == 31);
  CHECK(bucket(1000) == 31);
  CHECK(bucket(-3) == 0);  // a future key (masked anyway)
}

TEST_CASE("sinusoidal table is sin/cos of p / 10000^(2i/C)", "[model][position]") {
  auto pe = SinusoidalPositionImpl::table(50, 10);
  for (int64_t p : {0, 1, 17, 49})
    for (int64_t i = 0; i < 5; ++i) {
      const double angle = p / std::pow(10000.0, 2.0 * i / 10);
      CHECK(pe[p][2 * i].item<double>() == Approx(std::sin(angle)).margin(1e-6));
      CHECK(pe[p][2 * i + 1].item<double>() == Approx(std::cos(angle)).margin(1e-6));
    }
}

TEST_CASE("T5 bias: one table in layer 0 shared by every layer (t5_shared), or one per layer", "[model]") {
  ModelConfig m;
  m.vocab_size = 20, m.d_model = 16, m.n_layers = 3, m.n_heads = 2, m.d_ff = 32;
  m.position = "t5_bias";
  m.t5_num_buckets = 8;
  for (bool shared : {true, false}) {
    m.t5_shared = shared;
    ModernLM model(m);
    std::vector<std::string> tables;
    for (const auto& p : model->named_parameters())
      if (p.key().find("relative_attention_bias") != std::string::npos) tables.push_back(p.key());
    INFO("t5_shared " << shared);
    if (shared) {
      // (the golden fixtures t5_mqa and t5_per_layer_scaled check that every layer reads it)
      CHECK(tables == std::vector<std::string>{"model.layers.0.self_attn.relative_attention_bias.weight"});
    } else {
      CHECK(tables.size() == 3);
    }
  }
}

TEST_CASE("logit soft-cap: c·tanh(z/c) and its gradient (1 − tanh²(z/c))·dy, closed forms in double", "[model]") {
  ModelConfig c;
  c.vocab_size = 13;
  c.d_model = 16;
  c.d_ff = 24;
  c.logit_softcap = 2.5;
  torch::manual_seed(2);
  ModernLM model(c);
  const auto z0 = torch::randn({3, 4, 13}) * 4;
  auto z = z0.clone().requires_grad_();
  const auto y = model->soft_cap(z);
  const auto dy = torch::randn({3, 4, 13});
  y.backward(dy);
  const auto zd = z0.to(torch::kFloat64), t = torch::tanh(zd / 2.5);
  CHECK((y.detach().to(torch::kFloat64) - 2.5 * t).abs().max().item<double>() < 1e-5);
  CHECK((z.grad().to(torch::kFloat64) - dy.to(torch::kFloat64) * (1 - t * t)).abs().max().item<double>() < 1e-5);
  torch::NoGradGuard no_grad;  // the in-place path: the same values
  CHECK(torch::equal(model->soft_cap(z0.clone()), y.detach()));
  CHECK(y.abs().max().item<float>() < 2.5f);
  // NaN and ±inf logits: NaN stays NaN (a diverged run must not look finite), ±inf caps to ±c
  // (5 times over: the kernels' vector lanes and their scalar tail)
  const auto odd = torch::tensor({std::nanf(""), INFINITY, -INFINITY, 0.0f}).repeat({5});
  const auto capped = model->soft_cap(odd.clone());
  for (int64_t i = 0; i < 20; i += 4) {
    CHECK(std::isnan(capped[i].item<float>()));
    CHECK(capped[i + 1].item<float>() == Approx(2.5));
    CHECK(capped[i + 2].item<float>() == Approx(-2.5));
    CHECK(capped[i + 3].item<float>() == 0.0f);
  }
}

TEST_CASE("QK-norm as one fused op: the LibTorch path's output and gradients (q, k, v, both gains), within 1e-5 relative",
          "[model]") {
  for (const std::string norm : {"rmsnorm", "layernorm"}) {
    INFO(norm);
    ModelConfig c;
    c.vocab_size = 11;
    c.d_model = 32;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.d_ff = 24;
    c.norm = norm;
    c.qk_norm = true;
    c.position = "rope";
    auto grads = [&](bool fused) {
      FusedKernelsScope scope(fused);
      torch::manual_seed(4);
      ModernLM model(c);
      for (auto& p : model->named_parameters())
        if (p.key().find("_norm.") != std::string::npos) p.value().data().normal_(1.0, 0.3);  // gains and shifts away from 1, 0
      const auto tokens = torch::randint(0, 11, {3, 9}, torch::kLong);
      const auto logits = model->forward(tokens);
      (logits * torch::linspace(-1, 1, logits.numel()).view_as(logits)).sum().backward();
      std::vector<torch::Tensor> out = {logits.detach()};
      for (const auto& p : model->named_parameters()) out.push_back(p.value().grad().clone());
      return out;
    };
    const auto a = grads(true), b = grads(false);
    REQUIRE(a.size() == b.size());
    // Both paths differ in more than QK-norm (the fused attention kernel against LibTorch's ops):
    // 1e-5 relative to the tensor's largest value.
    for (size_t i = 0; i < a.size(); ++i) {
      const double scale = std::max(1.0, b[i].abs().max().item<double>());
      INFO("tensor " << i << ": max |Δ| " << (a[i] - b[i]).abs().max().item<double>() << ", max |value| " << scale);
      CHECK((a[i] - b[i]).abs().max().item<double>() < 1e-5 * scale);
    }
  }
}
