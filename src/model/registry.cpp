// The factories: one aligned row {name, factory} per variant, in the order of the catalog's rows
// (config/registry.h: names, descriptions, traits). Adding a variant = its file under model/,
// its catalog row and its row here (tests/test_registry.cpp checks that the names match).
#include "model/registry.h"

#include <fmt/format.h>

#include "model/attention/attention.h"
#include "model/ffn.h"
#include "model/norm.h"
#include "model/options.h"
#include "model/position/absolute.h"
#include "model/position/alibi.h"
#include "model/position/position.h"
#include "model/position/rope.h"
#include "model/position/t5_bias.h"
#include "util/error.h"

namespace lmx {

namespace {

template <class Make>
struct Row {
  std::string name;
  Make make;
};

using registry::FfnMake, registry::NormMake, registry::AttentionMake, registry::PositionMake;

template <Activation A>
std::shared_ptr<Ffn> plain(const ModelConfig& c) { return std::make_shared<PlainFfnImpl>(ffn_options(c, false), A); }
template <Activation A>
std::shared_ptr<Ffn> gated(const ModelConfig& c) { return std::make_shared<GatedFfnImpl>(ffn_options(c, true), A); }

std::vector<Row<FfnMake>>& ffn_table() {
  static std::vector<Row<FfnMake>> rows = {
      {"relu",       plain<Activation::Relu>},
      {"gelu",       plain<Activation::Gelu>},
      {"gelu_tanh",  plain<Activation::GeluTanh>},
      {"silu",       plain<Activation::Silu>},
      {"swish",      plain<Activation::Swish>},
      {"swiglu",     gated<Activation::Silu>},
      {"geglu",      gated<Activation::Gelu>},
      {"reglu",      gated<Activation::Relu>},
  };
  return rows;
}

std::vector<Row<NormMake>>& norm_table() {
  static std::vector<Row<NormMake>> rows = {
      {"layernorm",
       [](const ModelConfig& c, int64_t d) -> std::shared_ptr<Norm> { return std::make_shared<LayerNormImpl>(d, c.norm_eps); }},
      {"rmsnorm",
       [](const ModelConfig& c, int64_t d) -> std::shared_ptr<Norm> { return std::make_shared<RMSNormImpl>(d, c.norm_eps); }},
  };
  return rows;
}

std::vector<Row<AttentionMake>>& attention_table() {
  static std::vector<Row<AttentionMake>> rows = {
      {"mha",
       [](const ModelConfig& c, std::shared_ptr<Position> p) -> std::shared_ptr<Attention> {
         return std::make_shared<MultiHeadAttentionImpl>(attention_options(c), std::move(p)); }},
      {"mla",
       [](const ModelConfig& c, std::shared_ptr<Position> p) -> std::shared_ptr<Attention> {
         return std::make_shared<MultiHeadLatentAttentionImpl>(mla_options(c), std::move(p)); }},
  };
  return rows;
}

std::vector<Row<PositionMake>>& position_table() {
  static std::vector<Row<PositionMake>> rows = {
      {"none",
       [](const ModelConfig&) -> std::shared_ptr<Position> { return std::make_shared<NoPositionImpl>(); }},
      {"sinusoidal",
       [](const ModelConfig& c) -> std::shared_ptr<Position> { return std::make_shared<SinusoidalPositionImpl>(c.d_model); }},
      {"learned",
       [](const ModelConfig& c) -> std::shared_ptr<Position> { return std::make_shared<LearnedPositionImpl>(c.max_seq_len, c.d_model); }},
      {"t5_bias",
       [](const ModelConfig& c) -> std::shared_ptr<Position> {
         return std::make_shared<T5BiasImpl>(c.n_heads, c.t5_num_buckets, c.t5_max_distance); }},
      {"rope",
       [](const ModelConfig& c) -> std::shared_ptr<Position> {
         return std::make_shared<RoPEImpl>(rope_options(c, registry::attention(c).latent ? c.mla_rope_dim : c.dim_head())); }},
      {"alibi",
       [](const ModelConfig& c) -> std::shared_ptr<Position> { return std::make_shared<ALiBiImpl>(c.n_heads); }},
  };
  return rows;
}

template <class Make>
std::vector<std::string> names_of(const std::vector<Row<Make>>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.name);
  return out;
}

// The factory of a catalog name (registry::find names the valid ones for an unknown name).
template <class Make>
Make lookup(const std::vector<Row<Make>>& rows, registry::Kind kind, const std::string& name) {
  registry::find(kind, name);
  for (const auto& r : rows)
    if (name == r.name) return r.make;
  throw std::logic_error(fmt::format("registry: {} '{}' is in the catalog but has no factory", registry::kind_name(kind), name));
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

namespace {
// The catalog row first: it refuses a name that exists before the factory row is added.
template <class Make>
void add_row(Kind kind, std::vector<Row<Make>>& table, Entry entry, Make make) {
  const std::string name = entry.name;
  add(kind, std::move(entry));
  table.push_back({name, make});
}
}  // namespace

void add_ffn(Entry entry, FfnMake make) { add_row(Kind::Ffn, ffn_table(), std::move(entry), make); }
void add_norm(Entry entry, NormMake make) { add_row(Kind::Norm, norm_table(), std::move(entry), make); }
void add_attention(Entry entry, AttentionMake make) { add_row(Kind::Attention, attention_table(), std::move(entry), make); }
void add_position(Entry entry, PositionMake make) { add_row(Kind::Position, position_table(), std::move(entry), make); }

std::vector<std::string> factory_names(Kind kind) {
  switch (kind) {
    case Kind::Ffn: return names_of(ffn_table());
    case Kind::Norm: return names_of(norm_table());
    case Kind::Attention: return names_of(attention_table());
    case Kind::Position: return names_of(position_table());
  }
  return {};
}

}  // namespace registry
}  // namespace lmx
