// The built-in components: one row per variant {name, description, traits, factory}, the only
// place that lists them. Adding a variant = its file under model/ and its row here. The rows
// enter the catalog (config/registry.h) and the factory tables when the program starts.
#include "model/registry.h"

#include <fmt/format.h>

#include "model/attention/attention.h"
#include "model/ffn.h"
#include "model/moe.h"
#include "model/norm.h"
#include "model/options.h"
#include "model/position/absolute.h"
#include "model/position/alibi.h"
#include "model/position/position.h"
#include "model/position/rope.h"
#include "model/position/t5_bias.h"
#include "model/sizes.h"
#include "util/error.h"
#include "util/strings.h"

namespace lmx {

namespace {

// A factory table's row (the catalog holds the rest of the component's row).
template <class Make>
struct Factory {
  std::string name;
  Make make;
};

// A kind's factories in catalog order (one table per factory type, so per kind), filled by
// add_row (a function-local static: it exists before the built-in rows are added, whichever
// file's static initialization comes first).
template <class Make>
std::vector<Factory<Make>>& factories() {
  static std::vector<Factory<Make>> table;
  return table;
}

template <class Make>
std::vector<std::string> names_of(const std::vector<Factory<Make>>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.name);
  return out;
}

// The factory of a catalog name (registry::find names the valid ones for an unknown name).
template <class Make>
Make lookup(const std::vector<Factory<Make>>& rows, registry::Kind kind, const std::string& name) {
  registry::find(kind, name);
  for (const auto& r : rows)
    if (name == r.name) return r.make;
  throw std::logic_error(fmt::format("registry: {} '{}' is in the catalog but has no factory", registry::kind_name(kind), name));
}

}  // namespace

std::shared_ptr<Ffn> make_ffn(const ModelConfig& cfg) {
  return lookup(factories<registry::FfnMake>(), registry::Kind::Ffn, cfg.ffn)(cfg);
}
std::shared_ptr<Norm> make_norm(const ModelConfig& cfg, int64_t dim) {
  return lookup(factories<registry::NormMake>(), registry::Kind::Norm, cfg.norm)(cfg, dim);
}
std::shared_ptr<Attention> make_attention(const ModelConfig& cfg, std::shared_ptr<Position> position) {
  return lookup(factories<registry::AttentionMake>(), registry::Kind::Attention, cfg.attention)(cfg, std::move(position));
}
std::shared_ptr<Position> make_position(const ModelConfig& cfg) {
  return lookup(factories<registry::PositionMake>(), registry::Kind::Position, cfg.position)(cfg);
}

