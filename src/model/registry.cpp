// The component tables: one aligned row {name, description, factory} per variant. Adding a
// variant = its file under model/ + one row here; config validation, `lmx list` and --help
// read the names and descriptions from these same rows (registry.h).
#include "model/registry.h"

#include <fmt/format.h>

#include "model/attention.h"
#include "model/ffn.h"
#include "model/norm.h"
#include "model/position.h"
#include "model/position/absolute.h"
#include "model/position/alibi.h"
#include "model/position/rope.h"
#include "model/position/t5_bias.h"
#include "util/error.h"

namespace lmx {

namespace {

template <class Make>
struct Row {
  const char* name;
  const char* description;
  Make make;
};

using FfnMake = std::shared_ptr<Ffn> (*)(const ModelConfig&);
using NormMake = std::shared_ptr<Norm> (*)(const ModelConfig&, int64_t dim);
using AttentionMake = std::shared_ptr<Attention> (*)(const ModelConfig&, std::shared_ptr<Position>);
using PositionMake = std::shared_ptr<Position> (*)(const ModelConfig&);

template <Activation A>
std::shared_ptr<Ffn> plain(const ModelConfig& c) { return std::make_shared<PlainFfnImpl>(c, A); }
template <Activation A>
std::shared_ptr<Ffn> gated(const ModelConfig& c) { return std::make_shared<GatedFfnImpl>(c, A); }

const std::vector<Row<FfnMake>>& ffn_table() {
  static const std::vector<Row<FfnMake>> rows = {
      {"relu",      "W2·relu(W1x)",                                plain<Activation::Relu>},
      {"gelu",      "W2·gelu(W1x), exact x·Φ(x)",                  plain<Activation::Gelu>},
      {"gelu_tanh", "W2·gelu(W1x), tanh approximation",            plain<Activation::GeluTanh>},
      {"silu",      "W2·silu(W1x), x·σ(x)",                        plain<Activation::Silu>},
      {"swish",     "W2·swish(W1x), x·σ(βx) with model.swish_beta", plain<Activation::Swish>},
      {"swiglu",    "W2·(silu(W1x) ⊙ W3x)",                        gated<Activation::Silu>},
      {"geglu",     "W2·(gelu(W1x) ⊙ W3x)",                        gated<Activation::Gelu>},
      {"reglu",     "W2·(relu(W1x) ⊙ W3x)",                        gated<Activation::Relu>},
  };
  return rows;
}

const std::vector<Row<NormMake>>& norm_table() {
  static const std::vector<Row<NormMake>> rows = {
      {"layernorm", "(x − mean)/sqrt(var + ε)·γ + β",
       [](const ModelConfig& c, int64_t d) -> std::shared_ptr<Norm> { return std::make_shared<LayerNormImpl>(d, c.norm_eps); }},
      {"rmsnorm",   "x/sqrt(mean(x²) + ε)·γ",
       [](const ModelConfig& c, int64_t d) -> std::shared_ptr<Norm> { return std::make_shared<RMSNormImpl>(d, c.norm_eps); }},
  };
  return rows;
}

const std::vector<Row<AttentionMake>>& attention_table() {
  static const std::vector<Row<AttentionMake>> rows = {
      {"mha", "multi-head attention; GQA/MQA by n_kv_heads",
       [](const ModelConfig& c, std::shared_ptr<Position> p) -> std::shared_ptr<Attention> {
         return std::make_shared<MultiHeadAttentionImpl>(c, std::move(p)); }},
      {"mla", "multi-head latent attention (DeepSeek-V2)",
       [](const ModelConfig& c, std::shared_ptr<Position> p) -> std::shared_ptr<Attention> {
         return std::make_shared<MultiHeadLatentAttentionImpl>(c, std::move(p)); }},
  };
  return rows;
}

const std::vector<Row<PositionMake>>& position_table() {
  static const std::vector<Row<PositionMake>> rows = {
      {"none",       "no position information (NoPE)",
       [](const ModelConfig&) -> std::shared_ptr<Position> { return std::make_shared<NoPositionImpl>(); }},
      {"sinusoidal", "fixed sinusoidal absolute embeddings",
       [](const ModelConfig& c) -> std::shared_ptr<Position> { return std::make_shared<SinusoidalPositionImpl>(c.d_model); }},
      {"learned",    "learned absolute embeddings",
       [](const ModelConfig& c) -> std::shared_ptr<Position> { return std::make_shared<LearnedPositionImpl>(c.max_seq_len, c.d_model); }},
      {"t5_bias",    "T5 relative bias per head and log-spaced bucket",
       [](const ModelConfig& c) -> std::shared_ptr<Position> {
         return std::make_shared<T5BiasImpl>(c.n_heads, c.t5_num_buckets, c.t5_max_distance); }},
      {"rope",       "rotary embeddings on q and k",
       [](const ModelConfig& c) -> std::shared_ptr<Position> {
         return std::make_shared<RoPEImpl>(c, c.attention == "mla" ? c.mla_rope_dim : c.dim_head()); }},
      {"alibi",      "linear distance penalty, fixed slopes per head",
       [](const ModelConfig& c) -> std::shared_ptr<Position> { return std::make_shared<ALiBiImpl>(c.n_heads); }},
  };
  return rows;
}

template <class Make>
std::vector<registry::Entry> entries_of(const std::vector<Row<Make>>& rows) {
  std::vector<registry::Entry> out;
  for (const auto& r : rows) out.push_back({r.name, r.description});
  return out;
}

template <class Make>
Make lookup(const std::vector<Row<Make>>& rows, registry::Kind kind, const std::string& name) {
  for (const auto& r : rows)
    if (name == r.name) return r.make;
  std::string valid;
  for (const auto& r : rows) valid += (valid.empty() ? "" : ", ") + std::string(r.name);
  throw InputError(fmt::format("unknown {} '{}'; valid: {}", registry::kind_name(kind), name, valid),
                   "`lmx list` prints every component with its description");
}

}  // namespace

std::shared_ptr<Ffn> make_ffn(const ModelConfig& cfg) {
  return lookup(ffn_table(), registry::Kind::Ffn, cfg.ffn)(cfg);
}
std::shared_ptr<Norm> make_norm(const ModelConfig& cfg, int64_t dim) {
  return lookup(norm_table(), registry::Kind::Norm, cfg.norm)(cfg, dim);
}
std::shared_ptr<Attention> make_attention(const ModelConfig& cfg, std::shared_ptr<Position> position) {
  return lookup(attention_table(), registry::Kind::Attention, cfg.attention)(cfg, std::move(position));
}
std::shared_ptr<Position> make_position(const ModelConfig& cfg) {
  return lookup(position_table(), registry::Kind::Position, cfg.position)(cfg);
}

namespace registry {

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
    case Kind::Ffn: return entries_of(ffn_table());
    case Kind::Norm: return entries_of(norm_table());
    case Kind::Attention: return entries_of(attention_table());
    case Kind::Position: return entries_of(position_table());
  }
  return {};
}

std::vector<std::string> names(Kind kind) {
  std::vector<std::string> out;
  for (const auto& e : entries(kind)) out.push_back(e.name);
  return out;
}

}  // namespace registry
}  // namespace lmx
