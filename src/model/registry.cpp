// Registry name tables. The model issue attaches a factory to each row (model/*.cpp);
// until then these rows are the names that configs validate against.
#include "model/registry.h"

namespace lmx::registry {

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = {Kind::Ffn, Kind::Norm, Kind::Attention, Kind::Position};
  return all;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::Ffn: return "ffn";
    case Kind::Norm: return "norm";
    case Kind::Attention: return "attention";
    case Kind::Position: return "position";
  }
  return "?";
}

std::vector<Entry> entries(Kind kind) {
  switch (kind) {
    case Kind::Ffn:
      return {{"relu", "W2·relu(W1x)"},
              {"gelu", "W2·gelu(W1x), exact x·Φ(x)"},
              {"gelu_tanh", "W2·gelu(W1x), tanh approximation"},
              {"silu", "W2·silu(W1x), x·σ(x)"},
              {"swish", "W2·swish(W1x), x·σ(βx) with model.swish_beta"},
              {"swiglu", "W2·(silu(W1x) ⊙ W3x)"},
              {"geglu", "W2·(gelu(W1x) ⊙ W3x)"},
              {"reglu", "W2·(relu(W1x) ⊙ W3x)"}};
    case Kind::Norm:
      return {{"layernorm", "(x − mean)/sqrt(var + ε)·γ + β"}, {"rmsnorm", "x/sqrt(mean(x²) + ε)·γ"}};
    case Kind::Attention:
      return {{"mha", "multi-head attention; GQA/MQA by n_kv_heads"},
              {"mla", "multi-head latent attention (DeepSeek-V2)"}};
    case Kind::Position:
      return {{"none", "no position information (NoPE)"},
              {"sinusoidal", "fixed sinusoidal absolute embeddings"},
              {"learned", "learned absolute embeddings"},
              {"t5_bias", "T5 relative bias per head and log-spaced bucket"},
              {"rope", "rotary embeddings on q and k"},
              {"alibi", "linear distance penalty, fixed slopes per head"}};
  }
  return {};
}

std::vector<std::string> names(Kind kind) {
  std::vector<std::string> out;
  for (const auto& e : entries(kind)) out.push_back(e.name);
  return out;
}

}  // namespace lmx::registry
