// The probe table: name → (arguments, description, function).
#include "experiments/probe.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "util/error.h"

namespace lmx::experiments {

const std::vector<ProbeEntry>& probes() {
  static const std::vector<ProbeEntry> table = {
      {"activations",     "",                                probe_activations,     "01.1 relu/gelu/gelu_tanh/silu/swish values, max |gelu − gelu_tanh|, negative minima, swish limits"},
      {"ffn-params",      "",                                probe_ffn_params,      "01.2 parameters of one FFN block (d=64, biases): plain 256, SwiGLU 256, SwiGLU 171"},
      {"sparsity",        "CKPT [--docs N]",                 probe_sparsity,        "01.4 per layer: FFN hidden activations exactly 0, dead neurons (first N val docs)"},
      {"norm-invariance", "",                                probe_norm_invariance, "02.1 LayerNorm/RMSNorm under x→3x and x→x+5, RMSNorm vs LayerNorm at zero mean, vs formulas"},
      {"gradnorm",        "[--depths 6,12,24] [--config F]", probe_gradnorm,        "02.2 post- vs pre-norm at init: per-layer FFN down_proj gradient norms, total, the residual stream RMS (embedding and blocks apart)"},
      {"kv-decode",       "[--len N] [--config F]",          probe_kv_decode,       "03.2 token-by-token decoding with the KV cache vs full recompute; cache with 4/2/1 KV heads"},
      {"mla",             "",                                probe_mla,             "03.3 MLA: naive vs absorbed scores, naive absorption with RoPE, decoupled RoPE, cache vs MHA"},
      {"kv-table",        "[--context N]",                   probe_kv_table,        "03.1 KV cache of the configs/models presets per token (BF16) and per context; Llama 2 70B MHA vs GQA"},
      {"rope-relative",   "",                                probe_rope_relative,   "04.1 RoPE score depends on m − n only, the additive sinusoidal score does not; |R_m q| = |q|"},
      {"rope-decay",      "",                                probe_rope_decay,      "04.2 RoPE score of q = k = ones(64), θ = 10000, by distance"},
      {"rope-layout",     "",                                probe_rope_layout,     "04.5 interleaved vs half-split RoPE: equal scores after the fixed dimension permutation"},
      {"t5-buckets",      "",                                probe_t5_buckets,      "04.3 T5 relative-position bucket of each distance (causal, 32 buckets, max distance 128)"},
  };
  return table;
}

namespace {

std::vector<std::string> probe_names() {
  std::vector<std::string> names;
  for (const auto& p : probes()) names.push_back(p.name);
  return names;
}

}  // namespace

const ProbeEntry& find_probe(const std::string& name) {
  for (const auto& p : probes())
    if (p.name == name) return p;
  throw InputError(fmt::format("unknown probe '{}'; valid: {}", name, fmt::join(probe_names(), ", ")),
                   "lmx probe --list describes each probe");
}

std::string probe_list() {
  size_t name_w = 0, args_w = 0;
  for (const auto& p : probes()) {
    name_w = std::max(name_w, p.name.size());
    args_w = std::max(args_w, p.args.size());
  }
  std::string out;
  for (const auto& p : probes())
    out += fmt::format("  {:<{}}  {:<{}}  {}\n", p.name, name_w, p.args, args_w, p.description);
  return out;
}

Config load_probe_config(const std::string& path) {
  namespace fs = std::filesystem;
  std::string resolved = path;
  if (fs::path(path).is_relative() && !fs::exists(path)) {
    auto in_source = fs::path(LMX_SOURCE_DIR) / path;
    if (fs::exists(in_source)) resolved = in_source.string();
  }
  return load_config(resolved);
}

std::string fixed(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

std::string sci(double v) { return fmt::format("{:.3e}", v); }

double max_abs(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

}  // namespace lmx::experiments
