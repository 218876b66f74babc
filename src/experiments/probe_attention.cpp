// Lecture 03 probes: KV-cache decoding vs full recomputation, MLA's absorbed path and the
// RoPE problem it has, and the KV-cache table of published models (model/sizes.h).
#include <fmt/format.h>
#include "torch_api.h"

#include <algorithm>
#include <filesystem>

#include "config/registry.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "experiments/probe.h"
#include "infer/decoder.h"
#include "model/attention/attention.h"
#include "model/lm.h"
#include "model/sizes.h"
#include "train/trainer.h"
#include "util/error.h"

namespace lmx::experiments {

namespace {

// The same model as MHA: every query head with its own K and V of width head_dim.
int64_t mha_per_token_per_layer(const ModelConfig& m) { return 2LL * m.n_heads * m.dim_head(); }

}  // namespace

ProbeResult probe_kv_decode(const ProbeOptions& opt) {
  Config cfg = load_probe_config(opt.config.empty() ? "configs/textbook.yaml" : opt.config);
  if (opt.config.empty()) cfg.model.position = "rope";
  if (registry::corpus(cfg.data).doc_counts)
    for (int* n : {&cfg.data.train_docs, &cfg.data.val_docs, &cfg.data.test_docs}) *n = std::min(*n, 64);
  validate(cfg);
  if (opt.len < 1 || opt.len > cfg.model.max_seq_len)
    throw InputError(fmt::format("--len {}: must be in 1..model.max_seq_len ({})", opt.len, cfg.model.max_seq_len));
  data::Corpus corpus = data::load_corpus(cfg.data);
  cfg = resolve_for_corpus(cfg, corpus);
  // One sequence: the validation documents packed end to end, its first len tokens.
  auto packed = data::make_rows(corpus.val, data::Layout::Packed, opt.len, corpus.vocab.eos);
  const auto& row = packed.rows.at(0);
  if (static_cast<int>(row.size()) < opt.len)
    throw InputError(fmt::format("the validation split has fewer than {} tokens", opt.len));
  auto tokens = torch::tensor(std::vector<int64_t>(row.begin(), row.begin() + opt.len), torch::kInt64).unsqueeze(0);

  std::vector<int> kv_heads = {cfg.model.kv_heads()};
  if (!registry::attention(cfg.model).latent) {
    const int H = cfg.model.n_heads;
    kv_heads = {H};
    if (H % 2 == 0 && H / 2 > 1) kv_heads.push_back(H / 2);
    if (H > 1) kv_heads.push_back(1);
  }
  torch::NoGradGuard no_grad;
  Table t;
  t.header = {"attention", "n_kv_heads", "max |Δlogits|", "engine max |Δlogits|", "max |logits|", "cached per token per layer",
              "cache numbers (all layers)", "sizes.h", "cache bytes (float32)", "bytes per token (BF16)"};
  for (int k : kv_heads) {
    ModelConfig m = cfg.model;
    if (!registry::attention(m).latent) m.n_kv_heads = k;
    torch::manual_seed(opt.seed);
    ModernLM model(m);
    model->eval();
    auto full = model->forward(tokens);  // (1, T, V) one pass over the whole sequence
    KVCache cache;
    std::vector<torch::Tensor> steps;
    for (int64_t i = 0; i < opt.len; ++i) steps.push_back(model->forward(tokens.slice(1, i, i + 1), &cache));  // (1, 1, V)
    auto incremental = torch::cat(steps, 1);  // (1, T, V)
    // The inference engine (infer/decoder.h) where it runs the model: its logits, token by token.
    std::string engine_delta = "—";
    if (infer::Decoder::unsupported(model).empty()) {
      infer::Decoder engine(model, opt.len);
      const int64_t* tok = tokens.data_ptr<int64_t>();
      const int64_t V = engine.vocab();
      auto row = [V](const float* p) { return torch::from_blob(const_cast<float*>(p), {1, 1, V}, torch::kFloat32).clone(); };
      std::vector<torch::Tensor> rows = {row(engine.prefill({tok[0]}))};
      for (int64_t i = 1; i < opt.len; ++i) rows.push_back(row(engine.step(tok[i])));
      engine_delta = sci(max_abs(full, torch::cat(rows, 1)));
    }
    const KVCacheSize size = kv_cache_size(m);
    int64_t bytes = 0;
    for (const auto& layer : cache.layers)
      for (const auto& c : layer) bytes += c.numel() * c.element_size();
    t.add({attention_kind(m), std::to_string(m.kv_heads()), sci(max_abs(full, incremental)), engine_delta,
           fixed(full.abs().max().item<double>(), 4), std::to_string(model->attention(0)->cached_per_token()),
           std::to_string(cache.numel()), std::to_string(size.per_token_per_layer * size.layer_tokens(opt.len)),
           std::to_string(bytes),
           std::to_string(size.bytes_per_token(kBf16Bytes))});
  }
  ProbeResult res;
  res.tables.push_back({"kv_decode", fmt::format("Decoding {} tokens with the KV cache vs full recomputation", opt.len), t});
  res.notes.push_back(fmt::format("{}: position {}, {} layers, {} heads × {}, seed {}", cfg.name, cfg.model.position,
                                  cfg.model.n_layers, cfg.model.n_heads, cfg.model.dim_head(), opt.seed));
  return res;
}

namespace {

// Layer 0's attention of an MLA model.
std::shared_ptr<MultiHeadLatentAttentionImpl> mla_layer0(ModernLM& model) {
  auto a = std::dynamic_pointer_cast<MultiHeadLatentAttentionImpl>(model->attention(0));
  if (!a) throw RuntimeError("mla probe: layer 0 is not multi-head latent attention");
  return a;
}

// Cached numbers per token per layer: the probe model as MLA, MHA, GQA and MQA, and
// DeepSeek-V2 as MLA and as MHA.
Table mla_cache_table(const ModelConfig& m) {
  Table c;
  c.header = {"model", "attention", "cached per token per layer", "what", "vs MHA"};
  auto add_cache = [&](const std::string& name, const ModelConfig& cfg) {
    const int64_t n = kv_cache_size(cfg).per_token_per_layer;
    const std::string what = registry::attention(cfg).latent
                                 ? fmt::format("latent {} + RoPE key {}", cfg.mla_kv_rank, cfg.mla_rope_dim)
                                 : fmt::format("2 × {} KV heads × {}", cfg.kv_heads(), cfg.dim_head());
    c.add({name, attention_kind(cfg), std::to_string(n), what,
           fixed(static_cast<double>(n) / mha_per_token_per_layer(cfg), 4)});
  };
  add_cache("probe model", m);
  for (int k : {static_cast<int>(m.n_heads), 2, 1}) {
    ModelConfig g = m;
    g.attention = "mha";
    g.n_kv_heads = k;
    add_cache("probe model", g);
  }
  Config ds = load_probe_config("configs/models/deepseek-v2.yaml");
  add_cache(ds.name, ds.model);
  ModelConfig ds_mha = ds.model;
  ds_mha.attention = "mha";
  add_cache(ds.name + " as MHA", ds_mha);
  return c;
}

}  // namespace

ProbeResult probe_mla(const ProbeOptions& opt) {
  torch::NoGradGuard no_grad;
  ModelConfig m;  // textbook sizes: d 64, 4 heads × 16, biases; MLA rank 32, RoPE part 8
  m.vocab_size = 32;
  m.n_layers = 1;
  m.attention = "mla";
  m.position = "rope";
  const int64_t T = 16;
  torch::manual_seed(opt.seed);
  auto x = torch::randn({1, T, m.d_model});  // (B, T, C)
  Table t;
  t.header = {"comparison", "max |Δ|", "max |score|", "expected"};
  {
    ModelConfig nope = m;
    nope.position = "none";  // no RoPE part at all
    torch::manual_seed(opt.seed + 1);
    ModernLM model(nope);
    auto a = mla_layer0(model);
    auto naive = a->scores(x, /*absorbed=*/false), absorbed = a->scores(x, /*absorbed=*/true);  // (B, H, T, T)
    t.add({"no RoPE: k from the latent vs W_UK absorbed into q", sci(max_abs(naive, absorbed)),
           fixed(naive.abs().max().item<double>(), 4), "≈ 0"});
  }
  torch::manual_seed(opt.seed + 1);
  ModernLM model(m);
  auto a = mla_layer0(model);
  {
    auto [exact, absorbed] = a->rope_on_keys_scores(x);
    t.add({"RoPE on the keys, absorbed naively ((R_i q)ᵀ W_UK c_j)", sci(max_abs(exact, absorbed)),
           fixed(exact.abs().max().item<double>(), 4), "large (R_j lost)"});
  }
  {
    auto naive = a->scores(x, false), absorbed = a->scores(x, true);
    t.add({"decoupled RoPE: k from the latent vs absorbed", sci(max_abs(naive, absorbed)),
           fixed(naive.abs().max().item<double>(), 4), "≈ 0"});
  }
  {
    auto tokens = torch::randint(m.vocab_size, {1, T}, torch::kInt64);
    a->absorb = false;
    auto naive = model->forward(tokens);
    a->absorb = true;
    auto absorbed = model->forward(tokens);
    a->absorb = m.mla_absorb;
    t.add({"decoupled RoPE: model logits, naive vs absorbed path", sci(max_abs(naive, absorbed)),
           fixed(naive.abs().max().item<double>(), 4), "≈ 0"});
  }

  if (a->cached_per_token() != kv_cache_size(m).per_token_per_layer)
    throw RuntimeError("mla probe: the module's cached_per_token disagrees with sizes.h");
  const Table c = mla_cache_table(m);

  ProbeResult res;
  res.tables.push_back({"mla_scores", "MLA scores (d 64, 4 heads × 16, latent 32, RoPE part 8, biases; T = 16)", t});
  res.tables.push_back({"mla_cache", "Cached numbers per token per layer", c});
  return res;
}

ProbeResult probe_kv_table(const ProbeOptions& opt) {
  namespace fs = std::filesystem;
  if (opt.context < 1) throw InputError(fmt::format("--context {}: must be positive", opt.context));
  const fs::path dir = fs::path(LMX_SOURCE_DIR) / "configs" / "models";
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw RuntimeError(fmt::format("{}: no model presets (*.yaml)", dir.string()));
  const int bf16 = kBf16Bytes;
  Table t;
  t.header = {"model", "attention", "KV heads", "head dim", "per token per layer", "layers", "bytes per token (BF16)",
              fmt::format("GiB at {} tokens", opt.context), "sliding window"};
  auto add = [&](const std::string& name, const ModelConfig& m) {
    const KVCacheSize s = kv_cache_size(m);
    const double gib = static_cast<double>(s.bytes(bf16, opt.context, 1)) / (1024.0 * 1024.0 * 1024.0);
    t.add({name, attention_kind(m), registry::attention(m).latent ? "-" : std::to_string(m.kv_heads()),
           std::to_string(m.dim_head()), std::to_string(s.per_token_per_layer), std::to_string(s.n_layers),
           std::to_string(s.bytes_per_token(bf16)), fixed(gib, 2),
           s.windowed_layers > 0 ? fmt::format("{} in {}/{} layers", s.window, s.windowed_layers, s.n_layers) : "-"});
  };
  for (const auto& f : files) {
    const Config cfg = load_config(f);
    add(cfg.name, cfg.model);
    if (cfg.name == "llama2-70b") {
      ModelConfig mha = cfg.model;
      mha.n_kv_heads = mha.n_heads;
      add("llama2-70b as MHA", mha);
    }
  }
  ProbeResult res;
  res.tables.push_back({"kv_table", "KV cache per token (BF16, batch 1)", t});
  res.notes.push_back("per token per layer: MHA/GQA/MQA 2 · n_kv_heads · head_dim; MLA latent + RoPE key (model/sizes.h); "
                      "a layer with a sliding window W keeps only its last W tokens (a rolling cache)");
  return res;
}

}  // namespace lmx::experiments
