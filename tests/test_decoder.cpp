// The inference engine (infer/decoder.h): its logits against the module path's with a KVCache,
// bit for bit, for every variant it runs; greedy continuations identical; the cases it leaves
// to the modules named.
#include "catch.h"

#include <cstring>

#include "infer/decoder.h"
#include "kernels/fused_attention.h"
#include "model/lm.h"
#include "step_check.h"

using namespace lmx;

namespace {

ModelConfig engine_model() {
  ModelConfig c;
  c.vocab_size = 29;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;  // head dim 8: the fused kernel's smallest
  c.d_ff = 48;
  c.max_seq_len = 40;
  c.init_std = 0.3;  // large weights: attention patterns far from uniform, logits far apart
  return c;
}

// The module path: prompt then one token at a time through ModernLM::forward with a KVCache;
// each step's logits (V). The engine: prefill then step. Both teacher-forced on `tokens`.
std::vector<torch::Tensor> module_logits(ModernLM& model, const std::vector<int64_t>& tokens, int64_t prompt) {
  torch::NoGradGuard no_grad;
  KVCache cache;
  std::vector<torch::Tensor> out;
  auto all = torch::tensor(tokens, torch::kInt64).unsqueeze(0);
  out.push_back(model->forward(all.slice(1, 0, prompt), &cache).select(1, -1).squeeze(0).clone());
  for (size_t t = prompt; t < tokens.size(); ++t)
    out.push_back(model->forward(all.slice(1, t, t + 1), &cache).select(1, -1).squeeze(0).clone());
  return out;
}
std::vector<torch::Tensor> engine_logits(ModernLM& model, const std::vector<int64_t>& tokens, int64_t prompt) {
  infer::Decoder engine(model, static_cast<int64_t>(tokens.size()));
  const int64_t V = engine.vocab();
  auto copy = [V](const float* p) { return torch::from_blob(const_cast<float*>(p), {V}, torch::kFloat32).clone(); };
  std::vector<torch::Tensor> out;
  out.push_back(copy(engine.prefill(std::vector<int64_t>(tokens.begin(), tokens.begin() + prompt))));
  for (size_t t = prompt; t < tokens.size(); ++t) out.push_back(copy(engine.step(tokens[t])));
  CHECK(engine.length() == static_cast<int64_t>(tokens.size()));
  return out;
}

std::vector<int64_t> random_tokens(int64_t n, int64_t V) {
  torch::manual_seed(7);
  auto t = torch::randint(V, {n}, torch::kInt64);
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + n);
}

}  // namespace

TEST_CASE("the inference engine's logits are the module path's, bit for bit, for every variant it runs",
          "[infer]") {
  struct Variant {
    std::string name;
    void (*set)(ModelConfig&);
  };
  const std::vector<Variant> variants = {
      {"textbook: pre LayerNorm, sinusoidal, relu, biases", [](ModelConfig&) {}},
      {"llama: RMSNorm, swiglu, rope, GQA 4/2, no bias",
       [](ModelConfig& c) { c.norm = "rmsnorm", c.ffn = "swiglu", c.position = "rope", c.n_kv_heads = 2, c.bias = false; }},
      {"MQA, rope interleaved, geglu, tied", [](ModelConfig& c) {
         c.n_kv_heads = 1, c.position = "rope", c.rope_layout = RopeLayout::Interleaved, c.ffn = "geglu", c.tie_embeddings = true; }},
      {"rope yarn x2, reglu", [](ModelConfig& c) {
         c.position = "rope", c.rope_scaling = RopeScaling::Yarn, c.rope_factor = 2, c.ffn = "reglu"; }},
      {"post-norm LayerNorm, learned positions, gelu", [](ModelConfig& c) {
         c.norm_placement = NormPlacement::Post, c.position = "learned", c.ffn = "gelu"; }},
      {"post-norm RMSNorm, NoPE, silu, sqrt_d embeddings", [](ModelConfig& c) {
         c.norm_placement = NormPlacement::Post, c.norm = "rmsnorm", c.position = "none", c.ffn = "silu", c.embed_scale = EmbedScale::SqrtD; }},
      {"NoPE, swish beta 1.5, head dim 16", [](ModelConfig& c) {
         c.position = "none", c.ffn = "swish", c.swish_beta = 1.5, c.n_heads = 2; }},
      {"gelu_tanh, one layer", [](ModelConfig& c) { c.ffn = "gelu_tanh", c.n_layers = 1; }},
      {"relu2, rope, logits soft-capped at 3", [](ModelConfig& c) {
         c.ffn = "relu2", c.position = "rope", c.logit_softcap = 3.0; }},
      {"QK-norm RMSNorm, rope, GQA 4/2", [](ModelConfig& c) {
         c.qk_norm = true, c.norm = "rmsnorm", c.position = "rope", c.n_kv_heads = 2; }},
      {"QK-norm LayerNorm, post-norm, learned", [](ModelConfig& c) {
         c.qk_norm = true, c.norm_placement = NormPlacement::Post, c.position = "learned"; }},
      // windows shorter than the 30 tokens (the engine's ring of W slots), every 2nd layer global
      {"sliding window 6, every 2nd layer global, rope, GQA 4/2", [](ModelConfig& c) {
         c.sliding_window = 6, c.window_global_every = 2, c.position = "rope", c.n_kv_heads = 2; }},
      {"sliding window 1 and attention soft-cap 1.5, three layers", [](ModelConfig& c) {
         c.sliding_window = 1, c.attn_softcap = 1.5, c.n_layers = 3; }},
      {"sliding window 9 (past a prompt of 5), head dim 16, scores soft-capped at 2", [](ModelConfig& c) {
         c.sliding_window = 9, c.n_heads = 2, c.attn_softcap = 2.0, c.position = "rope"; }},
      {"sliding window 29 of a 30-token context (no ring: the last token's first key masked)", [](ModelConfig& c) {
         c.sliding_window = 29, c.position = "rope"; }},
      {"sandwich RMSNorm (Gemma 2's four norms a block), geglu, rope", [](ModelConfig& c) {
         c.norm_placement = NormPlacement::Sandwich, c.norm = "rmsnorm", c.ffn = "geglu", c.position = "rope"; }},
      {"sandwich LayerNorm, window 4 every 2nd layer, logits capped at 5", [](ModelConfig& c) {
         c.norm_placement = NormPlacement::Sandwich, c.sliding_window = 4, c.window_global_every = 2,
         c.logit_softcap = 5.0; }},
  };
  const auto tokens = random_tokens(30, 29);
  for (const auto& v : variants) {
    DYNAMIC_SECTION(v.name) {
      ModelConfig c = engine_model();
      v.set(c);
      torch::manual_seed(11);
      ModernLM model(c);
      model->eval();
      REQUIRE(infer::Decoder::unsupported(model).empty());
      for (int64_t prompt : {1, 5}) {
        const auto want = module_logits(model, tokens, prompt);
        const auto got = engine_logits(model, tokens, prompt);
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          INFO("prompt " << prompt << ", step " << i << ": max |Δ| " << (got[i] - want[i]).abs().max().item<float>());
          CHECK(torch::equal(got[i], want[i]));
        }
        CHECK(want.back().abs().max().item<float>() > 0.1f);  // not a degenerate model
      }
    }
  }
}

