// The fused causal-attention kernel (kernels/fused_attention.h) against the plain LibTorch path:
// outputs and gradients of the autograd Function for MHA / GQA / MQA, with and without RoPE
// (both layouts), odd lengths; whole models (logits and every parameter gradient) with the
// kernels on and off (the fused RMSNorm, residual + RMSNorm and SwiGLU included, pre- and
// post-norm); sliding windows and soft-caps on the scores, padded and padding-free; KV-cached
// decoding through the kernel ≡ the full forward.
#include "catch.h"
#include "experiments/probe.h"

#include <chrono>
#include <cmath>

#include "kernels/fused_attention.h"
#include "model/attention/attention.h"
#include "model/lm.h"
#include "model/loss.h"
#include "model/norm.h"
#include "model/position/rope.h"
#include "util/op_timer.h"

using namespace lmx;
using lmx::experiments::max_abs;

namespace {

// The plain path on packed qkv (B, T, H + 2Hk, D): RoPE ops, repeat_interleave, masked softmax.
torch::Tensor plain(const torch::Tensor& qkv, int64_t H, int64_t Hk, RoPEImpl* rope, const AttnLimits& limits = {}) {
  const int64_t D = qkv.size(3);
  auto q = qkv.narrow(2, 0, H).transpose(1, 2), k = qkv.narrow(2, H, Hk).transpose(1, 2);
  auto v = qkv.narrow(2, H + Hk, Hk).transpose(1, 2);
  if (rope) q = rope->rotate(q, 0), k = rope->rotate(k, 0);
  if (Hk != H) k = k.repeat_interleave(H / Hk, 1), v = v.repeat_interleave(H / Hk, 1);
  return causal_attention(q, k, v, {}, 1.0 / std::sqrt(double(D)), 0, limits.window, limits.softcap)
      .transpose(1, 2);  // (B, T, H, D)
}

ModelConfig model_config(const std::string& position, int64_t kv_heads, bool bias) {
  ModelConfig c;
  c.vocab_size = 29;
  c.d_model = 64;
  c.n_layers = 2;
  c.n_heads = 4;  // head dim 16: the kernel's case
  c.n_kv_heads = kv_heads;
  c.d_ff = 96;
  c.max_seq_len = 128;
  c.position = position;
  c.bias = bias;
  c.init_std = 0.2;
  return c;
}

}  // namespace

TEST_CASE("fused attention: outputs and gradients match the plain path", "[model][attention][fused]") {
  struct Case {
    int64_t T, H, Hk, D;
    std::string rope;  // "", "half", "interleaved"
  };
  // Head dim 16 runs the lanes kernels (blocks of 16 queries): lengths on, below and past a
  // block boundary, MQA's group of 4 over a partial last block.
  const std::vector<Case> cases = {{1, 4, 4, 16, ""},          {7, 4, 4, 16, "half"},  {64, 4, 2, 16, "half"},
                                   {67, 4, 1, 8, "interleaved"}, {33, 2, 2, 32, ""},     {64, 4, 4, 16, ""},
                                   {20, 8, 2, 24, "half"},       {37, 4, 1, 16, "interleaved"},
                                   {17, 4, 2, 16, ""},           {48, 2, 1, 16, "half"}};
  for (const auto& cs : cases) {
    DYNAMIC_SECTION("T=" << cs.T << " H=" << cs.H << " Hk=" << cs.Hk << " D=" << cs.D << " rope=" << cs.rope) {
      torch::manual_seed(cs.T * 131 + cs.D);
      std::shared_ptr<RoPEImpl> rope;
      torch::Tensor cos, sin;
      if (!cs.rope.empty()) {
        RopeOptions o;
        o.dim = cs.D;
        o.interleaved = cs.rope == "interleaved";
        rope = std::make_shared<RoPEImpl>(o);
        std::tie(cos, sin) = rope->tables(cs.T, torch::kCPU);
      }
      auto qkv = torch::randn({3, cs.T, cs.H + 2 * cs.Hk, cs.D}, torch::requires_grad());
      auto upstream = torch::randn({3, cs.T, cs.H, cs.D});
      auto y_ref = plain(qkv, cs.H, cs.Hk, rope.get());
      auto g_ref = torch::autograd::grad({y_ref}, {qkv}, {upstream})[0];
      auto y = fused_causal_attention(qkv, cs.H, cs.Hk, 1.0 / std::sqrt(double(cs.D)), cos, sin,
                                      cs.rope == "interleaved");
      auto g = torch::autograd::grad({y}, {qkv}, {upstream})[0];
      CHECK(max_abs(y, y_ref) < 1e-5);
      CHECK(max_abs(g, g_ref) < 1e-5);
      {
        torch::NoGradGuard no_grad;  // the inference path (no probabilities kept)
        auto y_inf = fused_causal_attention(qkv, cs.H, cs.Hk, 1.0 / std::sqrt(double(cs.D)), cos, sin,
                                            cs.rope == "interleaved");
        CHECK(max_abs(y_inf, y_ref) < 1e-5);
      }
    }
  }
}

