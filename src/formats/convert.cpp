#include "formats/convert.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include "torch_api.h"

#include <algorithm>

#include "config/registry.h"
#include "util/error.h"
#include "util/strings.h"

namespace lmx {

const std::vector<std::string>& kv_pool_inits() {
  static const std::vector<std::string> names = {"mean", "first", "random"};
  return names;
}

namespace {

bool is_kv_projection(const std::string& name) {
  for (const char* p : {".self_attn.k_proj.", ".self_attn.v_proj."})
    if (name.find(p) != std::string::npos) return true;
  return false;
}

// (Hs·D, ...) with Hs source heads -> (Hk·D, ...) pooling groups of Hs/Hk consecutive heads.
torch::Tensor pool_heads(const torch::Tensor& w, int64_t hs, int64_t hk, const std::string& init) {
  const int64_t d = w.size(0) / hs;
  std::vector<int64_t> grouped = {hk, hs / hk, d};
  for (int64_t i = 1; i < w.dim(); ++i) grouped.push_back(w.size(i));
  auto g = w.reshape(grouped);
  auto pooled = init == "mean" ? g.mean(1) : g.select(1, 0);
  std::vector<int64_t> out = {hk * d};
  for (int64_t i = 1; i < w.dim(); ++i) out.push_back(w.size(i));
  return pooled.reshape(out);
}

}  // namespace

void check_kv_conversion(const Checkpoint& ckpt, int kv_heads, const std::string& init) {
  const ModelConfig& src = ckpt.config.model;
  const auto& inits = kv_pool_inits();
  if (std::find(inits.begin(), inits.end(), init) == inits.end())
    throw InputError(fmt::format("--init: unknown KV initialization '{}'; valid: {}", init, join(inits)));
  if (registry::attention(src).latent)
    throw InputError(fmt::format("{}: model.attention is '{}'; KV-head conversion needs mha (MHA/GQA)",
                                 ckpt.path, src.attention));
  const int hs = src.kv_heads();
  if (kv_heads < 1 || hs % kv_heads != 0)
    throw InputError(fmt::format("--kv-heads {}: must divide the checkpoint's {} KV heads ({})", kv_heads,
                                 hs, ckpt.path),
                     fmt::format("choose a divisor of {}", hs));
}

ModernLM convert_kv_heads(const Checkpoint& ckpt, int kv_heads, const std::string& init) {
  check_kv_conversion(ckpt, kv_heads, init);
  const ModelConfig& src = ckpt.config.model;
  const int hs = src.kv_heads();
  ModelConfig dst = src;
  dst.n_kv_heads = kv_heads;
  ModernLM model(dst);

  std::map<std::string, const torch::Tensor*> by_name;
  for (const auto& [name, t] : ckpt.tensors) by_name[name] = &t;
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    auto it = by_name.find(p.key());
    if (it == by_name.end())
      throw InputError(fmt::format("{}: tensor '{}' is missing", ckpt.path, p.key()),
                       "is this a checkpoint written by lmx train?");
    const bool kv = is_kv_projection(p.key());
    if (kv && init == "random") continue;
    torch::Tensor w = kv ? pool_heads(*it->second, hs, kv_heads, init) : *it->second;
    if (w.sizes() != p.value().sizes())
      throw InputError(fmt::format("{}: tensor '{}' has shape {}, the model needs {}", ckpt.path, p.key(),
                                   fmt::join(it->second->sizes(), "x"), fmt::join(p.value().sizes(), "x")));
    p.value().copy_(w);
  }
  return model;
}

}  // namespace lmx
