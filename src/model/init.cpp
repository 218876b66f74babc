#include "model/init.h"

#include <algorithm>
#include <cmath>

#include "model/norm.h"
#include "util/error.h"

namespace lmx {

namespace {

// A module whose "weight" is a table looked up by index (nn.Embedding in PyTorch): token
// embeddings, learned positions, the T5 bias. Every other module with a 2-D "weight" is a
// linear layer (out, in).
bool is_table(const std::string& name) {
  auto ends_with = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends_with("embed_tokens") || ends_with("embed_positions") || ends_with("relative_attention_bias");
}

// A residual branch's output projection (attention's o_proj, the FFN's down_proj): the weights
// gpt2 scales and zero_proj zeroes.
bool is_residual_output(const std::string& name) {
  auto ends_with = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends_with(".o_proj") || ends_with(".down_proj");
}

}  // namespace

void init_weights(torch::nn::Module& model, const ModelConfig& cfg) {
  torch::NoGradGuard no_grad;
  const bool torch_default = cfg.init == InitScheme::TorchDefault;
  const bool tied_linear = cfg.tie_embeddings && cfg.tied_init == TiedInit::Linear;
  // gpt2: the residual outputs at σ/√(2L) (two branches per layer add to the stream)
  const double residual_std =
      cfg.init == InitScheme::Gpt2 ? cfg.init_std / std::sqrt(2.0 * std::max(1, cfg.n_layers)) : cfg.init_std;
  auto visit = [&](const std::string& name, torch::nn::Module& m) {
    const bool is_norm = dynamic_cast<Norm*>(&m) != nullptr;
    auto params = m.named_parameters(/*recurse=*/false);
    // A linear layer's bound 1/√fan_in; a tied head has no weight of its own: fan_in = d_model.
    const auto* weight = params.find("weight");
    const int64_t fan_in = weight && weight->dim() == 2 ? weight->size(1) : cfg.d_model;
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    for (auto& p : params) {
      const bool is_bias = p.key() == "bias";
      if (is_norm)
        p.value().fill_(is_bias ? 0.0 : 1.0);
      else if (!torch_default && is_residual_output(name) && !is_bias && cfg.init == InitScheme::ZeroProj)
        p.value().zero_();
      else if (!torch_default)
        is_bias ? p.value().zero_() : p.value().normal_(0.0, is_residual_output(name) ? residual_std : cfg.init_std);
      else if (is_table(name) && !(tied_linear && name == "model.embed_tokens"))
        p.value().normal_(0.0, 1.0);
      else
        p.value().uniform_(-bound, bound);
    }
  };
  visit("", model);
  for (auto& child : model.named_modules(/*name_prefix=*/"", /*include_self=*/false)) visit(child.key(), *child.value());
}

}  // namespace lmx