TEST_CASE("the engine restarts on prefill and guards its context", "[infer]") {
  ModelConfig c = engine_model();
  c.position = "rope";
  torch::manual_seed(3);
  ModernLM model(c);
  model->eval();
  const auto tokens = random_tokens(8, 29);
  infer::Decoder engine(model, 8);
  const int64_t V = engine.vocab();
  std::vector<float> first(engine.prefill({tokens[0], tokens[1]}), engine.prefill({tokens[0], tokens[1]}) + V);
  for (int i = 2; i < 8; ++i) engine.step(tokens[i]);
  CHECK_THROWS_AS(engine.step(tokens[0]), std::logic_error);  // the context of 8 is full
  CHECK_THROWS_AS(engine.prefill(std::vector<int64_t>(9, 1)), std::logic_error);
  // A second prefill starts over: the same logits as the first.
  const float* again = engine.prefill({tokens[0], tokens[1]});
  CHECK(std::memcmp(first.data(), again, V * sizeof(float)) == 0);
  CHECK(engine.length() == 2);
  CHECK_THROWS_AS(engine.step(V), std::logic_error);  // outside the vocabulary
}

TEST_CASE("the engine says why it leaves a model to the modules", "[infer]") {
  auto why = [](void (*set)(ModelConfig&)) {
    ModelConfig c = engine_model();
    set(c);
    ModernLM model(c);
    return infer::Decoder::unsupported(model);
  };
  CHECK_THAT(why([](ModelConfig& c) { c.attention = "mla"; }), Catch::Contains("attention is 'mla'"));
  CHECK_THAT(why([](ModelConfig& c) { c.position = "alibi"; }), Catch::Contains("position 'alibi' is not one the engine runs"));
  CHECK_THAT(why([](ModelConfig& c) { c.position = "t5_bias"; }), Catch::Contains("position 't5_bias'"));
  CHECK_THAT(why([](ModelConfig& c) { c.n_heads = 8; }), Catch::Contains("head dim 4"));
  CHECK_THAT(why([](ModelConfig& c) { c.ffn = "moe"; }), Catch::Contains("FFN 'moe' is not one the engine runs"));
  {
    FusedKernelsScope off(false);
    CHECK_THAT(why([](ModelConfig&) {}), Catch::Contains("LMX_FUSED_ATTENTION=0"));
    ModelConfig c = engine_model();
    ModernLM model(c);
    CHECK_THROWS_AS(infer::Decoder(model, 4), std::logic_error);
  }
}

TEST_CASE("infer::argmax is torch::argmax: the first on ties, NaN the largest", "[infer]") {
  const std::vector<std::vector<float>> rows = {
      {1, 3, 2, 3}, {-1, -2, -0.5f}, {0, NAN, 5, NAN}, {NAN, 1}, {4}, {-INFINITY, -INFINITY}, {2, INFINITY, 1}};
  for (const auto& r : rows) {
    auto t = torch::tensor(r);
    CHECK(infer::argmax(r.data(), static_cast<int64_t>(r.size())) == t.argmax().item<int64_t>());
  }
}

TEST_CASE("the engine's logits are the same bits at 1 and 2 threads, and the module path's at 2", "[infer]") {
  // d 128, relu d_ff 512: up (512 × 128) and down hold 2^16 floats each, the size from which the
  // engine's one-row GEMMs take all threads; qkv (384 × 128), out and the head stay on the
  // calling thread: both kinds of layer.
  ModelConfig c = engine_model();
  c.d_model = 128;
  c.d_ff = 512;
  c.init_std = 0.1;
  torch::manual_seed(5);
  ModernLM model(c);
  model->eval();
  const auto tokens = random_tokens(20, 29);
  std::vector<torch::Tensor> one, two, modules_two;
  {
    test::ThreadsScope t(1);
    one = engine_logits(model, tokens, 3);
  }
  {
    test::ThreadsScope t(2);
    two = engine_logits(model, tokens, 3);
    modules_two = module_logits(model, tokens, 3);
  }
  REQUIRE(one.size() == two.size());
  REQUIRE(one.size() == modules_two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("step " << i);
    CHECK(torch::equal(one[i], two[i]));
    CHECK(torch::equal(two[i], modules_two[i]));
  }
}
