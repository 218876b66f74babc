// Attention: GQA's head mapping, incremental decoding ≡ full forward for every attention ×
// position combination, MLA absorbed ≡ naive, and the cache sizes.
#include "catch.h"
#include "experiments/probe.h"

#include <cmath>

#include "config/registry.h"
#include "model/attention/attention.h"
#include "model/lm.h"
#include "model/registry.h"

using namespace lmx;
using lmx::experiments::max_abs;

namespace {

ModelConfig small_attention(const std::string& attention, const std::string& position) {
  ModelConfig c;
  c.vocab_size = 23;
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 4;
  c.d_ff = 32;
  c.max_seq_len = 32;
  c.attention = attention;
  c.position = position;
  c.mla_kv_rank = 8;
  c.mla_rope_dim = position == "rope" ? 4 : 0;
  c.init_std = 0.3;  // large weights: attention patterns far from uniform
  return c;
}

torch::Tensor tokens(int64_t B, int64_t T, int64_t V) {
  torch::manual_seed(99);
  return torch::randint(V, {B, T}, torch::kInt64);
}

}  // namespace

TEST_CASE("MHA against a per-head reference — GQA head h reads KV head h / (H/Hk)", "[model][attention]") {
  torch::manual_seed(5);
  torch::NoGradGuard no_grad;
  ModelConfig c = small_attention("mha", "none");
  c.n_kv_heads = 2;
  MultiHeadAttention gqa(attention_options(c), make_position(c));
  auto x = torch::randn({2, 6, 16});
  auto got = gqa->forward(x, 0, nullptr);
  // Reference: explicit loops over heads with the group mapping written out.
  const int64_t H = 4, Hk = 2, D = 4, T = 6;
  auto q = torch::linear(x, gqa->q_proj->weight, gqa->q_proj->bias);
  auto k = torch::linear(x, gqa->k_proj->weight, gqa->k_proj->bias);
  auto v = torch::linear(x, gqa->v_proj->weight, gqa->v_proj->bias);
  std::vector<torch::Tensor> heads;
  for (int64_t h = 0; h < H; ++h) {
    const int64_t g = h / (H / Hk);
    auto qh = q.slice(-1, h * D, (h + 1) * D), kh = k.slice(-1, g * D, (g + 1) * D), vh = v.slice(-1, g * D, (g + 1) * D);
    auto s = qh.matmul(kh.transpose(1, 2)) / std::sqrt(double(D));  // (B, T, T)
    s = s.masked_fill(torch::ones({T, T}, torch::kBool).triu(1), -INFINITY);
    heads.push_back(torch::softmax(s, -1).matmul(vh));
  }
  auto ref = torch::linear(torch::cat(heads, -1), gqa->o_proj->weight, gqa->o_proj->bias);
  CHECK(max_abs(got, ref) < 1e-5);

  SECTION("an MHA whose KV heads copy the GQA groups gives the same output") {
    ModelConfig m = c;
    m.n_kv_heads = 0;
    MultiHeadAttention mha(attention_options(m), make_position(m));
    mha->q_proj->weight.copy_(gqa->q_proj->weight);
    mha->q_proj->bias.copy_(gqa->q_proj->bias);
    mha->o_proj->weight.copy_(gqa->o_proj->weight);
    mha->o_proj->bias.copy_(gqa->o_proj->bias);
    for (auto [dst, src] : {std::pair{mha->k_proj, gqa->k_proj}, std::pair{mha->v_proj, gqa->v_proj}}) {
      dst->weight.copy_(src->weight.view({Hk, D, 16}).repeat_interleave(H / Hk, 0).reshape({H * D, 16}));
      dst->bias.copy_(src->bias.view({Hk, D}).repeat_interleave(H / Hk, 0).reshape({H * D}));
    }
    CHECK(max_abs(mha->forward(x, 0, nullptr), got) < 1e-5);
  }
}

