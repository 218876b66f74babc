// Analytic parameter counts (model/sizes.h) against real models: for many small_sizes configs,
// build ModernLM and compare count_params with the numel() of its parameters, in total and
// per component (by parameter name).
#include "catch.h"

#include <map>
#include <set>

#include "config/config.h"
#include "config/registry.h"
#include "model/lm.h"
#include "model/sizes.h"

using namespace lmx;

namespace {

// A small_sizes model: V 13, C 16, 3 layers, 4 heads, d_ff 24, max_seq_len 12.
Config small_sizes(const std::vector<std::string>& sets) {
  Config c;
  for (const auto& s : {"model.vocab_size=13", "model.d_model=16", "model.n_layers=3", "model.n_heads=4",
                        "model.d_ff=24", "model.max_seq_len=12", "data.seq_len=12", "model.mla_kv_rank=6",
                        "model.mla_rope_dim=0"})
    apply_override(c, s);
  for (const auto& s : sets) apply_override(c, s);
  validate(c);
  return c;
}

// Every variant of every component, each changed alone from the small_sizes default, plus
// combinations that interact (MLA × query latent × RoPE × bias, tied × bias, ...).
std::vector<std::vector<std::string>> variants() {
  std::vector<std::vector<std::string>> out = {{}};
  using registry::Kind;  // every registered name, so a new variant is counted too
  for (const auto& ffn : registry::names(Kind::Ffn))
    for (const char* bias : {"true", "false"})
      out.push_back({"model.ffn=" + ffn, std::string("model.bias=") + bias});
  for (const char* ffn : {"relu", "swiglu"})  // d_ff auto, rounded up to a multiple
    out.push_back({std::string("model.ffn=") + ffn, "model.d_ff=auto", "model.d_ff_plain=40", "model.d_ff_multiple=8"});
  for (const auto& norm : registry::names(Kind::Norm))
    for (const auto& place : OptionNames<NormPlacement>::names()) {
      out.push_back({"model.norm=" + norm, "model.norm_placement=" + place});
      out.push_back({"model.norm=" + norm, "model.norm_placement=" + place, "model.qk_norm=true", "model.n_kv_heads=2"});
    }
  for (const char* kv : {"4", "2", "1"})
    for (const char* bias : {"true", "false"})
      out.push_back({std::string("model.n_kv_heads=") + kv, std::string("model.bias=") + bias});
  out.push_back({"model.head_dim=6", "model.n_kv_heads=2"});  // H·D != C
  for (const auto& pos : registry::names(Kind::Position)) out.push_back({"model.position=" + pos});
  for (const auto& attn : registry::names(Kind::Attention)) out.push_back({"model.attention=" + attn});
  out.push_back({"model.position=t5_bias", "model.t5_num_buckets=7", "model.n_kv_heads=2"});
  for (const char* q_rank : {"0", "5"})
    for (const char* bias : {"true", "false"}) {
      std::vector<std::string> mla = {"model.attention=mla", std::string("model.mla_q_rank=") + q_rank,
                                      std::string("model.bias=") + bias};
      out.push_back(mla);  // sinusoidal positions, no RoPE part
      mla.insert(mla.end(), {"model.position=rope", "model.mla_rope_dim=2"});
      out.push_back(mla);
    }
  out.push_back({"model.attention=mla", "model.position=t5_bias", "model.head_dim=5"});
  out.push_back({"model.attention=mla", "model.position=learned", "model.norm=rmsnorm"});
  for (const char* tie : {"true", "false"})
    for (const char* bias : {"true", "false"})
      out.push_back({std::string("model.tie_embeddings=") + tie, std::string("model.bias=") + bias});
  out.push_back({"model.ffn=swiglu", "model.norm=rmsnorm", "model.position=rope", "model.n_kv_heads=2",
                 "model.bias=false", "model.d_ff=auto"});  // the Llama recipe
  return out;
}

// The component a parameter belongs to, from its Hugging Face-style name.
std::string component(const std::string& name) {
  auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  if (has("embed_tokens")) return "embedding";
  if (has("embed_positions") || has("relative_attention_bias")) return "position";
  if (has(".self_attn.")) return "attention";
  if (has(".mlp.")) return "ffn";
  if (has("layernorm")) return "norms";
  if (name.rfind("model.norm.", 0) == 0) return "final_norm";
  if (name.rfind("lm_head.", 0) == 0) return "head";
  return "unknown: " + name;
}

}  // namespace

TEST_CASE("analytic parameter counts equal numel() of real models", "[sizes]") {
  for (const auto& sets : variants()) {
    const Config cfg = small_sizes(sets);
    std::string label;
    for (const auto& s : sets) label += s + " ";
    INFO("config: " << (label.empty() ? "(defaults)" : label));

    ModernLM model(cfg.model);
    std::map<std::string, int64_t> numel;
    std::set<const void*> seen;
    int64_t total = 0;
    for (const auto& item : model->named_parameters()) {
      INFO("parameter " << item.key());
      CHECK(seen.insert(item.value().unsafeGetTensorImpl()).second);  // registered once
      numel[component(item.key())] += item.value().numel();
      total += item.value().numel();
    }

    const ParamCounts p = count_params(cfg.model);
    CHECK(total == p.total());
    CHECK(numel["embedding"] == p.embedding);
    CHECK(numel["position"] == p.position);
    CHECK(numel["attention"] == p.attention_per_layer * p.n_layers);
    CHECK(numel["ffn"] == p.ffn_per_layer * p.n_layers);
    CHECK(numel["norms"] == p.norms_per_layer * p.n_layers);
    CHECK(numel["final_norm"] == p.final_norm);
    CHECK(numel["head"] == p.head);
    CHECK(numel.size() <= 7);  // no parameter outside the known components
  }
}

TEST_CASE("the analytic KV cache equals the numbers a real cache holds", "[sizes]") {
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"model.n_kv_heads=4"}, {"model.n_kv_heads=2"}, {"model.n_kv_heads=1"},
           {"model.attention=mla"},
           {"model.attention=mla", "model.position=rope", "model.mla_rope_dim=2", "model.mla_q_rank=5"}}) {
    const Config cfg = small_sizes(sets);
    INFO("config: " << sets.back());
    ModernLM model(cfg.model);
    torch::NoGradGuard no_grad;
    KVCache cache;
    const int64_t B = 2, T = 5;
    model->forward(torch::randint(cfg.model.vocab_size, {B, T}, torch::kInt64), &cache);
    CHECK(cache.numel() == kv_cache_size(cfg.model).per_token() * B * T);
  }
}
