// The probe table: name → (arguments, description, function).
#include "experiments/probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "util/error.h"

namespace lmx::experiments {

const std::vector<ProbeEntry>& probes() {
  static const std::vector<ProbeEntry> table = {
      {"activations", "", "01.1 relu/gelu/gelu_tanh/silu/swish values, max |gelu − gelu_tanh|, negative minima, swish limits", probe_activations},
      {"ffn-params", "", "01.2 parameters of one FFN block (d=64, biases): plain 256, SwiGLU 256, SwiGLU 171", probe_ffn_params},
      {"sparsity", "CKPT [--docs N]", "01.4 per layer: FFN hidden activations exactly 0, dead neurons (first N val docs)", probe_sparsity},
      {"norm-invariance", "", "02.1 LayerNorm/RMSNorm under x→3x and x→x+5, RMSNorm vs LayerNorm at zero mean, vs formulas", probe_norm_invariance},
      {"gradnorm", "[--depths 6,12,24] [--config F]", "02.2 post- vs pre-norm at init: per-layer FFN down_proj gradient norms, total", probe_gradnorm},
      {"kv-decode", "[--len N] [--config F]", "03.2 token-by-token decoding with the KV cache vs full recompute; cache with 4/2/1 KV heads", probe_kv_decode},
      {"mla", "", "03.3 MLA: naive vs absorbed scores, naive absorption with RoPE, decoupled RoPE, cache vs MHA", probe_mla},
      {"kv-table", "[--context N]", "03.1 KV cache of the configs/models presets per token (BF16) and per context; Llama 2 70B MHA vs GQA", probe_kv_table},
      {"rope-relative", "", "04.1 RoPE score depends on m − n only, the additive sinusoidal score does not; |R_m q| = |q|", probe_rope_relative},
      {"rope-decay", "", "04.2 RoPE score of q = k = ones(64), θ = 10000, by distance", probe_rope_decay},
      {"rope-layout", "", "04.5 interleaved vs half-split RoPE: equal scores after the fixed dimension permutation", probe_rope_layout},
      {"t5-buckets", "", "04.3 T5 relative-position bucket of each distance (causal, 32 buckets, max distance 128)", probe_t5_buckets},
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

}  // namespace lmx::experiments
