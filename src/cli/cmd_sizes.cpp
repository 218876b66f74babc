// lmx params CONFIG...   exact parameter counts per component (model/sizes.h)
// lmx kvcache CONFIG...  KV-cache numbers and bytes per token and for a context × batch
// Both are analytic: nothing is allocated, so they work for 70B configs.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/app.h"
#include "config/config.h"
#include "config/registry.h"
#include "data/corpus.h"
#include "model/sizes.h"
#include "util/csv.h"
#include "util/error.h"

namespace lmx::cli {

struct ParamsOptions {
  std::vector<std::string> paths, sets;
  long long seq_len = 0;
  std::string csv;
};

struct KVCacheOptions {
  std::vector<std::string> paths, sets;
  long long context = 32768;
  long long batch = 1;
  std::string dtype = "bf16";
  std::string csv;
};

namespace {

// 6738415616 -> "6,738,415,616"
std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

// Binary units: 17179869184 -> "16.00 GiB".
std::string human_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) v /= 1024.0, ++u;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

std::string percent(int64_t part, int64_t total) {
  return total > 0 ? fmt::format("{:.2f}%", 100.0 * static_cast<double>(part) / static_cast<double>(total)) : "-";
}

// A config to count: a vocab_size of auto is taken from the dataset the config names, as
// the trainer does.
struct Sized {
  Config cfg;
  bool vocab_from_data = false;
};

Sized load_sized(const std::string& path, const std::vector<std::string>& sets) {
  Sized s{load_config(path, sets)};
  if (s.cfg.model.vocab_size == 0) {
    s.cfg.model.vocab_size = data::load_vocabulary(s.cfg.data).vocab.size();
    s.vocab_from_data = true;
  }
  return s;
}

std::string model_line(const ModelConfig& m, bool vocab_from_data) {
  std::string attn = registry::attention(m).latent
                         ? fmt::format("mla (latent {}, query latent {}, rope {})", m.mla_kv_rank,
                                       m.mla_q_rank > 0 ? std::to_string(m.mla_q_rank) : "none", m.mla_rope_dim)
                         : fmt::format("{} ({} KV heads)", attention_kind(m), m.kv_heads());
  return fmt::format("vocab {}{} · d_model {} · {} layers · {} heads × {} · {} · {} d_ff {} · {} {} · {} · "
                     "bias {} · head {}",
                     m.vocab_size, vocab_from_data ? " (from the dataset)" : "", m.d_model, m.n_layers, m.n_heads, m.dim_head(), attn, m.ffn,
                     m.ffn_hidden(registry::ffn(m).gated), option_name(m.norm_placement), m.norm, m.position,
                     m.bias ? "on" : "off", m.tie_embeddings ? "tied" : "untied");
}

struct ParamRow {
  std::string component;
  int64_t per_layer;  // -1: not a per-layer component
  int64_t count;
};

std::vector<ParamRow> param_rows(const ParamCounts& p) {
  const int64_t L = p.n_layers;
  return {{"token embeddings", -1, p.embedding},
          {"positions", -1, p.position},
          {"attention", p.attention_per_layer, size_mul(p.attention_per_layer, L)},
          {"FFN", p.ffn_per_layer, size_mul(p.ffn_per_layer, L)},
          {"norms", p.norms_per_layer, size_mul(p.norms_per_layer, L)},
          {"final norm", -1, p.final_norm},
          {"output head", -1, p.head},
          {"total", p.per_layer(), p.total()}};
}

// FLOPs as "1.23e+09".
std::string sci(double v) { return fmt::format("{:.3g}", v); }

}  // namespace

int run_params(const ParamsOptions& o, const Globals&) {
  Table csv{{"config", "component", "per_layer", "layers", "count"}, {}};
  for (const auto& path : o.paths) {
    const Sized sized = load_sized(path, o.sets);
    const Config& cfg = sized.cfg;
    const ParamCounts p = count_params(cfg.model);
    Table md{{"component", "per layer", "count", "share"}, {}};
    for (const auto& r : param_rows(p)) {
      const bool layered = r.per_layer >= 0;
      md.add({r.component, layered ? grouped(r.per_layer) : "", grouped(r.count), percent(r.count, p.total())});
      csv.add({cfg.name, r.component, layered ? std::to_string(r.per_layer) : "",
               layered ? std::to_string(p.n_layers) : "", std::to_string(r.count)});
    }
    const int64_t T = o.seq_len > 0 ? o.seq_len : cfg.model.max_seq_len;
    const ForwardFlops f = forward_flops(cfg.model, T);
    std::cout << fmt::format("### {} ({})\n\n{}\n\n{}\n", cfg.name, cfg.source,
                             model_line(cfg.model, sized.vocab_from_data), md.markdown());
    std::cout << fmt::format("non-embedding parameters: {}; matmul weights N: {}\n", grouped(p.non_embedding()),
                             grouped(matmul_params(cfg.model)));
    std::cout << fmt::format("forward FLOPs per token at T = {}: {} = 2N {} + causal attention {}\n\n", grouped(T),
                             sci(f.per_token()), sci(static_cast<double>(f.matmul) / T),
                             sci(static_cast<double>(f.attention_causal) / T));
  }
  if (!o.csv.empty()) write_file_atomic(o.csv, csv.csv());
  return 0;
}

