// The experiment config: three flat structs (model, train, data), every field with its
// default and a one-line meaning below. The field table in fields.cpp is the single place
// that reads, writes, compares and documents them (`lmx config fields`).
//
// Priority: defaults < extends chain (base first) < the file < --set overrides.
#pragma once
#include <string>
#include <vector>

namespace lmx {

// The fixed-choice options: the config holds them as enums, parsed once where YAML or --set
// sets them (the field table, fields.cpp); code compares enum values, never a name. Each
// enum's names (in enum order) are the one list the field table offers as the key's choices,
// reads and writes; a test checks both. parse_option is for the places a name arrives from
// outside a config (a CLI flag, a CSV cell): a name outside the list is an InputError naming
// the key and the valid values.
enum class NormPlacement { Pre, Post, Sandwich };
enum class RopeLayout { Half, Interleaved };
enum class RopeScaling { None, Linear, Ntk, Yarn };
enum class TiedInit { Embedding, Linear };
enum class InitScheme { Normal, TorchDefault, Gpt2, ZeroProj };
enum class EmbedScale { One, SqrtD };
enum class Schedule { Constant, Cosine, Linear };
enum class Precision { Fp32, Bf16 };
enum class TokenizerKind { Bytes, SentencePiece };
enum class DataLayout { Doc, Packed };
enum class DeviceKind { Cpu, Cuda };
enum class OptimizerKind { AdamW, Adam, Muon };

// The names of E's values in enum order, and the config key they belong to.
template <class E>
struct OptionNames {
  static const char* key;
  static const std::vector<std::string>& names();
};
// The value a name stands for; InputError for a name not in the list.
template <class E>
E parse_option(const std::string& name);
// The name of a value.
template <class E>
const std::string& option_name(E value) { return OptionNames<E>::names().at(static_cast<size_t>(value)); }

#define LMX_OPTION_DECLARE(E)                                   \
  template <>                                                   \
  const char* OptionNames<E>::key;                              \
  template <>                                                   \
  const std::vector<std::string>& OptionNames<E>::names();      \
  extern template E parse_option<E>(const std::string&);
LMX_OPTION_DECLARE(NormPlacement)
LMX_OPTION_DECLARE(RopeLayout)
LMX_OPTION_DECLARE(RopeScaling)
LMX_OPTION_DECLARE(TiedInit)
LMX_OPTION_DECLARE(InitScheme)
LMX_OPTION_DECLARE(EmbedScale)
LMX_OPTION_DECLARE(Schedule)
LMX_OPTION_DECLARE(Precision)
LMX_OPTION_DECLARE(TokenizerKind)
LMX_OPTION_DECLARE(DataLayout)
LMX_OPTION_DECLARE(DeviceKind)
LMX_OPTION_DECLARE(OptimizerKind)
#undef LMX_OPTION_DECLARE

struct ModelConfig {
  int vocab_size = 0;          // 0 = take it from the dataset
  int d_model = 64;            // residual stream width
  int n_layers = 2;            // Transformer blocks
  int n_heads = 4;             // query heads
  int n_kv_heads = 0;          // key/value heads; 0 = n_heads (MHA), 1 = MQA, else GQA
  int head_dim = 0;            // per-head width; 0 = d_model / n_heads
  int max_seq_len = 512;       // longest sequence (learned positions, caches, masks)
  std::string ffn = "relu";    // FFN variant (lmx list): relu, gelu, ..., swiglu
  double swish_beta = 1.0;     // β of swish: x·σ(βx)
  int d_ff = 256;              // FFN hidden width; 0 = auto (parameter-matched, see below)
  int d_ff_plain = 0;          // auto: width of the plain FFN to match; 0 = 4·d_model
  int d_ff_multiple = 1;       // auto: round d_ff up to a multiple of this (Llama: 256)
  int moe_experts = 8;         // ffn moe: routed experts E (each a SwiGLU of width d_ff)
  int moe_top_k = 2;           // ffn moe: experts per token
  int moe_shared_experts = 0;  // ffn moe: experts every token takes (DeepSeekMoE)
  double moe_aux_loss = 0.01;  // ffn moe: α of the load-balancing loss (HF Mixtral's), 0 = off
  std::string norm = "layernorm";   // layernorm | rmsnorm
  double norm_eps = 1e-5;           // ε inside the norm
  NormPlacement norm_placement = NormPlacement::Pre;  // pre (with final norm) | post (2017) | sandwich (pre plus a norm on each sublayer's output)
  std::string attention = "mha";    // mha (MHA/GQA/MQA by n_kv_heads) | mla
  bool qk_norm = false;        // mha: model.norm over each head's q and k (gains of head_dim), before RoPE
  int sliding_window = 0;      // mha: > 0: a query sees the last W positions (itself included); 0 = all
  int window_global_every = 0; // sliding_window: every k-th layer (i % k == k − 1) attends to all; 0 = none
  double attn_softcap = 0;     // mha: > 0: attention scores c·tanh(s/c) before the softmax (Gemma 2: 50); 0 = off
  int mla_kv_rank = 32;        // MLA: rank of the cached KV latent c = W_DKV·x
  int mla_q_rank = 0;          // MLA: rank of the query latent; 0 = full-rank queries
  int mla_rope_dim = 8;        // MLA: per-head width of the decoupled RoPE part (0 = none)
  bool mla_absorb = false;     // MLA: use the absorbed inference path (W_UK into q, W_UV into out)
  bool mla_latent_norm = true; // MLA: RMSNorm on the KV latent (and the query latent), as DeepSeek-V2
  std::string position = "sinusoidal";  // none | sinusoidal | learned | t5_bias | rope | alibi
  double rope_theta = 10000.0;         // RoPE base θ
  RopeLayout rope_layout = RopeLayout::Half; // half (i, i+d/2; Llama code) | interleaved (2i, 2i+1; RoFormer)
  RopeScaling rope_scaling = RopeScaling::None; // none | linear | ntk | yarn
  double rope_factor = 1.0;            // context extension factor s (scaled length / trained length)
  int rope_original_len = 0;           // yarn: trained context length; 0 = max_seq_len / rope_factor
  double yarn_beta_fast = 32.0;        // yarn: ramp boundary (rotations) above which dims are kept
  double yarn_beta_slow = 1.0;         // yarn: ramp boundary below which dims are interpolated
  int t5_num_buckets = 32;             // T5 bias: buckets (causal)
  int t5_max_distance = 128;           // T5 bias: distance where the last bucket starts
  bool t5_shared = true;               // T5 bias: one table shared by all layers (as T5); false = one per layer
  bool bias = true;            // biases in the linear layers
  bool tie_embeddings = false; // output head shares the token embedding matrix
  TiedInit tied_init = TiedInit::Embedding;  // init torch_default, tied (ignored untied): embedding = nn.Embedding's N(0, 1) | linear = nn.Linear's U(±1/√d_model)
  InitScheme init = InitScheme::Normal; // normal: N(0, init_std²) everywhere | torch_default: PyTorch's module defaults (model/init.h)
  double init_std = 0.02;      // init normal: σ of linear and embedding weights
  EmbedScale embed_scale = EmbedScale::One;  // 1 | sqrt_d: token embeddings times √d_model (Vaswani et al. 2017)
  double logit_softcap = 0;    // > 0: output logits c·tanh(z/c) (Gemma 2's final soft-cap); 0 = off

