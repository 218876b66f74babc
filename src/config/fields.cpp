#include "config/fields.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "config/registry.h"
#include "util/error.h"

namespace lmx {

namespace {

using Choices = std::function<std::vector<std::string>()>;

std::string show_scalar(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

std::string format_double(double v) { return fmt::format("{}", v); }

void check_range(const Field& f, double v, const std::string& where, const std::string& text) {
  if (v < f.min || v > f.max) {
    std::string range = f.max >= 1e300 ? fmt::format(">= {}", f.min)
                                       : fmt::format("in [{}, {}]", f.min, f.max);
    throw InputError(fmt::format("{}: {} must be {}, got {}", where, f.key, range, text));
  }
}

// Member-pointer accessors: Section is ModelConfig / TrainConfig / DataConfig.
template <class Section>
Section& section_of(Config& c);
template <> ModelConfig& section_of<ModelConfig>(Config& c) { return c.model; }
template <> TrainConfig& section_of<TrainConfig>(Config& c) { return c.train; }
template <> DataConfig& section_of<DataConfig>(Config& c) { return c.data; }
template <class Section>
const Section& section_of(const Config& c) { return section_of<Section>(const_cast<Config&>(c)); }

template <class S>
Field int_field(std::string key, int S::*m, double min, double max, std::string help,
                bool zero_is_auto = false) {
  Field f{std::move(key), "int", std::move(help), zero_is_auto, min, max, {}, {}, {}};
  f.get = [m, zero_is_auto](const Config& c) {
    int v = section_of<S>(c).*m;
    return (zero_is_auto && v == 0) ? std::string("auto") : std::to_string(v);
  };
  f.set = [m, f](Config& c, const YAML::Node& n, const std::string& where) {
    if (!n.IsScalar())
      throw InputError(fmt::format("{}: {} expects an integer, got {}", where, f.key, show_scalar(n)));
    if (f.zero_is_auto && n.Scalar() == "auto") { section_of<S>(c).*m = 0; return; }
    const std::optional<long long> parsed = strict_integer(n.Scalar());
    if (!parsed)
      throw InputError(fmt::format("{}: {} expects a decimal integer{}, got {}", where, f.key,
                                   f.zero_is_auto ? " or auto" : "", show_scalar(n)),
                       "no leading zeros (YAML reads 010 as octal 8)");
    const long long v = *parsed;
    check_range(f, static_cast<double>(v), where, n.Scalar());
    section_of<S>(c).*m = static_cast<int>(v);
  };
  return f;
}

template <class S>
Field float_field(std::string key, double S::*m, double min, double max, std::string help) {
  Field f{std::move(key), "float", std::move(help), false, min, max, {}, {}, {}};
  f.get = [m](const Config& c) { return format_double(section_of<S>(c).*m); };
  f.set = [m, f](Config& c, const YAML::Node& n, const std::string& where) {
    double v = 0;
    bool ok = n.IsScalar();
    if (ok) {
      try { v = n.as<double>(); } catch (const YAML::Exception&) { ok = false; }
    }
    if (!ok || !std::isfinite(v))
      throw InputError(fmt::format("{}: {} expects a number, got {}", where, f.key, show_scalar(n)));
    check_range(f, v, where, n.Scalar());
    section_of<S>(c).*m = v;
  };
  return f;
}

template <class S>
Field bool_field(std::string key, bool S::*m, std::string help) {
  Field f{std::move(key), "bool", std::move(help), false, 0, 1, {}, {}, {}};
  f.get = [m](const Config& c) { return std::string(section_of<S>(c).*m ? "true" : "false"); };
  f.set = [m, f](Config& c, const YAML::Node& n, const std::string& where) {
    bool v = false;
    bool ok = n.IsScalar();
    if (ok) {
      try { v = n.as<bool>(); } catch (const YAML::Exception&) { ok = false; }
    }
    if (!ok)
      throw InputError(fmt::format("{}: {} expects true or false, got {}", where, f.key, show_scalar(n)));
    section_of<S>(c).*m = v;
  };
  return f;
}

// Where `v` is in `valid`; an InputError naming the closest valid name when it is not there.
size_t choice_index(const Field& f, const std::string& v, const std::vector<std::string>& valid, const std::string& where) {
  const auto it = std::find(valid.begin(), valid.end(), v);
  if (it != valid.end()) return static_cast<size_t>(it - valid.begin());
  const std::string near = closest(v, valid);
  throw InputError(fmt::format("{}: {}: unknown value '{}'{}; valid: {}", where, f.key, v,
                               near.empty() ? "" : " (did you mean '" + near + "'?)", join(valid)));
}

template <class S>
Field string_field(std::string key, std::string S::*m, std::string help, Choices choices = {}) {
  Field f{std::move(key), choices ? "choice" : "string", std::move(help), false, 0, 0,
          std::move(choices), {}, {}};
  f.get = [m](const Config& c) { return section_of<S>(c).*m; };
  f.set = [m, f](Config& c, const YAML::Node& n, const std::string& where) {
    if (!n.IsScalar() && !n.IsNull())
      throw InputError(fmt::format("{}: {} expects a string, got {}", where, f.key, show_scalar(n)));
    std::string v = n.IsNull() ? "" : n.Scalar();
    if (f.choices) choice_index(f, v, f.choices(), where);
    section_of<S>(c).*m = v;
  };
  return f;
}

// A fixed choice held as its enum (config.h): the names are OptionNames<E>'s, parsed here once.
template <class S, class E>
Field option_field(std::string key, E S::*m, std::string help) {
  Field f{std::move(key), "choice", std::move(help), false, 0, 0, [] { return OptionNames<E>::names(); }, {}, {}};
  f.get = [m](const Config& c) { return option_name(section_of<S>(c).*m); };
  f.set = [m, f](Config& c, const YAML::Node& n, const std::string& where) {
    if (!n.IsScalar() && !n.IsNull())
      throw InputError(fmt::format("{}: {} expects a string, got {}", where, f.key, show_scalar(n)));
    section_of<S>(c).*m = static_cast<E>(choice_index(f, n.IsNull() ? "" : n.Scalar(), OptionNames<E>::names(), where));
  };
  return f;
}

Choices from_registry(registry::Kind kind) {
  return [kind] { return registry::names(kind); };
}

constexpr double kMaxInt = 2147483647.0;

std::vector<Field> make_fields() {
  using M = ModelConfig;
  using T = TrainConfig;
  using D = DataConfig;
  using registry::Kind;
  return {
      int_field<M>("model.vocab_size", &M::vocab_size, 0, kMaxInt, "vocabulary size; auto = from the dataset", true),
      int_field<M>("model.d_model", &M::d_model, 1, kMaxInt, "residual stream width (textbook: 64)"),
      int_field<M>("model.n_layers", &M::n_layers, 1, 4096, "Transformer blocks"),
      int_field<M>("model.n_heads", &M::n_heads, 1, 65536, "query heads"),
      int_field<M>("model.n_kv_heads", &M::n_kv_heads, 0, 65536, "key/value heads: auto = n_heads (MHA), 1 = MQA, between = GQA", true),
      int_field<M>("model.head_dim", &M::head_dim, 0, 65536, "width of one head; auto = d_model / n_heads", true),
      int_field<M>("model.max_seq_len", &M::max_seq_len, 1, 1 << 24, "longest sequence the model accepts (learned positions, caches)"),
      string_field<M>("model.ffn", &M::ffn, "FFN variant: activation, or gated GLU (swiglu = W2·(silu(W1x) ⊙ W3x))", from_registry(Kind::Ffn)),
      float_field<M>("model.swish_beta", &M::swish_beta, 1e-6, 1e6, "β of the swish activation x·σ(βx)"),
      int_field<M>("model.d_ff", &M::d_ff, 0, kMaxInt, "FFN hidden width; auto = parameter-matched to a plain FFN of width d_ff_plain (gated: 2/3 of it)", true),
      int_field<M>("model.d_ff_plain", &M::d_ff_plain, 0, kMaxInt, "d_ff auto: the plain FFN width to match; auto = 4·d_model", true),
      int_field<M>("model.d_ff_multiple", &M::d_ff_multiple, 1, kMaxInt, "d_ff auto: round up to a multiple of this (Llama: 256)"),
      int_field<M>("model.moe_experts", &M::moe_experts, 1, 4096, "ffn moe: routed experts, each a SwiGLU FFN of width d_ff (Mixtral: 8)"),
      int_field<M>("model.moe_top_k", &M::moe_top_k, 1, 4096, "ffn moe: experts each token is routed to, their router probabilities renormalized (Mixtral: 2)"),
      int_field<M>("model.moe_shared_experts", &M::moe_shared_experts, 0, 4096, "ffn moe: experts every token takes besides its top k (DeepSeekMoE)"),
      float_field<M>("model.moe_aux_loss", &M::moe_aux_loss, 0, 100, "ffn moe: α of the load-balancing loss α·E·Σ f_e·P_e added to the training objective (HF Mixtral: 0.02; uniform routing gives α·k); 0 = off"),
      string_field<M>("model.norm", &M::norm, "normalization layer", from_registry(Kind::Norm)),
      float_field<M>("model.norm_eps", &M::norm_eps, 0, 1, "ε added inside the norm"),
      option_field<M>("model.norm_placement", &M::norm_placement, "pre: x + f(N(x)) with a final norm; post: N(x + f(x)) (2017); sandwich: x + N'(f(N(x))), a second norm on each sublayer's output (Gemma 2, CogView), with a final norm"),
      string_field<M>("model.attention", &M::attention, "attention kind; GQA/MQA are mha with fewer n_kv_heads", from_registry(Kind::Attention)),
      int_field<M>("model.sliding_window", &M::sliding_window, 0, kMaxInt, "mha: sliding-window attention, each query sees itself and the W − 1 positions before it (Mistral: 4096; Gemma 2: 4096 in every other layer); 0 = the whole prefix"),
      int_field<M>("model.window_global_every", &M::window_global_every, 0, kMaxInt, "sliding_window: every k-th layer (layer i with i % k = k − 1) attends to the whole prefix (Gemma 2: 2, Gemma 3: 6); 0 = every layer windowed (Mistral)"),
      float_field<M>("model.attn_softcap", &M::attn_softcap, 0, 1e6, "mha: > 0: each attention score (q·k scaled by 1/√head_dim) soft-capped to c·tanh(s/c) before the mask and softmax (Gemma 2: 50); 0 = off"),
      bool_field<M>("model.qk_norm", &M::qk_norm, "mha: QK-norm, model.norm over each head's q and k before RoPE, one gain vector of head_dim for the queries and one for the keys (OLMo 2, Qwen 3, Gemma 3)"),
      int_field<M>("model.mla_kv_rank", &M::mla_kv_rank, 1, kMaxInt, "MLA: rank of the cached KV latent"),
      int_field<M>("model.mla_q_rank", &M::mla_q_rank, 0, kMaxInt, "MLA: rank of the query latent; 0 = full-rank query projection"),
      int_field<M>("model.mla_rope_dim", &M::mla_rope_dim, 0, 65536, "MLA: per-head width of the decoupled RoPE part (shared key part cached)"),
      bool_field<M>("model.mla_absorb", &M::mla_absorb, "MLA: absorbed inference path (W_UK folded into q, W_UV into the output)"),
      bool_field<M>("model.mla_latent_norm", &M::mla_latent_norm, "MLA: RMSNorm on the compressed KV latent (kv_a_layernorm) and query latent (q_a_layernorm), as DeepSeek-V2"),
      string_field<M>("model.position", &M::position, "position encoding", from_registry(Kind::Position)),
      float_field<M>("model.rope_theta", &M::rope_theta, 1, 1e12, "RoPE base θ (Llama 2: 10000, Llama 3: 500000)"),
      option_field<M>("model.rope_layout", &M::rope_layout, "RoPE pairs: half (i, i+d/2), as in Llama code; interleaved (2i, 2i+1), as in RoFormer"),
      option_field<M>("model.rope_scaling", &M::rope_scaling, "RoPE context extension: none, linear (position interpolation), ntk (NTK-aware base), yarn"),
      float_field<M>("model.rope_factor", &M::rope_factor, 1, 1e6, "RoPE scaling factor s = new context / trained context"),
      int_field<M>("model.rope_original_len", &M::rope_original_len, 0, kMaxInt, "yarn: trained context length; auto = max_seq_len / rope_factor", true),
      float_field<M>("model.yarn_beta_fast", &M::yarn_beta_fast, 0, 1e6, "yarn: dims with more rotations than this over the trained length are kept"),
      float_field<M>("model.yarn_beta_slow", &M::yarn_beta_slow, 0, 1e6, "yarn: dims with fewer rotations than this are fully interpolated"),
      int_field<M>("model.t5_num_buckets", &M::t5_num_buckets, 2, 65536, "T5 bias: relative-distance buckets (causal)"),
      int_field<M>("model.t5_max_distance", &M::t5_max_distance, 2, kMaxInt, "T5 bias: distances from here on share the last bucket"),
      bool_field<M>("model.t5_shared", &M::t5_shared, "T5 bias: one bucket table shared by all layers, as in T5 (false: one table per layer)"),
      bool_field<M>("model.bias", &M::bias, "biases in every linear layer (attention, FFN, output head)"),
      bool_field<M>("model.tie_embeddings", &M::tie_embeddings, "output head reuses the token embedding matrix"),
      option_field<M>("model.tied_init", &M::tied_init, "init torch_default with tie_embeddings (ignored untied, so --set model.tie_embeddings=false unties a preset): which PyTorch default the shared matrix gets: embedding = nn.Embedding's N(0, 1) (head.weight = embed.weight), linear = nn.Linear's U(±1/√d_model) (embed.weight = head.weight, as nanoGPT ties)"),
      option_field<M>("model.init", &M::init, "weight init: normal = N(0, init_std²) for every matrix and embedding; torch_default = PyTorch module defaults (Linear U(±1/√fan_in) with its bias, Embedding N(0, 1)); gpt2 = normal, but the residual output projections (o_proj, down_proj) N(0, (init_std/√(2·n_layers))²) (GPT-2); zero_proj = normal, but the residual output projections zero (modded-nanogpt)"),
      float_field<M>("model.init_std", &M::init_std, 0, 10, "init normal: std of linear and embedding weights"),
      option_field<M>("model.embed_scale", &M::embed_scale, "token embeddings times 1, or times √d_model (sqrt_d, Vaswani et al. 2017)"),
      float_field<M>("model.logit_softcap", &M::logit_softcap, 0, 1e6, "> 0: the output logits soft-capped to c·tanh(z/c) (Gemma 2: 30); 0 = off"),

      int_field<T>("train.epochs", &T::epochs, 0, 1e6, "passes over the training split (when steps is 0)"),
      int_field<T>("train.steps", &T::steps, 0, kMaxInt, "optimizer steps; 0 = epochs × steps per epoch"),
      int_field<T>("train.batch_size", &T::batch_size, 1, 1 << 20, "sequences per optimizer step (global)"),
      int_field<T>("train.micro_batch_size", &T::micro_batch_size, 0, 1 << 20, "where train.padding_free does not apply (score-bias positions, MLA, autocast, LMX_FUSED_ATTENTION=0) or is false, rows per forward/backward pass: a step's rows sorted by length and cut into groups this size, each padded only to its own longest row, gradients accumulated (doc layout: ~1.6x faster on the garden); 0, or rows all of one length (packed): the whole batch at once. The same step up to float rounding"),
      int_field<T>("train.step_parts", &T::step_parts, 1, 256, "on the CPU, each step's batch is cut into this many parts (between sequences, or into row blocks), each part's forward and backward run on its own, and the parts' gradients are summed in part order: the run's bits depend on this key, not on --threads. With N >= 2 threads (where LibTorch's own pool has one: N <= 2 by default) the parts run at once, one per thread, faster than splitting each op (docs/PERFORMANCE.md, Two threads); on one thread they run one after another. 1: the whole batch in one pass (each op split over the threads)"),
      bool_field<T>("train.padding_free", &T::padding_free, "a step's rows cut at their last target and laid end to end in one row, each sequence attending only within itself at its own positions: no padding, one forward/backward pass (garden doc layout: 1.3-1.6x faster than micro-batches of 8). Where the model allows it (MHA/GQA/MQA on the fused fp32 CPU kernel: NoPE, sinusoidal, learned, RoPE); otherwise, and with false, micro_batch_size applies. The same step up to float rounding"),
      float_field<T>("train.lr", &T::lr, 0, 10, "peak learning rate"),
      float_field<T>("train.min_lr", &T::min_lr, 0, 10, "learning rate at the end of a cosine / linear decay"),
      option_field<T>("train.schedule", &T::schedule, "learning-rate schedule after warm-up"),
      int_field<T>("train.warmup_steps", &T::warmup_steps, 0, kMaxInt, "linear warm-up steps from 0 to lr"),
      float_field<T>("train.beta1", &T::beta1, 0, 0.999999, "AdamW β1"),
      float_field<T>("train.beta2", &T::beta2, 0, 0.999999, "AdamW β2"),
      float_field<T>("train.adam_eps", &T::adam_eps, 1e-30, 1, "AdamW ε"),
      float_field<T>("train.weight_decay", &T::weight_decay, 0, 10, "AdamW decoupled weight decay (matrices only; not norms, biases)"),
      float_field<T>("train.grad_clip", &T::grad_clip, 0, 1e9, "clip the global gradient norm to this; 0 = no clipping"),
      option_field<T>("train.optimizer", &T::optimizer, "adamw: decoupled weight decay (Loshchilov & Hutter); adam: weight decay as an L2 term in the gradient (torch.optim.Adam); muon: the 2-D matrices inside the blocks by Newton-Schulz-orthogonalized Nesterov momentum (Jordan et al. 2024, muon.py), AdamW for embeddings, head, norms and biases"),
      float_field<T>("train.muon_lr", &T::muon_lr, 0, 10, "muon: peak learning rate of the hidden matrices; the schedule scales it as it scales train.lr"),
      float_field<T>("train.muon_momentum", &T::muon_momentum, 0, 0.999999, "muon: momentum β (Nesterov)"),
      int_field<T>("train.muon_ns_steps", &T::muon_ns_steps, 1, 100, "muon: Newton-Schulz iterations (quintic, coefficients 3.4445, -4.7750, 2.0315)"),
      float_field<T>("train.z_loss", &T::z_loss, 0, 1e3, "> 0: adds z_loss · mean over targets of logsumexp(logits)² to the training loss (PaLM: 1e-4); the logged loss stays the cross-entropy"),
      float_field<T>("train.max_tokens", &T::max_tokens, 0, 9e15, "> 0: a token budget: steps = ceil(max_tokens / training targets per step, the split's mean), overriding train.steps and train.epochs"),
      float_field<T>("train.max_time", &T::max_time, 0, 1e9, "> 0: a time budget in training seconds: the run ends after the first step that reaches it (or at its last step), and the decay after warm-up runs over the time (its bits depend on the machine's speed)"),
      float_field<T>("train.warmup_frac", &T::warmup_frac, 0, 1, "> 0: warm-up steps = round(warmup_frac × the run's steps), overriding train.warmup_steps"),
      int_field<T>("train.eval_every", &T::eval_every, 0, kMaxInt, "validate every N steps (always at the end); 0 = only at the end"),
      int_field<T>("train.eval_docs", &T::eval_docs, 0, kMaxInt, "validation documents per periodic eval; 0 = the whole split"),
      int_field<T>("train.log_every", &T::log_every, 1, kMaxInt, "log line every N steps (when stderr is not a terminal)"),
      int_field<T>("train.checkpoint_every", &T::checkpoint_every, 0, kMaxInt, "also checkpoint every N steps, for --resume; 0 = only at the end"),
      option_field<T>("train.device", &T::device, "where tensors live"),
      option_field<T>("train.precision", &T::precision, "fp32, or bf16: the linear layers' GEMMs in bfloat16, fp32 accumulation (weights and AdamW state stay fp32); on a CPU without AVX512-BF16 or AMX, LibTorch's autocast (slower than fp32)"),

      string_field<D>("data.kind", &D::kind, "garden: the built-in toy language; text: plain text (bytes, or subwords by data.tokenizer)", from_registry(Kind::Corpus)),
      string_field<D>("data.grammar", &D::grammar, "garden grammar file (relative to the config), or a built-in by name: garden (data/garden.yaml: v3, clauses with subjects of their own), garden_v2 (one clause per sentence), garden_v1 (context-free); empty = garden"),
      string_field<D>("data.text_path", &D::text_path, "text: a file or a directory of .txt files (relative to the config)"),
      int_field<D>("data.seed", &D::seed, 0, kMaxInt, "corpus seed; the train / val / test streams derive from it"),
      int_field<D>("data.train_docs", &D::train_docs, 1, kMaxInt, "garden: training documents"),
      int_field<D>("data.val_docs", &D::val_docs, 1, kMaxInt, "garden: validation documents"),
      int_field<D>("data.test_docs", &D::test_docs, 1, kMaxInt, "garden: test documents"),
      float_field<D>("data.val_fraction", &D::val_fraction, 0, 0.5, "text: share of documents for validation"),
      float_field<D>("data.test_fraction", &D::test_fraction, 0, 0.5, "text: share of documents for test"),
      int_field<D>("data.text_doc_len", &D::text_doc_len, 2, kMaxInt, "text: bytes per document when a file is cut into documents"),
      option_field<D>("data.tokenizer", &D::tokenizer, "text: bytes (ids 0..255), or sentencepiece: the subword model `lmx data tokenizer` trains"),
      string_field<D>("data.tokenizer_model", &D::tokenizer_model, "sentencepiece: the model file (relative to the config); empty = <config stem>.tokenizer.model beside the config"),
      option_field<D>("data.layout", &D::layout, "doc: one document per row, padded and masked; packed: documents joined by <eos>, cut into seq_len chunks"),
      int_field<D>("data.seq_len", &D::seq_len, 2, 1 << 24, "packed: tokens per training row (chunk length); doc: unused, a document is one row unless longer than model.max_seq_len"),
      int_field<D>("data.pronoun_window", &D::pronoun_window, 0, kMaxInt, "pronoun metric: far = subject more than W tokens back"),
  };
}

}  // namespace

const std::vector<Field>& config_fields() {
  static const std::vector<Field> fields = make_fields();
  return fields;
}

const Field* find_field(const std::string& key) {
  for (const auto& f : config_fields())
    if (f.key == key) return &f;
  return nullptr;
}

namespace {
// Parser events ignored; only where the second document starts is kept.
struct DocumentCounter : YAML::EventHandler {
  int documents = 0;
  YAML::Mark second;
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents == 2) second = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};
}  // namespace

YAML::Node load_single_document(const std::string& text, const std::string& source) {
  {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentCounter counter;
    if (parser.HandleNextDocument(counter) && parser.HandleNextDocument(counter) && counter.documents >= 2)
      throw InputError(fmt::format("{}:{}:{}: a second YAML document (after ---): give one document per file", source,
                                   counter.second.line + 1, counter.second.column + 1));
  }
  return YAML::Load(text);
}

std::string yaml_at(const std::string& file, const YAML::Node& node) {
  const auto m = node.Mark();
  return m.is_null() ? file : fmt::format("{}:{}:{}", file, m.line + 1, m.column + 1);
}

bool is_path_key(const std::string& key) { return key == "data.grammar" || key == "data.text_path"; }

std::string resolve_path(const std::string& value, const std::string& base_dir) {
  if (value.empty() || std::filesystem::path(value).is_absolute()) return value;
  const std::filesystem::path base = base_dir.empty() ? std::filesystem::path(".") : std::filesystem::path(base_dir);
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(base / value, ec);
  return (ec ? base / value : abs).lexically_normal().string();
}

std::string resolve_key_value(const std::string& key, const std::string& value, const std::string& base_dir) {
  if (!is_path_key(key)) return value;
  if (key == "data.grammar" && value.find_first_of("/.") == std::string::npos) return value;  // a built-in
  return resolve_path(value, base_dir);
}

std::optional<long long> strict_integer(const std::string& text) {
  size_t i = text.size() > 1 && text[0] == '-' ? 1 : 0;
  if (i == text.size() || text.size() - i > 19) return std::nullopt;
  if (text[i] == '0' && text.size() - i > 1) return std::nullopt;  // leading zero: octal to YAML
  for (size_t k = i; k < text.size(); ++k)
    if (text[k] < '0' || text[k] > '9') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') return std::nullopt;
  return v;
}

std::string fields_markdown() {
  Config defaults;
  std::string out = "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const auto& f : config_fields()) {
    std::string type = f.type;
    if (f.choices) type = join(f.choices(), " \\| ");
    std::string def = f.get(defaults);
    out += fmt::format("| `{}` | {} | `{}` | {} |\n", f.key, type, def.empty() ? "\"\"" : def, f.help);
  }
  return out;
}

}  // namespace lmx