TEST_CASE("fused attention: a sliding window and a soft-cap match the plain path, padded and padding-free",
          "[model][attention][fused]") {
  struct Case {
    int64_t T, H, Hk, D, window;
    double softcap;
  };
  // Head dim 16 (the lanes kernels) and 32 / 8 (the row kernels); windows of 1 (itself only),
  // inside and past a 16-query block, and as long as the sequence; caps that bend the scores.
  const std::vector<Case> cases = {{64, 4, 2, 16, 8, 0},  {37, 4, 1, 16, 1, 0},  {50, 4, 4, 16, 0, 1.5},
                                   {67, 4, 2, 16, 20, 2}, {33, 2, 2, 32, 5, 0},  {29, 4, 1, 8, 0, 1},
                                   {40, 2, 1, 32, 7, 2.5}, {48, 2, 1, 16, 48, 0}};
  for (const auto& cs : cases) {
    DYNAMIC_SECTION("T=" << cs.T << " H=" << cs.H << " Hk=" << cs.Hk << " D=" << cs.D << " window=" << cs.window
                         << " softcap=" << cs.softcap) {
      torch::manual_seed(cs.T * 7 + cs.D);
      RopeOptions o;
      o.dim = cs.D;
      auto rope = std::make_shared<RoPEImpl>(o);
      auto [cos, sin] = rope->tables(cs.T, torch::kCPU);
      const AttnLimits limits{cs.window, cs.softcap};
      // Scores of a few units, so that a cap of 1.5-2.5 bends them.
      auto qkv = (2 * torch::randn({3, cs.T, cs.H + 2 * cs.Hk, cs.D})).requires_grad_();
      auto upstream = torch::randn({3, cs.T, cs.H, cs.D});
      auto y_ref = plain(qkv, cs.H, cs.Hk, rope.get(), limits);
      auto g_ref = torch::autograd::grad({y_ref}, {qkv}, {upstream})[0];
      const double scale = 1.0 / std::sqrt(double(cs.D));
      auto y = fused_causal_attention(qkv, cs.H, cs.Hk, scale, cos, sin, false, {}, limits);
      auto g = torch::autograd::grad({y}, {qkv}, {upstream})[0];
      CHECK(max_abs(y, y_ref) < 1e-5);
      // Relative to the largest gradient (a few units here, from the doubled inputs)
      CHECK(max_abs(g, g_ref) / std::max(1.0, g_ref.abs().max().item<double>()) < 1e-5);
      // The limits matter here: without them the output moves (a window as long as the sequence
      // and no cap: it does not).
      const double unlimited = max_abs(fused_causal_attention(qkv, cs.H, cs.Hk, scale, cos, sin, false), y_ref);
      if (cs.window >= cs.T && cs.softcap == 0)
        CHECK(unlimited < 1e-5);
      else
        CHECK(unlimited > 1e-3);
      // Padding-free: the three sequences end to end, each attending within itself.
      auto packed = qkv.reshape({1, 3 * cs.T, cs.H + 2 * cs.Hk, cs.D});
      auto y_packed = fused_causal_attention(packed, cs.H, cs.Hk, scale, cos, sin, false, {cs.T, cs.T, cs.T}, limits);
      CHECK(max_abs(y_packed.reshape(y_ref.sizes()), y_ref) < 1e-5);
      {
        torch::NoGradGuard no_grad;
        CHECK(max_abs(fused_causal_attention(qkv, cs.H, cs.Hk, scale, cos, sin, false, {}, limits), y_ref) < 1e-5);
      }
    }
  }
}