TEST_CASE("incremental decoding equals the full forward for every attention × position", "[model][kvcache]") {
  torch::NoGradGuard no_grad;
  struct Variant {
    std::string name, attention;
    int n_kv_heads, q_rank;
    bool absorb;
  };
  const std::vector<Variant> variants = {{"mha", "mha", 0, 0, false}, {"gqa", "mha", 2, 0, false},
                                         {"mqa", "mha", 1, 0, false}, {"mla", "mla", 0, 0, false},
                                         {"mla absorbed", "mla", 0, 0, true}, {"mla q-latent", "mla", 0, 6, true}};
  struct Pos {
    std::string position, layout, scaling;
  };
  std::vector<Pos> positions;
  for (const auto& p : registry::names(registry::Kind::Position)) positions.push_back({p, "half", "none"});
  positions.push_back({"rope", "interleaved", "none"});
  positions.push_back({"rope", "half", "yarn"});
  positions.push_back({"rope", "interleaved", "ntk"});
  auto x = tokens(2, 12, 23);
  for (const auto& v : variants)
    for (const auto& p : positions) {
      ModelConfig c = small_attention(v.attention, p.position);
      c.n_kv_heads = v.n_kv_heads;
      c.mla_q_rank = v.q_rank;
      c.mla_absorb = v.absorb;
      c.rope_layout = parse_option<RopeLayout>(p.layout);
      c.rope_scaling = parse_option<RopeScaling>(p.scaling);
      c.rope_factor = p.scaling == "none" ? 1.0 : 2.0;
      DYNAMIC_SECTION(v.name << " × " << p.position << " " << p.layout << " " << p.scaling) {
        torch::manual_seed(6);
        ModernLM model(c);
        auto full = model->forward(x);  // (B, T, V)
        KVCache cache;
        std::vector<torch::Tensor> parts = {model->forward(x.slice(1, 0, 5), &cache)};   // prompt of 5
        for (int64_t t = 5; t < 9; ++t) parts.push_back(model->forward(x.slice(1, t, t + 1), &cache));
        parts.push_back(model->forward(x.slice(1, 9, 12), &cache));                       // a chunk of 3
        CHECK(cache.length == 12);
        CHECK(full.abs().max().item<double>() > 0.1);  // not a degenerate model
        CHECK(max_abs(torch::cat(parts, 1), full) < 1e-5);
        const int64_t per_token = model->attention(0)->cached_per_token();
        CHECK(cache.numel() == c.n_layers * 2 * 12 * per_token);
      }
    }
}

TEST_CASE("cached numbers per token: 2·Hk·D for MHA/GQA/MQA, r + R for MLA", "[model][kvcache]") {
  for (int hk : {4, 2, 1}) {
    ModelConfig c = small_attention("mha", "rope");
    c.n_kv_heads = hk;
    CHECK(ModernLM(c)->attention(0)->cached_per_token() == 2 * hk * 4);
  }
  ModelConfig m = small_attention("mla", "rope");
  CHECK(ModernLM(m)->attention(1)->cached_per_token() == 8 + 4);
}

TEST_CASE("MLA: absorbed path equals the naive path — RoPE on recovered keys breaks absorption", "[model][mla]") {
  torch::NoGradGuard no_grad;
  for (bool with_bias : {false, true})
    for (int q_rank : {0, 6}) {
      ModelConfig c = small_attention("mla", "rope");
      c.bias = with_bias;
      c.mla_q_rank = q_rank;
      torch::manual_seed(7);
      ModernLM model(c);
      if (with_bias)  // biases start at 0: make them count
        for (auto& p : model->named_parameters())
          if (p.key().find(".bias") != std::string::npos) p.value().normal_(0, 0.3);
      auto mla = std::dynamic_pointer_cast<MultiHeadLatentAttentionImpl>(model->attention(0));
      REQUIRE(mla);
      auto x = torch::randn({2, 10, 16});
      auto naive = mla->scores(x, /*absorbed=*/false), absorbed = mla->scores(x, /*absorbed=*/true);
      INFO("bias " << with_bias << " q_rank " << q_rank);
      CHECK(max_abs(naive, absorbed) < 1e-5);
      CHECK(naive.abs().max().item<double>() > 0.1);
      auto t = tokens(2, 10, 23);
      auto logits_naive = model->forward(t);
      for (int64_t l = 0; l < model->n_layers(); ++l)
        std::dynamic_pointer_cast<MultiHeadLatentAttentionImpl>(model->attention(l))->absorb = true;
      CHECK(max_abs(model->forward(t), logits_naive) < 1e-5);
      auto [exact, wrong] = mla->rope_on_keys_scores(x);
      CHECK(max_abs(exact, wrong) > 0.1);
    }
}
