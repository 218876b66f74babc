// The fused causal-attention kernel (model/fused_attention.h) against the plain LibTorch path:
// outputs and gradients of the autograd Function for MHA / GQA / MQA, with and without RoPE
// (both layouts), odd lengths; whole models (logits and every parameter gradient) with the
// kernels on and off (the fused RMSNorm and SwiGLU included); KV-cached decoding through the kernel ≡ the full forward.
#include "catch.h"
#include "experiments/probe.h"

#include <cmath>

#include "model/attention.h"
#include "model/fused_attention.h"
#include "model/lm.h"
#include "model/position/rope.h"

using namespace lmx;
using lmx::experiments::max_abs;

namespace {

// Restores the fused-attention switch at scope exit.
struct FusedSwitch {
  bool before = fused_attention_enabled();
  explicit FusedSwitch(bool on) { set_fused_attention(on); }
  ~FusedSwitch() { set_fused_attention(before); }
};

// The plain path on packed qkv (B, T, H + 2Hk, D): RoPE ops, repeat_interleave, masked softmax.
torch::Tensor plain(const torch::Tensor& qkv, int64_t H, int64_t Hk, RoPEImpl* rope) {
  const int64_t D = qkv.size(3);
  auto q = qkv.narrow(2, 0, H).transpose(1, 2), k = qkv.narrow(2, H, Hk).transpose(1, 2);
  auto v = qkv.narrow(2, H + Hk, Hk).transpose(1, 2);
  if (rope) q = rope->rotate(q, 0), k = rope->rotate(k, 0);
  if (Hk != H) k = k.repeat_interleave(H / Hk, 1), v = v.repeat_interleave(H / Hk, 1);
  return causal_attention(q, k, v, {}, 1.0 / std::sqrt(double(D)), 0).transpose(1, 2);  // (B, T, H, D)
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
  const std::vector<Case> cases = {{1, 4, 4, 16, ""},          {7, 4, 4, 16, "half"},  {64, 4, 2, 16, "half"},
                                   {67, 4, 1, 8, "interleaved"}, {33, 2, 2, 32, ""},     {64, 4, 4, 16, ""},
                                   {20, 8, 2, 24, "half"}};
  for (const auto& cs : cases) {
    DYNAMIC_SECTION("T=" << cs.T << " H=" << cs.H << " Hk=" << cs.Hk << " D=" << cs.D << " rope=" << cs.rope) {
      torch::manual_seed(cs.T * 131 + cs.D);
      std::shared_ptr<RoPEImpl> rope;
      torch::Tensor cos, sin;
      if (!cs.rope.empty()) {
        ModelConfig c;
        c.rope_layout = cs.rope;
        rope = std::make_shared<RoPEImpl>(c, cs.D);
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

TEST_CASE("fused attention: whole-model logits and parameter gradients equal the plain path",
          "[model][attention][fused]") {
  for (auto [position, kv_heads, bias, norm] :
       {std::tuple{"sinusoidal", 4, true, "layernorm"}, std::tuple{"rope", 2, false, "rmsnorm"},
        std::tuple{"none", 1, true, "rmsnorm"}}) {
    DYNAMIC_SECTION(position << " Hk=" << kv_heads << " " << norm) {
      ModelConfig c = model_config(position, kv_heads, bias);
      c.norm = norm;  // rmsnorm: the fused RMSNorm too
      if (c.norm == "rmsnorm") c.ffn = "swiglu", c.d_ff = 100;  // the fused SwiGLU, a width with a tail
      torch::manual_seed(3);
      ModernLM model(c);
      torch::manual_seed(4);
      auto tokens = torch::randint(c.vocab_size, {4, 50}, torch::kInt64);
      auto run = [&](bool fused) {
        FusedSwitch sw(fused);
        model->zero_grad();
        auto logits = model->forward(tokens);
        logits.pow(2).mean().backward();
        std::vector<torch::Tensor> grads;
        for (auto& p : model->parameters()) grads.push_back(p.grad().clone());
        return std::pair{logits.detach(), grads};
      };
      auto [l_plain, g_plain] = run(false);
      auto [l_fused, g_fused] = run(true);
      CHECK(max_abs(l_fused, l_plain) < 1e-5);
      for (size_t i = 0; i < g_plain.size(); ++i) {
        const double scale = std::max(1.0, g_plain[i].abs().max().item<double>());
        CHECK(max_abs(g_fused[i], g_plain[i]) / scale < 1e-5);
      }
    }
  }
}

TEST_CASE("fused attention: KV-cached decoding equals the full forward", "[model][attention][fused]") {
  FusedSwitch sw(true);
  for (std::string position : {"rope", "sinusoidal"}) {
    DYNAMIC_SECTION(position) {
      ModelConfig c = model_config(position, 2, false);
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
    }
  }
}