TEST_CASE("fused attention: whole-model logits and parameter gradients equal the plain path",
          "[model][attention][fused]") {
  for (auto [position, kv_heads, bias, norm] :
       {std::tuple{"sinusoidal", 4, true, "layernorm"}, std::tuple{"rope", 2, false, "rmsnorm"},
        std::tuple{"none", 1, true, "rmsnorm"}, std::tuple{"rope", 2, false, "rmsnorm post"},
        std::tuple{"rope", 2, false, "rmsnorm window"}, std::tuple{"none", 4, false, "rmsnorm softcap"}}) {
    DYNAMIC_SECTION(position << " Hk=" << kv_heads << " " << norm) {
      ModelConfig c = model_config(position, kv_heads, bias);
      c.norm = "rmsnorm";  // rmsnorm: the fused RMSNorm and residual + RMSNorm too
      if (std::string(norm) == "layernorm") c.norm = norm;
      if (std::string(norm) == "rmsnorm post") c.norm_placement = NormPlacement::Post;
      if (std::string(norm) == "rmsnorm window") c.sliding_window = 9, c.window_global_every = 2;
      if (std::string(norm) == "rmsnorm softcap") c.attn_softcap = 1.0;
      if (c.norm == "rmsnorm") c.ffn = "swiglu", c.d_ff = 100;  // the fused SwiGLU, a width with a tail
      torch::manual_seed(3);
      ModernLM model(c);
      torch::manual_seed(4);
      auto tokens = torch::randint(c.vocab_size, {4, 50}, torch::kInt64);
      auto run = [&](bool fused) {
        FusedKernelsScope sw(fused);
        model->zero_grad();
        auto logits = model->forward(tokens);
        logits.pow(2).mean().backward();
        std::vector<torch::Tensor> grads;
        for (auto& p : model->parameters()) grads.push_back(p.grad().clone());
        return std::pair{logits.detach(), grads};
      };
      auto [l_plain, g_plain] = run(false);
      auto [l_fused, g_fused] = run(true);
      // Relative to the largest logit (4-7 here; the differences are float32 rounding, ~1e-5).
      CHECK(max_abs(l_fused, l_plain) / std::max(1.0, l_plain.abs().max().item<double>()) < 1e-5);
      for (size_t i = 0; i < g_plain.size(); ++i) {
        const double scale = std::max(1.0, g_plain[i].abs().max().item<double>());
        CHECK(max_abs(g_fused[i], g_plain[i]) / scale < 1e-5);
      }
    }
  }
}

TEST_CASE("op_timer: each fused op's forward and backward time lands in its own kind, inside the step",
          "[model][fused][op_timer]") {
  using op_timer::Kind;
  const Kind all[] = {Kind::Linear, Kind::Attention, Kind::Activation, Kind::Norm, Kind::Loss};
  for (const bool llama : {true, false}) {
    DYNAMIC_SECTION((llama ? "rope, GQA, RMSNorm, SwiGLU" : "sinusoidal, MHA, LayerNorm, ReLU")) {
      ModelConfig c = model_config(llama ? "rope" : "sinusoidal", llama ? 2 : 4, !llama);
      c.norm = llama ? "rmsnorm" : "layernorm";
      c.ffn = llama ? "swiglu" : "relu";
      torch::manual_seed(3);
      ModernLM model(c);
      auto tokens = torch::randint(c.vocab_size, {4, 33}, torch::kInt64);
      // One forward + backward with the timer on; returns its wall time in ms.
      auto step = [&](bool timed) {
        op_timer::reset();
        op_timer::set_enabled(timed);
        const auto t0 = std::chrono::steady_clock::now();
        model->zero_grad();
        auto logits = model->forward(tokens.slice(1, 0, 32));
        lm_cross_entropy(logits.reshape({-1, c.vocab_size}), tokens.slice(1, 1, 33).reshape({-1}), -100, false)
            .backward();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        op_timer::set_enabled(false);
        return ms;
      };
      {
        FusedKernelsScope sw(true);
        const double ms = step(true);
        double sum = 0;
        for (Kind k : all) sum += op_timer::total_ms(k);
        CHECK(op_timer::total_ms(Kind::Linear) > 0);
        CHECK(op_timer::total_ms(Kind::Attention) > 0);
        CHECK(op_timer::total_ms(Kind::Norm) > 0);
        CHECK(op_timer::total_ms(Kind::Loss) > 0);
        CHECK(op_timer::total_ms(Kind::Activation) > 0);  // SwiGLU, or ReLU
        CHECK(sum <= ms);  // the kinds do not nest: their sum is part of the step
        step(false);  // off: nothing counted
        for (Kind k : all) CHECK(op_timer::total_ms(k) == 0);
      }
      FusedKernelsScope off(false);  // the plain path: none of lmx's Functions runs
      step(true);
      for (Kind k : all) CHECK(op_timer::total_ms(k) == 0);
    }
  }
}

