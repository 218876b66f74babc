// The component catalog's rows (registry.h). Adding a variant: its file under model/, one row
// here (name, description, traits) and its factory row in model/registry.cpp.
#include "config/registry.h"

#include <fmt/format.h>

#include "util/error.h"
#include "util/strings.h"

namespace lmx::registry {

namespace {

Traits gated() { Traits t; t.gated = true; return t; }
Traits centered() { Traits t; t.centered = true; return t; }
Traits latent() { Traits t; t.latent = true; return t; }
Traits rotary() { Traits t; t.rotary = true; return t; }
Traits length_table() { Traits t; t.length_table = true; return t; }
Traits bucket_table() { Traits t; t.bucket_table = true; return t; }
Traits llama(Traits t) { t.llama = true; return t; }

std::vector<Entry>& ffn_rows() {
  static std::vector<Entry> rows = {
      {"relu",      "W2·relu(W1x)",                                {}},
      {"gelu",      "W2·gelu(W1x), exact x·Φ(x)",                  {}},
      {"gelu_tanh", "W2·gelu(W1x), tanh approximation",            {}},
      {"silu",      "W2·silu(W1x), x·σ(x)",                        {}},
      {"swish",     "W2·swish(W1x), x·σ(βx) with model.swish_beta", {}},
      {"swiglu",    "W2·(silu(W1x) ⊙ W3x)",                        llama(gated())},
      {"geglu",     "W2·(gelu(W1x) ⊙ W3x)",                        gated()},
      {"reglu",     "W2·(relu(W1x) ⊙ W3x)",                        gated()},
  };
  return rows;
}

std::vector<Entry>& norm_rows() {
  static std::vector<Entry> rows = {
      {"layernorm", "(x − mean)/sqrt(var + ε)·γ + β", centered()},
      {"rmsnorm",   "x/sqrt(mean(x²) + ε)·γ",         llama({})},
  };
  return rows;
}

std::vector<Entry>& attention_rows() {
  static std::vector<Entry> rows = {
      {"mha", "multi-head attention; GQA/MQA by n_kv_heads", llama({})},
      {"mla", "multi-head latent attention (DeepSeek-V2)",   latent()},
  };
  return rows;
}

std::vector<Entry>& position_rows() {
  static std::vector<Entry> rows = {
      {"none",       "no position information (NoPE)",                 {}},
      {"sinusoidal", "fixed sinusoidal absolute embeddings",           {}},
      {"learned",    "learned absolute embeddings",                    length_table()},
      {"t5_bias",    "T5 relative bias per head and log-spaced bucket", bucket_table()},
      {"rope",       "rotary embeddings on q and k",                   llama(rotary())},
      {"alibi",      "linear distance penalty, fixed slopes per head", {}},
  };
  return rows;
}

}  // namespace

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

namespace {
std::vector<Entry>& rows_of(Kind kind) {
  switch (kind) {
    case Kind::Ffn: return ffn_rows();
    case Kind::Norm: return norm_rows();
    case Kind::Attention: return attention_rows();
    case Kind::Position: return position_rows();
  }
  throw std::logic_error("registry: unknown kind");
}
}  // namespace

const std::vector<Entry>& entries(Kind kind) { return rows_of(kind); }

void add(Kind kind, Entry entry) {
  auto& rows = rows_of(kind);
  for (const auto& e : rows)
    if (e.name == entry.name) throw std::logic_error(fmt::format("registry: {} '{}' exists already", kind_name(kind), e.name));
  rows.push_back(std::move(entry));
}

std::vector<std::string> names(Kind kind) {
  std::vector<std::string> out;
  for (const auto& e : entries(kind)) out.push_back(e.name);
  return out;
}

const Entry& find(Kind kind, const std::string& name) {
  for (const auto& e : entries(kind))
    if (e.name == name) return e;
  throw InputError(fmt::format("unknown {} '{}'; valid: {}", kind_name(kind), name, join(names(kind))),
                   "`lmx list` prints every component with its description");
}

std::string llama_name(Kind kind) {
  for (const auto& e : entries(kind))
    if (e.traits.llama) return e.name;
  return "";
}

const Traits& ffn(const ModelConfig& m) { return find(Kind::Ffn, m.ffn).traits; }
const Traits& norm(const ModelConfig& m) { return find(Kind::Norm, m.norm).traits; }
const Traits& attention(const ModelConfig& m) { return find(Kind::Attention, m.attention).traits; }
const Traits& position(const ModelConfig& m) { return find(Kind::Position, m.position).traits; }

}  // namespace lmx::registry