namespace {

std::string cached_parts(const ModelConfig& m) {
  if (registry::attention(m).latent) return fmt::format("latent {} + RoPE key {}", m.mla_kv_rank, m.mla_rope_dim);
  return fmt::format("K, V: 2 × {} KV heads × {}", m.kv_heads(), m.dim_head());
}

// Bytes per number of --dtype (one of bf16, fp16, fp32: the option's check).
int dtype_bytes(const std::string& dtype) { return dtype == "fp32" ? 4 : kBf16Bytes; }

}  // namespace

int run_kvcache(const KVCacheOptions& a, const Globals&) {
  const int bytes_per_number = dtype_bytes(a.dtype);
  Table md{{"config", "attention", "cached per token per layer", "numbers", "layers", "numbers per token",
            "bytes per token", "sliding window", "context × batch", "bytes"}, {}};
  Table csv{{"config", "attention", "numbers_per_token_per_layer", "layers", "numbers_per_token", "dtype",
             "bytes_per_token", "context", "batch", "bytes", "window", "windowed_layers"}, {}};
  for (const auto& path : a.paths) {
    const Config cfg = load_config(path, a.sets);  // the cache does not depend on the vocabulary
    const KVCacheSize s = kv_cache_size(cfg.model);
    const int64_t per_token = s.bytes_per_token(bytes_per_number);
    const int64_t total = s.bytes(bytes_per_number, a.context, a.batch);
    // A windowed layer keeps its last W tokens (a rolling cache): bytes per token hold up to W.
    const std::string window =
        s.windowed_layers > 0 ? fmt::format("{} tokens in {} of {} layers", grouped(s.window), s.windowed_layers, s.n_layers)
                              : "none";
    md.add({cfg.name, attention_kind(cfg.model), cached_parts(cfg.model), grouped(s.per_token_per_layer),
            std::to_string(s.n_layers), grouped(s.per_token()), grouped(per_token), window, human_bytes(total),
            grouped(total)});
    csv.add({cfg.name, attention_kind(cfg.model), std::to_string(s.per_token_per_layer), std::to_string(s.n_layers),
             std::to_string(s.per_token()), a.dtype, std::to_string(per_token), std::to_string(a.context),
             std::to_string(a.batch), std::to_string(total), std::to_string(s.windowed_layers > 0 ? s.window : 0),
             std::to_string(s.windowed_layers)});
  }
  std::cout << fmt::format("KV cache at {} ({} bytes per number), context {} × batch {}\n\n{}", a.dtype,
                           bytes_per_number, grouped(a.context), grouped(a.batch), md.markdown());
  if (!a.csv.empty()) write_file_atomic(a.csv, csv.csv());
  return 0;
}

void add_sizes_commands(CLI::App& app, Globals& g) {
  auto po = std::make_shared<ParamsOptions>();
  auto* params = app.add_subcommand(
      "params", "Exact parameter counts per component and in total, analytically (no allocation)");
  params->add_option("configs", po->paths, "config files (YAML); vocab_size auto is taken from the dataset")
      ->required();
  add_set_option(params, po->sets, "override a field in every config: section.key=value (repeatable)");
  params->add_option("--seq-len", po->seq_len, "sequence length T for the FLOPs line (default model.max_seq_len)")
      ->check(Positive);
  params->add_option("--csv", po->csv, "also write the counts as CSV to this file");
  on_run(params, g, po, run_params);

  auto ko = std::make_shared<KVCacheOptions>();
  auto* kv = app.add_subcommand(
      "kvcache", "KV-cache numbers per token per layer, bytes per token and for a context × batch");
  kv->add_option("configs", ko->paths, "config files (YAML)")->required();
  kv->add_option("--context", ko->context, "tokens in the cache (default 32768)")->check(Positive);
  kv->add_option("--batch", ko->batch, "sequences (default 1)")->check(Positive);
  kv->add_option("--dtype", ko->dtype, "cache dtype: bf16 | fp16 (2 bytes), fp32 (4 bytes)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  add_set_option(kv, ko->sets, "override a field in every config: section.key=value (repeatable)");
  kv->add_option("--csv", ko->csv, "also write the table as CSV to this file");
  on_run(kv, g, ko, run_kvcache);
}

}  // namespace lmx::cli