TEST_CASE("fused attention: KV-cached decoding equals the full forward", "[model][attention][fused]") {
  FusedKernelsScope sw(true);
  // With a window the cache keeps the last W − 1 keys: ALiBi and T5 (the plain path, their score
  // bias over the trimmed keys) as well as the kernel.
  for (std::string position : {"rope", "sinusoidal", "rope window", "rope softcap", "alibi window", "t5_bias window"}) {
    DYNAMIC_SECTION(position) {
      ModelConfig c = model_config(position.substr(0, position.find(' ')), 2, false);
      if (position.find("window") != std::string::npos) c.sliding_window = 7, c.window_global_every = 2;  // layer 1 global
      if (position == "rope softcap") c.attn_softcap = 1.0;
      torch::manual_seed(8);
      ModernLM model(c);
      model->eval();
      torch::NoGradGuard no_grad;
      auto tokens = torch::randint(c.vocab_size, {2, 40}, torch::kInt64);
      auto full = model->forward(tokens);
      KVCache cache;
      std::vector<torch::Tensor> steps{model->forward(tokens.slice(1, 0, 5), &cache)};
      for (int64_t t = 5; t < 40; ++t) steps.push_back(model->forward(tokens.slice(1, t, t + 1), &cache));
      CHECK(max_abs(torch::cat(steps, 1), full) < 1e-5);
      if (c.sliding_window > 0) {  // layer 0 trimmed to the window, layer 1 (global) whole
        CHECK(cache.layers[0][0].size(2) == c.sliding_window);
        CHECK(cache.layers[1][0].size(2) == 40);
      }
    }
  }
}

TEST_CASE("fused norms and residual + norm: the plain ops' values and gradients", "[model][norm][fused]") {
  torch::manual_seed(11);
  auto x0 = torch::randn({3, 7, 20}), a0 = torch::randn({3, 7, 20});  // 20: two vectors of 8 and a tail
  auto ch = torch::randn({3, 7, 20}), cy = torch::randn({3, 7, 20});  // a loss that weighs both outputs
  auto w0 = torch::rand({20}) + 0.5, b0 = torch::randn({20});
  for (std::string kind : {"layernorm", "rmsnorm"}) {
    for (int mode : {0, 1, 2}) {  // 0: N(x); 1: add_forward, both outputs used; 2: only N(x + a) used
      DYNAMIC_SECTION(kind << " mode " << mode) {
        std::shared_ptr<Norm> norm;
        if (kind == "layernorm") {
          LayerNorm ln(20, 1e-5);
          ln->bias.data().copy_(b0);
          norm = ln.ptr();
        } else {
          norm = RMSNorm(20, 1e-5).ptr();
        }
        norm->named_parameters()["weight"].data().copy_(w0);
        // The outputs and the gradients of x, a and every parameter, fused kernels on or off
        // (off: LibTorch's layer_norm, or pow / mean / rsqrt / mul, and autograd's add).
        auto run = [&](bool fused) {
          FusedKernelsScope sw(fused);
          auto x = x0.clone().requires_grad_(), a = a0.clone().requires_grad_();
          norm->zero_grad();
          auto [h, y] = mode == 0 ? std::pair{x, norm->forward(x)} : norm->add_forward(x, a);
          auto loss = (y * cy).sum();
          if (mode == 1) loss = loss + (h * ch).sum();
          loss.backward();
          std::vector<torch::Tensor> out{h.detach(), y.detach(), x.grad()};
          if (mode > 0) out.push_back(a.grad());
          for (auto& p : norm->parameters()) out.push_back(p.grad().clone());
          return out;
        };
        auto fused = run(true), plain = run(false);
        REQUIRE(fused.size() == plain.size());
        for (size_t i = 0; i < fused.size(); ++i) {
          INFO("output " << i << " (h, y, dx, [da,] dw, [db])");
          CHECK(max_abs(fused[i], plain[i]) < 1e-5);
        }
      }
    }
  }
}