  int kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
  int dim_head() const { return head_dim > 0 ? head_dim : (n_heads > 0 ? d_model / n_heads : 0); }
  int ffn_hidden(bool gated) const;  // resolved d_ff (applies auto and rounding)
};

struct TrainConfig {
  int epochs = 6;              // passes over the training split (used when steps = 0)
  int steps = 0;               // optimizer steps; 0 = derived from epochs
  int batch_size = 32;         // sequences per step (global, across ranks)
  int micro_batch_size = 8;    // rows per forward/backward pass, grouped by length; 0 = the whole batch
  bool padding_free = true;    // a step's rows end to end without padding where the model can (fused MHA)
  int step_parts = 2;          // a step's batch in this many parts, at once on >= 2 threads (train/trainer.h: step_parts)
  double lr = 3e-3;            // peak learning rate
  double min_lr = 3e-4;        // floor of the cosine / linear decay
  Schedule schedule = Schedule::Cosine;  // constant | cosine | linear
  int warmup_steps = 100;      // linear warm-up from 0 to lr
  double beta1 = 0.9;          // AdamW β1
  double beta2 = 0.98;         // AdamW β2
  double adam_eps = 1e-8;      // AdamW ε
  double weight_decay = 0.01;  // AdamW decoupled weight decay
  double grad_clip = 1.0;      // clip the global gradient norm to this; 0 = off
  OptimizerKind optimizer = OptimizerKind::AdamW;  // adamw | adam (L2 decay) | muon (hidden matrices; AdamW for the rest)
  double muon_lr = 0.02;       // muon: peak learning rate of the hidden matrices (the schedule scales it as lr)
  double muon_momentum = 0.95; // muon: momentum β (Nesterov)
  int muon_ns_steps = 5;       // muon: Newton-Schulz iterations
  double z_loss = 0;           // > 0: adds z_loss·mean(logsumexp(logits)²) to the loss (PaLM); 0 = off
  double max_tokens = 0;       // > 0: steps = the training targets this budget covers (overrides steps and epochs)
  double max_time = 0;         // > 0: training seconds; the run ends at the first step past it, the decay runs over it
  double warmup_frac = 0;      // > 0: warm-up steps = this fraction of the run's steps (overrides warmup_steps)
  int eval_every = 250;        // validation every N steps (and at the end); 0 = only at the end
  int eval_docs = 0;           // validation documents per eval; 0 = the whole split
  int log_every = 50;          // plain log line every N steps when not on a terminal
  int checkpoint_every = 0;    // also checkpoint every N steps (for resume); 0 = only at the end
  DeviceKind device = DeviceKind::Cpu;  // cpu | cuda
  Precision precision = Precision::Fp32;  // fp32 | bf16 (mixed precision; kernels/precision.h)
};

struct DataConfig {
  std::string kind = "garden";   // the corpus (lmx list): garden (built-in toy language) | text (plain text: bytes or subwords)
  std::string grammar = "";      // garden: grammar file, or a built-in name (garden, garden_v2, garden_v1); empty = garden
  std::string text_path = "";    // text: a file, or a directory of .txt files
  int seed = 1234;               // corpus seed (the split streams derive from it)
  int train_docs = 8000;         // garden: documents in the training split
  int val_docs = 1000;           // garden: documents in the validation split
  int test_docs = 1000;          // garden: documents in the test split
  double val_fraction = 0.05;    // text: share of the bytes for validation
  double test_fraction = 0.05;   // text: share of the bytes for test
  int text_doc_len = 256;        // text: bytes per "document" when cutting a file
  TokenizerKind tokenizer = TokenizerKind::Bytes;  // text: bytes | sentencepiece (data/tokenizer.h)
  std::string tokenizer_model = "";  // sentencepiece: model file; empty = <config stem>.tokenizer.model beside it
  DataLayout layout = DataLayout::Doc; // doc (one document per row, padded, masked) | packed
  int seq_len = 64;              // packed: chunk length (doc rows are whole documents up to model.max_seq_len)
  int pronoun_window = 5;        // pronoun metric: "far" means the subject is > W tokens back
};

struct Config {
  std::string name = "lmx";      // run name: the config file's stem
  std::string source;            // the file it came from (for messages)
  ModelConfig model;
  TrainConfig train;
  DataConfig data;
};

// Loads a YAML config (following `extends`), applies `key=value` overrides, validates.
// Throws InputError naming file:line:column, the key and the closest valid key.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// Parses a config from YAML text (no `extends` allowed unless base_dir is given).
Config parse_config(const std::string& yaml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides = {});

// Applies one `section.key=value` override to a config (type-checked), without validation.
void apply_override(Config& cfg, const std::string& assignment);

// Cross-field checks; throws InputError.
void validate(const Config& cfg);

// The fully resolved config as YAML (every field, in table order).
std::string to_yaml(const Config& cfg);

bool operator==(const Config& a, const Config& b);
inline bool operator!=(const Config& a, const Config& b) { return !(a == b); }

}  // namespace lmx