namespace registry {

namespace {
// The catalog row first: it refuses a name that exists before the factory row is added.
template <class Make>
void add_row(Kind kind, Entry entry, Make make) {
  const std::string name = entry.name;
  add(kind, std::move(entry));
  factories<Make>().push_back({name, make});
}
}  // namespace

void add_ffn(Entry entry, FfnMake make) { add_row(Kind::Ffn, std::move(entry), make); }

namespace {
// The factory of every activation row: its φ, plain or gated by the row's traits.
std::shared_ptr<Ffn> activation_ffn(const ModelConfig& c) {
  const kernels::ActOp act = *ffn_activation(c.ffn);
  if (ffn(c).gated) return std::make_shared<GatedFfnImpl>(ffn_options(c, true), act);
  return std::make_shared<PlainFfnImpl>(ffn_options(c, false), act);
}
}  // namespace

void add_ffn(Entry entry, kernels::ActOp act) {
  const std::string name = entry.name;
  add_row(Kind::Ffn, std::move(entry), activation_ffn);
  factories<kernels::ActOp>().push_back({name, act});  // beside the factory: the row's activation
}

std::optional<kernels::ActOp> ffn_activation(const std::string& ffn) {
  for (const auto& [name, act] : factories<kernels::ActOp>())
    if (name == ffn) return act;
  return std::nullopt;
}

std::vector<ActivationRow> activations() {
  std::vector<ActivationRow> out;
  for (const auto& e : entries(Kind::Ffn))
    if (const auto act = ffn_activation(e.name); act && !e.traits.gated) out.push_back({e.name, *act});
  return out;
}

kernels::ActOp activation_named(const std::string& name) {
  std::vector<std::string> valid;
  for (const auto& a : activations()) {
    if (a.name == name) return a.act;
    valid.push_back(a.name);
  }
  throw InputError(fmt::format("unknown activation '{}'; valid: {}", name, join(valid)));
}
void add_norm(Entry entry, NormMake make) { add_row(Kind::Norm, std::move(entry), make); }
void add_attention(Entry entry, AttentionMake make) { add_row(Kind::Attention, std::move(entry), make); }
void add_position(Entry entry, PositionMake make) { add_row(Kind::Position, std::move(entry), make); }

namespace {

// A built-in row: the catalog's entry and the factory.
template <class Make>
struct Row {
  Entry entry;
  Make make;
};

// Row traits that only these rows use.
Traits two_vectors() { Traits t; t.vectors = 2; return t; }  // γ and β
Traits length_table() {  // a learned (max_seq_len, C) table
  Traits t;
  t.bounded_length = true;
  t.params = [](const ModelConfig& c) { return size_mul(c.max_seq_len, c.d_model); };
  return t;
}
Traits bucket_table() {  // a learned bias per distance bucket and head, per layer or shared
  Traits t;
  t.params = [](const ModelConfig& c) { return size_mul(size_mul(c.t5_shared ? 1 : c.n_layers, c.t5_num_buckets), c.n_heads); };
  t.keys = {"model.t5_num_buckets", "model.t5_max_distance", "model.t5_shared"};
  return t;
}
Traits rope_traits() {
  Traits t = llama(rotary());
  t.keys = {"model.rope_theta", "model.rope_layout", "model.rope_scaling", "model.rope_factor",
            "model.rope_original_len", "model.yarn_beta_fast", "model.yarn_beta_slow"};
  return t;
}

// The MoE FFN's row: E routed SwiGLU experts of width d_ff (gated: d_ff auto is a gated width),
// top-k of them and the shared ones per token, a C -> E router.
Traits moe_traits() {
  Traits t = gated();
  t.params = [](const ModelConfig& c) {
    return size_add(size_mul(c.d_model, c.moe_experts),
                    size_mul(gated_ffn_params(c, c.bias), static_cast<int64_t>(c.moe_experts) + c.moe_shared_experts));
  };
  t.active_matmul = [](const ModelConfig& c) {
    return size_add(size_mul(c.d_model, c.moe_experts),
                    size_mul(gated_ffn_params(c, false), static_cast<int64_t>(c.moe_top_k) + c.moe_shared_experts));
  };
  t.model_check = [](const ModelConfig& c) -> std::string {
    if (c.moe_top_k > c.moe_experts)
      return fmt::format("model.moe_top_k ({}) exceeds model.moe_experts ({})", c.moe_top_k, c.moe_experts);
    return "";
  };
  t.keys = {"model.moe_experts", "model.moe_top_k", "model.moe_shared_experts", "model.moe_aux_loss"};
  return t;
}

// The FFN rows: each an activation the fused kernels run (kernels::ActKind), plain or gated.
struct FfnRow {
  Entry entry;
  Activation act;
};
const std::vector<FfnRow> kFfns = {
    {{"relu",      "W2·relu(W1x)",                                {}},              Activation::Relu},
    {{"gelu",      "W2·gelu(W1x), exact x·Φ(x)",                  {}},              Activation::Gelu},
    {{"gelu_tanh", "W2·gelu(W1x), tanh approximation",            {}},              Activation::GeluTanh},
    {{"silu",      "W2·silu(W1x), x·σ(x)",                        {}},              Activation::Silu},
    {{"swish",     "W2·swish(W1x), x·σ(βx) with model.swish_beta", {}},              Activation::Swish},
    {{"relu2",     "W2·relu(W1x)², squared ReLU (Primer)",        {}},              Activation::Relu2},
    {{"swiglu",    "W2·(silu(W1x) ⊙ W3x)",                        llama(gated())},  Activation::Silu},
    {{"geglu",     "W2·(gelu(W1x) ⊙ W3x)",                        gated()},         Activation::Gelu},
    {{"reglu",     "W2·(relu(W1x) ⊙ W3x)",                        gated()},         Activation::Relu},
};

const std::vector<Row<NormMake>> kNorms = {
    {{"layernorm", "(x − mean)/sqrt(var + ε)·γ + β", two_vectors()},
     [](const ModelConfig& c, int64_t d) -> std::shared_ptr<Norm> { return std::make_shared<LayerNormImpl>(d, c.norm_eps); }},
    {{"rmsnorm",   "x/sqrt(mean(x²) + ε)·γ",         llama({})},
     [](const ModelConfig& c, int64_t d) -> std::shared_ptr<Norm> { return std::make_shared<RMSNormImpl>(d, c.norm_eps); }},
};

const std::vector<Row<AttentionMake>> kAttentions = {
    {{"mha", "multi-head attention; GQA/MQA by n_kv_heads", llama({})},
     [](const ModelConfig& c, std::shared_ptr<Position> p) -> std::shared_ptr<Attention> {
       if (!c.qk_norm) return std::make_shared<MultiHeadAttentionImpl>(attention_options(c), std::move(p));
       return std::make_shared<MultiHeadAttentionImpl>(attention_options(c), std::move(p), make_norm(c, c.dim_head()),
                                                       make_norm(c, c.dim_head())); }},
    {{"mla", "multi-head latent attention (DeepSeek-V2)",   latent()},
     [](const ModelConfig& c, std::shared_ptr<Position> p) -> std::shared_ptr<Attention> {
       return std::make_shared<MultiHeadLatentAttentionImpl>(mla_options(c), std::move(p)); }},
};

const std::vector<Row<PositionMake>> kPositions = {
    {{"none",       "no position information (NoPE)",                 {}},
     [](const ModelConfig&) -> std::shared_ptr<Position> { return std::make_shared<NoPositionImpl>(); }},
    {{"sinusoidal", "fixed sinusoidal absolute embeddings",           {}},
     [](const ModelConfig& c) -> std::shared_ptr<Position> { return std::make_shared<SinusoidalPositionImpl>(c.d_model); }},
    {{"learned",    "learned absolute embeddings",                    length_table()},
     [](const ModelConfig& c) -> std::shared_ptr<Position> { return std::make_shared<LearnedPositionImpl>(c.max_seq_len, c.d_model); }},
    {{"t5_bias",    "T5 relative bias per head and log-spaced bucket", bucket_table()},
     [](const ModelConfig& c) -> std::shared_ptr<Position> {
       return std::make_shared<T5BiasImpl>(c.n_heads, c.t5_num_buckets, c.t5_max_distance, c.t5_shared); }},
    {{"rope",       "rotary embeddings on q and k",                   rope_traits()},
     [](const ModelConfig& c) -> std::shared_ptr<Position> {
       return std::make_shared<RoPEImpl>(rope_options(c, attention(c).latent ? c.mla_rope_dim : c.dim_head())); }},
    {{"alibi",      "linear distance penalty, fixed slopes per head", {}},
     [](const ModelConfig& c) -> std::shared_ptr<Position> { return std::make_shared<ALiBiImpl>(c.n_heads); }},
};

// The built-in rows, added when the program starts (before main(), so before anything reads the
// catalog). A static library's object file is linked only when something uses it; this file is
// used by every program that builds a model (make_ffn and friends).
[[maybe_unused]] const bool kBuiltinsAdded = [] {
  for (const auto& r : kFfns) add_ffn(r.entry, kernels::ActOp{r.act});
  add_ffn({"moe", "Σ top-k w_e·SwiGLU_e(x) (+ shared experts): mixture of experts (Mixtral)", moe_traits()},
          [](const ModelConfig& c) -> std::shared_ptr<Ffn> { return std::make_shared<MoeFfnImpl>(moe_options(c)); });
  for (const auto& r : kNorms) add_norm(r.entry, r.make);
  for (const auto& r : kAttentions) add_attention(r.entry, r.make);
  for (const auto& r : kPositions) add_position(r.entry, r.make);
  return true;
}();
}  // namespace

std::vector<std::string> factory_names(Kind kind) {
  switch (kind) {
    case Kind::Ffn: return names_of(factories<FfnMake>());
    case Kind::Norm: return names_of(factories<NormMake>());
    case Kind::Attention: return names_of(factories<AttentionMake>());
    case Kind::Position: return names_of(factories<PositionMake>());
    case Kind::Corpus: return {};  // a corpus has loaders, no module (data/corpora.h)
  }
  return {};
}

}  // namespace registry
}  // namespace lmx
